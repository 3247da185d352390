/**
 * The trader reads behind the REST routes and MCP tools: the markets list (keyset-paged, recency
 * order), the four top-markets slices, one market's header and summary, cross-market fills since a
 * timestamp, names both ways, the popular shelf and the upstream block of the card.
 *
 * A small hand-made data set is ingested through the in-process pipeline (which also runs the rollup
 * refresh): a market won, one lost, an open marked one traded on token 2, an open unmarked one, one with
 * split/merge/redeem legs, one with only a split, one without metadata, one with a dozen fills, and
 * fillers that tie on every ranking key. Every expected value is computed here from the events
 * themselves with plain arithmetic (a few of them also checked by hand), never by the code under test.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../config.ts';
import { createLogger } from '../log.ts';
import { withPublisher } from '../roles/runtime.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { readTraderFills, type FillPosition, type TraderFill } from '../projections/fills.ts';
import { readMarketHeader } from '../projections/market-header.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { type MarketListPosition, TOP_MARKETS_NOTE } from '../projections/market-schemas.ts';
import { readMarketSummary } from '../projections/market-summary.ts';
import { readTopMarkets } from '../projections/top-markets.ts';
import { readPopularTraders } from '../projections/popular.ts';
import { openStore, type Store } from '../projections/store.ts';
import { findWalletByName, readTraderName } from '../projections/traders.ts';
import { readUpstreamProfile } from '../projections/upstream.ts';
import {
  BASE_TS,
  makeConditionId,
  makeFill,
  makeLeg,
  makeMarket,
  makeResolution,
  makeTrade,
  makeWallet,
} from './factories.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

type Fill = EventInputOf<'fillsArchive'>;
type Leg = EventInputOf<'positions'>;
type Trade = EventInputOf<'trades'>;
type Meta = { condition_id: string; title: string; outcome1: string; outcome2: string };

const B = BASE_TS;

// ---------------------------------------------------------------------------------------------------
// The data set

const W = makeWallet('reads-main');
// The more recently named twin is the larger wallet: recency must beat the wallet order.
const [W2, W3] = [makeWallet('reads-twin-old'), makeWallet('reads-twin-new')].sort() as [string, string];
const [W4, W5] = [makeWallet('reads-same-a'), makeWallet('reads-same-b')].sort() as [string, string];
const W6 = makeWallet('reads-oldname-taker');
const W7 = makeWallet('reads-unnamed');
const UNKNOWN_WALLET = makeWallet('reads-never-seen');

const cid = (label: string) => makeConditionId(`reads-${label}`);
const M = {
  won: cid('won'),
  lost: cid('lost'),
  marked: cid('marked'),
  unmarked: cid('unmarked'),
  legs: cid('legs'),
  splitOnly: cid('split-only'),
  noMeta: cid('no-meta'),
  tie: cid('tie'),
  many: cid('many'),
  filler0: cid('filler0'),
  filler1: cid('filler1'),
  filler2: cid('filler2'),
  filler3: cid('filler3'),
};
const NEVER_TRADED = cid('never-traded');

const META: Meta[] = [
  { condition_id: M.won, title: 'Won market', outcome1: 'Up', outcome2: 'Down' },
  { condition_id: M.lost, title: 'Lost market', outcome1: 'Yes', outcome2: 'No' },
  { condition_id: M.marked, title: 'Marked market', outcome1: 'Over', outcome2: 'Under' },
  { condition_id: M.unmarked, title: 'Unmarked market', outcome1: 'Up', outcome2: 'Down' },
  { condition_id: M.legs, title: 'Legs market', outcome1: 'Yes', outcome2: 'No' },
  { condition_id: M.splitOnly, title: 'Split only', outcome1: 'Higher', outcome2: 'Lower' },
  { condition_id: M.many, title: 'Many fills', outcome1: 'Up', outcome2: 'Down' },
  { condition_id: M.tie, title: 'Tie market', outcome1: 'Up', outcome2: 'Down' },
  { condition_id: M.filler0, title: 'Filler 0', outcome1: 'Up', outcome2: 'Down' },
  { condition_id: M.filler1, title: 'Filler 1', outcome1: 'Up', outcome2: 'Down' },
  { condition_id: M.filler2, title: 'Filler 2', outcome1: 'Up', outcome2: 'Down' },
  { condition_id: M.filler3, title: 'Filler 3', outcome1: 'Up', outcome2: 'Down' },
  { condition_id: NEVER_TRADED, title: 'Never traded', outcome1: 'Up', outcome2: 'Down' },
];

const RESOLUTIONS: { condition_id: string; winner: 1 | 2; ts: number }[] = [
  { condition_id: M.won, winner: 1, ts: B + 1000 },
  { condition_id: M.lost, winner: 2, ts: B + 900 },
  { condition_id: M.legs, winner: 2, ts: B + 900 },
  { condition_id: M.filler0, winner: 1, ts: B + 900 },
  { condition_id: M.filler1, winner: 2, ts: B + 900 },
];

const fill = (
  condition_id: string,
  side: 'BUY' | 'SELL',
  token_side: 1 | 2,
  price: number,
  size_tokens: number,
  usd: number,
  ts: number,
  wallet = W,
  tx_hash?: string,
): Fill =>
  makeFill({ wallet, condition_id, side, token_side, price, size_tokens, usd, ts, ...(tx_hash ? { tx_hash } : {}) });

/**
 * Three fills in one second, in three markets: fill ids run opposite to condition ids, so only the
 * condition_id orders them (and a page boundary inside the second must keep that order).
 */
