/**
 * The history-depth walls (read-api.md, Limits: History depth), Basic key against Pro key over the REST
 * routes: Basic reaches a trader's most recent markets only (as many as config says), in the markets
 * list's recency order (last activity DESC, then condition_id DESC). Market-scoped routes answer
 * 403 depth_gated beyond them and 404 market_not_found for a market the trader never traded; the
 * markets list, the top-markets slices and the fills are clamped to them; the card is not.
 *
 * Every expected value is computed here from the events this file publishes (the visible set by a plain
 * sort, the slices by plain arithmetic), never read back from the code under test. The gates are live:
 * a pinned gates clock moves 3 s per admission (never rate limited), and every test starts a new UTC day
 * (the Basic daily quota and its three distinct wallets per day stay unspent).
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import {
  API,
  bodyOf,
  inProcessConfig,
  OpenApiResponses,
  publishPlanKeys,
  startTestApi,
  type TestApi,
} from './harness/api.ts';

type Fill = EventInputOf<'fillsArchive'>;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field

const DAY = 86_400;
const NOW = BASE_TS + 30 * DAY;
const config = inProcessConfig('history-depth');
const DEPTH = config.plans.basic.historyDepth;
const B = BASE_TS;

// ---------------------------------------------------------------------------------------------------
// The data set

/** The main trader: seven markets, each last traded at its own time (m1 oldest … m7 most recent). */
const T = makeWallet('depth-main');
/** Another trader: m1 is its most recent market; its 5th and 6th most recent tie on time (condition_id decides). */
const O = makeWallet('depth-other');

const cid = (label: string) => makeConditionId(`depth-${label}`);
const m = [1, 2, 3, 4, 5, 6, 7].map((index) => cid(`m${index}`));
const [m1, m2, m3, m4, m5, m6, m7] = m as [string, string, string, string, string, string, string];
const [n1, n2, n3, n4] = ['n1', 'n2', 'n3', 'n4'].map(cid) as [string, string, string, string];
const neverTraded = cid('never-traded');
const unknownMarket = cid('unknown');

const WINNERS: Record<string, 1 | 2> = { [m1]: 1, [m2]: 2, [m3]: 1, [m4]: 2, [m6]: 1, [n1]: 1 };

const fill = (
  wallet: string,
  condition_id: string,
  side: 'BUY' | 'SELL',
  token_side: 1 | 2,
  price: number,
  size_tokens: number,
  ts: number,
): Fill =>
  makeFill({
    wallet,
    condition_id,
    side,
    token_side,
    price,
    size_tokens,
    usd: Math.round(price * size_tokens * 1e6) / 1e6,
    ts,
  });

const T_FILLS: Fill[] = [
  // m1 (token 1 won): the biggest win and the most fills, all old
  fill(T, m1, 'BUY', 1, 0.2, 1000, B + 100),
  fill(T, m1, 'BUY', 1, 0.25, 100, B + 200),
  fill(T, m1, 'SELL', 1, 0.5, 50, B + 300),
  fill(T, m1, 'BUY', 2, 0.7, 10, B + 400),
  fill(T, m1, 'BUY', 1, 0.3, 20, B + 500),
  fill(T, m1, 'SELL', 1, 0.6, 10, B + 1000),
  // m2 (token 2 won): the biggest loss and the biggest volume
  fill(T, m2, 'BUY', 1, 0.8, 2000, B + 1500),
  fill(T, m2, 'SELL', 1, 0.75, 100, B + 2000),
  // m3 (token 1 won): a small win
  fill(T, m3, 'BUY', 1, 0.5, 100, B + 2900),
  fill(T, m3, 'BUY', 1, 0.55, 20, B + 3000),
  // m4 (token 2 won): a small loss
  fill(T, m4, 'BUY', 1, 0.3, 100, B + 3800),
  fill(T, m4, 'SELL', 1, 0.2, 10, B + 3900),
  fill(T, m4, 'BUY', 1, 0.25, 40, B + 4000),
  // m5: open, three fills
  fill(T, m5, 'BUY', 2, 0.4, 50, B + 4700),
  fill(T, m5, 'BUY', 2, 0.45, 50, B + 4800),
  fill(T, m5, 'SELL', 2, 0.5, 20, B + 5000),
  // m6 (token 1 won): a win
  fill(T, m6, 'BUY', 1, 0.6, 10, B + 6000),
  // m7: open, the most recent
  fill(T, m7, 'BUY', 1, 0.35, 30, B + 6500),
  fill(T, m7, 'SELL', 1, 0.4, 10, B + 7000),
];

