/**
 * The address guard (too_many_auth_failures) as an attacker meets it: once an address is blocked, every
 * path and protocol answers it the same 429 whatever the key (a difference would tell valid keys from
 * invalid ones), and the address it blocks is the client's as the configured trusted proxies report it:
 * a forged X-Forwarded-For neither escapes the block nor blocks somebody else.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../config.ts';
import { API, bodyOf, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

const AUTH_FAILURE_LIMIT = 3;
/** The proxy this deployment trusts (a CIDR and a single address, as an operator writes them). */
const PROXY = '10.1.2.3';
const config: Config = inProcessConfig('guard', {
  AUTH_FAILURE_LIMIT: String(AUTH_FAILURE_LIMIT),
  API_TRUST_PROXY: '10.1.0.0/16, 192.0.2.10',
});
const NOW_S = Math.floor(Date.now() / 1000);
const BAD_KEY = 'Bearer tak_not-a-real-key';

let api: TestApi;
let validKey: string;

beforeAll(async () => {
  const keys = await publishPlanKeys(config, NOW_S - 60);
  validKey = `Bearer ${keys.max}`;
  // A still clock: a block's retry_after stays the configured length (Max's burst covers every call here).
  api = await startTestApi(config, { now: () => NOW_S, keys, gatesClockMs: () => Date.UTC(2026, 10, 22) });
});

afterAll(async () => {
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
});

interface Probe {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  body?: unknown;
}

const rpc = (method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id: 1, method, params });
const initialize = rpc('initialize', {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'guard-test', version: '1' },
});

/** Every door a key opens: metered and free REST, unknown paths, each MCP method that needs no tool budget, and a tool call. */
const PROBES: Probe[] = [
  { method: 'GET', url: `${API}/me` },
  { method: 'GET', url: `${API}/openapi.json` },
  { method: 'GET', url: `${API}/no-such-endpoint` },
  { method: 'GET', url: `${API}/traders/0x${'12'.repeat(20)}` },
  { method: 'GET', url: '/no-such-path' },
  { method: 'POST', url: config.mcp.path, body: initialize },
  { method: 'POST', url: config.mcp.path, body: rpc('tools/list') },
  { method: 'POST', url: config.mcp.path, body: rpc('prompts/list') },
  {
    method: 'POST',
    url: config.mcp.path,
    body: rpc('prompts/get', { name: 'crack_this_trader', arguments: { trader: 'someone' } }),
  },
  { method: 'POST', url: config.mcp.path, body: rpc('tools/call', { name: 'whoami', arguments: {} }) },
  { method: 'GET', url: config.mcp.path },
];

