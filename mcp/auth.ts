/**
 * Who calls the MCP endpoint: an API key (the same keys, cache and 401 as REST), or — when an issuer is
 * configured (MCP_OAUTH_ISSUER) — an OAuth 2.1 access token (decisions.md: MCP is a resource server).
 * A token's subject is an account id; the session draws from that user's one budget, like the user's
 * keys. A JWT-shaped bearer is a token, anything else a key.
 *
 * Every 401 points to the protected-resource metadata (`resource_metadata` in WWW-Authenticate, MCP
 * authorization spec) when OAuth is on. A failed authentication of either kind counts toward
 * too_many_auth_failures by client address exactly like REST.
 */
import type { FastifyRequest } from 'fastify';
import type { Authenticator, Caller } from '../api/auth.ts';
import { ApiError } from '../api/errors.ts';
import type { Budget } from '../api/gates/budget.ts';
import { OAuthVerifier } from './oauth.ts';
import { effectivePlan, type Config } from '../config.ts';
import { readAccount, type AccountRecord } from '../projections/accounts.ts';
import type { Store } from '../projections/store.ts';

export type McpAuthentication = (request: FastifyRequest) => Promise<Caller>;

const BEARER = /^Bearer[ \t]+([!-~]{1,8192})[ \t]*$/i;
const REALM = 'agent-api';

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

export function mcpAuthentication({ authenticator, budget, store, config, oauth }: McpAuthenticationOptions): McpAuthentication {
  const metadataUrl = protectedResourceMetadataUrl(config.mcp.publicUrl);
  const accounts = new Map<string, { account: AccountRecord | null; expiresAt: number }>();

  /** The contract's 401, pointing OAuth clients to the metadata (and saying why a token failed). */
  function refusal(message: string, tokenProblem: string | null): ApiError {
    const parameters = [`realm=${quoted(REALM)}`];
    if (oauth) parameters.push(`resource_metadata=${quoted(metadataUrl)}`);
    if (tokenProblem) parameters.push('error="invalid_token"', `error_description=${quoted(tokenProblem)}`);
    return new ApiError(401, 'unauthorized', message, {}, { 'WWW-Authenticate': `Bearer ${parameters.join(', ')}` });
  }

  async function accountOf(subject: string): Promise<AccountRecord | null> {
    const now = Date.now();
    const cached = accounts.get(subject);
    if (cached && cached.expiresAt > now) return cached.account;
    const account = await readAccount(store, subject);
    if (accounts.size >= 10_000) accounts.clear();
    accounts.set(subject, { account, expiresAt: now + config.api.keyCacheSeconds * 1000 });
    return account;
  }

  async function sessionCaller(verifier: OAuthVerifier, token: string): Promise<Caller> {
    const verdict = await verifier.verify(token);
    if (!verdict.ok) throw refusal(`The access token was refused: ${verdict.description}. Sign in again.`, verdict.description);
    const account = await accountOf(verdict.subject);
    const planId = account && !account.deleted ? effectivePlan(account.plan, account.founder) : null;
    if (!account || !planId) throw refusal('The access token names no account of this service. Sign in with another account.', 'unknown subject');
    return {
      accountId: account.accountId,
      keyId: `oauth:${verdict.clientId ?? 'session'}`,
      label: verdict.clientId ? `OAuth session (${verdict.clientId})` : 'OAuth session',
      last4: token.slice(-4),
      planId,
      limits: config.plans[planId],
    };
  }

  return async function authenticateMcp(request) {
    try {
      const token = BEARER.exec(request.headers.authorization ?? '')?.[1];
      if (oauth && token && OAuthVerifier.isJwt(token)) return await sessionCaller(oauth, token);
      try {
        return await authenticator.authenticate(request.headers.authorization, request.query);
      } catch (keyRefusal) {
        if (keyRefusal instanceof ApiError && keyRefusal.status === 401 && oauth) throw refusal(keyRefusal.message, null);
        throw keyRefusal;
      }
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 401) throw (await budget.authenticationFailed(request.ip)) ?? failure;
      throw failure;
    }
  };
}
