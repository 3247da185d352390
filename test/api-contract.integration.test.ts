/**
 * The REST contract, endpoint by endpoint, against a small data set built here by hand: every expected
 * value below is computed in this file from the events it publishes (plain arithmetic, or a plain
 * reference for series), never read back from the code under test. Every response the suite sees is
 * validated against the service's own /openapi.json, and the document itself against the OpenAPI 3.1
 * schema (a real validator).
 */
import { gunzipSync } from 'node:zlib';
import { Validator } from '@seriousme/openapi-schema-validator';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import {
  API,
  bodyOf,
  CONTRACT_PATHS,
  gatesNeverBind,
  inProcessConfig,
  OpenApiResponses,
  publishPlanKeys,
  slotsWatching,
  startTestApi,
  type TestApi,
} from './harness/api.ts';
import { CONTRACT_BANDS, contractWorld } from './harness/contract-world.ts';
import type { SlotStore } from '../operations/gates/slots.ts';

type Fill = EventInputOf<'fillsArchive'>;
type Trade = EventInputOf<'trades'>;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field

const DAY = 86_400;
/** The V1 → V2 exchange cut-over, a fact of the chain (docs/upstream.md), stated here rather than read from the code. */
const CUT_OVER_TS = Date.UTC(2026, 3, 28, 11, 15) / 1000;
// Whale accumulations live for a few days of wall-clock time (a TTL): "now" is the real now here.
const NOW = Math.floor(Date.now() / 1000);
const config = inProcessConfig('api-contract');

const {
  alpha,
  won,
  lost,
  openMarked,
  markets: sharedMarkets,
  alphaFills: sharedAlphaFills,
  trades: sharedTrades,
  alphaEquity,
} = contractWorld('contract', NOW);
const bravo = makeWallet('contract-bravo');
const stranger = makeWallet('contract-never-seen');
// On the chain (archive fills) but never reported on by the upstream provider.
const charlie = makeWallet('contract-archive-only');
const charlieMarket = makeConditionId('contract-archive-only');
const openUnmarked = makeConditionId('contract-unmarked');
const neverTraded = makeConditionId('contract-never-traded');

// Four markets in four time bands; alpha's last activity orders them unmarked, marked, lost, won.
const band = { ...CONTRACT_BANDS, unmarked: BASE_TS + 6000 };
const markets = [
  ...sharedMarkets,
  makeMarket({
    condition_id: openUnmarked,
    title: 'Fed cuts in March?',
    title_start_ts: band.unmarked,
    outcome1: 'Yes',
    outcome2: 'No',
  }),
  makeMarket({ condition_id: neverTraded, title: 'Nobody traded this', title_start_ts: band.unmarked }),
  makeMarket({ condition_id: charlieMarket, title: 'Only the chain knows', title_start_ts: band.won }),
];
const resolutions = { won: band.won + 900, lost: band.lost + 1200 };

const alphaFills: Fill[] = [
  ...sharedAlphaFills,
  makeFill({
    wallet: alpha,
    condition_id: openUnmarked,
    side: 'BUY',
    token_side: 2,
    price: 0.2,
    size_tokens: 10,
    usd: 2,
    ts: band.unmarked + 10,
  }),
];
// Charlie buys 40 Yes at 0.25 in a market Yes wins: 40 paid out for 10 spent.
const charlieFills: Fill[] = [
  makeFill({
    wallet: charlie,
    condition_id: charlieMarket,
    side: 'BUY',
    token_side: 1,
    price: 0.25,
    size_tokens: 40,
    usd: 10,
    ts: band.won + 200,
  }),
];
// Bravo accumulates Ducks recently: two buys, a pause longer than the burst gap, two more buys.
const whaleFills: Fill[] = [
  makeFill({
    wallet: bravo,
    condition_id: openMarked,
    side: 'BUY',
    token_side: 1,
    price: 0.5,
    size_tokens: 4000,
    usd: 2000,
    ts: NOW - 3000,
  }),
  makeFill({
    wallet: bravo,
    condition_id: openMarked,
    side: 'BUY',
    token_side: 1,
    price: 0.5,
    size_tokens: 4000,
    usd: 2000,
    ts: NOW - 2900,
  }),
  makeFill({
    wallet: bravo,
    condition_id: openMarked,
    side: 'BUY',
    token_side: 1,
    price: 0.6,
    size_tokens: 2500,
    usd: 1500,
    ts: NOW - 1000,
  }),
  makeFill({
    wallet: bravo,
    condition_id: openMarked,
    side: 'BUY',
    token_side: 1,
    price: 0.6,
    size_tokens: 2500,
    usd: 1500,
    ts: NOW - 900,
  }),
];

// The shared prints (contract-world.ts) and more, in time order: in `won` a third print in the same
// 5-second bucket as the first two, and runs of prints a second apart.
let seq = sharedTrades.length;
const trade = (conditionId: string, ts: number, tokenSide: 1 | 2, price: number): Trade =>
  makeTrade({ condition_id: conditionId, ts, token_side: tokenSide, price, seq: ++seq });