const SAME_SECOND = [M.unmarked, M.noMeta, M.tie].sort();
const txFor = (conditionId: string) => `0x${'0'.repeat(63)}${3 - SAME_SECOND.indexOf(conditionId)}`;

const FILLS: Fill[] = [
  // won (token 1 won): 120 tokens still held at the resolution
  fill(M.won, 'BUY', 1, 0.4, 100, 40, B + 10),
  fill(M.won, 'BUY', 1, 0.5, 50, 25, B + 100),
  fill(M.won, 'SELL', 1, 0.7, 30, 21, B + 900),
  // lost (token 2 won): everything sold before the resolution
  fill(M.lost, 'BUY', 1, 0.6, 50, 30, B + 20),
  fill(M.lost, 'BUY', 1, 0.55, 20, 11, B + 50),
  fill(M.lost, 'SELL', 1, 0.3, 70, 21, B + 400),
  // marked, traded on token 2
  fill(M.marked, 'BUY', 2, 0.25, 200, 50, B + 30),
  fill(M.marked, 'BUY', 2, 0.35, 100, 35, B + 60),
  fill(M.marked, 'SELL', 2, 0.5, 50, 25, B + 200),
  // unmarked and no-meta: one fill each, in the same second
  fill(M.unmarked, 'BUY', 1, 0.5, 10, 5, B + 40, W, txFor(M.unmarked)),
  fill(M.noMeta, 'BUY', 2, 0.2, 10, 2, B + 40, W, txFor(M.noMeta)),
  fill(M.tie, 'BUY', 1, 0.5, 4, 2, B + 40, W, txFor(M.tie)),
  // legs: a split, a sale of token 1, a merge, then a redemption of token 2 after the resolution
  fill(M.legs, 'SELL', 1, 0.6, 60, 36, B + 70),
  // many: a dozen fills of both sides, two in one second
  fill(M.many, 'BUY', 1, 0.4, 10, 4, B + 110),
  fill(M.many, 'BUY', 1, 0.42, 50, 21, B + 120),
  fill(M.many, 'BUY', 2, 0.55, 20, 11, B + 120),
  fill(M.many, 'SELL', 1, 0.45, 10, 4.5, B + 130),
  fill(M.many, 'BUY', 1, 0.5, 100, 50, B + 140),
  fill(M.many, 'BUY', 2, 0.5, 30, 15, B + 150),
  fill(M.many, 'SELL', 2, 0.6, 10, 6, B + 160),
  fill(M.many, 'BUY', 1, 0.6, 5, 3, B + 170),
  fill(M.many, 'BUY', 1, 0.61, 100, 61, B + 180),
  fill(M.many, 'SELL', 1, 0.7, 40, 28, B + 200),
  fill(M.many, 'BUY', 2, 0.35, 20, 7, B + 210),
  fill(M.many, 'BUY', 1, 0.65, 2, 1.3, B + 280),
  // fillers: a win tying legs' result, a loss tying lost's, two open twins tying on volume and time
  fill(M.filler0, 'BUY', 1, 0.5, 72, 36, B + 500),
  fill(M.filler1, 'BUY', 1, 0.4, 50, 20, B + 500),
  fill(M.filler2, 'BUY', 2, 0.3, 100, 30, B + 600),
  fill(M.filler3, 'BUY', 1, 0.3, 100, 30, B + 600),
  // another trader in the same markets: never in W's reads
  fill(M.won, 'BUY', 1, 0.45, 10, 4.5, B + 50, W2),
  fill(M.many, 'SELL', 2, 0.5, 10, 5, B + 150, W2),
];

const LEGS: Leg[] = [
  makeLeg({ wallet: W, condition_id: M.legs, kind: 'SPLIT', tokens: 100, usd: 100, ts: B + 5 }),
  makeLeg({ wallet: W, condition_id: M.legs, kind: 'MERGE', tokens: 20, usd: 20, ts: B + 500 }),
  makeLeg({ wallet: W, condition_id: M.legs, kind: 'REDEEM', tokens: 80, usd: 80, ts: B + 1000 }),
  makeLeg({ wallet: W, condition_id: M.splitOnly, kind: 'SPLIT', tokens: 10, usd: 10, ts: B + 15 }),
];

const TRADES: Trade[] = [
  makeTrade({ condition_id: M.won, token_side: 1, price: 0.4, ts: B, seq: 1 }),
  makeTrade({ condition_id: M.won, token_side: 1, price: 0.99, ts: B + 1000, seq: 2 }),
  makeTrade({ condition_id: M.marked, token_side: 1, price: 0.55, ts: B + 100, seq: 3 }),
  // the marked market's last print is token 2 at 0.30: Up (Over) at 0.70; an earlier seq in the same second loses
  makeTrade({ condition_id: M.marked, token_side: 1, price: 0.9, ts: B + 250, seq: 4 }),
  makeTrade({ condition_id: M.marked, token_side: 2, price: 0.3, ts: B + 250, seq: 5 }),
  makeTrade({ condition_id: M.splitOnly, token_side: 1, price: 0.45, ts: B + 30, seq: 6 }),
  makeTrade({ condition_id: M.many, token_side: 1, price: 0.4, ts: B + 100, seq: 7 }),
  makeTrade({ condition_id: M.many, token_side: 2, price: 0.38, ts: B + 300, seq: 8 }),
  makeTrade({ condition_id: M.legs, token_side: 1, price: 0.5, ts: B, seq: 9 }),
  makeTrade({ condition_id: M.legs, token_side: 1, price: 0.2, ts: B + 800, seq: 10 }),
];

