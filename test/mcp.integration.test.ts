/**
 * The MCP surface (read-api.md, Tool-protocol surface) against the running service: the app listens on
 * a real port and the SDK's own Client talks to /mcp over streamable HTTP with a bearer key. Every tool
 * answer is checked against its listed output schema (Ajv) and against the REST twin's answer for the
 * same arguments; walls and errors come back as isError results carrying the REST body; the budget is
 * read back from /me under a gates clock the test controls.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config, PlanId } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeWallet } from './factories.ts';
import {
  API,
  bodyOf,
  inProcessConfig,
  publishPlanKeys,
  slotsWatching,
  startTestApi,
  type TestApi,
} from './harness/api.ts';
import { CONTRACT_BANDS, contractWorld } from './harness/contract-world.ts';
import type { SlotStore } from '../operations/gates/slots.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are compared field by field

const DAY = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const config = inProcessConfig('mcp');

/** The tools of the tool table that exist now (the tape and chart-template tools come with their issues). */
const TOOLS: Record<string, { properties: string[]; required: string[] }> = {
  whoami: { properties: [], required: [] },
  list_popular_traders: { properties: [], required: [] },
  get_trader_card: { properties: ['trader', 'as_of'], required: ['trader'] },
  get_trader_skill: { properties: ['trader', 'as_of'], required: ['trader'] },
  list_skilled_traders: {
    properties: ['by', 'window', 'distinguishable_from_luck', 'as_of', 'cursor', 'limit'],
    required: [],
  },
  get_top_markets: { properties: ['trader', 'n', 'as_of'], required: ['trader'] },
  list_trader_markets: { properties: ['trader', 'cursor', 'limit', 'as_of'], required: ['trader'] },
  get_market_summary: { properties: ['trader', 'market', 'as_of'], required: ['trader', 'market'] },
  get_market_events: {
    properties: ['trader', 'market', 'points', 'from_ts', 'to_ts', 'resolution'],
    required: ['trader', 'market'],
  },
  get_pnl_series: { properties: ['trader', 'window'], required: ['trader'] },
  get_recent_fills: { properties: ['trader', 'since', 'cursor', 'limit'], required: ['trader'] },
  get_chart_template: { properties: ['kind', 'format', 'theme'], required: [] },
  list_tapes: { properties: ['wallet'], required: [] },
  get_tape_summary: { properties: ['tape_id'], required: ['tape_id'] },
  get_tape_events: { properties: ['tape_id', 'cursor', 'types', 'limit'], required: ['tape_id'] },
};

const world = contractWorld('mcp', NOW);
const { alpha, won, lost, openMarked } = world;
const bravo = makeWallet('mcp-bravo');
const deep = makeWallet('mcp-deep');
const strangers = [makeWallet('mcp-stranger-1'), makeWallet('mcp-stranger-2')] as const;
const neverTraded = makeConditionId('mcp-never-traded');
const band = CONTRACT_BANDS;
const markets = [
  ...world.markets,
  makeMarket({ condition_id: neverTraded, title: 'Nobody traded this', title_start_ts: band.marked }),
];
const fills = [
  ...world.alphaFills,
  makeFill({
    wallet: bravo,
    condition_id: openMarked,
    side: 'BUY',
    token_side: 1,
    price: 0.55,
    size_tokens: 100,
    usd: 55,
    ts: band.marked + 12,
  }),
];
// A trader with more markets than Basic's history depth: the oldest is behind the depth wall.
const deepMarkets = Array.from({ length: config.plans.basic.historyDepth + 1 }, (_, index) =>
  makeConditionId(`mcp-deep-${index}`),
);
const deepFills = deepMarkets.map((conditionId, index) =>
  makeFill({
    wallet: deep,
    condition_id: conditionId,
    side: 'BUY',
    token_side: 1,
    price: 0.5,
    size_tokens: 10,
    usd: 5,
    ts: BASE_TS + 10_000 + index * 100,
  }),
);
const profile = (wallet: string, name: string, pnl: number): EventInputOf<'upstreamProfiles'> => ({
  wallet,
  name,
  profile_image: `https://example.com/${name}.png`,
  pnl,
  pnl_realized: pnl - 10,
  pnl_unrealized: 10,
  portfolio_value: 500,
  as_of: NOW - 120,
});