const TIE_TS = B + 800;
const O_FILLS: Fill[] = [
  fill(O, m1, 'BUY', 1, 0.3, 10, B + 9000),
  fill(O, n1, 'BUY', 1, 0.4, 10, B + 8500),
  fill(O, n2, 'BUY', 2, 0.5, 10, B + 8000),
  fill(O, n3, 'BUY', 1, 0.6, 10, B + 7500),
  fill(O, n4, 'BUY', 1, 0.45, 10, TIE_TS),
  fill(O, m7, 'BUY', 2, 0.55, 10, TIE_TS),
];

const ALL_MARKETS = [...m, n1, n2, n3, n4, neverTraded];
const OUTCOMES: [string, string] = ['Up', 'Down'];

// ---------------------------------------------------------------------------------------------------
// Plain references

interface RefMarket {
  condition_id: string;
  last_ts: number;
  fills_count: number;
  volume: number;
  resolved: boolean;
  pnl: number;
}

/** A wallet's markets from its fills, with plain arithmetic (no legs here: cash flow plus winning tokens held). */
function marketsOf(fills: readonly Fill[]): RefMarket[] {
  const byMarket = new Map<string, Fill[]>();
  for (const item of fills) byMarket.set(item.condition_id, [...(byMarket.get(item.condition_id) ?? []), item]);
  return [...byMarket.entries()].map(([condition_id, list]) => {
    const cash = list.reduce((sum, item) => sum + (item.side === 'SELL' ? item.usd : -item.usd), 0);
    const held = (side: 1 | 2) =>
      list
        .filter((item) => item.token_side === side)
        .reduce((sum, item) => sum + (item.side === 'BUY' ? item.size_tokens : -item.size_tokens), 0);
    const winner = WINNERS[condition_id];
    return {
      condition_id,
      last_ts: Math.max(...list.map((item) => item.ts)),
      fills_count: list.length,
      volume: list.reduce((sum, item) => sum + item.usd, 0),
      resolved: winner !== undefined,
      pnl: winner === undefined ? cash : cash + held(winner),
    };
  });
}

/** The markets list's order: most recent activity first, then condition_id descending. */
const byRecency = (a: RefMarket, b: RefMarket) =>
  b.last_ts - a.last_ts || (a.condition_id < b.condition_id ? 1 : a.condition_id > b.condition_id ? -1 : 0);
/** The slices' tie-break: most recent first, then condition_id ascending. */
const tieBreak = (a: RefMarket, b: RefMarket) =>
  b.last_ts - a.last_ts || (a.condition_id < b.condition_id ? -1 : a.condition_id > b.condition_id ? 1 : 0);

const recencyOf = (fills: readonly Fill[]) => marketsOf(fills).sort(byRecency);
const T_RECENT = recencyOf(T_FILLS).map((row) => row.condition_id);
const O_RECENT = recencyOf(O_FILLS).map((row) => row.condition_id);
const T_VISIBLE = T_RECENT.slice(0, DEPTH);
const T_GATED = T_RECENT.slice(DEPTH);
const O_VISIBLE = O_RECENT.slice(0, DEPTH);
const O_GATED = O_RECENT.slice(DEPTH);

function topOf(rows: readonly RefMarket[], n: number) {
  const ids = (list: RefMarket[]) => list.slice(0, n).map((row) => row.condition_id);
  return {
    top_wins: ids(rows.filter((row) => row.resolved && row.pnl > 0).sort((a, b) => b.pnl - a.pnl || tieBreak(a, b))),
    top_losses: ids(rows.filter((row) => row.resolved && row.pnl < 0).sort((a, b) => a.pnl - b.pnl || tieBreak(a, b))),
    most_traded: ids([...rows].sort((a, b) => b.fills_count - a.fills_count || tieBreak(a, b))),
    top_volume: ids([...rows].sort((a, b) => b.volume - a.volume || tieBreak(a, b))),
  };
}

const up = (item: Fill) => (item.token_side === 1 ? item.price : Math.round((1 - item.price) * 1e10) / 1e10);
/** The fills endpoint's rows of some fills, in (ts, condition_id) order (no two fills here share both). */
const fillRows = (fills: readonly Fill[]) =>
  [...fills]
    .sort((a, b) => a.ts - b.ts || (a.condition_id < b.condition_id ? -1 : 1))
    .map((item) => ({
      ts: item.ts,
      condition_id: item.condition_id,
      title: `Market ${item.condition_id.slice(0, 10)}`,
      side: item.side,
      price: up(item),
      token_side: item.token_side,
      outcome: OUTCOMES[item.token_side - 1],
      size_tokens: item.size_tokens,
      usd: item.usd,
    }));