const profile = (wallet: string, name: string, as_of: number, pnl = 0): EventInputOf<'upstreamProfiles'> => ({
  wallet,
  name,
  profile_image: `https://img.example/${name}.png`,
  pnl,
  pnl_realized: pnl - 1,
  pnl_unrealized: 1,
  portfolio_value: 1000 + pnl,
  as_of,
});

const PROFILES: EventInputOf<'upstreamProfiles'>[] = [
  profile(W, 'OldName', B + 100, 10),
  {
    wallet: W,
    name: 'NewName',
    profile_image: 'https://img.example/new.png',
    pnl: 123.5,
    pnl_realized: 100,
    pnl_unrealized: 23.5,
    portfolio_value: 500,
    as_of: B + 200,
  },
  profile(W6, 'oldname', B + 10),
  profile(W2, 'Twin', B + 50, 7),
  profile(W3, 'twin', B + 60),
  profile(W4, 'Same', B + 70),
  profile(W5, 'SAME', B + 70),
];

/** W's equity curve, published out of time order: peak 80, low −10, worst fall 80 − (−10) = 90. */
const EQUITY: EventInputOf<'upstreamEquity'>[] = [
  [B + 40, 80],
  [B + 10, 0],
  [B + 60, 30],
  [B + 20, 50],
  [B + 50, -10],
  [B + 30, 20],
].map(([ts, pnl_usd]) => ({ wallet: W, ts: ts!, pnl_usd: pnl_usd! }));

// ---------------------------------------------------------------------------------------------------
// Plain references, from the events above

const fillId = (f: Fill) => `${f.tx_hash}:${f.log_index}`;
/** UP space: a token-2 price p is 1 − p (ten decimals, as the contract rounds). */
const upPrice = (tokenSide: 1 | 2, price: number) => (tokenSide === 1 ? price : Math.round((1 - price) * 1e10) / 1e10);
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
const close = (value: number) => expect.closeTo(value, 9);
const closeOrNull = (value: number | null) => (value === null ? null : close(value));
const metaOf = (conditionId: string) => META.find((meta) => meta.condition_id === conditionId);
const resolutionOf = (conditionId: string) => RESOLUTIONS.find((resolution) => resolution.condition_id === conditionId);

function referenceMarket(wallet: string, conditionId: string) {
  const fills = FILLS.filter((f) => f.wallet === wallet && f.condition_id === conditionId);
  const legs = LEGS.filter((l) => l.wallet === wallet && l.condition_id === conditionId);
  const trades = TRADES.filter((t) => t.condition_id === conditionId);
  const meta = metaOf(conditionId);
  const resolution = resolutionOf(conditionId);
  const of = (side: 'BUY' | 'SELL', tokenSide?: 1 | 2) =>
    fills.filter((f) => f.side === side && (tokenSide === undefined || f.token_side === tokenSide));
  const usd = (list: readonly Fill[]) => sum(list.map((f) => f.usd));
  const tokens = (list: readonly Fill[]) => sum(list.map((f) => f.size_tokens));
  const legSum = (kind: Leg['kind'], field: 'usd' | 'tokens') =>
    sum(legs.filter((l) => l.kind === kind).map((l) => l[field]));
  const split = legSum('SPLIT', 'tokens');
  const merge = legSum('MERGE', 'tokens');
  const redeem = legSum('REDEEM', 'tokens');
  const net1 = tokens(of('BUY', 1)) - tokens(of('SELL', 1)) + split - merge - (resolution?.winner === 1 ? redeem : 0);
  const net2 = tokens(of('BUY', 2)) - tokens(of('SELL', 2)) + split - merge - (resolution?.winner === 2 ? redeem : 0);
  const buyUsd = usd(of('BUY'));
  const sellUsd = usd(of('SELL'));
  const cashFlow = sellUsd + legSum('MERGE', 'usd') + legSum('REDEEM', 'usd') - buyUsd - legSum('SPLIT', 'usd');
  const pnl = resolution ? cashFlow + (resolution.winner === 1 ? net1 : net2) : cashFlow;
  // The last fill: legs never move it. A market with legs only takes its last leg.
  const lastTs = fills.length > 0 ? Math.max(...fills.map((f) => f.ts)) : Math.max(...legs.map((l) => l.ts));
  const lastFill = [...fills].sort((a, b) => a.ts - b.ts || (fillId(a) < fillId(b) ? -1 : 1)).at(-1);
  const lastTrade = [...trades].sort((a, b) => a.ts - b.ts || a.seq - b.seq).at(-1);
  const mark = lastTrade ? upPrice(lastTrade.token_side, lastTrade.price) : null;
  return {
    fills,
    legs,
    trades,
    meta,
    resolution,
    net1,
    net2,
    buyUsd,
    sellUsd,
    cashFlow,
    pnl,
    lastTs,
    lastFill,
    mark,
    of,
    usd,
    tokens,
  };
}

