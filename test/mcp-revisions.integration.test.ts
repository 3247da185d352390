/**
 * One endpoint, every supported protocol revision: clients of 2026-07-28 (the 2.x SDK's Client, pinned,
 * and in `auto` mode, which probes with server/discover), of 2025-11-25 (the 2.x Client's legacy default,
 * and the v1 SDK's Client) and of 2025-06-18 (the 2.x Client offering only that revision) talk to the
 * same /mcp with the same key. Each negotiates its own revision; all list the same tools and the same
 * prompt, get the same answers and the same refusals, and pay the same: one request per tool call,
 * nothing for connecting, discovery, listing and prompts (read back from /me).
 *
 * Arguments longer than any legitimate value (ARGUMENT_MAX_CHARS) are refused on every revision before
 * any store read (every store query is recorded), naming the argument, spending nothing; a 900 KB one is
 * over the body limit (413, nothing read) unless the limit is raised, and then the same refusal.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config, PlanId } from '../config.ts';
import { ARGUMENT_MAX_CHARS } from '../mcp/tools/arguments.ts';
import type { Store } from '../projections/store.ts';
import { createLogger } from '../log.ts';
import { withPublisher } from '../roles/runtime.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeWallet } from './factories.ts';
import { bodyOf, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { recordingQueries } from './harness/recorded-store.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are compared field by field

const DAY = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const config = inProcessConfig('mcp-revisions');
const alpha = makeWallet('revisions-alpha');
const traded = makeConditionId('revisions-traded');
const untraded = makeConditionId('revisions-untraded');

/** Every store query the app makes, in order (SQL text). */
const storeReads: string[] = [];
const recorded = (store: Store): Store => recordingQueries(store, storeReads);

/** What a test needs of a client, whichever SDK line it comes from. */
interface Session {
  revision: string | undefined;
  listTools(): Promise<Json[]>;
  listPrompts(): Promise<Json[]>;
  getPrompt(name: string, args: Record<string, string>): Promise<Json>;
  call(name: string, args?: Json): Promise<Json>;
  instructions(): string | undefined;
  close(): Promise<void>;
}

interface Revision {
  label: string;
  /** The revision the client must end up speaking. */
  expected: string;
  connect(url: URL, key: string): Promise<Session>;
}

function v2Session(client: ClientV2): Session {
  return {
    revision: client.getNegotiatedProtocolVersion(),
    listTools: async () => (await client.listTools()).tools as Json[],
    listPrompts: async () => (await client.listPrompts()).prompts as Json[],
    getPrompt: async (name, args) => (await client.getPrompt({ name, arguments: args })) as Json,
    call: async (name, args = {}) => (await client.callTool({ name, arguments: args })) as Json,
    instructions: () => client.getInstructions(),
    close: () => client.close(),
  };
}

