/**
 * Price reads of one market: the sampled chart (a rung of the fidelity ladder chosen for the window),
 * the full per-second tape, and raw ticks. Every value is a real traded level in UP space; a series
 * point is `[ts, last, lo, hi]`. The only other level that ever appears is the winner level (1.00 or
 * 0.00) that ends the full tape of a resolved market: the market is pinned there.
 */
import { z } from 'zod';
import { bundle, readBundle } from './bundle.ts';
import {
  compareIds,
  MARKET_TRADE_SPAN_PART,
  marketMetaPart,
  marketResolutionPart,
  marketTimesOf,
  traderMarketFillOf,
  traderMarketFillsPart,
  type MarketMetaRow,
  type MarketResolutionRow,
  type MarketTimes,
  type MarketTradeSpanRow,
  type Resolution,
  type TraderMarket,
  type TraderMarketFillRowSerialized,
} from './market-parts.ts';
import {
  toHeader,
  TRADER_MARKET_ROW_PART,
  traderMarketRowOf,
  type SerializedTraderMarketRow,
} from './market-header.ts';
import { clampEpochSeconds, clampUInt32, epochLowerBound } from './params.ts';
import type { Store } from './store.ts';

/** The rungs of the fidelity ladder, in seconds. The same list is in migration 0003 (price_ladder view). */
export const FIDELITY_LADDER = [1, 5, 15, 60, 300, 900, 3600, 14_400, 86_400, 604_800, 2_592_000] as const;
export type Fidelity = (typeof FIDELITY_LADDER)[number];

export const seriesPointSchema = z.tuple([z.int(), z.number(), z.number(), z.number()]).meta({
  description:
    '[ts, last, lo, hi]: epoch seconds, the final real trade level of the bucket, band low, band high; all UP-normalized real traded levels.',
});
/** `[ts, last, lo, hi]`. */
export type SeriesPoint = z.infer<typeof seriesPointSchema>;

/** Buckets of width `fidelity` that a window [fromTs, toTs] touches (buckets are aligned to the epoch). */
export function bucketCount(fromTs: number, toTs: number, fidelity: number): number {
  return Math.floor(toTs / fidelity) - Math.floor(fromTs / fidelity) + 1;
}

/** The finest rung whose bucket count over the window fits in `points` (the coarsest if none does). */
export function finestFittingFidelity(fromTs: number, toTs: number, points: number): Fidelity {
  for (const fidelity of FIDELITY_LADDER) {
    if (bucketCount(fromTs, toTs, fidelity) <= points) return fidelity;
  }
  return FIDELITY_LADDER[FIDELITY_LADDER.length - 1]!;
}

/** A requested bucket size snapped to the ladder: the smallest rung at least as wide (the widest rung at most). */
export function snapToLadder(seconds: number): Fidelity {
  for (const fidelity of FIDELITY_LADDER) if (fidelity >= seconds) return fidelity;
  return FIDELITY_LADDER[FIDELITY_LADDER.length - 1]!;
}

/** The level a resolved market is pinned at: 1.00 when token 1 won, 0.00 when token 2 won, a split payout's token-1 share (0.50). */
function winnerLevel(resolution: Resolution): number {
  if (resolution.winnerTokenSide === 1) return 1;
  if (resolution.winnerTokenSide === 2) return 0;
  return resolution.upPayout ?? 0.5;
}

/**
 * A resolved market's tape ends pinned at the winner level: a last row at the resolution (or the second
 * after the last trade, if trading ran past it), unless the tape already ends there.
 */
export function pinToWinner(rows: readonly SeriesPoint[], resolution: Resolution | null): SeriesPoint[] {
  if (!resolution) return [...rows];
  const level = winnerLevel(resolution);
  const last = rows[rows.length - 1];
  if (last && last[1] === level && last[2] === level && last[3] === level) return [...rows];
  const ts = last ? Math.max(resolution.ts, last[0] + 1) : resolution.ts;
  return [...rows, [ts, level, level, level]];
}

// ---------------------------------------------------------------------------------------------------
// Reads

interface LadderRow {
  ts: number;
  last: number;
  lo: number;
  hi: number;
}

/** One rung of one market over a window: unmerged parts are merged by the GROUP BY. */
const READ_RUNG = `
SELECT ts, max(last_trade).3 AS last, min(lo) AS lo, max(hi) AS hi
FROM {db:Identifier}.price_ladder
WHERE condition_id = {condition_id:String} AND fidelity = {fidelity:UInt32}
  AND ts >= {from_bucket:UInt32} AND ts <= {to_ts:UInt32}
GROUP BY ts
ORDER BY ts`;