function expectedRow(conditionId: string) {
  const r = referenceMarket(W, conditionId);
  const open = !r.resolution;
  const value = open && r.mark !== null ? r.net1 * r.mark + r.net2 * (1 - r.mark) : null;
  return {
    condition_id: conditionId,
    title: r.meta?.title ?? '',
    outcome: r.meta?.outcome1 ?? '',
    resolved: !open,
    winner: r.resolution ? ((r.resolution.winner === 1 ? r.meta?.outcome1 : r.meta?.outcome2) ?? '') : null,
    // the world's resolutions name no source
    ...(open ? {} : { resolution_source: 'stated' }),
    last_traded_at: r.lastTs,
    trader_last_action: r.lastFill?.side ?? null,
    last_price: r.lastFill ? close(upPrice(r.lastFill.token_side, r.lastFill.price)) : null,
    fills_count: r.fills.length,
    pnl_usd: close(r.pnl),
    open,
    volume_usd: close(r.buyUsd + r.sellUsd),
    ...(open
      ? { market_value_usd: closeOrNull(value), pnl_marked_usd: value === null ? null : close(r.cashFlow + value) }
      : {}),
    // kept for ordering, stripped before comparison
    _sort: { lastTs: r.lastTs, pnl: r.pnl, fills: r.fills.length, volume: r.buyUsd + r.sellUsd, resolved: !open },
  };
}

const TRADED = Object.values(M);
const byRecency = (a: { lastTs: number; cid: string }, b: { lastTs: number; cid: string }) =>
  b.lastTs - a.lastTs || (a.cid < b.cid ? 1 : a.cid > b.cid ? -1 : 0);

function expectedMarketList() {
  return TRADED.map((conditionId) => expectedRow(conditionId))
    .sort((a, b) =>
      byRecency({ lastTs: a._sort.lastTs, cid: a.condition_id }, { lastTs: b._sort.lastTs, cid: b.condition_id }),
    )
    .map(({ _sort, ...row }) => row);
}

function expectedTop(n: number) {
  const rows = TRADED.map((conditionId) => expectedRow(conditionId));
  const tie = (a: (typeof rows)[number], b: (typeof rows)[number]) =>
    b._sort.lastTs - a._sort.lastTs || (a.condition_id < b.condition_id ? -1 : 1);
  const take = (list: typeof rows, order: (a: (typeof rows)[number], b: (typeof rows)[number]) => number) =>
    [...list]
      .sort((a, b) => order(a, b) || tie(a, b))
      .slice(0, n)
      .map(({ _sort, ...row }) => row);
  return {
    top_wins: take(
      rows.filter((row) => row._sort.resolved && row._sort.pnl > 0),
      (a, b) => b._sort.pnl - a._sort.pnl,
    ),
    top_losses: take(
      rows.filter((row) => row._sort.resolved && row._sort.pnl < 0),
      (a, b) => a._sort.pnl - b._sort.pnl,
    ),
    most_traded: take(rows, (a, b) => b._sort.fills - a._sort.fills),
    top_volume: take(rows, (a, b) => b._sort.volume - a._sort.volume),
    note: TOP_MARKETS_NOTE,
  };
}

/** Nearest rank: the element at 1-based index ceil(q·n) of the ascending sizes (ceil(9n/10) in integers). */
const nearestRank = (sorted: readonly number[], numerator: number, denominator: number) =>
  sorted[Math.ceil((numerator * sorted.length) / denominator) - 1]!;

function expectedSummary(conditionId: string) {
  const r = referenceMarket(W, conditionId);
  const sizes = r.fills.map((f) => f.usd).sort((a, b) => a - b);
  const fillTs = r.fills.map((f) => f.ts);
  const first = fillTs.length ? Math.min(...fillTs) : null;
  const last = fillTs.length ? Math.max(...fillTs) : null;
  const held = r.net1 > 1e-9 || r.net2 > 1e-9;
  const hold = first === null || last === null ? 0 : r.resolution && held ? r.resolution.ts - first : last - first;
  const windowStart = Math.min(...r.trades.map((t) => t.ts), ...fillTs);
  const windowEnd = Math.max(...r.trades.map((t) => t.ts), ...fillTs);
  const span = windowEnd - windowStart;
  const total = r.usd(r.fills);
  // ts ≤ start + span/10, and ts ≥ end − span/10, compared exactly in integers
  const share = (inside: (ts: number) => boolean) =>
    r.fills.length === 0 ? 0 : span === 0 ? 1 : sum(r.fills.filter((f) => inside(f.ts)).map((f) => f.usd)) / total;
  const side = (tokenSide: 1 | 2) => {
    const buys = r.of('BUY', tokenSide);
    return {
      token_side: tokenSide,
      outcome: (tokenSide === 1 ? r.meta?.outcome1 : r.meta?.outcome2) ?? '',
      buy_count: buys.length,
      sell_count: r.of('SELL', tokenSide).length,
      buy_usd: close(r.usd(buys)),
      sell_usd: close(r.usd(r.of('SELL', tokenSide))),
      avg_entry: buys.length ? close(r.usd(buys) / r.tokens(buys)) : null,
      net_tokens: close(tokenSide === 1 ? r.net1 : r.net2),
    };
  };
  const buys = r.of('BUY');
  return {
    market: {
      condition_id: conditionId,
      title: r.meta?.title ?? '',
      outcome: r.meta?.outcome1 ?? '',
      outcome2: r.meta?.outcome2 ?? '',
      resolved: Boolean(r.resolution),
      winner: r.resolution ? ((r.resolution.winner === 1 ? r.meta?.outcome1 : r.meta?.outcome2) ?? '') : null,
      ...(r.resolution ? { resolution_source: 'stated' } : {}),
      pnl_usd: close(r.pnl),
      open: !r.resolution,
    },
    summary: {
      fills_count: r.fills.length,
      buy_count: buys.length,
      sell_count: r.of('SELL').length,
      buy_usd: close(r.buyUsd),
      sell_usd: close(r.sellUsd),
      avg_entry_price: buys.length
        ? close(sum(buys.map((f) => upPrice(f.token_side, f.price) * f.size_tokens)) / r.tokens(buys))
        : null,
      size_p50_usd: sizes.length ? nearestRank(sizes, 1, 2) : null,
      size_p90_usd: sizes.length ? nearestRank(sizes, 9, 10) : null,
      size_max_usd: sizes.length ? sizes[sizes.length - 1] : null,
      first_fill_ts: first,
      last_fill_ts: last,
      hold_seconds: hold,
      usd_share_first_tenth: close(share((ts) => 10 * (ts - windowStart) <= span)),
      usd_share_last_tenth: close(share((ts) => 10 * (windowEnd - ts) <= span)),
      pnl_usd: close(r.pnl),
      roi: r.buyUsd === 0 ? null : close(r.pnl / r.buyUsd),
      won: r.resolution ? r.pnl > 0 : null,
      open: !r.resolution,
      sides: [side(1), side(2)],
    },
  };
}