const trades: Trade[] = [
  ...sharedTrades,
  trade(won, band.won + 13, 1, 0.45),
  trade(won, band.won + 101, 1, 0.4),
  trade(won, band.won + 102, 1, 0.4),
  trade(won, band.won + 641, 1, 0.93),
].sort((a, b) => a.ts - b.ts || a.seq - b.seq);

// Alpha's equity: the shared points and a peak half a day ago.
const equity = [...alphaEquity, { wallet: alpha, ts: NOW - 12 * 3600, pnl_usd: 80 }].sort((a, b) => a.ts - b.ts);
const alphaProfile: EventInputOf<'upstreamProfiles'> = {
  wallet: alpha,
  name: 'AlphaWhale',
  profile_image: 'https://example.com/alpha.png',
  pnl: 123.45,
  pnl_realized: 100,
  pnl_unrealized: 23.45,
  portfolio_value: 500,
  as_of: NOW - 120,
};

let api: TestApi;
let offlineApi: TestApi;
let slots: SlotStore;
let openapi: OpenApiResponses;
let document: Json;
let revokedKey: string;
let planKeys: Awaited<ReturnType<typeof publishPlanKeys>>;
const seen: { url: string; response: LightMyRequestResponse }[] = [];

async function get(
  url: string,
  options: Parameters<TestApi['get']>[1] = {},
  on: TestApi = api,
): Promise<LightMyRequestResponse> {
  const response = await on.get(url, options);
  seen.push({ url: url.startsWith('/') ? url : `${API}/${url}`, response });
  return response;
}

async function json(
  url: string,
  status = 200,
  options: Parameters<TestApi['get']>[1] = {},
  on: TestApi = api,
): Promise<Json> {
  const response = await get(url, options, on);
  expect(response.statusCode, `${url}: ${response.body.slice(0, 300)}`).toBe(status);
  return bodyOf(response) as Json;
}

beforeAll(async () => {
  const keys = (planKeys = await publishPlanKeys(config, NOW - DAY));
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('markets', markets);
    await publisher.publish('fillsArchive', [...alphaFills, ...whaleFills, ...charlieFills]);
    await publisher.publish('trades', trades);
    await publisher.publish('markets', [
      makeResolution(won, 1, resolutions.won, 'chain'),
      makeResolution(lost, 1, resolutions.lost, 'gamma'),
      makeResolution(charlieMarket, 1, resolutions.won),
    ]);
    await publisher.publish('upstreamProfiles', [
      alphaProfile,
      { ...alphaProfile, wallet: bravo, name: 'Bravo', pnl: 1, as_of: NOW - 100 },
    ]);
    await publisher.publish('upstreamEquity', equity);
    await publisher.publish('upstreamStatus', [{ ts: NOW - 60, state: 'online', detail: '' }]);
    // A key minted and then revoked.
    const minted = await import('../ingest/sources/accounts.ts').then(({ publishNewKey }) =>
      publishNewKey(publisher, 'test-pro', 'revoked key', NOW - DAY),
    );
    revokedKey = minted.plaintext;
    await publisher.publish('keys', [
      {
        key_id: minted.keyId,
        account_id: 'test-pro',
        key_sha256: minted.sha256,
        label: 'revoked key',
        last4: minted.last4,
        created_at: NOW - DAY,
        revoked_at: NOW - 10,
        version: NOW - 10,
      },
    ]);
  });
  // Live sessions watching alpha and bravo (the shelf's counts), held in the slot store the API reads.
  slots = await slotsWatching({ [alpha]: 5, [bravo]: 12 });
  api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind(), slots });
  // The same store read at a time when the upstream's last heartbeat is long stale: offline.
  offlineApi = await startTestApi(config, { now: () => NOW + 3600, keys, gatesClockMs: gatesNeverBind() });
  document = (await json('openapi.json')) as Json;
  openapi = new OpenApiResponses(document as ConstructorParameters<typeof OpenApiResponses>[0]);
});

afterAll(async () => {
  await offlineApi?.close();
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
  await slots?.close();
});

// ---------------------------------------------------------------------------------------------------
// Plain references

const up = (tokenSide: number, price: number) => (tokenSide === 1 ? price : Math.round((1 - price) * 1e10) / 1e10);

function rowsOf(list: readonly Trade[], fidelity: number): [number, number, number, number][] {
  const buckets = new Map<number, Trade[]>();
  for (const item of list) {
    const bucket = Math.floor(item.ts / fidelity) * fidelity;
    buckets.set(bucket, [...(buckets.get(bucket) ?? []), item]);
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => a - b)
    .map(([bucket, inBucket]) => {
      const last = [...inBucket].sort((a, b) => a.ts - b.ts || a.seq - b.seq).at(-1)!;
      const prices = inBucket.map((item) => up(item.token_side, item.price));
      return [bucket, up(last.token_side, last.price), Math.min(...prices), Math.max(...prices)];
    });
}