// ---------------------------------------------------------------------------------------------------
// The API

let api: TestApi;
let openapi: OpenApiResponses;
let document: Json;
let clockMs = Date.UTC(2026, 10, 22, 12);

async function get(url: string, plan: PlanId): Promise<LightMyRequestResponse> {
  const response = await api.get(url, { plan });
  openapi?.check(`${API}/${url}`, response);
  return response;
}

async function json(url: string, plan: PlanId, status = 200): Promise<Json> {
  const response = await get(url, plan);
  expect(response.statusCode, `${plan} ${url}: ${response.body.slice(0, 300)}`).toBe(status);
  return bodyOf(response) as Json;
}

/** The four market-scoped reads of one market. */
const marketUrls = (wallet: string, conditionId: string) => [
  `traders/${wallet}/markets/${conditionId}/summary`,
  `traders/${wallet}/markets/${conditionId}`,
  `traders/${wallet}/markets/${conditionId}?raw=1`,
  `traders/${wallet}/markets/${conditionId}/tape`,
];

async function pages(
  url: (cursor: string | null) => string,
  key: string,
  plan: PlanId,
): Promise<{ rows: Json[]; pages: number }> {
  const rows: Json[] = [];
  let cursor: string | null = null;
  let count = 0;
  do {
    const page: Json = await json(url(cursor), plan);
    rows.push(...page[key]);
    cursor = page.next_cursor;
    count += 1;
    expect(count, 'paging ends').toBeLessThan(50);
  } while (cursor);
  return { rows, pages: count };
}

beforeAll(async () => {
  const keys = await publishPlanKeys(config, NOW - DAY);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish(
      'markets',
      ALL_MARKETS.map((conditionId, index) =>
        makeMarket({
          condition_id: conditionId,
          title: `Market ${conditionId.slice(0, 10)}`,
          outcome1: OUTCOMES[0],
          outcome2: OUTCOMES[1],
          title_start_ts: B + index,
        }),
      ),
    );
    await publisher.publish('fillsArchive', [...T_FILLS, ...O_FILLS]);
    let seq = 0;
    await publisher.publish(
      'trades',
      [...T_FILLS, ...O_FILLS].map((item) =>
        makeTrade({
          condition_id: item.condition_id,
          token_side: item.token_side,
          price: item.price,
          ts: item.ts,
          seq: ++seq,
        }),
      ),
    );
    await publisher.publish(
      'markets',
      Object.entries(WINNERS).map(([conditionId, winner]) => makeResolution(conditionId, winner, B + 10_000)),
    );
  });
  api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: () => (clockMs += 3000) });
  document = (await json('openapi.json', 'pro')) as Json;
  openapi = new OpenApiResponses(document as ConstructorParameters<typeof OpenApiResponses>[0]);
});

// A new UTC day for every test: the Basic daily quota (50 calls) and its 3 distinct wallets start over.
beforeEach(() => {
  clockMs += DAY * 1000;
});

afterAll(async () => {
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
});

// ---------------------------------------------------------------------------------------------------

describe('the fixture', () => {
  it('has the shape the walls need (checked on the references, not the service)', () => {
    expect(DEPTH).toBeGreaterThanOrEqual(1);
    expect(T_RECENT).toEqual([m7, m6, m5, m4, m3, m2, m1]);
    expect(T_RECENT.length).toBeGreaterThan(DEPTH);
    expect(O_RECENT[0]).toBe(m1);
    // O's six markets are built around the configured depth of 5: its 5th and 6th most recent share
    // their last activity, so condition_id (descending) decides which one is visible.
    expect(DEPTH).toBe(5);
    expect(new Set([O_RECENT[4], O_RECENT[5]])).toEqual(new Set([n4, m7]));
    expect(O_RECENT[4]! > O_RECENT[5]!).toBe(true);
  });
});