function expectedFills(since: number): TraderFill[] {
  return FILLS.filter((f) => f.wallet === W && f.ts >= since)
    .sort(
      (a, b) =>
        a.ts - b.ts ||
        (a.condition_id < b.condition_id ? -1 : a.condition_id > b.condition_id ? 1 : fillId(a) < fillId(b) ? -1 : 1),
    )
    .map((f) => {
      const meta = metaOf(f.condition_id);
      return {
        ts: f.ts,
        condition_id: f.condition_id,
        title: meta?.title ?? '',
        side: f.side,
        price: close(upPrice(f.token_side, f.price)) as unknown as number,
        token_side: f.token_side,
        outcome: (f.token_side === 1 ? meta?.outcome1 : meta?.outcome2) ?? '',
        size_tokens: f.size_tokens,
        usd: f.usd,
      };
    });
}

// ---------------------------------------------------------------------------------------------------

let config: Config;
let store: Store;

beforeAll(async () => {
  const environment = testEnvironment(uniqueId('trader_reads'), PROCESS_DATA_DIR);
  delete (environment as Record<string, string | undefined>).KAFKA_BROKERS;
  config = parseConfig(environment);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish(
      'markets',
      META.map((meta) => makeMarket(meta)),
    );
    await publisher.publish('trades', TRADES);
    await publisher.publish('fillsArchive', FILLS);
    // The same fill from the upstream poller: one fill, never two.
    await publisher.publish('fillsUpstream', [FILLS[0]!]);
    await publisher.publish('positions', LEGS);
    for (const p of PROFILES) await publisher.publish('upstreamProfiles', [p]);
    await publisher.publish('upstreamEquity', [...EQUITY, EQUITY[0]!]);
    await publisher.publish(
      'markets',
      RESOLUTIONS.map((r) => makeResolution(r.condition_id, r.winner, r.ts)),
    );
  });
  store = await openStore(config.clickhouse);
});

afterAll(async () => {
  await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
  await store?.close();
});

async function allMarketPages(limit: number) {
  const pages: Awaited<ReturnType<typeof readTraderMarkets>>['markets'][] = [];
  let after: MarketListPosition | undefined;
  for (;;) {
    const page = await readTraderMarkets(store, W, { after, limit });
    pages.push(page.markets);
    if (!page.next) return pages;
    expect(page.next).toEqual({
      lastTradedAt: page.markets.at(-1)!.last_traded_at,
      conditionId: page.markets.at(-1)!.condition_id,
    });
    after = page.next;
    if (pages.length > 100) throw new Error('paging does not end');
  }
}