function send(
  probe: Probe,
  options: { authorization?: string; peer: string; forwardedFor?: string },
): Promise<LightMyRequestResponse> {
  return api.app.inject({
    method: probe.method,
    url: probe.url,
    remoteAddress: options.peer,
    headers: {
      host: 'localhost',
      ...(options.authorization ? { authorization: options.authorization } : {}),
      ...(options.forwardedFor ? { 'x-forwarded-for': options.forwardedFor } : {}),
      ...(probe.body ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
    },
    ...(probe.body ? { payload: JSON.stringify(probe.body) } : {}),
  });
}

/** Fails authentication from an address until the guard blocks it (the limit-th failure is still a 401). */
async function block(peer: string, forwardedFor?: string): Promise<void> {
  for (let failure = 0; failure < config.gates.authFailures.limit; failure++) {
    const response = await send(
      { method: 'GET', url: `${API}/me` },
      { authorization: BAD_KEY, peer, ...(forwardedFor ? { forwardedFor } : {}) },
    );
    expect(response.statusCode).toBe(401);
  }
}

const isBlockedAnswer = (response: LightMyRequestResponse) => {
  expect(response.statusCode, `${response.statusCode} ${response.body.slice(0, 200)}`).toBe(429);
  expect(bodyOf(response)).toMatchObject({
    error: 'too_many_auth_failures',
    retry_after: config.gates.authFailures.blockSeconds,
  });
  expect(response.headers['retry-after']).toBe(String(config.gates.authFailures.blockSeconds));
};

describe('a blocked address', () => {
  it('gets the same 429 on every path and protocol, with a valid key, an invalid key or none', async () => {
    const attacker = '198.51.100.20';
    // Before the block, a valid key opens every door (so the 429s below are the block, not the probe).
    for (const probe of PROBES)
      expect(
        (await send(probe, { authorization: validKey, peer: attacker })).statusCode,
        `${probe.method} ${probe.url}`,
      ).not.toBe(429);
    await block(attacker);
    for (const probe of PROBES) {
      for (const authorization of [validKey, BAD_KEY, undefined]) {
        const response = await send(probe, { peer: attacker, ...(authorization ? { authorization } : {}) });
        isBlockedAnswer(response);
        // Identical answers: nothing in them tells a valid key from an invalid one.
        expect(bodyOf(response)).toEqual(bodyOf(await send(probe, { peer: attacker, authorization: BAD_KEY })));
      }
    }
    // Probes and the index stay open (a load balancer's health checks are no key test), and so does everyone else.
    expect((await send({ method: 'GET', url: '/healthz' }, { peer: attacker })).statusCode).toBe(200);
    expect((await send({ method: 'GET', url: '/' }, { peer: attacker })).statusCode).toBe(200);
    expect(
      (await send({ method: 'GET', url: `${API}/me` }, { authorization: validKey, peer: '198.51.100.21' })).statusCode,
    ).toBe(200);
  });
});

describe('the client address behind proxies (API_TRUST_PROXY)', () => {
  it('API_TRUST_PROXY=true is refused at start, with the reason', () => {
    const environment = testEnvironment(uniqueId('trust'), PROCESS_DATA_DIR, { API_TRUST_PROXY: 'true' });
    expect(() => parseConfig(environment)).toThrow(/API_TRUST_PROXY.*(spoof|forge)/i);
    for (const list of ['10.0.0.0/8', '10.0.0.1, 2001:db8::/32', 'loopback']) {
      expect(() => parseConfig({ ...environment, API_TRUST_PROXY: list }), list).not.toThrow();
    }
    expect(() => parseConfig({ ...environment, API_TRUST_PROXY: '10.0.0.0/99' })).toThrow(/API_TRUST_PROXY/);
    expect(() => parseConfig({ ...environment, API_TRUST_PROXY: 'not-an-address' })).toThrow(/API_TRUST_PROXY/);
    expect(parseConfig({ ...environment, API_TRUST_PROXY: '' }).http.trustProxy).toEqual([]);
    expect(parseConfig(testEnvironment(uniqueId('trust'), PROCESS_DATA_DIR)).http.trustProxy).toEqual([]);
  });

  it('from an untrusted peer, a rotating X-Forwarded-For does not escape the block', async () => {
    const attacker = '198.51.100.30';
    let rotation = 0;
    const forged = () => `203.0.113.${++rotation}`;
    for (let failure = 0; failure < config.gates.authFailures.limit; failure++) {
      expect(
        (
          await send(
            { method: 'GET', url: `${API}/me` },
            { authorization: BAD_KEY, peer: attacker, forwardedFor: forged() },
          )
        ).statusCode,
      ).toBe(401);
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      isBlockedAnswer(
        await send(
          { method: 'GET', url: `${API}/me` },
          { authorization: BAD_KEY, peer: attacker, forwardedFor: forged() },
        ),
      );
      isBlockedAnswer(
        await send(
          { method: 'GET', url: `${API}/me` },
          { authorization: validKey, peer: attacker, forwardedFor: `${forged()}, ${PROXY}` },
        ),
      );
    }
  });

  it('a forged X-Forwarded-For cannot get an innocent address blocked', async () => {
    const innocent = '203.0.113.200';
    // Directly, and through the trusted proxy (which appends the real peer: the forged entry stays on the left).
    await block('198.51.100.40', innocent);
    await block(PROXY, `${innocent}, 198.51.100.41`);
    expect(
      (await send({ method: 'GET', url: `${API}/me` }, { authorization: validKey, peer: innocent })).statusCode,
    ).toBe(200);
    expect(
      (
        await send(
          { method: 'GET', url: `${API}/me` },
          { authorization: validKey, peer: PROXY, forwardedFor: innocent },
        )
      ).statusCode,
    ).toBe(200);
    // The addresses that did fail are the blocked ones.
    isBlockedAnswer(
      await send({ method: 'GET', url: `${API}/me` }, { authorization: validKey, peer: '198.51.100.40' }),
    );
    isBlockedAnswer(
      await send(
        { method: 'GET', url: `${API}/me` },
        { authorization: validKey, peer: PROXY, forwardedFor: '198.51.100.41' },
      ),
    );
  });

  it('from a trusted proxy, the right-most untrusted hop is the client', async () => {
    const client = '198.51.100.50';
    // A chain of two trusted proxies (both in the list) in front of the client, with forged hops on the left.
    await block(PROXY, `203.0.113.77, ${client}, 192.0.2.10`);
    for (const forwardedFor of [client, `1.1.1.1, ${client}`, `203.0.113.78, ${client}, 192.0.2.10`]) {
      isBlockedAnswer(
        await send({ method: 'GET', url: `${API}/me` }, { authorization: validKey, peer: PROXY, forwardedFor }),
      );
    }
    // The trusted proxies themselves, and the forged hops, are not blocked.
    expect((await send({ method: 'GET', url: `${API}/me` }, { authorization: validKey, peer: PROXY })).statusCode).toBe(
      200,
    );
    expect(
      (
        await send(
          { method: 'GET', url: `${API}/me` },
          { authorization: validKey, peer: PROXY, forwardedFor: '203.0.113.77' },
        )
      ).statusCode,
    ).toBe(200);
  });
});
