/**
 * MCP as an OAuth 2.1 resource server: a local test issuer (its keys generated here, its JWKS served on
 * a local port) signs access tokens; the service accepts the right ones through the SDK's own client,
 * draws them from the subject's one budget (shared with the user's API keys), and refuses a wrong
 * audience, an expired token, another signer and an unknown subject with 401, the scope and the pointer
 * to its protected-resource metadata; a genuine token without the scope is 403 insufficient_scope
 * (RFC 6750 §3.1).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../config.ts';
import { withPublisher } from '../roles/runtime.ts';
import { publishAccount, publishNewKey } from '../ingest/sources/accounts.ts';
import { createLogger } from '../log.ts';
import { bodyOf, inProcessConfig, startTestApi, type TestApi } from './harness/api.ts';

/** PUBLIC_URL/mcp: the MCP endpoint as clients reach it. */
const AUDIENCE = 'http://localhost:8080/mcp';
const SCOPE = 'analytics:read';
const NOW = Math.floor(Date.now() / 1000);
let issuer: http.Server;
let issuerUrl: string;
let signingKey: CryptoKey;
let strangerKey: CryptoKey;
let config: Config;
let api: TestApi;
let mcpUrl: URL;
let proKey: string;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  signingKey = pair.privateKey;
  strangerKey = (await generateKeyPair('RS256')).privateKey;
  const jwks = JSON.stringify({
    keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'test-1', alg: 'RS256', use: 'sig' }],
  });
  issuer = http.createServer((request, response) => {
    if (request.url === '/.well-known/jwks.json')
      response.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => issuer.listen(0, '127.0.0.1', resolve));
  issuerUrl = `http://127.0.0.1:${(issuer.address() as AddressInfo).port}`;
  const base = inProcessConfig('mcpoauth');
  // The same database, with OAuth switched on (the config is parsed from the environment, once).
  config = parseConfig(
    {
      DATA_DIR: base.dataDir,
      CLICKHOUSE_DATABASE: base.clickhouse.database,
      LOG_LEVEL: 'error',
      PUBLIC_URL: 'http://localhost:8080',
      MCP_OAUTH_ISSUER: issuerUrl,
    },
    { api: { keyCacheSeconds: 0 } },
  );
  await withPublisher(base, createLogger('error'), async ({ publisher }) => {
    await publishAccount(publisher, { accountId: 'oauth-pro', plan: 'pro', displayName: 'OAuth user', version: NOW });
    proKey = (await publishNewKey(publisher, 'oauth-pro', 'rest key', NOW)).plaintext;
    await publishAccount(publisher, {
      accountId: 'oauth-founder',
      plan: 'basic',
      founder: true,
      displayName: 'Founder',
      version: NOW,
    });
  });
  let clockMs = Date.UTC(2026, 10, 22, 12);
  api = await startTestApi(config, {
    now: () => NOW,
    keys: { basic: proKey, pro: proKey, max: proKey },
    gatesClockMs: () => (clockMs += 1),
  });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  mcpUrl = new URL(`http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}/mcp`);
});

afterAll(async () => {
  await api?.close();
  await new Promise((resolve) => issuer?.close(resolve));
});

function token(
  options: {
    subject?: string;
    audience?: string;
    scope?: string;
    expiresAt?: number;
    key?: CryptoKey;
    clientId?: string;
  } = {},
): Promise<string> {
  return new SignJWT({ scope: options.scope ?? `openid ${SCOPE}`, client_id: options.clientId ?? 'desktop-agent' })
    .setProtectedHeader({ alg: 'RS256', kid: 'test-1' })
    .setIssuer(issuerUrl)
    .setSubject(options.subject ?? 'oauth-pro')
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(options.expiresAt ?? NOW + 600)
    .sign(options.key ?? signingKey);
}

async function whoamiWith(bearer: string): Promise<Record<string, unknown>> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } }),
  );
  try {
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    expect(result.isError).toBeFalsy();
    return result.structuredContent as Record<string, unknown>;
  } finally {
    await client.close();
  }
}