describe('trader markets list', () => {
  it('hand-checked figures of the market rows', async () => {
    const { markets } = await readTraderMarkets(store, W, { limit: 1000 });
    const row = (conditionId: string) => markets.find((market) => market.condition_id === conditionId)!;
    // won: 150 bought for 65, 30 sold for 21, 120 left at 1.00
    expect(row(M.won)).toStrictEqual({
      condition_id: M.won,
      title: 'Won market',
      outcome: 'Up',
      resolved: true,
      winner: 'Up',
      resolution_source: 'stated',
      last_traded_at: B + 900,
      trader_last_action: 'SELL',
      last_price: 0.7,
      fills_count: 3,
      pnl_usd: close(21 - 65 + 120),
      open: false,
      volume_usd: 86,
    });
    expect(row(M.lost)).toMatchObject({ resolved: true, winner: 'No', pnl_usd: close(-20), last_traded_at: B + 400 });
    // marked: 250 Under tokens with Over at 0.70, cash flow 25 − 85
    expect(row(M.marked)).toMatchObject({
      open: true,
      resolved: false,
      winner: null,
      last_price: 0.5,
      market_value_usd: close(75),
      pnl_marked_usd: close(15),
      pnl_usd: close(-60),
    });
    expect(row(M.unmarked)).toMatchObject({ open: true, market_value_usd: null, pnl_marked_usd: null, pnl_usd: -5 });
    // legs: split 100 for 100, sold 60 Yes for 36, merged 20 for 20, redeemed 80 No for 80; last traded at the
    // sale, not at the later merge or redemption
    expect(row(M.legs)).toMatchObject({
      resolved: true,
      winner: 'No',
      pnl_usd: close(36),
      last_traded_at: B + 70,
      trader_last_action: 'SELL',
      volume_usd: 36,
    });
    // split only: no fills; 10 of each token are worth 10 whatever the mark
    expect(row(M.splitOnly)).toStrictEqual({
      condition_id: M.splitOnly,
      title: 'Split only',
      outcome: 'Higher',
      resolved: false,
      winner: null,
      last_traded_at: B + 15,
      trader_last_action: null,
      last_price: null,
      fills_count: 0,
      pnl_usd: -10,
      open: true,
      volume_usd: 0,
      market_value_usd: close(10),
      pnl_marked_usd: close(0),
    });
    expect(row(M.noMeta)).toMatchObject({ title: '', outcome: '', last_price: 0.8, market_value_usd: null });
    expect(markets.map((market) => market.condition_id)).not.toContain(NEVER_TRADED);
  });

  it('every row equals the reference, in recency order', async () => {
    const { markets, next } = await readTraderMarkets(store, W, { limit: 1000 });
    expect(next).toBeNull();
    expect(markets).toStrictEqual(expectedMarketList());
    // the ties of the data set: three markets in second B+40, two in B+500, two in B+600
    expect(markets.map((market) => market.last_traded_at)).toEqual(
      [...markets.map((market) => market.last_traded_at)].sort((a, b) => b - a),
    );
  });

  it('paging with any limit returns every row exactly once, in order', async () => {
    const expected = expectedMarketList();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: expected.length + 2 }), async (limit) => {
        const pages = await allMarketPages(limit);
        for (const page of pages) {
          expect(page.length).toBeGreaterThan(0);
          expect(page.length).toBeLessThanOrEqual(limit);
        }
        expect(pages.flat()).toStrictEqual(expected);
        expect(pages.length).toBe(Math.ceil(expected.length / limit));
      }),
      { numRuns: 6 },
    );
    // exact page boundaries
    expect((await allMarketPages(expected.length)).length).toBe(1);
    expect((await allMarketPages(1)).length).toBe(expected.length);
  });

  it('a wallet with no markets has an empty list', async () => {
    expect(await readTraderMarkets(store, UNKNOWN_WALLET, { limit: 10 })).toEqual({ markets: [], next: null });
  });
});

describe('top markets', () => {
  it('ranks the four slices with their ties broken by recency then condition_id', async () => {
    for (const n of [1, 2, 3, 5, 20]) {
      expect(await readTopMarkets(store, W, n)).toStrictEqual(expectedTop(n));
    }
  });

  it('hand-checked order of the slices', async () => {
    const top = await readTopMarkets(store, W, 5);
    // won 76; legs 36 and filler0 36 tie: filler0 traded later (B+500; legs' last fill is B+70, its
    // redemption at B+1000 is no trade)
    expect(top.top_wins.map((row) => row.condition_id)).toEqual([M.won, M.filler0, M.legs]);
    // filler1 −20 and lost −20 tie: filler1 acted later (B+500)
    expect(top.top_losses.map((row) => row.condition_id)).toEqual([M.filler1, M.lost]);
    expect(top.most_traded[0]!.condition_id).toBe(M.many);
    expect(top.most_traded[0]!.fills_count).toBe(12);
    expect(top.top_volume[0]!.condition_id).toBe(M.many);
    // filler2 and filler3: the same volume in the same second, so condition_id ascending
    const twins = [M.filler2, M.filler3].sort();
    const volume = (await readTopMarkets(store, W, 20)).top_volume.map((row) => row.condition_id);
    expect(volume).toHaveLength(TRADED.length);
    expect(volume.indexOf(twins[1]!) - volume.indexOf(twins[0]!)).toBe(1);
    expect(top.note).toBe(TOP_MARKETS_NOTE);
  });

  it('an unknown wallet has four empty slices', async () => {
    expect(await readTopMarkets(store, UNKNOWN_WALLET, 5)).toEqual({
      top_wins: [],
      top_losses: [],
      most_traded: [],
      top_volume: [],
      note: TOP_MARKETS_NOTE,
    });
  });
});