function changeOnly(rows: readonly [number, number, number, number][]): [number, number, number, number][] {
  return rows.filter((row, index) => index === 0 || row.slice(1).join() !== rows[index - 1]!.slice(1).join());
}

const tradesOf = (conditionId: string) => trades.filter((item) => item.condition_id === conditionId);

function marketFill(fill: Fill, outcomes: [string, string]) {
  return {
    ts: fill.ts,
    side: fill.side,
    price: up(fill.token_side, fill.price),
    token_side: fill.token_side,
    outcome: outcomes[fill.token_side - 1],
    size_tokens: fill.size_tokens,
    usd: fill.usd,
  };
}

// Alpha's per-market figures, by hand.
const wonPnl = 150 - (40 + 26); // 150 Up tokens at 1.00
const lostPnl = 15 - 50; // 150 No tokens left at 0.00
const markedValue = 80 * 0.6;
const alphaTrader = { wallet: alpha, name: 'AlphaWhale' };

const rowWon = {
  condition_id: won,
  title: 'Bitcoin Up or Down - January 4, 3:00PM-3:15PM ET',
  outcome: 'Up',
  resolved: true,
  winner: 'Up',
  resolution_source: 'chain',
  last_traded_at: band.won + 300,
  trader_last_action: 'BUY',
  last_price: 0.52,
  fills_count: 2,
  pnl_usd: wonPnl,
  open: false,
  volume_usd: 66,
};
const rowLost = {
  condition_id: lost,
  title: 'Will it rain in Paris?',
  outcome: 'Yes',
  resolved: true,
  winner: 'Yes',
  resolution_source: 'gamma',
  last_traded_at: band.lost + 950,
  trader_last_action: 'SELL',
  last_price: 0.7,
  fills_count: 2,
  pnl_usd: lostPnl,
  open: false,
  volume_usd: 65,
};
const rowMarked = {
  condition_id: openMarked,
  title: 'Ducks vs. Wild',
  outcome: 'Ducks',
  resolved: false,
  winner: null,
  last_traded_at: band.marked + 10,
  trader_last_action: 'BUY',
  last_price: 0.5,
  fills_count: 1,
  pnl_usd: -40,
  open: true,
  volume_usd: 40,
  market_value_usd: markedValue,
  pnl_marked_usd: markedValue - 40,
};
const rowUnmarked = {
  condition_id: openUnmarked,
  title: 'Fed cuts in March?',
  outcome: 'Yes',
  resolved: false,
  winner: null,
  last_traded_at: band.unmarked + 10,
  trader_last_action: 'BUY',
  last_price: 0.8,
  fills_count: 1,
  pnl_usd: -2,
  open: true,
  volume_usd: 2,
  market_value_usd: null,
  pnl_marked_usd: null,
};

/** Numbers compared to 9 decimals (sums of floats), everything else exactly. */
function approx(value: unknown): unknown {
  if (value && typeof value === 'object' && 'asymmetricMatch' in value) return value;
  if (typeof value === 'number' && !Number.isInteger(value)) return expect.closeTo(value, 9);
  if (Array.isArray(value)) return value.map(approx);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, approx(inner)]));
  return value;
}

// ---------------------------------------------------------------------------------------------------

describe('identity and budget', () => {
  it('/me states the plan, its limits and the calling key', async () => {
    for (const plan of ['basic', 'pro', 'max'] as PlanId[]) {
      const limits = config.plans[plan];
      const me = await json('me', 200, { plan });
      expect(me).toEqual({
        plan: limits.name,
        limits: {
          rps: limits.rps,
          burst: limits.burst,
          rpm: limits.rpm,
          daily_requests: limits.dailyRequests,
          monthly_requests: limits.monthlyRequests,
          max_keys: limits.maxKeys,
          live_slots: limits.liveSlots,
          history_depth: limits.historyDepth,
          records_live: plan !== 'basic',
          library_bytes: limits.libraryBytes,
        },
        usage: expect.objectContaining({
          window: expect.any(Object),
          day: expect.any(Object),
          month: expect.any(Object),
        }),
        key: { label: `${plan} key`, last4: api.keys[plan].slice(-4) },
      });
    }
    const basic = await json('me', 200, { plan: 'basic' });
    expect(basic.limits.monthly_requests).toBe(0);
    expect(basic.usage.day.cap).toBe(50);
  });

  it('401 for missing, unknown, malformed, revoked and query-string keys, all the same', async () => {
    const refusals = [
      await get('me', { authorization: null }),
      await get('me', { authorization: 'Bearer tak_0000000000000000000000000000000000000000' }),
      await get('me', { authorization: `Basic ${api.keys.pro}` }),
      await get('me', { authorization: `Bearer ${revokedKey}` }),
      await get(`me?api_key=${api.keys.pro}`, { authorization: null }),
    ];
    for (const response of refusals) {
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="agent-api"');
      expect(response.json()).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
    }
    expect(refusals[4]!.json().message).toMatch(/Authorization/);
  });
});