describe('market-scoped routes', () => {
  it('Basic: the most recent markets are readable, older ones are 403 depth_gated, untraded ones 404', async () => {
    for (const conditionId of T_VISIBLE) {
      for (const url of marketUrls(T, conditionId)) await json(url, 'basic', 200);
    }
    for (const conditionId of T_GATED) {
      for (const url of marketUrls(T, conditionId)) {
        const body = await json(url, 'basic', 403);
        expect(body.error).toBe('depth_gated');
        expect(body.message).toContain(config.plans.basic.name);
        expect(body.message).toContain(config.plans.pro.name);
        expect(body.message).toContain(String(DEPTH));
        expect(body).not.toHaveProperty('retry_after');
      }
    }
    for (const conditionId of [neverTraded, unknownMarket]) {
      for (const url of marketUrls(T, conditionId))
        expect((await json(url, 'basic', 404)).error).toBe('market_not_found');
    }
  });

  it('Basic: the wall is per trader (the same market can be visible for one and gated for another; ties break like the list)', async () => {
    expect((await json(`traders/${O}/markets/${m1}/summary`, 'basic')).market.condition_id).toBe(m1);
    expect(T_GATED).toContain(m1);
    for (const conditionId of O_GATED) {
      for (const url of marketUrls(O, conditionId)) expect((await json(url, 'basic', 403)).error).toBe('depth_gated');
    }
    for (const url of marketUrls(O, O_VISIBLE[DEPTH - 1]!)) await json(url, 'basic', 200);
    // T's m2 is gated; O never traded it: not found, not gated.
    expect((await json(`traders/${O}/markets/${m2}/summary`, 'basic', 404)).error).toBe('market_not_found');
    expect((await json(`traders/${T}/markets/${m2}/summary`, 'basic', 403)).error).toBe('depth_gated');
  });

  it('Pro: every market the trader traded is readable; untraded ones stay 404', async () => {
    for (const conditionId of T_RECENT) {
      for (const url of marketUrls(T, conditionId)) await json(url, 'pro', 200);
    }
    for (const conditionId of O_GATED) await json(`traders/${O}/markets/${conditionId}/summary`, 'pro', 200);
    for (const url of marketUrls(T, neverTraded)) expect((await json(url, 'pro', 404)).error).toBe('market_not_found');
  });

  it('a gated market reads the same as on Pro once visible: the walls do not change the answers', async () => {
    const visible = T_VISIBLE[DEPTH - 1]!;
    const basic = await json(`traders/${T}/markets/${visible}/summary`, 'basic');
    const pro = await json(`traders/${T}/markets/${visible}/summary`, 'pro');
    expect(basic).toEqual(pro);
    const basicChart = await json(`traders/${T}/markets/${visible}`, 'basic');
    expect(basicChart.fills).toHaveLength(T_FILLS.filter((item) => item.condition_id === visible).length);
  });
});