/** The gates' clock: every admission moves it `step` ms on (3 s: the bucket and the minute never bind on any plan). */
const clock = { ms: Date.UTC(2026, 10, 22), step: 3000 };
const nextUtcDay = () => {
  clock.ms = (Math.floor(clock.ms / (DAY * 1000)) + 1) * DAY * 1000;
};

let keys: Record<PlanId, string>;
let api: TestApi;
let offlineApi: TestApi;
let slots: SlotStore;
let mcpUrl: URL;
let offlineMcpUrl: URL;
const clients: Client[] = [];

async function listen(on: TestApi): Promise<URL> {
  await on.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = on.app.server.address() as AddressInfo;
  return new URL(`http://127.0.0.1:${port}${config.mcp.path}`);
}

async function connect(plan: PlanId, url = mcpUrl): Promise<Client> {
  const client = new Client({ name: 'mcp-integration-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${keys[plan]}` } } }),
  );
  clients.push(client);
  return client;
}

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW - DAY);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('markets', markets);
    await publisher.publish('fillsArchive', [...fills, ...deepFills]);
    await publisher.publish('trades', world.trades);
    await publisher.publish('markets', [
      makeResolution(won, 1, band.won + 900),
      makeResolution(lost, 1, band.lost + 1200),
    ]);
    await publisher.publish('upstreamProfiles', [profile(alpha, 'AlphaWhale', 123.45), profile(bravo, 'Bravo', 1)]);
    await publisher.publish('upstreamEquity', world.alphaEquity);
    await publisher.publish('upstreamStatus', [{ ts: NOW - 60, state: 'online', detail: '' }]);
  });
  // Live sessions watching alpha and bravo: the shelf both protocols answer carries their counts.
  slots = await slotsWatching({ [alpha]: 5, [bravo]: 12 });
  api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: () => (clock.ms += clock.step), slots });
  mcpUrl = await listen(api);
  // The same store read when the upstream's last heartbeat is long stale: offline.
  offlineApi = await startTestApi(config, {
    now: () => NOW + 3600,
    keys,
    gatesClockMs: () => (clock.ms += clock.step),
  });
  offlineMcpUrl = await listen(offlineApi);
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await offlineApi?.close();
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
  await slots?.close();
});

// ---------------------------------------------------------------------------------------------------

// The SDK (2.x) lists schemas in JSON Schema 2020-12.
const ajv = new Ajv2020({ strict: false, allErrors: true });
const validators = new Map<string, { success: ValidateFunction; error: ValidateFunction; listed: ValidateFunction }>();

function validatorsOf(tool: Tool) {
  let found = validators.get(tool.name);
  if (!found) {
    const schema = tool.outputSchema as Json;
    found = { listed: ajv.compile(schema), success: ajv.compile(schema.anyOf[0]), error: ajv.compile(schema.anyOf[1]) };
    validators.set(tool.name, found);
  }
  return found;
}

let listedTools: Tool[] = [];

/** A listed tool (listed once; the first test checks the list itself). */
async function listed(name: string): Promise<Tool> {
  if (listedTools.length === 0) listedTools = (await (await connect('max')).listTools()).tools;
  const tool = listedTools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`${name} is not listed`);
  return tool;
}

async function rest(url: string, plan: PlanId, on: TestApi = api): Promise<{ status: number; body: Json }> {
  const response = await on.get(url, { plan });
  return { status: response.statusCode, body: bodyOf(response) as Json };
}

/** A tool call whose result must be a success: its structuredContent, checked against the listed schema. */
async function ok(client: Client, name: string, args: Json = {}): Promise<Json> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, `${name}: ${JSON.stringify(result.content).slice(0, 300)}`).toBeFalsy();
  const structured = result.structuredContent as Json;
  const { success, listed: asListed } = validatorsOf(await listed(name));
  expect(success(structured), `${name}: ${ajv.errorsText(success.errors)}`).toBe(true);
  expect(asListed(structured)).toBe(true);
  // Returned twice: the text is the same JSON.
  expect(result.content).toHaveLength(1);
  expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(structured);
  return structured;
}