async function rawPost(bearer: string): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${bearer}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
}

const METADATA_URL = 'http://localhost:8080/.well-known/oauth-protected-resource/mcp';

describe('MCP with OAuth access tokens', () => {
  it('publishes its protected-resource metadata (RFC 9728), free and without a key', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const response = await fetch(new URL(path, mcpUrl));
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        resource: AUDIENCE,
        authorization_servers: [issuerUrl],
        scopes_supported: [SCOPE],
        bearer_methods_supported: ['header'],
      });
    }
  });

  it("accepts a token of the issuer: the subject is the user, and the session draws from the user's one budget", async () => {
    const me = await whoamiWith(await token());
    expect(me).toMatchObject({ plan: 'Pro Intelligence', key: { label: 'OAuth session (desktop-agent)' } });
    const monthBefore = (me.usage as { month: { requests: number } }).month.requests;
    // The user's REST key sees the OAuth call, and its own.
    const rest = bodyOf(await api.get('me')) as { usage: { month: { requests: number } } };
    expect(rest.usage.month.requests).toBe(monthBefore + 1);
    expect(await whoamiWith(await token({ subject: 'oauth-founder' }))).toMatchObject({ plan: 'Pro Intelligence' });
  });

  it('refuses a wrong audience, an expired token, another signer and an unknown subject: 401 with the scope and the metadata pointer', async () => {
    const refused = {
      audience: await token({ audience: 'http://elsewhere.example/mcp' }),
      expired: await token({ expiresAt: NOW - 3600 }),
      signer: await token({ key: strangerKey }),
      subject: await token({ subject: 'no-such-account' }),
    };
    for (const [why, bearer] of Object.entries(refused)) {
      const response = await rawPost(bearer);
      expect(response.status, why).toBe(401);
      const challenge = response.headers.get('www-authenticate') ?? '';
      expect(challenge, why).toMatch(/^Bearer /);
      expect(challenge, why).toContain(`resource_metadata="${METADATA_URL}"`);
      expect(challenge, why).toContain(`scope="${SCOPE}"`);
      expect(challenge, why).toContain('error="invalid_token"');
      expect(await response.json()).toMatchObject({ error: 'unauthorized' });
    }
    // An unknown API key on an OAuth-enabled endpoint also names the scope and points to the metadata.
    const keyRefused = await rawPost('tak_not-a-key');
    expect(keyRefused.status).toBe(401);
    expect(keyRefused.headers.get('www-authenticate')).toBe(
      `Bearer realm="agent-api", scope="${SCOPE}", resource_metadata="${METADATA_URL}"`,
    );
    // The API key still works next to tokens.
    expect(await whoamiWith(proKey)).toMatchObject({ plan: 'Pro Intelligence', key: { label: 'rest key' } });
  });

  it('a genuine token without the scope is 403 insufficient_scope (RFC 6750 §3.1), not 401, and spends nothing', async () => {
    const usage = async () =>
      (bodyOf(await api.get('me')) as { usage: { month: { requests: number } } }).usage.month.requests;
    const before = await usage();
    for (const scope of ['openid profile', 'analytics:write']) {
      const response = await rawPost(await token({ scope }));
      expect(response.status, scope).toBe(403);
      const challenge = response.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer realm="agent-api", /);
      expect(challenge).toContain('error="insufficient_scope"');
      expect(challenge).toContain(`scope="${SCOPE}"`);
      expect(challenge).toContain(`resource_metadata="${METADATA_URL}"`);
      expect(await response.json()).toEqual({
        error: 'insufficient_scope',
        message: expect.stringContaining(SCOPE),
        scope: SCOPE,
      });
    }
    // Nothing reached a tool and nothing was spent (the /me before, this /me).
    expect(await usage()).toBe(before + 1);
    // The same user's token with the scope still works.
    expect(await whoamiWith(await token())).toMatchObject({ plan: 'Pro Intelligence' });
  });
});