describe('markets list', () => {
  it('Basic: exactly the most recent markets, in recency order, then the end; Pro: all of them', async () => {
    const basic = await json(`traders/${T}/markets`, 'basic');
    expect(basic.markets.map((row: Json) => row.condition_id)).toEqual(T_VISIBLE);
    expect(basic.next_cursor).toBeNull();
    const pro = await json(`traders/${T}/markets`, 'pro');
    expect(pro.markets.map((row: Json) => row.condition_id)).toEqual(T_RECENT);
    expect(basic.markets).toEqual(pro.markets.slice(0, DEPTH));
    const limited = await json(`traders/${T}/markets?limit=${DEPTH}`, 'basic');
    expect(limited.markets.map((row: Json) => row.condition_id)).toEqual(T_VISIBLE);
    expect(limited.next_cursor).toBeNull();
  });

  it('Basic: paging with a small limit walks exactly the visible markets, then next_cursor is null', async () => {
    for (const limit of [1, 2, 3]) {
      const walked = await pages(
        (cursor) => `traders/${T}/markets?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
        'markets',
        'basic',
      );
      expect(
        walked.rows.map((row) => row.condition_id),
        `limit ${limit}`,
      ).toEqual(T_VISIBLE);
      expect(walked.pages).toBe(Math.ceil(DEPTH / limit));
    }
    const pro = await pages(
      (cursor) => `traders/${T}/markets?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      'markets',
      'pro',
    );
    expect(pro.rows.map((row) => row.condition_id)).toEqual(T_RECENT);
  });

  it("Basic: another trader's list is its own most recent markets (the tie broken like everywhere)", async () => {
    const basic = await json(`traders/${O}/markets`, 'basic');
    expect(basic.markets.map((row: Json) => row.condition_id)).toEqual(O_VISIBLE);
  });
});

describe('top markets', () => {
  it('Basic: every slice ranks only within the visible markets; Pro ranks all of them', async () => {
    const tVisibleRows = marketsOf(T_FILLS).filter((row) => T_VISIBLE.includes(row.condition_id));
    for (const n of [1, 3, 20]) {
      const basic = await json(`traders/${T}/top-markets?n=${n}`, 'basic');
      const pro = await json(`traders/${T}/top-markets?n=${n}`, 'pro');
      const ids = (body: Json) => ({
        top_wins: body.top_wins.map((row: Json) => row.condition_id),
        top_losses: body.top_losses.map((row: Json) => row.condition_id),
        most_traded: body.most_traded.map((row: Json) => row.condition_id),
        top_volume: body.top_volume.map((row: Json) => row.condition_id),
      });
      expect(ids(basic), `basic n=${n}`).toEqual(topOf(tVisibleRows, n));
      expect(ids(pro), `pro n=${n}`).toEqual(topOf(marketsOf(T_FILLS), n));
      for (const slice of Object.values(ids(basic)) as string[][])
        for (const conditionId of slice) expect(T_VISIBLE).toContain(conditionId);
    }
    // The fixture makes the difference visible: the older markets lead Pro's slices.
    const pro = await json(`traders/${T}/top-markets`, 'pro');
    expect(pro.top_wins[0].condition_id).toBe(m1);
    expect(pro.top_losses[0].condition_id).toBe(m2);
    expect(pro.most_traded[0].condition_id).toBe(m1);
    expect(pro.top_volume[0].condition_id).toBe(m2);
  });
});

describe('fills', () => {
  it('Basic: exactly the fills of the visible markets, in order; Pro: all of them', async () => {
    const visibleFills = fillRows(T_FILLS.filter((item) => T_VISIBLE.includes(item.condition_id)));
    const basic = await json(`traders/${T}/fills`, 'basic');
    expect(basic.fills).toEqual(visibleFills);
    expect(basic.next_cursor).toBeNull();
    const pro = await json(`traders/${T}/fills`, 'pro');
    expect(pro.fills).toEqual(fillRows(T_FILLS));
    const since = B + 3000;
    expect((await json(`traders/${T}/fills?since=${since}`, 'basic')).fills).toEqual(
      visibleFills.filter((item) => item.ts >= since),
    );
  });

  it('Basic: paging walks the visible fills exactly once, in order', async () => {
    const visibleFills = fillRows(T_FILLS.filter((item) => T_VISIBLE.includes(item.condition_id)));
    for (const limit of [1, 2, 5]) {
      const walked = await pages(
        (cursor) => `traders/${T}/fills?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
        'fills',
        'basic',
      );
      expect(walked.rows, `limit ${limit}`).toEqual(visibleFills);
    }
    // Since a time in the middle of the gated markets' fills: only visible ones from there on.
    const walked = await pages(
      (cursor) => `traders/${T}/fills?since=${B + 300}&limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      'fills',
      'basic',
    );
    expect(walked.rows).toEqual(visibleFills.filter((item) => item.ts >= B + 300));
  });

  it("Basic: another trader's fills are clamped to its own visible markets", async () => {
    expect((await json(`traders/${O}/fills`, 'basic')).fills).toEqual(
      fillRows(O_FILLS.filter((item) => O_VISIBLE.includes(item.condition_id))),
    );
    expect((await json(`traders/${O}/fills`, 'pro')).fills).toEqual(fillRows(O_FILLS));
  });
});

describe('not clamped, and documented', () => {
  it('the card counts every market on Basic too', async () => {
    const basic = await json(`traders/${T}`, 'basic');
    expect(basic.card.markets_total).toBe(T_RECENT.length);
    expect(basic.card).toEqual((await json(`traders/${T}`, 'pro')).card);
  });

  it('the OpenAPI descriptions of the clamped routes state the depth from config', () => {
    const description = (path: string) => String(document.paths[path].get.description);
    const depthText = `${DEPTH} most recent markets`;
    for (const path of [
      '/api/agent/v1/traders/{trader}/markets',
      '/api/agent/v1/traders/{trader}/top-markets',
      '/api/agent/v1/traders/{trader}/fills',
      '/api/agent/v1/traders/{trader}/markets/{condition_id}/summary',
      '/api/agent/v1/traders/{trader}/markets/{condition_id}',
      '/api/agent/v1/traders/{trader}/markets/{condition_id}/tape',
    ]) {
      expect(description(path), path).toContain(config.plans.basic.name);
      expect(description(path), path).toContain(depthText);
    }
    for (const path of [
      '/api/agent/v1/traders/{trader}/markets/{condition_id}/summary',
      '/api/agent/v1/traders/{trader}/markets/{condition_id}',
      '/api/agent/v1/traders/{trader}/markets/{condition_id}/tape',
    ]) {
      expect(description(path), path).toContain('depth_gated');
    }
    expect(description('/api/agent/v1/traders/{trader}')).not.toContain(depthText);
  });
});