describe('market summary and header', () => {
  it('every market of the trader equals the reference', async () => {
    for (const conditionId of TRADED) {
      const expected = expectedSummary(conditionId);
      expect(await readMarketSummary(store, W, conditionId), conditionId).toStrictEqual(expected);
      expect(await readMarketHeader(store, W, conditionId), conditionId).toStrictEqual(expected.market);
    }
  });

  it('hand-checked summaries', async () => {
    const won = (await readMarketSummary(store, W, M.won))!;
    expect(won.market).toStrictEqual({
      condition_id: M.won,
      title: 'Won market',
      outcome: 'Up',
      outcome2: 'Down',
      resolved: true,
      winner: 'Up',
      resolution_source: 'stated',
      pnl_usd: close(76),
      open: false,
    });
    expect(won.summary).toMatchObject({
      fills_count: 3,
      buy_count: 2,
      sell_count: 1,
      buy_usd: 65,
      sell_usd: 21,
      avg_entry_price: close(65 / 150),
      size_p50_usd: 25,
      size_p90_usd: 40,
      size_max_usd: 40,
      first_fill_ts: B + 10,
      last_fill_ts: B + 900,
      // held 120 tokens at the resolution (B+1000)
      hold_seconds: 990,
      // window B..B+1000: first tenth up to B+100 (inclusive), last tenth from B+900 (inclusive)
      usd_share_first_tenth: close(65 / 86),
      usd_share_last_tenth: close(21 / 86),
      roi: close(76 / 65),
      won: true,
      open: false,
    });
    expect(won.summary.sides).toStrictEqual([
      {
        token_side: 1,
        outcome: 'Up',
        buy_count: 2,
        sell_count: 1,
        buy_usd: 65,
        sell_usd: 21,
        avg_entry: close(65 / 150),
        net_tokens: 120,
      },
      {
        token_side: 2,
        outcome: 'Down',
        buy_count: 0,
        sell_count: 0,
        buy_usd: 0,
        sell_usd: 0,
        avg_entry: null,
        net_tokens: 0,
      },
    ]);

    const lost = (await readMarketSummary(store, W, M.lost))!.summary;
    // no trades: the window is the fills', B+20..B+400 (span 380, tenth 38)
    expect(lost).toMatchObject({
      hold_seconds: 380,
      usd_share_first_tenth: close(41 / 62),
      usd_share_last_tenth: close(21 / 62),
      won: false,
      roi: close(-20 / 41),
    });

    const marked = (await readMarketSummary(store, W, M.marked))!.summary;
    // token-2 buys at 0.25 and 0.35 are Up 0.75 and 0.65: (200·0.75 + 100·0.65) / 300
    expect(marked).toMatchObject({ avg_entry_price: close(215 / 300), won: null, open: true, hold_seconds: 170 });
    expect(marked.sides[1]).toStrictEqual({
      token_side: 2,
      outcome: 'Under',
      buy_count: 2,
      sell_count: 1,
      buy_usd: 85,
      sell_usd: 25,
      avg_entry: close(85 / 300),
      net_tokens: 250,
    });

    // many: sizes 1.3 3 4 4.5 6 7 11 15 21 28 50 61 → p50 = 6th, p90 = 11th (ceil 10.8)
    expect((await readMarketSummary(store, W, M.many))!.summary).toMatchObject({
      size_p50_usd: 7,
      size_p90_usd: 50,
      size_max_usd: 61,
    });

    // one fill and no trades: the window is a point, both shares 1
    expect((await readMarketSummary(store, W, M.unmarked))!.summary).toMatchObject({
      usd_share_first_tenth: 1,
      usd_share_last_tenth: 1,
      hold_seconds: 0,
    });

    // split only: no fills, no buys
    expect((await readMarketSummary(store, W, M.splitOnly))!.summary).toStrictEqual({
      fills_count: 0,
      buy_count: 0,
      sell_count: 0,
      buy_usd: 0,
      sell_usd: 0,
      avg_entry_price: null,
      size_p50_usd: null,
      size_p90_usd: null,
      size_max_usd: null,
      first_fill_ts: null,
      last_fill_ts: null,
      hold_seconds: 0,
      usd_share_first_tenth: 0,
      usd_share_last_tenth: 0,
      pnl_usd: -10,
      roi: null,
      won: null,
      open: true,
      sides: [
        {
          token_side: 1,
          outcome: 'Higher',
          buy_count: 0,
          sell_count: 0,
          buy_usd: 0,
          sell_usd: 0,
          avg_entry: null,
          net_tokens: 10,
        },
        {
          token_side: 2,
          outcome: 'Lower',
          buy_count: 0,
          sell_count: 0,
          buy_usd: 0,
          sell_usd: 0,
          avg_entry: null,
          net_tokens: 10,
        },
      ],
    });

    // legs: a split-seller (no buys: roi null); still held 20 losing Yes tokens at the resolution (B+900)
    expect((await readMarketSummary(store, W, M.legs))!.summary).toMatchObject({
      roi: null,
      won: true,
      hold_seconds: 900 - 70,
      pnl_usd: close(36),
    });
  });

  it('null for a market the trader never traded, an unknown market, an unknown wallet', async () => {
    expect(await readMarketSummary(store, W, NEVER_TRADED)).toBeNull();
    expect(await readMarketHeader(store, W, NEVER_TRADED)).toBeNull();
    expect(await readMarketSummary(store, W, cid('unknown'))).toBeNull();
    expect(await readMarketHeader(store, UNKNOWN_WALLET, M.won)).toBeNull();
    // another trader's view of the same market is its own
    expect((await readMarketHeader(store, W2, M.won))!.pnl_usd).toBeCloseTo(-4.5 + 10, 9);
  });
});