function toPoints(rows: readonly LadderRow[]): SeriesPoint[] {
  return rows.map((row) => [row.ts, row.last, row.lo, row.hi]);
}

function rungParams(conditionId: string, fidelity: Fidelity, fromTs: number, toTs: number) {
  return { condition_id: conditionId, fidelity, from_bucket: Math.floor(fromTs / fidelity) * fidelity, to_ts: toTs };
}

export async function readRung(
  store: Store,
  conditionId: string,
  fidelity: Fidelity,
  fromTs: number,
  toTs: number,
): Promise<SeriesPoint[]> {
  return toPoints(await store.query<LadderRow>(READ_RUNG, rungParams(conditionId, fidelity, fromTs, toTs)));
}

/**
 * What places a market in time, as point lookups of one bundle (projections/market-parts.ts): its
 * metadata, its trade span (marks), its resolution.
 */
const marketTimesParts = { meta: marketMetaPart(), trades: MARKET_TRADE_SPAN_PART, resolution: marketResolutionPart() };
interface MarketTimesParts {
  meta: MarketMetaRow;
  trades: MarketTradeSpanRow;
  resolution: MarketResolutionRow;
}
/** The trader's row of the market with the market's times: everything a chart or tape needs to start, in one statement. */
const READ_TRADER_MARKET = bundle<MarketTimesParts & { tm: SerializedTraderMarketRow }>({
  ...marketTimesParts,
  tm: TRADER_MARKET_ROW_PART,
});

/**
 * The default window of a chart: from the start time named in the title (else the first trade), to
 * the last trade or the resolution, whichever is later.
 */
function defaultWindow(times: MarketTimes, nowSeconds: number): { fromTs: number; toTs: number } {
  const fromTs = times.titleStartTs ?? times.firstTradeTs ?? nowSeconds;
  const toTs = Math.max(fromTs, times.lastTradeTs ?? fromTs, times.resolution?.ts ?? 0);
  return { fromTs, toTs };
}

export interface ChartLimits {
  defaultPoints: number;
  minPoints: number;
  maxPoints: number;
}

export interface ChartRequest {
  points?: number | undefined;
  fromTs?: number | undefined;
  toTs?: number | undefined;
  /** A forced bucket size in seconds, snapped to the ladder. */
  resolution?: number | undefined;
}

export interface SampledSeries {
  from_ts: number;
  to_ts: number;
  fidelity: Fidelity;
  points: SeriesPoint[];
}

/**
 * Resolves a chart request against a market: the window (defaulting as above; a lone bound keeps the
 * other default), the point budget (default, clamped), and the rung: the forced one when its buckets
 * fit in the budget, else the finest rung that fits.
 */
export function planChart(
  times: MarketTimes,
  request: ChartRequest,
  limits: ChartLimits,
  nowSeconds: number,
): { fromTs: number; toTs: number; points: number; fidelity: Fidelity } {
  const defaults = defaultWindow(times, nowSeconds);
  // Times are UInt32 epoch seconds in the store: a bound outside that range means its nearest end
  // (the answer states the window it used).
  let fromTs = clampEpochSeconds(request.fromTs ?? defaults.fromTs);
  const toTs = Math.max(fromTs, clampEpochSeconds(request.toTs ?? Math.max(defaults.toTs, fromTs)));
  const points = Math.min(
    limits.maxPoints,
    Math.max(limits.minPoints, Math.trunc(request.points ?? limits.defaultPoints)),
  );
  const fitting = finestFittingFidelity(fromTs, toTs, points);
  const forced = request.resolution === undefined ? undefined : snapToLadder(request.resolution);
  const fidelity = forced !== undefined && forced >= fitting ? forced : fitting;
  // A window too long for even the coarsest rung keeps its end (the end view) and loses its start.
  // (Moving the start later only removes buckets; it never goes before the epoch.)
  if (bucketCount(fromTs, toTs, fidelity) > points)
    fromTs = Math.max(0, (Math.floor(toTs / fidelity) - points + 1) * fidelity);
  return { fromTs, toTs, points, fidelity };
}

/** The change-only tape the rollup refresher keeps (deleted rows are seconds that stopped being changes). */
const READ_TAPE = `
SELECT ts, last, lo, hi
FROM
(
    SELECT ts, last, lo, hi, is_deleted
    FROM {db:Identifier}.tape_changes FINAL
    WHERE condition_id = {condition_id:String}
)
WHERE NOT is_deleted
ORDER BY ts`;

