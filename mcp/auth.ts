/**
 * Who calls the MCP endpoint: an API key (the same keys, cache and 401 as REST), or — when an issuer is
 * configured (MCP_OAUTH_ISSUER) — an OAuth 2.1 access token (decisions.md: MCP is a resource server).
 * A token's subject is an account id; the session draws from that user's one budget, like the user's
 * keys. A JWT-shaped bearer is a token, anything else a key.
 *
 * Every 401 names the scope a token needs (`scope="analytics:read"` in WWW-Authenticate, the MCP
 * authorization spec's scope selection) and, when OAuth is on, points to the protected-resource metadata
 * (`resource_metadata`). A genuine token of the issuer that lacks the scope is `403 insufficient_scope`
 * (RFC 6750 §3.1), with the same challenge: signing in again with the scope is the remedy, not another
 * key. A failed authentication of either kind counts toward too_many_auth_failures by client address
 * exactly like REST (a token without the scope is not a failed authentication: it does not count).
 */
import type { FastifyRequest } from 'fastify';
import type { Authenticator, Caller } from '../operations/auth.ts';
import { ApiError } from '../operations/errors.ts';
import type { Budget } from '../operations/gates/budget.ts';
import { KeptLookups } from '../operations/read-cache.ts';
import { OAuthVerifier } from './oauth.ts';
import { effectivePlan, type Config } from '../config.ts';
import { readAccount, type AccountRecord } from '../projections/accounts.ts';
import type { Store } from '../projections/store.ts';

/** What authentication reads of a request (the live plane hands over the same three of its upgrade). */
type Credentials = Pick<FastifyRequest, 'headers' | 'query' | 'ip'>;

/** `countsFailures` false: a refusal is not counted toward the address's block (an open live connection checked again). */
export type McpAuthentication = (request: Credentials, options?: { countsFailures: boolean }) => Promise<Caller>;

const BEARER = /^Bearer[ \t]+([!-~]{1,8192})[ \t]*$/i;
const REALM = 'agent-api';
/** OAuth subjects whose accounts are kept at most (as many as API keys: operations/auth.ts). */
const ACCOUNTS_KEPT = 10_000;

/** RFC 9728: the metadata of a resource at https://host/path lives at https://host/.well-known/oauth-protected-resource/path. */
export function protectedResourceMetadataUrl(publicUrl: string): string {
  const url = new URL(publicUrl);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname}`;
}

function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, '')}"`;
}

export interface McpAuthenticationOptions {
  authenticator: Authenticator;
  budget: Budget;
  store: Store;
  config: Config;
  /** Null: API keys only. */
  oauth: OAuthVerifier | null;
}

export function mcpAuthentication({
  authenticator,
  budget,
  store,
  config,
  oauth,
}: McpAuthenticationOptions): McpAuthentication {
  const metadataUrl = protectedResourceMetadataUrl(config.mcp.publicUrl);
  // An OAuth subject's account, kept as an API key's caller is (operations/auth.ts): a deleted account or a
  // new plan shows within the same window.
  const accounts = new KeptLookups<AccountRecord | null>(ACCOUNTS_KEPT, config.api.keyCacheSeconds * 1000, (subject) =>
    readAccount(store, subject),
  );

  const { scope } = config.mcp;

  /** The Bearer challenge of /mcp (RFC 6750 §3): realm, the scope needed, the metadata when OAuth is on, and the error if any. */
  function challenge(error: { code: 'invalid_token' | 'insufficient_scope'; description: string } | null): string {
    const parameters = [`realm=${quoted(REALM)}`, `scope=${quoted(scope)}`];
    if (oauth) parameters.push(`resource_metadata=${quoted(metadataUrl)}`);
    if (error) parameters.push(`error=${quoted(error.code)}`, `error_description=${quoted(error.description)}`);
    return `Bearer ${parameters.join(', ')}`;
  }

  /** The contract's 401, naming the scope and pointing OAuth clients to the metadata (and saying why a token failed). */
  function refusal(message: string, tokenProblem: string | null): ApiError {
    const error = tokenProblem ? { code: 'invalid_token' as const, description: tokenProblem } : null;
    return new ApiError(401, 'unauthorized', message, {}, { 'WWW-Authenticate': challenge(error) });
  }

  /** RFC 6750 §3.1: a valid token without the scope this resource needs. */
  function insufficientScope(description: string): ApiError {
    return new ApiError(
      403,
      'insufficient_scope',
      `The access token does not grant the scope ${scope}: sign in again and allow it.`,
      { scope },
      { 'WWW-Authenticate': challenge({ code: 'insufficient_scope', description }) },
    );
  }

  async function sessionCaller(verifier: OAuthVerifier, token: string): Promise<Caller> {
    const verdict = await verifier.verify(token);
    if (!verdict.ok && verdict.insufficientScope) throw insufficientScope(verdict.description);
    if (!verdict.ok)
      throw refusal(`The access token was refused: ${verdict.description}. Sign in again.`, verdict.description);
    const account = await accounts.get(verdict.subject);
    const planId = account && !account.deleted ? effectivePlan(account.plan, account.founder) : null;
    if (!account || !planId)
      throw refusal(
        'The access token names no account of this service. Sign in with another account.',
        'unknown subject',
      );
    return {
      accountId: account.accountId,
      keyId: `oauth:${verdict.clientId ?? 'session'}`,
      label: verdict.clientId ? `OAuth session (${verdict.clientId})` : 'OAuth session',
      last4: token.slice(-4),
      planId,
      limits: config.plans[planId],
    };
  }

  return async function authenticateMcp(request, { countsFailures } = { countsFailures: true }) {
    try {
      const token = BEARER.exec(request.headers.authorization ?? '')?.[1];
      if (oauth && token && OAuthVerifier.isJwt(token)) return await sessionCaller(oauth, token);
      try {
        return await authenticator.authenticate(request.headers.authorization, request.query);
      } catch (keyRefusal) {
        if (keyRefusal instanceof ApiError && keyRefusal.status === 401) throw refusal(keyRefusal.message, null);
        throw keyRefusal;
      }
    } catch (failure) {
      if (countsFailures && failure instanceof ApiError && failure.status === 401)
        throw (await budget.authenticationFailed(request.ip)) ?? failure;
      throw failure;
    }
  };
}