function v2(label: string, expected: string, options: ConstructorParameters<typeof ClientV2>[1]): Revision {
  return {
    label,
    expected,
    async connect(url, key) {
      const client = new ClientV2({ name: `revisions-${label}`, version: '1.0.0' }, options);
      await client.connect(new TransportV2(url, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
      return v2Session(client);
    },
  };
}

const REVISIONS: Revision[] = [
  v2('2026-07-28', '2026-07-28', { versionNegotiation: { mode: { pin: '2026-07-28' } } }),
  v2('auto (server/discover)', '2026-07-28', { versionNegotiation: { mode: 'auto' } }),
  v2('2025-11-25', '2025-11-25', {}),
  v2('2025-06-18', '2025-06-18', { supportedProtocolVersions: ['2025-06-18'] }),
  {
    label: 'SDK v1 (2025-11-25)',
    expected: '2025-11-25',
    async connect(url, key) {
      const client = new ClientV1({ name: 'revisions-v1', version: '1.0.0' });
      const transport = new TransportV1(url, { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
      await client.connect(transport);
      return {
        revision: transport.protocolVersion,
        listTools: async () => (await client.listTools()).tools as Json[],
        listPrompts: async () => (await client.listPrompts()).prompts as Json[],
        getPrompt: async (name, args) => (await client.getPrompt({ name, arguments: args })) as Json,
        call: async (name, args = {}) => (await client.callTool({ name, arguments: args })) as Json,
        instructions: () => client.getInstructions(),
        close: () => client.close(),
      };
    },
  },
];

/** The gates' clock: 3 s per reading (no bucket or minute ever binds). */
let gatesMs = Date.UTC(2026, 10, 23);
const gatesClockMs = () => (gatesMs += 3000);
/** The key cache's clock, still: after its first lookup a key is never read from the store again. */
const authClockMs = () => Date.UTC(2026, 10, 23);

let keys: Record<PlanId, string>;
let api: TestApi;
let roomy: TestApi;
let mcpUrl: URL;
let roomyUrl: URL;
const sessions: Session[] = [];

async function listen(on: TestApi): Promise<URL> {
  await on.app.listen({ host: '127.0.0.1', port: 0 });
  return new URL(`http://127.0.0.1:${(on.app.server.address() as AddressInfo).port}${config.mcp.path}`);
}

async function open(revision: Revision, url = mcpUrl): Promise<Session> {
  const session = await revision.connect(url, keys.pro);
  sessions.push(session);
  return session;
}

const monthRequests = async () => (bodyOf(await api.get('me', { plan: 'pro' })) as Json).usage.month.requests as number;

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW - DAY);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('markets', [
      makeMarket({ condition_id: traded, title: 'Revisions market', title_start_ts: BASE_TS }),
      makeMarket({ condition_id: untraded, title_start_ts: BASE_TS }),
    ]);
    await publisher.publish('fillsArchive', [
      makeFill({
        wallet: alpha,
        condition_id: traded,
        side: 'BUY',
        token_side: 1,
        price: 0.4,
        size_tokens: 100,
        usd: 40,
        ts: BASE_TS + 100,
      }),
      makeFill({
        wallet: alpha,
        condition_id: traded,
        side: 'SELL',
        token_side: 1,
        price: 0.6,
        size_tokens: 50,
        usd: 30,
        ts: BASE_TS + 400,
      }),
    ]);
    // A profit curve: its points are [ts, pnl] tuples, which every client validates against the listed schema.
    await publisher.publish('upstreamEquity', [
      { wallet: alpha, ts: NOW - 5 * DAY, pnl_usd: 12 },
      { wallet: alpha, ts: NOW - DAY, pnl_usd: 30 },
    ]);
    await publisher.publish('upstreamStatus', [{ ts: NOW - 60, state: 'online', detail: '' }]);
  });
  api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs, authClockMs, wrapStore: recorded });
  mcpUrl = await listen(api);
  // The same service with a body limit above 900 KB: the argument bound, not the body limit, refuses.
  const roomyConfig: Config = { ...config, http: { ...config.http, bodyLimitBytes: 2 * 1024 * 1024 } };
  roomy = await startTestApi(roomyConfig, { now: () => NOW, keys, gatesClockMs, authClockMs, wrapStore: recorded });
  roomyUrl = await listen(roomy);
});

afterAll(async () => {
  await Promise.all(sessions.map((session) => session.close().catch(() => undefined)));
  await roomy?.close();
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
});

/** What a listing must agree on across revisions. */
const listedTool = (tool: Json) => ({
  name: tool.name,
  title: tool.title,
  description: tool.description,
  inputSchema: tool.inputSchema,
  outputSchema: tool.outputSchema,
  annotations: tool.annotations,
});