describe('traders', () => {
  it('the card: archive statistics and the upstream block; Cache-Control no-store', async () => {
    const response = await get(`traders/${alpha}`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(bodyOf(response)).toEqual(
      approx({
        trader: alphaTrader,
        card: {
          markets_total: 4,
          resolved_total: 2,
          winrate: 0.5,
          volume_usd: 66 + 65 + 40 + 2,
          first_seen: band.won + 100,
          last_seen: band.unmarked + 10,
          avg_entry_price: (40 + 26 + 50 + 40 + 2) / (100 + 50 + 200 + 80 + 10),
          avg_win_usd: wonPnl,
          avg_loss_usd: lostPnl,
          open_value_usd: markedValue,
          open_markets: 2,
          unmarked_markets: 1,
          marked_at: band.marked + 20,
          // No archive has indexed the V1 era here, and the operator did not include it.
          coverage: { eras: ['v2'], v2_start_ts: CUT_OVER_TS },
        },
        upstream: {
          pnl: 123.45,
          pnl_realized: 100,
          pnl_unrealized: 23.45,
          portfolio_value: 500,
          peak: 80,
          low: 10,
          max_drawdown: 20, // 50 → 30, and 80 → 60
          profile_image: 'https://example.com/alpha.png',
          as_of: NOW - 120,
        },
        // Ours: the won and lost markets' results, the marked market at 0.60 less its 40, the unmarked one's
        // 2 paid for tokens without a mark: 84 − 35 + 8 − 2 = 55. Two open markets, one of them unmarked; the
        // provider's curve and figures are after every fill.
        reconciliation: {
          provider_pnl_usd: 123.45,
          pnl_usd: wonPnl + lostPnl + (markedValue - 40) - 2,
          gap_usd: 123.45 - 55,
          gap_ratio: (123.45 - 55) / 123.45,
          compared_eras: ['v2'],
          explained: ['open_positions_marked', 'unmarked_positions'],
        },
      }),
    );
    expect(wonPnl + lostPnl + (markedValue - 40) - 2).toBeCloseTo(55, 9);
  });

  it('accepts a wallet in any case, both profile URLs and the display name, and echoes the canonical identity', async () => {
    for (const identifier of [
      alpha.toUpperCase().replace('0X', '0x'),
      `https://polymarket.com/profile/${alpha}`,
      'https://polymarket.com/@AlphaWhale',
      'alphawhale',
    ]) {
      const card = await json(`traders/${encodeURIComponent(identifier)}`);
      expect(card.trader).toEqual(alphaTrader);
    }
  });

  it('a valid unknown wallet is a zeroed card; a wrong-length 0x is invalid_wallet; an unknown name is trader_not_found', async () => {
    const card = await json(`traders/${stranger}`);
    expect(card.trader).toEqual({ wallet: stranger, name: '' });
    expect(card.card).toMatchObject({
      markets_total: 0,
      resolved_total: 0,
      winrate: null,
      volume_usd: 0,
      open_markets: 0,
      open_value_usd: 0,
    });
    // Never reported on by the provider (online): its form for "cannot answer", with the archive's figures.
    expect(card.upstream).toEqual({ status: 'upstream_offline' });
    expect(card.card).toMatchObject({ career_pnl_usd: 0, pnl_marked_usd: 0 });
    for (const bad of ['0x123', `${alpha}0`, '0xZZZZ']) {
      expect(await json(`traders/${bad}`, 400)).toMatchObject({ error: 'invalid_wallet', message: expect.any(String) });
    }
    expect(await json('traders/no-such-trader-anywhere', 404)).toMatchObject({ error: 'trader_not_found' });
  });

  it('an archive-only wallet (no upstream profile, the provider online): the offline form, never zeros dated now', async () => {
    const card = await json(`traders/${charlie}`);
    expect(card.upstream).toEqual({ status: 'upstream_offline' });
    expect(card.card).toMatchObject({ markets_total: 1, resolved_total: 1, winrate: 1, volume_usd: 10 });
    // Realized: the 40 Yes paid 1 each, for 10 spent; nothing open, so the marked figure is the same.
    expect(card.card.career_pnl_usd).toBeCloseTo(40 - 10, 9);
    expect(card.card.pnl_marked_usd).toBeCloseTo(40 - 10, 9);
  });

  it('upstream offline: the card still serves, with the archive profit figures', async () => {
    const card = await json(`traders/${alpha}`, 200, {}, offlineApi);
    expect(card.upstream).toEqual({ status: 'upstream_offline' });
    expect(card.card.career_pnl_usd).toBeCloseTo(wonPnl + lostPnl, 9);
    // realized + open cash flow (−40 − 2) + open holdings at their marks
    expect(card.card.pnl_marked_usd).toBeCloseTo(wonPnl + lostPnl - 42 + markedValue, 9);
  });

  it('/popular: watched traders, most watched first', async () => {
    expect(await json('popular')).toEqual({
      traders: [
        { wallet: bravo, name: 'Bravo', watching: 12 },
        { wallet: alpha, name: 'AlphaWhale', watching: 5 },
      ],
      count: 2,
    });
  });
});

describe('markets', () => {
  it('the markets list: recency order, every field, marks on open rows only', async () => {
    const list = await json(`traders/${alpha}/markets`);
    expect(list).toEqual(
      approx({ trader: alphaTrader, markets: [rowUnmarked, rowMarked, rowLost, rowWon], next_cursor: null }),
    );
    for (const row of list.markets.filter((market: Json) => market.resolved)) {
      expect(row).not.toHaveProperty('market_value_usd');
      expect(row).not.toHaveProperty('pnl_marked_usd');
    }
  });

  it('pages with any limit return every row once, in order; a forged cursor is page 1; a malformed one bad_cursor', async () => {
    const expected = [openUnmarked, openMarked, lost, won];
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), async (limit) => {
        const ids: string[] = [];
        let cursor: string | null = null;
        do {
          const page: Json = await json(`traders/${alpha}/markets?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
          expect(page.markets.length).toBeLessThanOrEqual(limit);
          ids.push(...page.markets.map((row: Json) => row.condition_id));
          cursor = page.next_cursor;
        } while (cursor);
        expect(ids).toEqual(expected);
      }),
      { numRuns: 8 },
    );
    const first = await json(`traders/${alpha}/markets?limit=1`);
    const [payload, tag] = (first.next_cursor as string).split('.') as [string, string];
    const forgedTag = `${tag.slice(0, -2)}${tag.endsWith('AA') ? 'BA' : 'AA'}`;
    expect((await json(`traders/${alpha}/markets?limit=1&cursor=${payload}.${forgedTag}`)).markets).toEqual(
      first.markets,
    );
    expect(await json(`traders/${alpha}/markets?cursor=not-a-cursor`, 400)).toMatchObject({ error: 'bad_cursor' });
    expect(await json(`traders/${alpha}/markets?cursor=${payload.slice(0, -3)}.${tag}`, 400)).toMatchObject({
      error: 'bad_cursor',
    });
    // A genuine cursor of another endpoint, or of another trader.
    expect(await json(`traders/${alpha}/fills?cursor=${first.next_cursor}`, 400)).toMatchObject({
      error: 'bad_cursor',
    });
    expect(await json(`traders/${bravo}/markets?cursor=${first.next_cursor}`, 400)).toMatchObject({
      error: 'bad_cursor',
    });
  });

  it('limit: 0 is bad_limit, above the maximum is clamped, a non-integer is 422 with the detail body', async () => {
    expect(await json(`traders/${alpha}/markets?limit=0`, 400)).toMatchObject({
      error: 'bad_limit',
      message: expect.any(String),
    });
    expect(await json(`traders/${alpha}/markets?limit=-3`, 400)).toMatchObject({ error: 'bad_limit' });
    expect((await json(`traders/${alpha}/markets?limit=999999`)).markets).toHaveLength(4);
    const invalid = await json(`traders/${alpha}/markets?limit=ten`, 422);
    expect(invalid).toEqual({
      detail: [
        expect.objectContaining({
          loc: ['query', 'limit'],
          msg: expect.any(String),
          type: expect.any(String),
          input: 'ten',
        }),
      ],
    });
  });

  it('top markets: wins and losses over resolved markets only, fills and volume over all; n clamped', async () => {
    const top = await json(`traders/${alpha}/top-markets`);
    expect(top).toEqual(
      approx({
        trader: alphaTrader,
        top_wins: [rowWon],
        top_losses: [rowLost],
        // fills: 2, 2, 1, 1 (ties: most recent first)
        most_traded: [rowLost, rowWon, rowUnmarked, rowMarked],
        top_volume: [rowWon, rowLost, rowMarked, rowUnmarked],
        note: expect.any(String),
      }),
    );
    const one = await json(`traders/${alpha}/top-markets?n=0`);
    expect(one.most_traded).toHaveLength(1);
    expect((await json(`traders/${alpha}/top-markets?n=500`)).most_traded).toHaveLength(4);
    expect(await json(`traders/${alpha}/top-markets?n=abc`, 422)).toHaveProperty('detail');
  });

  it('a 304 on a real route consumes one call, like the 200 it stands for', async () => {
    const metered = await startTestApi(config, {
      now: () => NOW,
      keys: planKeys,
      gatesClockMs: () => Date.UTC(2026, 10, 22, 12),
    });
    try {
      const url = `traders/${alpha}/markets/${lost}/summary`;
      const first = await metered.get(url);
      expect(first.statusCode).toBe(200);
      expect((await metered.get(url, { headers: { 'if-none-match': first.headers.etag as string } })).statusCode).toBe(
        304,
      );
      const me = bodyOf(await metered.get('me')) as { usage: { month: { requests: number } } };
      expect(me.usage.month.requests).toBe(3);
    } finally {
      await metered.close();
    }
  });

  it('summary of a resolved market: every figure, sides, a strong ETag and 304', async () => {
    const url = `traders/${alpha}/markets/${lost}/summary`;
    const response = await get(url);
    expect(response.statusCode).toBe(200);
    const holdUntilResolution = resolutions.lost - (band.lost + 50);
    expect(bodyOf(response)).toEqual(
      approx({
        market: {
          condition_id: lost,
          title: 'Will it rain in Paris?',
          outcome: 'Yes',
          outcome2: 'No',
          resolved: true,
          winner: 'Yes',
          resolution_source: 'gamma',
          pnl_usd: lostPnl,
          open: false,
        },
        summary: {
          fills_count: 2,
          buy_count: 1,
          sell_count: 1,
          buy_usd: 50,
          sell_usd: 15,
          avg_entry_price: 0.75, // a No buy at 0.25 is Yes at 0.75
          size_p50_usd: 15,
          size_p90_usd: 50,
          size_max_usd: 50,
          first_fill_ts: band.lost + 50,
          last_fill_ts: band.lost + 950,
          hold_seconds: holdUntilResolution, // still held 150 No tokens when it resolved
          usd_share_first_tenth: 50 / 65,
          usd_share_last_tenth: 15 / 65,
          pnl_usd: lostPnl,
          roi: lostPnl / 50,
          won: false,
          open: false,
          sides: [
            {
              token_side: 1,
              outcome: 'Yes',
              buy_count: 0,
              sell_count: 0,
              buy_usd: 0,
              sell_usd: 0,
              avg_entry: null,
              net_tokens: 0,
            },
            {
              token_side: 2,
              outcome: 'No',
              buy_count: 1,
              sell_count: 1,
              buy_usd: 50,
              sell_usd: 15,
              avg_entry: 0.25,
              net_tokens: 150,
            },
          ],
        },
        trader: alphaTrader,
      }),
    );
    const etag = response.headers.etag as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(response.headers['cache-control']).toContain('immutable');
    const again = await get(url, { headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
    expect((await get(url, { headers: { 'if-none-match': '"something-else"' } })).statusCode).toBe(200);
  });

  it('summary of an open market is cached briefly and carries no ETag', async () => {
    const response = await get(`traders/${alpha}/markets/${openMarked}/summary`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe(`private, max-age=${config.api.openMarketMaxAgeSeconds}`);
    expect(response.headers.etag).toBeUndefined();
    expect((bodyOf(response) as Json).summary).toMatchObject({ won: null, open: true, pnl_usd: -40 });
  });

  it('market ids: malformed is invalid_condition_id; unknown or never traded is market_not_found', async () => {
    expect(await json(`traders/${alpha}/markets/0xabc/summary`, 400)).toMatchObject({ error: 'invalid_condition_id' });
    expect(await json(`traders/${alpha}/markets/${makeConditionId('contract-unknown')}/summary`, 404)).toMatchObject({
      error: 'market_not_found',
    });
    expect(await json(`traders/${alpha}/markets/${neverTraded}`, 404)).toMatchObject({ error: 'market_not_found' });
    expect(await json(`traders/${bravo}/markets/${won}/tape`, 404)).toMatchObject({ error: 'market_not_found' });
  });
});

describe('prices', () => {
  const wonOutcomes: [string, string] = ['Up', 'Down'];

  it('sampled chart: window from the title start, the finest rung that fits, real levels, complete fills, ETag', async () => {
    const url = `traders/${alpha}/markets/${won}`;
    const response = await get(url);
    expect(response.statusCode).toBe(200);
    const chart = bodyOf(response) as Json;
    // [title start, resolution] is 901 seconds: 5-second buckets are the finest that fit 300 points.
    expect(chart.series).toEqual({
      from_ts: band.won,
      to_ts: resolutions.won,
      fidelity: 5,
      points: rowsOf(tradesOf(won), 5),
    });
    expect(chart.market).toMatchObject({
      condition_id: won,
      resolved: true,
      winner: 'Up',
      outcome: 'Up',
      outcome2: 'Down',
    });
    expect(chart.trader).toEqual(alphaTrader);
    expect(chart.fills).toEqual(
      alphaFills.filter((fill) => fill.condition_id === won).map((fill) => marketFill(fill, wonOutcomes)),
    );
    expect(response.headers.etag).toBeDefined();
    expect((await get(url, { headers: { 'if-none-match': response.headers.etag as string } })).statusCode).toBe(304);

    // A small budget: coarser buckets, never more points than asked; fills stay complete.
    const small = await json(`${url}?points=20&from_ts=${band.won}&to_ts=${band.won + 700}`);
    expect(small.series.fidelity).toBe(60);
    expect(small.series.points).toEqual(rowsOf(tradesOf(won), 60));
    expect(small.fills).toHaveLength(2);
    expect((await json(`${url}?points=5`)).series.points.length).toBeLessThanOrEqual(20);
    // A forced resolution snaps up to the ladder.
    expect((await json(`${url}?resolution=10`)).series.fidelity).toBe(15);
    expect(await json(`${url}?points=many`, 422)).toHaveProperty('detail');
    // A window before the epoch (the fuzz tests found it) is the epoch's first second, not an error.
    expect((await json(`${url}?from_ts=-100&to_ts=-5`)).series).toMatchObject({ from_ts: 0, to_ts: 0, points: [] });
  });

  it('raw ticks: keyset pages from a window start, every trade once', async () => {
    const url = `traders/${alpha}/markets/${won}?raw=1&limit=2&window=${band.won + 13}`;
    const expected = tradesOf(won)
      .filter((item) => item.ts >= band.won + 13)
      .sort((a, b) => a.ts - b.ts || a.seq - b.seq)
      .map((item) => ({ ts: item.ts, price: up(item.token_side, item.price) }));
    const ticks: Json[] = [];
    let page = await json(url);
    expect(page).toMatchObject({ window: band.won + 13, limit: 2, cursor: null });
    ticks.push(...page.ticks);
    while (page.next_cursor) {
      page = await json(`traders/${alpha}/markets/${won}?raw=1&limit=2&cursor=${page.next_cursor}`);
      expect(page.window).toBe(band.won + 13);
      ticks.push(...page.ticks);
    }
    expect(ticks).toEqual(expected);
    expect(await json(`traders/${alpha}/markets/${won}?raw=1&limit=0`, 400)).toMatchObject({ error: 'bad_limit' });
    expect(await json(`traders/${alpha}/markets/${won}?raw=maybe`, 422)).toHaveProperty('detail');
  });

  it('full tape: gzip, complete, change-only, pinned at the winner; ETag and 304', async () => {
    const url = `traders/${alpha}/markets/${won}/tape`;
    const response = await get(url);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-encoding']).toBe('gzip');
    const tape = JSON.parse(gunzipSync(response.rawPayload).toString('utf8')) as Json;
    expect(tape.market).toMatchObject({ condition_id: won, resolved: true });
    expect(tape.trader).toEqual(alphaTrader);
    expect(tape.tape).toEqual([...changeOnly(rowsOf(tradesOf(won), 1)), [resolutions.won, 1, 1, 1]]);
    const etag = response.headers.etag as string;
    expect((await get(url, { headers: { 'if-none-match': etag } })).statusCode).toBe(304);
    // An open market's tape is cached briefly, no ETag.
    const open = await get(`traders/${alpha}/markets/${openMarked}/tape`);
    expect(open.headers.etag).toBeUndefined();
    expect((bodyOf(open) as Json).tape).toEqual(changeOnly(rowsOf(tradesOf(openMarked), 1)));
  });
});

describe('equity', () => {
  it('pnl-series: windows cut at the right instants, peak, low and drawdown', async () => {
    const all = await json(`traders/${alpha}/pnl-series`);
    expect(all).toEqual({
      trader: alphaTrader,
      window: 'all',
      model: 'upstream_profile',
      series: equity.map((point) => [point.ts, point.pnl_usd]),
      peak: 80,
      low: 10,
      max_drawdown: 20,
      as_of: NOW - 120,
    });
    const week = await json(`traders/${alpha}/pnl-series?window=7d`);
    expect(week.series).toEqual([
      [NOW - 3 * DAY, 30],
      [NOW - 12 * 3600, 80],
      [NOW - 3600, 60],
    ]);
    expect(week).toMatchObject({ peak: 80, low: 30, max_drawdown: 20 });
    const day = await json(`traders/${alpha}/pnl-series?window=24h`);
    expect(day).toMatchObject({
      series: [
        [NOW - 12 * 3600, 80],
        [NOW - 3600, 60],
      ],
      peak: 80,
      low: 60,
      max_drawdown: 20,
    });
    expect(await json(`traders/${alpha}/pnl-series?window=2w`, 422)).toMatchObject({
      detail: [expect.objectContaining({ loc: ['query', 'window'] })],
    });
  });

  it('503 upstream_offline when the upstream is down', async () => {
    expect(await json(`traders/${alpha}/pnl-series`, 503, {}, offlineApi)).toEqual({
      error: 'upstream_offline',
      status: 'upstream_offline',
      message: expect.any(String),
    });
  });

  it('503 upstream_offline for a wallet the provider never reported on, the provider online (no curve stated as its)', async () => {
    for (const wallet of [charlie, stranger]) {
      const body = await json(`traders/${wallet}/pnl-series`, 503);
      expect(body).toEqual({ error: 'upstream_offline', status: 'upstream_offline', message: expect.any(String) });
      expect(body.message).toMatch(/not reported on this trader/);
    }
    // The provider's reported wallet still gets its curve from the same online API.
    expect((await json(`traders/${alpha}/pnl-series`)).series.length).toBeGreaterThan(0);
  });
});

describe('fills and whales', () => {
  const titles: Record<string, [string, string, string]> = {
    [won]: ['Bitcoin Up or Down - January 4, 3:00PM-3:15PM ET', 'Up', 'Down'],
    [lost]: ['Will it rain in Paris?', 'Yes', 'No'],
    [openMarked]: ['Ducks vs. Wild', 'Ducks', 'Wild'],
    [openUnmarked]: ['Fed cuts in March?', 'Yes', 'No'],
  };
  const expectedFills = [...alphaFills]
    .sort((a, b) => a.ts - b.ts)
    .map((fill) => {
      const [title, outcome1, outcome2] = titles[fill.condition_id]!;
      return { condition_id: fill.condition_id, title, ...marketFill(fill, [outcome1, outcome2]) };
    });

  it('fills: chronological, every field, since inclusive, paging with any limit returns each once', async () => {
    expect(await json(`traders/${alpha}/fills`)).toEqual({
      trader: alphaTrader,
      fills: expectedFills,
      next_cursor: null,
    });
    const since = band.lost + 950;
    expect((await json(`traders/${alpha}/fills?since=${since}`)).fills).toEqual(
      expectedFills.filter((fill) => fill.ts >= since),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 7 }), async (limit) => {
        const fills: Json[] = [];
        let cursor: string | null = null;
        do {
          const page: Json = await json(`traders/${alpha}/fills?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
          fills.push(...page.fills);
          cursor = page.next_cursor;
        } while (cursor);
        expect(fills).toEqual(expectedFills);
      }),
      { numRuns: 8 },
    );
    expect(await json(`traders/${alpha}/fills?limit=0`, 400)).toMatchObject({ error: 'bad_limit' });
    expect(await json(`traders/${alpha}/fills?since=yesterday`, 422)).toHaveProperty('detail');
  });

  it('whale flow: bursts since the last pause, window totals, the coverage clamp', async () => {
    const row = {
      wallet: bravo,
      name: 'Bravo',
      condition_id: openMarked,
      title: 'Ducks vs. Wild',
      token_side: 1,
      outcome: 'Ducks',
      burst_usd: 3000, // the two buys after the pause of 1,900 s
      burst_started_at: NOW - 1000,
      burst_fills: 2,
      window_usd: 7000,
      window_fills: 4,
      avg_price: (0.5 * 8000 + 0.6 * 5000) / 13000,
      last_fill_at: NOW - 900,
      last_price: 0.6,
    };
    const flow = await json('flow/whales?min_usd=2500');
    expect(flow).toEqual(
      approx({
        rows: [row],
        count: 1,
        by: 'burst',
        window_h: 24,
        min_usd: 2500,
        burst_gap_s: config.whales.burstGapSeconds,
        coverage: { exact_above_usd: config.whales.exactAboveUsd, as_of: NOW - 900 },
      }),
    );
    // Default min_usd (10,000) is above both figures; by=window ranks the 7,000 total.
    expect((await json('flow/whales')).rows).toEqual([]);
    expect((await json('flow/whales?by=window&min_usd=5000')).rows).toEqual([approx(row)]);
    expect((await json('flow/whales?min_usd=5000')).rows).toEqual([]);
    // min_usd is clamped up to the coverage threshold.
    expect((await json('flow/whales?min_usd=10')).min_usd).toBe(config.whales.exactAboveUsd);
    // A window that ends before the burst: nothing live.
    expect((await json('flow/whales?window_h=0&min_usd=1000')).window_h).toBe(1);
    expect(await json('flow/whales?by=loudest', 422)).toHaveProperty('detail');
    expect(await json('flow/whales?limit=0', 400)).toMatchObject({ error: 'bad_limit' });
  });
});

describe('OpenAPI', () => {
  it('is OpenAPI 3.1.0, version 1.0.0, valid per the OpenAPI 3.1 schema, and lists every endpoint', async () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.0.0');
    const result = await new Validator().validate(document as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const paths = Object.keys(document.paths).map((path) => path.replace(API, ''));
    for (const path of CONTRACT_PATHS) {
      expect(paths).toContain(path);
    }
  });

  it('every response seen in this suite validates against the document', () => {
    expect(seen.length).toBeGreaterThan(50);
    for (const { url, response } of seen) openapi.check(url, response);
    const statuses = new Set(openapi.checked.map((entry) => entry.split(' ').at(-1)));
    for (const status of ['200', '304', '400', '401', '404', '422', '503']) expect(statuses).toContain(status);
  });
});