/** The full per-second tape: change-only rows, pinned at the winner level when resolved. Uncapped. */
export async function readFullTape(store: Store, times: MarketTimes): Promise<SeriesPoint[]> {
  return pinToWinner(
    toPoints(await store.query<LadderRow>(READ_TAPE, { condition_id: times.conditionId })),
    times.resolution,
  );
}

// ---------------------------------------------------------------------------------------------------
// Raw ticks: the trades themselves, keyset-paged forward.

export interface Tick {
  ts: number;
  price: number;
}

/** A position in a market's trades: everything up to and including it has been returned. */
export interface TickPosition {
  ts: number;
  seq: number;
  tradeId: string;
}

// One row per print (trade_id): a print landed from both the archive and the upstream is one tick, the
// chain's copy (its seq is above every upstream seq of the second; a replayed copy is the same row).
const READ_TICKS = `
SELECT ts, argMax(up_price, seq) AS tick_price, max(seq) AS tick_seq, trade_id
FROM {db:Identifier}.trades
WHERE condition_id = {condition_id:String}
  AND ts >= {from_ts:UInt32}
GROUP BY ts, trade_id
HAVING (ts, tick_seq, trade_id) > ({after_ts:UInt32}, {after_seq:UInt64}, {after_id:String})
ORDER BY ts, tick_seq, trade_id
LIMIT {limit:UInt32}`;

export async function readRawTicks(
  store: Store,
  conditionId: string,
  page: { windowStartTs?: number | undefined; after?: TickPosition | undefined; limit: number },
): Promise<{ ticks: Tick[]; next: TickPosition | null }> {
  const after = page.after ?? { ts: 0, seq: 0, tradeId: '' };
  const fromTs = epochLowerBound(Math.max(page.windowStartTs ?? 0, after.ts));
  // A window starting past the last second the store holds has no ticks (bound as UInt32 it would wrap).
  if (fromTs === null) return { ticks: [], next: null };
  // One row more than asked tells whether a next page exists.
  const rows = await store.query<{ ts: number; tick_price: number; tick_seq: number; trade_id: string }>(READ_TICKS, {
    condition_id: conditionId,
    from_ts: fromTs,
    after_ts: clampEpochSeconds(after.ts),
    after_seq: after.seq,
    after_id: after.tradeId,
    limit: clampUInt32(page.limit + 1),
  });
  const pageRows = rows.slice(0, page.limit);
  const lastRow = pageRows[pageRows.length - 1];
  return {
    ticks: pageRows.map((row) => ({ ts: row.ts, price: row.tick_price })),
    next:
      rows.length > page.limit && lastRow ? { ts: lastRow.ts, seq: lastRow.tick_seq, tradeId: lastRow.trade_id } : null,
  };
}

// ---------------------------------------------------------------------------------------------------
// The trader's fills in a market: always complete.

export const marketFillSchema = z.object({
  ts: z.int(),
  side: z.enum(['BUY', 'SELL']),
  price: z.number().meta({ description: 'UP space.' }),
  token_side: z.union([z.literal(1), z.literal(2)]),
  outcome: z.string(),
  size_tokens: z.number(),
  usd: z.number(),
});
export type MarketFill = z.infer<typeof marketFillSchema>;

/** The sampled chart in one statement: the series' rung over its window and the trader's fills (ordered in marketFillsOf). */
const READ_CHART = bundle<{ rung: LadderRow; fills: TraderMarketFillRowSerialized }>({
  rung: READ_RUNG,
  fills: traderMarketFillsPart(),
});

/** The trader's fills in time order (then fill_id), each with the name of the token traded. */
function marketFillsOf(rows: readonly TraderMarketFillRowSerialized[], times: MarketTimes): MarketFill[] {
  return rows
    .map(traderMarketFillOf)
    .sort((a, b) => a.ts - b.ts || compareIds(a.fill_id, b.fill_id))
    .map(({ fill_id: _id, ...fill }) => ({
      ...fill,
      outcome: fill.token_side === 1 ? times.outcome1 : times.outcome2,
    }));
}

// ---------------------------------------------------------------------------------------------------
// A trader's market, as the chart and tape answers need it.

export type { MarketTimes, Resolution, TraderMarket };

/** The trader's header of the market and the market's times; null when the trader never traded it (or it is unknown). */
export async function readTraderMarket(
  store: Store,
  wallet: string,
  conditionId: string,
): Promise<TraderMarket | null> {
  const parts = await readBundle(store, READ_TRADER_MARKET, { wallet, condition_id: conditionId });
  const tm = traderMarketRowOf(parts.tm);
  const times = marketTimesOf(conditionId, parts.meta[0], parts.trades[0], parts.resolution[0]);
  if (!tm || !times) return null;
  const [meta] = parts.meta;
  const header = toHeader({ ...tm, title: meta?.title ?? '', outcome1: times.outcome1, outcome2: times.outcome2 });
  return { header, times };
}