/** The calls every revision makes, with whether each counts (a refusal by the input schema does not). */
const CALLS: { name: string; args: Json; counts: boolean }[] = [
  { name: 'whoami', args: {}, counts: true },
  { name: 'get_trader_card', args: { trader: alpha }, counts: true },
  { name: 'get_market_summary', args: { trader: alpha, market: traded }, counts: true },
  { name: 'get_market_events', args: { trader: alpha, market: traded, points: 20 }, counts: true },
  { name: 'get_pnl_series', args: { trader: alpha }, counts: true },
  { name: 'get_chart_template', args: { kind: 'equity', theme: 'day' }, counts: true },
  { name: 'get_trader_card', args: { trader: '0x123' }, counts: true }, // 400 invalid_wallet: counts, as on REST
  { name: 'get_market_summary', args: { trader: alpha, market: untraded }, counts: true }, // 404 market_not_found
  { name: 'get_top_markets', args: { trader: alpha, n: 'many' }, counts: false }, // the input schema refuses
];

/** A result as the revisions must agree on it (whoami's usage moves with every call, so it is left out). */
function comparable(result: Json): Json {
  const structured = result.structuredContent as Json | undefined;
  const text = (result.content as Json[])[0]?.text as string;
  if (structured && 'usage' in structured)
    return { isError: result.isError ?? false, structured: { ...structured, usage: null } };
  return { isError: result.isError ?? false, structured, text };
}