describe('trader fills', () => {
  async function allFillPages(since: number | undefined, limit: number) {
    const pages: TraderFill[][] = [];
    let after: Awaited<ReturnType<typeof readTraderFills>>['next'] | undefined;
    for (;;) {
      const page = await readTraderFills(store, W, { since, after: after ?? undefined, limit });
      pages.push(page.fills);
      if (!page.next) return pages;
      after = page.next;
      if (pages.length > 100) throw new Error('paging does not end');
    }
  }

  it('every fill of the wallet in (ts, condition_id, fill_id) order, with title, outcome and the UP price', async () => {
    const { fills, next } = await readTraderFills(store, W, { limit: 1000 });
    expect(next).toBeNull();
    expect(fills).toStrictEqual(expectedFills(0));
    // a token-2 buy at 0.25 is Up 0.75; a market without metadata has no names
    expect(fills.find((f) => f.condition_id === M.marked && f.ts === B + 30)).toStrictEqual({
      ts: B + 30,
      condition_id: M.marked,
      title: 'Marked market',
      side: 'BUY',
      price: 0.75,
      token_side: 2,
      outcome: 'Under',
      size_tokens: 200,
      usd: 50,
    });
    expect(fills.find((f) => f.condition_id === M.noMeta)).toMatchObject({ title: '', outcome: '' });
  });

  it('within a second, condition_id orders before fill_id', async () => {
    const { fills } = await readTraderFills(store, W, { since: B + 40, limit: 3 });
    expect(fills.map((f) => f.condition_id)).toEqual(SAME_SECOND);
    // one at a time across the second: the keyset continues in the same order
    const seen: string[] = [];
    let after: FillPosition | undefined;
    for (let i = 0; i < 3; i++) {
      const page = await readTraderFills(store, W, { since: B + 40, after, limit: 1 });
      seen.push(page.fills[0]!.condition_id);
      after = page.next!;
    }
    expect(seen).toEqual(SAME_SECOND);
  });

  it('since is inclusive', async () => {
    const { fills } = await readTraderFills(store, W, { since: B + 120, limit: 1000 });
    expect(fills).toStrictEqual(expectedFills(B + 120));
    expect(fills[0]!.ts).toBe(B + 120);
    expect(fills.filter((f) => f.ts === B + 120)).toHaveLength(2);
    expect((await readTraderFills(store, W, { since: B + 10_000, limit: 5 })).fills).toEqual([]);
  });

  it('paging with any limit and since returns every fill exactly once, in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom(undefined, 0, B + 40, B + 120, B + 600, B + 901),
        async (limit, since) => {
          const expected = expectedFills(since ?? 0);
          const pages = await allFillPages(since, limit);
          for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
          expect(pages.flat()).toStrictEqual(expected);
          expect(pages.length).toBe(Math.max(1, Math.ceil(expected.length / limit)));
        },
      ),
      { numRuns: 8 },
    );
  });
});

describe('names', () => {
  it('reads the current name of a wallet', async () => {
    expect(await readTraderName(store, W)).toBe('NewName');
    expect(await readTraderName(store, W2)).toBe('Twin');
    expect(await readTraderName(store, UNKNOWN_WALLET)).toBe('');
  });

  it('finds a wallet by its current name, case-insensitively; a former name no longer leads to it', async () => {
    expect(await findWalletByName(store, 'newname')).toEqual({ wallet: W, name: 'NewName' });
    expect(await findWalletByName(store, 'NEWNAME')).toEqual({ wallet: W, name: 'NewName' });
    // W was OldName; W6 is oldname now
    expect(await findWalletByName(store, 'OldName')).toEqual({ wallet: W6, name: 'oldname' });
    // Twin (B+50) and twin (B+60): the more recent wins
    expect(await findWalletByName(store, 'TWIN')).toEqual({ wallet: W3, name: 'twin' });
    // Same and SAME at the same time: the smaller wallet
    expect(await findWalletByName(store, 'same')).toEqual({ wallet: W4, name: 'Same' });
    expect(await findWalletByName(store, 'nobody')).toBeNull();
    expect(await findWalletByName(store, '')).toBeNull();
  });
});

describe('popular shelf', () => {
  /** Live watcher counts as the slot store answers them (W4's watchers all left). */
  const WATCHING = new Map([
    [W, 5],
    [W3, 5],
    [W2, 3],
    [W4, 0],
    [W5, 1],
    [W7, 1],
  ]);

  it('the most watched first, then by wallet; unwatched traders are not on it', async () => {
    const [first5, second5] = [W, W3].sort() as [string, string];
    const [first1, second1] = [W5, W7].sort() as [string, string];
    const name = (wallet: string) => ({ [W]: 'NewName', [W3]: 'twin', [W2]: 'Twin', [W5]: 'SAME', [W7]: '' })[wallet];
    const expected = [first5, second5, W2, first1, second1].map((wallet) => ({
      wallet,
      name: name(wallet),
      watching: wallet === W2 ? 3 : wallet === W || wallet === W3 ? 5 : 1,
    }));
    expect(await readPopularTraders(store, 10, WATCHING)).toEqual(expected);
    expect(await readPopularTraders(store, 2, WATCHING)).toEqual(expected.slice(0, 2));
    // a limit inside a tie keeps the order
    expect(await readPopularTraders(store, 1, WATCHING)).toEqual(expected.slice(0, 1));
    expect(await readPopularTraders(store, 4, WATCHING)).toEqual(expected.slice(0, 4));
    expect((await readPopularTraders(store, 10, WATCHING)).map((trader) => trader.wallet)).not.toContain(W4);
  });
});

describe('upstream profile', () => {
  it('the latest profile with peak, low and worst drawdown of the full equity history', async () => {
    expect(await readUpstreamProfile(store, W)).toStrictEqual({
      pnl: 123.5,
      pnl_realized: 100,
      pnl_unrealized: 23.5,
      portfolio_value: 500,
      peak: 80,
      low: -10,
      max_drawdown: 90,
      profile_image: 'https://img.example/new.png',
      as_of: B + 200,
    });
  });

  it('zeros without equity history; null without a profile', async () => {
    expect(await readUpstreamProfile(store, W2)).toStrictEqual({
      pnl: 7,
      pnl_realized: 6,
      pnl_unrealized: 1,
      portfolio_value: 1007,
      peak: 0,
      low: 0,
      max_drawdown: 0,
      profile_image: 'https://img.example/Twin.png',
      as_of: B + 50,
    });
    expect(await readUpstreamProfile(store, W7)).toBeNull();
  });
});