/** A tool call whose result must be a refusal: isError, the REST message as text, the REST body as structuredContent. */
async function refused(client: Client, name: string, args: Json = {}): Promise<Json> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, `${name} should be refused`).toBe(true);
  const structured = result.structuredContent as Json;
  expect(structured).toMatchObject({ error: expect.any(String), message: expect.any(String) });
  expect(result.content).toEqual([{ type: 'text', text: structured.message }]);
  const validate = validatorsOf(await listed(name));
  expect(validate.error(structured)).toBe(true);
  expect(validate.listed(structured)).toBe(true);
  return structured;
}

function rawRequest(
  method: string,
  options: { host?: string; authorization?: string; body?: unknown; path?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: mcpUrl.hostname,
        port: mcpUrl.port,
        path: options.path ?? mcpUrl.pathname,
        method,
        headers: {
          ...(options.host ? { host: options.host } : {}),
          ...(options.authorization ? { authorization: options.authorization } : {}),
          ...(payload ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

const rpc = (method: string, params: Json = {}, id = 1) => ({ jsonrpc: '2.0', id, method, params });
const initialize = rpc('initialize', {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'raw', version: '1' },
});

// ---------------------------------------------------------------------------------------------------

describe('the tool surface', () => {
  it('lists exactly the tools of the table that exist now, read-only, with input and output schemas; and the prompt', async () => {
    const client = await connect('max');
    expect(client.getServerVersion()).toMatchObject({ name: 'trader-analytics' });
    expect(client.getInstructions()).toContain('upstream.pnl');
    listedTools = (await client.listTools()).tools;
    expect(listedTools.map((tool) => tool.name).sort()).toEqual(Object.keys(TOOLS).sort());
    for (const tool of listedTools) {
      const expected = TOOLS[tool.name]!;
      expect(Object.keys(tool.inputSchema.properties ?? {}).sort(), tool.name).toEqual([...expected.properties].sort());
      expect([...(tool.inputSchema.required ?? [])].sort(), tool.name).toEqual([...expected.required].sort());
      expect(tool.annotations).toMatchObject({
        readOnlyHint: true,
        openWorldHint: false,
        destructiveHint: false,
        idempotentHint: true,
      });
      expect(tool.description!.length, tool.name).toBeGreaterThan(80);
      expect(tool.description, tool.name).toMatch(/1 request/);
      // The REST 200 body, or the contract's error body (SDK v1 clients validate isError results too).
      const output = tool.outputSchema as Json;
      expect(output.type).toBe('object');
      expect(output.anyOf).toHaveLength(2);
      expect(output.anyOf[1]).toMatchObject({ required: ['error', 'message'] });
      validatorsOf(tool);
    }
    const card = listedTools.find((tool) => tool.name === 'get_trader_card')!;
    expect(card.description).toContain('upstream.pnl');
    expect(listedTools.find((tool) => tool.name === 'list_trader_markets')!.description).toMatch(/small limit/);

    const { prompts } = await client.listPrompts();
    expect(prompts.map((prompt) => prompt.name)).toEqual(['crack_this_trader']);
    expect(prompts[0]!.arguments).toEqual([expect.objectContaining({ name: 'trader', required: true })]);
    const prompt = await client.getPrompt({ name: 'crack_this_trader', arguments: { trader: 'AlphaWhale' } });
    const text = (prompt.messages[0]!.content as { text: string }).text;
    for (const step of [
      'whoami',
      'get_trader_card',
      'get_top_markets',
      'get_trader_skill',
      'list_skilled_traders',
      'get_market_summary',
      'Verdict',
      'get_chart_template',
      'upstream.pnl',
      'pnl_marked_usd',
      'split-seller',
      'AlphaWhale',
    ]) {
      expect(text).toContain(step);
    }
  });

  it('every tool answers what its REST twin answers for the same arguments', async () => {
    const client = await connect('max');
    const same = async (name: string, args: Json, url: string) => {
      const structured = await ok(client, name, args);
      const twin = await rest(url, 'max');
      expect(twin.status, url).toBe(200);
      expect(structured, `${name} vs ${url}`).toEqual(twin.body);
      return structured;
    };

    const me = await ok(client, 'whoami');
    const restMe = await rest('me', 'max');
    expect({ ...me, usage: null }).toEqual({ ...restMe.body, usage: null });
    expect(restMe.body.usage.month.requests).toBe(me.usage.month.requests + 1);

    expect((await same('list_popular_traders', {}, 'popular')).traders).toEqual([
      { wallet: bravo, name: 'Bravo', watching: 12 },
      { wallet: alpha, name: 'AlphaWhale', watching: 5 },
    ]);
    const card = await same('get_trader_card', { trader: alpha }, `traders/${alpha}`);
    expect(card.upstream.pnl).toBe(123.45);
    expect((await ok(client, 'get_trader_card', { trader: 'AlphaWhale' })).trader).toEqual({
      wallet: alpha,
      name: 'AlphaWhale',
    });
    await same('get_trader_card', { trader: strangers[0] }, `traders/${strangers[0]}`);

    await same('get_top_markets', { trader: alpha }, `traders/${alpha}/top-markets`);
    await same('get_trader_skill', { trader: alpha }, `traders/${alpha}/skill`);
    await same('list_skilled_traders', { by: 'pnl' }, 'leaderboard?by=pnl');
    await same(
      'list_skilled_traders',
      { by: 'pnl', as_of: BASE_TS + 3000 },
      `leaderboard?by=pnl&as_of=${BASE_TS + 3000}`,
    );
    await same('get_top_markets', { trader: alpha, n: 1 }, `traders/${alpha}/top-markets?n=1`);

    const first = await same('list_trader_markets', { trader: alpha, limit: 1 }, `traders/${alpha}/markets?limit=1`);
    expect(first.markets).toHaveLength(1);
    expect(first.next_cursor).toEqual(expect.any(String));
    // The cursors are the REST cursors: either transport continues the other's paging.
    const second = await same(
      'list_trader_markets',
      { trader: alpha, limit: 1, cursor: first.next_cursor },
      `traders/${alpha}/markets?limit=1&cursor=${first.next_cursor}`,
    );
    expect(second.markets[0].condition_id).not.toBe(first.markets[0].condition_id);
    await same('list_trader_markets', { trader: alpha }, `traders/${alpha}/markets`);

    const summary = await same(
      'get_market_summary',
      { trader: alpha, market: lost },
      `traders/${alpha}/markets/${lost}/summary`,
    );
    expect(summary.market).toMatchObject({ condition_id: lost, resolved: true });
    await same(
      'get_market_summary',
      { trader: alpha, market: openMarked.toUpperCase().replace('0X', '0x') },
      `traders/${alpha}/markets/${openMarked}/summary`,
    );

    const chart = await same('get_market_events', { trader: alpha, market: won }, `traders/${alpha}/markets/${won}`);
    expect(chart.fills).toHaveLength(2);
    await same(
      'get_market_events',
      { trader: alpha, market: won, points: 20, from_ts: band.won, to_ts: band.won + 700, resolution: 30 },
      `traders/${alpha}/markets/${won}?points=20&from_ts=${band.won}&to_ts=${band.won + 700}&resolution=30`,
    );

    await same('get_pnl_series', { trader: alpha }, `traders/${alpha}/pnl-series`);
    const week = await same('get_pnl_series', { trader: alpha, window: '7d' }, `traders/${alpha}/pnl-series?window=7d`);
    expect(week.series).toEqual([
      [NOW - 3 * DAY, 30],
      [NOW - 3600, 60],
    ]);

    await same('get_recent_fills', { trader: alpha }, `traders/${alpha}/fills`);
    const page = await same(
      'get_recent_fills',
      { trader: alpha, since: band.won + 300, limit: 2 },
      `traders/${alpha}/fills?since=${band.won + 300}&limit=2`,
    );
    expect(page.fills).toHaveLength(2);
    await same(
      'get_recent_fills',
      { trader: alpha, cursor: page.next_cursor, limit: 2 },
      `traders/${alpha}/fills?cursor=${page.next_cursor}&limit=2`,
    );
  });

  it('contract errors come back as isError results with the REST body, never as protocol errors', async () => {
    const client = await connect('max');
    const sameRefusal = async (
      name: string,
      args: Json,
      url: string,
      status: number,
      code: string,
      on: { client: Client; api: TestApi } = { client, api },
    ) => {
      const structured = await refused(on.client, name, args);
      const twin = await rest(url, 'max', on.api);
      expect(twin.status, url).toBe(status);
      expect(structured).toEqual(twin.body);
      expect(structured.error).toBe(code);
    };
    await sameRefusal('get_trader_card', { trader: '0x123' }, 'traders/0x123', 400, 'invalid_wallet');
    await sameRefusal(
      'get_trader_card',
      { trader: 'no-such-trader-anywhere' },
      'traders/no-such-trader-anywhere',
      404,
      'trader_not_found',
    );
    await sameRefusal(
      'get_market_summary',
      { trader: alpha, market: '0xabc' },
      `traders/${alpha}/markets/0xabc/summary`,
      400,
      'invalid_condition_id',
    );
    await sameRefusal(
      'get_market_summary',
      { trader: alpha, market: neverTraded },
      `traders/${alpha}/markets/${neverTraded}/summary`,
      404,
      'market_not_found',
    );
    await sameRefusal(
      'get_market_events',
      { trader: bravo, market: won },
      `traders/${bravo}/markets/${won}`,
      404,
      'market_not_found',
    );
    await sameRefusal(
      'list_trader_markets',
      { trader: alpha, limit: 0 },
      `traders/${alpha}/markets?limit=0`,
      400,
      'bad_limit',
    );
    await sameRefusal(
      'get_recent_fills',
      { trader: alpha, cursor: 'not-a-cursor' },
      `traders/${alpha}/fills?cursor=not-a-cursor`,
      400,
      'bad_cursor',
    );
    const offline = await connect('max', offlineMcpUrl);
    await sameRefusal('get_pnl_series', { trader: alpha }, `traders/${alpha}/pnl-series`, 503, 'upstream_offline', {
      client: offline,
      api: offlineApi,
    });
    // The card still serves while the upstream is offline.
    expect((await ok(offline, 'get_trader_card', { trader: alpha })).upstream).toEqual({ status: 'upstream_offline' });
  });
});

describe('a wallet the upstream provider never reported on', () => {
  it('get_trader_card: the upstream block in its offline form and the archive fallback figures, as over REST', async () => {
    const client = await connect('max');
    const card = await ok(client, 'get_trader_card', { trader: deep });
    expect(card).toEqual((await rest(`traders/${deep}`, 'max')).body);
    // No upstream profile, the provider online: never zeros dated now, the form of an unreachable provider.
    expect(card.upstream).toEqual({ status: 'upstream_offline' });
    // One open, unmarked buy of 5 USD per market and nothing resolved: no realized result, the cash spent.
    expect(card.card).toMatchObject({
      markets_total: deepMarkets.length,
      open_markets: deepMarkets.length,
      unmarked_markets: deepMarkets.length,
      career_pnl_usd: 0,
      pnl_marked_usd: -5 * deepMarkets.length,
    });
  });
});

describe('the budget', () => {
  const monthRequests = async (plan: PlanId) => (await rest('me', plan)).body.usage.month.requests as number;

  it('each tool call is one request; connecting, listing tools and prompts and getting the prompt are free', async () => {
    const before = await monthRequests('pro');
    const client = await connect('pro');
    await client.listTools();
    await client.listPrompts();
    await client.getPrompt({ name: 'crack_this_trader', arguments: { trader: alpha } });
    expect(await monthRequests('pro')).toBe(before + 1); // the /me itself

    const calls = [
      () => ok(client, 'get_trader_card', { trader: alpha }),
      () => ok(client, 'list_popular_traders'),
      () => ok(client, 'get_market_summary', { trader: alpha, market: won }),
      () => refused(client, 'get_market_summary', { trader: alpha, market: neverTraded }), // a 404 counts, as on REST
      () => ok(client, 'get_recent_fills', { trader: alpha, limit: 1 }),
    ];
    for (const call of calls) await call();
    const me = await ok(client, 'whoami');
    // whoami states the usage after itself.
    expect(me.usage.month).toEqual({ requests: before + 1 + calls.length + 1, cap: config.plans.pro.monthlyRequests });
    await client.listTools();
    expect(await monthRequests('pro')).toBe(before + 1 + calls.length + 1 + 1);
  });

  it("arguments that fail a tool's input schema are refused by the SDK before the gates: isError, nothing spent", async () => {
    const client = await connect('pro');
    const before = await monthRequests('pro');
    const result = (await client.callTool({
      name: 'get_top_markets',
      arguments: { trader: alpha, n: 'many' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect((result.content[0] as { text: string }).text).toMatch(/Input validation error/);
    expect(
      (await client.callTool({ name: 'get_pnl_series', arguments: { trader: alpha, window: '2w' } })).isError,
    ).toBe(true);
    expect((await client.callTool({ name: 'get_trader_card', arguments: {} })).isError).toBe(true);
    expect(await monthRequests('pro')).toBe(before + 1);
    // Numbers sent as text are read as numbers, like REST query parameters.
    expect((await ok(client, 'get_top_markets', { trader: alpha, n: '1' })).most_traded).toHaveLength(1);
  });

  it("Basic: N calls spend N of the day; the 4th distinct wallet is wallet_quota with REST's message and extras", async () => {
    nextUtcDay();
    const dayStart = clock.ms;
    const client = await connect('basic');
    await client.listTools();
    const { limits } = (await ok(client, 'whoami')) as { limits: { daily_requests: number } };
    expect(limits.daily_requests).toBe(config.plans.basic.dailyRequests);
    const cap = config.plans.basic.distinctWalletsPerDay;
    const wallets = [alpha, bravo, strangers[0], strangers[1]];
    for (const wallet of wallets.slice(0, cap)) await ok(client, 'get_trader_card', { trader: wallet });
    await ok(client, 'get_top_markets', { trader: alpha, n: 1 }); // a counted wallet again: free of the cap
    const quota = await refused(client, 'get_trader_card', { trader: wallets[cap] });
    const resetsAt = new Date(dayStart + DAY * 1000).toISOString().replace('.000Z', 'Z');
    expect(quota).toEqual({
      error: 'wallet_quota',
      message: expect.any(String),
      used: cap,
      limit: cap,
      resets_at: resetsAt,
    });
    expect(quota).not.toHaveProperty('retry_after');
    // REST gives the same body for the same read.
    const twin = await rest(`traders/${wallets[cap]}`, 'basic');
    expect(twin.status).toBe(403);
    expect(twin.body).toEqual(quota);
    // whoami, cap trader cards, the top markets, the wall (403 walls count) and the REST twin, then this /me.
    const me = await rest('me', 'basic');
    expect(me.body.usage.day).toEqual({ requests: 1 + cap + 1 + 1 + 1 + 1, cap: config.plans.basic.dailyRequests });
    expect(me.body.usage.month).toEqual({ requests: 0, cap: 0 });
  });

  it('Basic: a market beyond the history depth is depth_gated, as on REST', async () => {
    nextUtcDay();
    const client = await connect('basic');
    const oldest = deepMarkets[0]!;
    const gated = await refused(client, 'get_market_summary', { trader: deep, market: oldest });
    expect(gated.error).toBe('depth_gated');
    const twin = await rest(`traders/${deep}/markets/${oldest}/summary`, 'basic');
    expect(twin.status).toBe(403);
    expect(twin.body).toEqual(gated);
    await ok(client, 'get_market_summary', { trader: deep, market: deepMarkets.at(-1) });
    expect((await ok(client, 'list_trader_markets', { trader: deep })).markets).toHaveLength(
      config.plans.basic.historyDepth,
    );
  });

  it('Basic: past the burst a call is rate_limited (transient, with retry_after) and spends nothing', async () => {
    nextUtcDay();
    const client = await connect('basic');
    clock.step = 0;
    try {
      const { burst, rps } = config.plans.basic;
      for (let call = 0; call < burst; call++) await ok(client, 'whoami');
      const limited = await refused(client, 'whoami');
      const retryAfter = Math.ceil(1 / rps);
      expect(limited).toEqual({
        error: 'rate_limited',
        message: expect.stringContaining(`Retry in ${retryAfter} s`),
        retry_after: retryAfter,
      });
      clock.ms += 60_000;
      clock.step = 3000;
      expect((await ok(client, 'whoami')).usage.day.requests).toBe(burst + 1);
    } finally {
      clock.step = 3000;
    }
  });
});

describe('the HTTP surface', () => {
  it("a missing or invalid key is 401 with WWW-Authenticate (REST's, plus the scope a token needs); a key in the query string is never read", async () => {
    for (const authorization of [
      undefined,
      'Bearer tak_0000000000000000000000000000000000000000',
      `Basic ${keys.pro}`,
    ]) {
      const response = await rawRequest('POST', { body: initialize, ...(authorization ? { authorization } : {}) });
      expect(response.status).toBe(401);
      expect(response.headers['www-authenticate']).toBe(`Bearer realm="agent-api", scope="${config.mcp.scope}"`);
      expect(JSON.parse(response.body)).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
    }
    const inQuery = await rawRequest('POST', { body: initialize, path: `${mcpUrl.pathname}?api_key=${keys.pro}` });
    expect(inQuery.status).toBe(401);
    expect(JSON.parse(inQuery.body).message).toMatch(/Authorization/);
    const client = new Client({ name: 'no-key', version: '1' });
    await expect(client.connect(new StreamableHTTPClientTransport(mcpUrl))).rejects.toThrow();
  });

  it('failed authentications on MCP and REST count together toward too_many_auth_failures', async () => {
    const limit = 3;
    const strict: Config = {
      ...config,
      gates: { ...config.gates, authFailures: { ...config.gates.authFailures, limit } },
    };
    const guarded = await startTestApi(strict, { now: () => NOW, keys, gatesClockMs: () => clock.ms });
    try {
      const url = await listen(guarded);
      const post = (authorization: string) =>
        fetch(url, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify(initialize),
        });
      const bad = 'Bearer tak_1111111111111111111111111111111111111111';
      expect((await post(bad)).status).toBe(401);
      expect((await guarded.get('me', { authorization: bad })).statusCode).toBe(401);
      expect((await post(bad)).status).toBe(401); // the limit-th failure still gets its 401
      const blocked = await post(bad);
      expect(blocked.status).toBe(429);
      expect(blocked.headers.get('retry-after')).toBe(String(strict.gates.authFailures.blockSeconds));
      expect(await blocked.json()).toMatchObject({
        error: 'too_many_auth_failures',
        retry_after: strict.gates.authFailures.blockSeconds,
      });
      expect((await guarded.get('me', { authorization: bad })).statusCode).toBe(429);
      // A valid key from the blocked address gets the very same 429, already at connection (else the
      // difference would tell valid keys from invalid ones: test/address-guard.integration.test.ts).
      const withValidKey = await post(`Bearer ${keys.pro}`);
      expect(withValidKey.status).toBe(429);
      expect(await withValidKey.json()).toEqual(await (await post(bad)).json());
      await expect(connect('pro', url)).rejects.toThrow(/too_many_auth_failures/);
    } finally {
      await guarded.close();
    }
  });

  it('GET and DELETE answer 405 (stateless: no stream, no session)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await rawRequest(method, { authorization: `Bearer ${keys.pro}` });
      expect(response.status).toBe(405);
      expect(response.headers.allow).toBe('POST');
      expect(JSON.parse(response.body)).toEqual({
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Method not allowed.' },
        id: null,
      });
    }
  });

  it('DNS-rebinding protection: a foreign Host is refused with 403 and never reaches a tool; localhost with any port passes', async () => {
    const before = (await rest('me', 'pro')).body.usage.month.requests as number;
    const call = rpc('tools/call', { name: 'whoami', arguments: {} });
    for (const host of ['evil.example', `evil.example:${mcpUrl.port}`, `127.0.0.1.evil.example:${mcpUrl.port}`]) {
      const response = await rawRequest('POST', { host, authorization: `Bearer ${keys.pro}`, body: call });
      expect(response.status, host).toBe(403);
      expect(JSON.parse(response.body)).toMatchObject({
        jsonrpc: '2.0',
        error: { code: -32000, message: expect.stringContaining('Invalid Host') },
        id: null,
      });
    }
    expect((await rawRequest('GET', { host: 'evil.example' })).status).toBe(403);
    expect((await rest('me', 'pro')).body.usage.month.requests).toBe(before + 1);

    for (const host of [`localhost:${mcpUrl.port}`, 'localhost:1', `127.0.0.1:${mcpUrl.port}`]) {
      const response = await rawRequest('POST', { host, authorization: `Bearer ${keys.pro}`, body: call });
      expect(response.status, host).toBe(200);
      const answer = JSON.parse(response.body) as Json;
      expect(answer.result.structuredContent.plan).toBe(config.plans.pro.name);
    }
    expect((await rest('me', 'pro')).body.usage.month.requests).toBe(before + 1 + 3 + 1);
  });
});

describe('REST is unchanged by the MCP mount', () => {
  it('the OpenAPI document does not list /mcp', async () => {
    const document = (await rest('openapi.json', 'pro')).body;
    expect(Object.keys(document.paths).every((path) => path.startsWith(API))).toBe(true);
  });
});