describe('every supported revision on the one endpoint', () => {
  it('each client speaks its own revision; all list the same tools, prompt and instructions', async () => {
    let reference: { tools: Json[]; prompts: Json[]; instructions: string | undefined } | undefined;
    for (const revision of REVISIONS) {
      const session = await open(revision);
      expect(session.revision, revision.label).toBe(revision.expected);
      const tools = (await session.listTools())
        .map(listedTool)
        .sort((a, b) => String(a.name).localeCompare(String(b.name)));
      const prompts = await session.listPrompts();
      const listing = {
        tools,
        prompts: prompts.map((prompt) => ({
          name: prompt.name,
          description: prompt.description,
          arguments: prompt.arguments,
        })),
        instructions: session.instructions(),
      };
      expect(listing.tools.length).toBeGreaterThanOrEqual(13);
      expect(listing.instructions).toContain('upstream.pnl');
      if (!reference) reference = listing;
      else expect(listing, `${revision.label} lists what ${REVISIONS[0]!.label} lists`).toEqual(reference);
    }
  });

  it('the same calls give the same answers and cost the same on every revision: one request per tool call, listing and prompts free', async () => {
    let reference: Json[] | undefined;
    const counted = CALLS.filter((call) => call.counts).length;
    for (const revision of REVISIONS) {
      const before = await monthRequests();
      const session = await open(revision);
      await session.listTools();
      await session.listPrompts();
      const prompt = await session.getPrompt('crack_this_trader', { trader: 'AlphaWhale' });
      expect(JSON.stringify(prompt.messages)).toContain('AlphaWhale');
      const answers: Json[] = [];
      for (const call of CALLS) answers.push(comparable(await session.call(call.name, call.args)));
      // /me before, the counted calls, this /me.
      expect(await monthRequests(), revision.label).toBe(before + 1 + counted);

      const [me, card, summary, chart, pnl, template, invalidWallet, notFound, badArgument] = answers as [
        Json,
        Json,
        Json,
        Json,
        Json,
        Json,
        Json,
        Json,
        Json,
      ];
      expect(me.structured.plan).toBe(config.plans.pro.name);
      expect(card).toMatchObject({ isError: false, structured: { trader: { wallet: alpha } } });
      expect(summary).toMatchObject({ isError: false, structured: { market: { condition_id: traded } } });
      expect(chart.structured.fills).toHaveLength(2);
      // Validated by the client against the listed schema (a draft-07 validator on v1: closed tuples must not read as empty).
      expect(pnl.structured.series).toEqual([
        [NOW - 5 * DAY, 12],
        [NOW - DAY, 30],
      ]);
      expect(template).toMatchObject({ isError: false, structured: { kind: 'equity', format: 'html', theme: 'day' } });
      expect(invalidWallet).toMatchObject({ isError: true, structured: { error: 'invalid_wallet' } });
      expect(notFound).toMatchObject({ isError: true, structured: { error: 'market_not_found' } });
      expect(badArgument.isError).toBe(true);
      expect(badArgument.text).toMatch(/Input validation error/);
      if (!reference) reference = answers;
      else expect(answers, `${revision.label} answers what ${REVISIONS[0]!.label} answers`).toEqual(reference);
    }
  });

  it(`an argument over ${ARGUMENT_MAX_CHARS} characters is refused before any store read, naming it, and spends nothing`, async () => {
    const long = `0x${'a'.repeat(ARGUMENT_MAX_CHARS)}`;
    for (const revision of REVISIONS) {
      const session = await open(revision);
      const before = await monthRequests();
      storeReads.length = 0;
      const refused = await session.call('get_trader_card', { trader: long });
      const market = await session.call('get_market_summary', {
        trader: alpha,
        market: `0x${'b'.repeat(ARGUMENT_MAX_CHARS)}`,
      });
      expect(storeReads, `${revision.label}: no store read`).toEqual([]);
      expect(refused.isError, revision.label).toBe(true);
      expect((refused.content as Json[])[0]!.text).toMatch(/get_trader_card.*trader/s);
      expect(market.isError).toBe(true);
      expect((market.content as Json[])[0]!.text).toMatch(/market/);
      expect(await monthRequests(), `${revision.label}: nothing spent`).toBe(before + 1);
      // The recorder sees reads: the same call with a name of ordinary length looks the name up.
      storeReads.length = 0;
      const unknown = await session.call('get_trader_card', { trader: 'nobody-by-this-name' });
      expect(unknown).toMatchObject({ isError: true, structuredContent: { error: 'trader_not_found' } });
      expect(storeReads.length, revision.label).toBeGreaterThan(0);
    }
  });

  it('a 900 KB trader: over the body limit it is 413 before anything is read; under a raised limit, the argument bound refuses it the same way', async () => {
    const huge = 'x'.repeat(900 * 1024);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_trader_card', arguments: { trader: huge } },
    });
    const before = await monthRequests();
    storeReads.length = 0;
    const oversized = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.pro}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body,
    });
    expect(oversized.status).toBe(413);
    expect(await oversized.json()).toMatchObject({ error: 'bad_request' });
    expect(storeReads).toEqual([]);

    for (const revision of REVISIONS) {
      const session = await open(revision, roomyUrl);
      storeReads.length = 0;
      const refused = await session.call('get_trader_card', { trader: huge });
      expect(storeReads, `${revision.label}: no store read`).toEqual([]);
      expect(refused.isError, revision.label).toBe(true);
      expect((refused.content as Json[])[0]!.text).toMatch(/trader/);
      expect((refused.content as Json[])[0]!.text.length).toBeLessThan(2000);
    }
    expect(await monthRequests()).toBe(before + 1);
  });

  it('2026-07-28 on the wire: server/discover, the envelope and the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers are checked against the body; key, Host and costs as on 2025', async () => {
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const post = (body: Json, headers: Record<string, string | undefined> = {}) => {
      const all: Record<string, string | undefined> = {
        authorization: `Bearer ${keys.pro}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': body.method,
        ...(body.params?.name ? { 'mcp-name': body.params.name } : {}),
        ...headers,
      };
      return fetch(mcpUrl, {
        method: 'POST',
        headers: Object.fromEntries(
          Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== undefined),
        ),
        body: JSON.stringify(body),
      });
    };
    const call = (name: string, version = '2026-07-28') => ({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name, arguments: {}, _meta: { ...envelope, 'io.modelcontextprotocol/protocolVersion': version } },
    });
    const before = await monthRequests();

    // Discovery, without initialize: what the server speaks, its capabilities and instructions; free.
    const discover = await post({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope } });
    expect(discover.status).toBe(200);
    const discovered = ((await discover.json()) as Json).result as Json;
    expect(discovered.supportedVersions).toContain('2026-07-28');
    expect(discovered.capabilities).toHaveProperty('tools');
    expect(discovered.instructions).toContain('upstream.pnl');

    // A tool call on its own (stateless: no handshake before it), as JSON.
    const served = await post(call('whoami'));
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/application\/json/);
    const answer = (await served.json()) as Json;
    expect(answer).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      result: { structuredContent: { plan: config.plans.pro.name } },
    });

    // Headers that disagree with the body, or are missing, are refused before any tool runs.
    const refusals = [
      await post(call('whoami'), { 'mcp-method': 'tools/list' }),
      await post(call('whoami'), { 'mcp-name': 'get_trader_card' }),
      await post(call('whoami'), { 'mcp-method': undefined }),
      await post(call('whoami'), { 'mcp-protocol-version': undefined }),
    ];
    for (const refusal of refusals) {
      expect(refusal.status).toBe(400);
      expect(((await refusal.json()) as Json).error).toMatchObject({
        code: expect.any(Number),
        message: expect.stringMatching(/header/i),
      });
    }
    // A revision the endpoint does not serve: the SDK's unsupported-version error, naming what it serves.
    const unsupported = await post(call('whoami', '2099-01-01'), { 'mcp-protocol-version': '2099-01-01' });
    expect(unsupported.status).toBe(400);
    expect(JSON.stringify(await unsupported.json())).toContain('2026-07-28');

    // The same HTTP answers as every revision: no key is 401 with the scope, a foreign Host 403.
    const anonymous = await post(call('whoami'), { authorization: undefined });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe(`Bearer realm="agent-api", scope="${config.mcp.scope}"`);
    // (fetch cannot set Host: a plain request does.)
    const rebound = await new Promise<number>((resolve, reject) => {
      const body = JSON.stringify(call('whoami'));
      const request = http.request(
        {
          host: mcpUrl.hostname,
          port: mcpUrl.port,
          path: mcpUrl.pathname,
          method: 'POST',
          headers: {
            host: 'evil.example',
            authorization: `Bearer ${keys.pro}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/call',
            'mcp-name': 'whoami',
          },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      request.end(body);
    });
    expect(rebound).toBe(403);

    // Only the served whoami was spent (and this /me).
    expect(await monthRequests()).toBe(before + 1 + 1);
  });

  it('a foreign Origin is 403 on 2026-07-28 and on 2025-11-25 (with an allowed Host); the service’s own Origin is served', async () => {
    const before = await monthRequests();
    const withOrigin = (origin: string): Revision[] =>
      [
        ['2026-07-28', { versionNegotiation: { mode: { pin: '2026-07-28' } } }],
        ['2025-11-25', {}],
      ].map(([label, options]) => ({
        label: label as string,
        expected: label as string,
        async connect(url, key) {
          const client = new ClientV2({ name: `origin-${label}`, version: '1.0.0' }, options as never);
          await client.connect(
            new TransportV2(url, { requestInit: { headers: { Authorization: `Bearer ${key}`, Origin: origin } } }),
          );
          return v2Session(client);
        },
      }));
    for (const revision of withOrigin('https://evil.example')) {
      await expect(revision.connect(mcpUrl, keys.pro), revision.label).rejects.toThrow(/403|Invalid Origin/);
    }
    // The raw answer: 403 with a JSON-RPC error naming the Origin, before the key is even looked at.
    const refused = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.pro}`,
        origin: 'http://localhost:1',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Json).error.message).toMatch(/Invalid Origin header: http:\/\/localhost:1/);
    // A page served by this very host (Origin = the address the request reached) talks as any client.
    for (const revision of withOrigin(mcpUrl.origin)) {
      const session = await open(revision);
      expect(session.revision, revision.label).toBe(revision.expected);
      expect((await session.call('whoami')).isError, revision.label).toBeFalsy();
    }
    expect(await monthRequests()).toBe(before + 2 + 1);
  });
});