/** The sampled chart of a trader's market: the series for the request and the trader's complete fills. */
export async function readSampledChart(
  store: Store,
  wallet: string,
  market: TraderMarket,
  request: ChartRequest,
  limits: ChartLimits,
  nowSeconds: number,
): Promise<{ series: SampledSeries; fills: MarketFill[] }> {
  const plan = planChart(market.times, request, limits, nowSeconds);
  const parts = await readBundle(store, READ_CHART, {
    ...rungParams(market.times.conditionId, plan.fidelity, plan.fromTs, plan.toTs),
    wallet,
  });
  const points = toPoints([...parts.rung].sort((a, b) => a.ts - b.ts));
  return {
    series: { from_ts: plan.fromTs, to_ts: plan.toTs, fidelity: plan.fidelity, points },
    fills: marketFillsOf(parts.fills, market.times),
  };
}

// ---------------------------------------------------------------------------------------------------
// Zoom slabs: pre-baked rungs a vector chart zooms through without another request.

/** One rung of the ladder over one window: `[ts, last, lo, hi]` buckets, empty ones absent (gaps). */
export interface ChartSlab {
  fidelity: Fidelity;
  from_ts: number;
  to_ts: number;
  points: SeriesPoint[];
}

/** Buckets of one slab tile at the finer rungs (what a chart about 600 pixels wide draws at full detail). */
const SLAB_TILE_BUCKETS = 600;
/** At most this many fill-centered tiles per finer rung. */
const SLAB_TILES_PER_RUNG = 6;

/**
 * The slabs of a sampled series: the series itself (its rung over its window), then every finer rung of
 * the ladder over the whole window while all slabs together stay within `budget` buckets; below that,
 * tiles of SLAB_TILE_BUCKETS buckets around the fills (where people zoom), finest rung 1 s, still within
 * the budget. Coarsest first; every point is a real traded level, as in the series.
 */
export async function readChartSlabs(
  store: Store,
  conditionId: string,
  series: Omit<SampledSeries, 'fidelity'> & { fidelity: number },
  fillTimes: readonly number[],
  budget: number,
): Promise<ChartSlab[]> {
  const fidelity0 = snapToLadder(series.fidelity);
  const slabs: ChartSlab[] = [
    { fidelity: fidelity0, from_ts: series.from_ts, to_ts: series.to_ts, points: series.points },
  ];
  let spent = bucketCount(series.from_ts, series.to_ts, fidelity0);
  const plans: { fidelity: Fidelity; fromTs: number; toTs: number }[] = [];
  const finer = FIDELITY_LADDER.filter((fidelity) => fidelity < fidelity0).reverse();
  const inWindow = [...new Set(fillTimes.filter((ts) => ts >= series.from_ts && ts <= series.to_ts))].sort(
    (a, b) => a - b,
  );
  for (const fidelity of finer) {
    const whole = bucketCount(series.from_ts, series.to_ts, fidelity);
    if (spent + whole <= budget) {
      plans.push({ fidelity, fromTs: series.from_ts, toTs: series.to_ts });
      spent += whole;
      continue;
    }
    // Tiles around the fills: one per distinct tile position, at most SLAB_TILES_PER_RUNG, spread over the fills.
    const span = SLAB_TILE_BUCKETS * fidelity;
    const starts: number[] = [];
    for (const ts of inWindow) {
      const start = Math.max(series.from_ts, Math.min(series.to_ts - span + 1, ts - Math.floor(span / 2)));
      const aligned = Math.max(series.from_ts, Math.floor(start / fidelity) * fidelity);
      if (starts.length === 0 || aligned >= starts[starts.length - 1]! + span) starts.push(aligned);
    }
    const step = Math.max(1, Math.ceil(starts.length / SLAB_TILES_PER_RUNG));
    for (let index = 0; index < starts.length; index += step) {
      const fromTs = starts[index]!;
      const toTs = Math.min(series.to_ts, fromTs + span - 1);
      const buckets = bucketCount(fromTs, toTs, fidelity);
      if (spent + buckets > budget) break;
      plans.push({ fidelity, fromTs, toTs });
      spent += buckets;
    }
  }
  const read = await Promise.all(
    plans.map(async (plan) => ({
      fidelity: plan.fidelity,
      from_ts: plan.fromTs,
      to_ts: plan.toTs,
      points: await readRung(store, conditionId, plan.fidelity, plan.fromTs, plan.toTs),
    })),
  );
  return [...slabs, ...read];
}
