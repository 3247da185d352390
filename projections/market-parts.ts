/**
 * The point lookups of one market (and of one trader in it) that several bundles share
 * (projections/bundle.ts): the summary, the trader's market of a chart or tape, the sampled chart. Each
 * lookup (table, key, which copy counts) is written once here; a bundle takes the columns it needs (on
 * this engine every column read costs: the summary reads fewer than the chart). Keys' newest versions by
 * ReplacingMergeTree's rule (ORDER BY version DESC LIMIT 1), never FINAL. An absent part has no row.
 * Parameters: `condition_id`, and `wallet` for the trader's parts.
 */
import type { MarketHeader } from './market-schemas.ts';

/** The market's metadata: its names and the start its title names (`MarketMetaRow`). */
export const marketMetaPart = (columns = 'title, outcome1, outcome2, title_start_ts') => `
    SELECT ${columns}
    FROM {db:Identifier}.markets_meta_v2
    WHERE condition_id = {condition_id:String}
    ORDER BY version DESC
    LIMIT 1`;

export interface MarketMetaRow {
  title: string;
  outcome1: string;
  outcome2: string;
  title_start_ts: number | null;
}

/** The market's traded span (its marks): first and last trade. */
export const MARKET_TRADE_SPAN_PART = `
    SELECT min(first_ts) AS first_ts, max(last_ts) AS last_ts
    FROM {db:Identifier}.market_marks_v2
    WHERE condition_id = {condition_id:String}
    GROUP BY condition_id`;

/** The market's traded span up to `as_of`, from its prints (the marks' aggregate holds no time to cut at). */
export const MARKET_TRADE_SPAN_AS_OF_PART = `
    SELECT min(ts) AS first_ts, max(ts) AS last_ts
    FROM {db:Identifier}.trades
    WHERE condition_id = {condition_id:String} AND ts <= {as_of:UInt32}
    HAVING count() > 0`;

export interface MarketTradeSpanRow {
  first_ts: number;
  last_ts: number;
}

/** The market's resolution (`MarketResolutionRow`): a stated one before an inferred one (migration 0026), then the latest. */
export const marketResolutionPart = (columns = 'winner_token_side, ts, payout1, payout2', asOf = false) => `
    SELECT ${columns}
    FROM {db:Identifier}.market_resolutions_v2
    WHERE condition_id = {condition_id:String}${asOf ? ' AND ts <= {as_of:UInt32}' : ''}
    ORDER BY inferred, ts DESC
    LIMIT 1`;

export interface MarketResolutionRow {
  winner_token_side: number;
  ts: number;
  payout1: number | null;
  payout2: number | null;
}

/** The fields of a fill that `fill_row` serializes, in its order (migration 0013; checked against the columns by test/reads-shape). */
export const FILL_ROW_FIELDS = ['side', 'up_price', 'token_side', 'size_tokens', 'usd'] as const;

/** A fill's `fill_row`, parsed: its trade fields (the price in UP space, as stored). */
interface FillRowFields {
  side: 'BUY' | 'SELL';
  up_price: number;
  token_side: 1 | 2;
  size_tokens: number;
  usd: number;
}
// Compile-time: the list and the parsed shape name the same fields.
const everyFillFieldListed: [
  | Exclude<keyof FillRowFields, (typeof FILL_ROW_FIELDS)[number]>
  | Exclude<(typeof FILL_ROW_FIELDS)[number], keyof FillRowFields>,
] extends [never]
  ? true
  : never = true;
void everyFillFieldListed;

/**
 * The trader's fills in the market (`TraderMarketFillRow` with the columns asked for), one copy per fill:
 * the highest source_rank (the archive's), as ReplacingMergeTree(source_rank) keeps. `fill_id` is always
 * among the columns. The default reads the fill's trade fields as its one column `fill_row` (migration
 * 0013: on this engine every column read costs, in every part), for `traderMarketFillOf`.
 */
export const traderMarketFillsPart = (columns = 'ts, fill_row', asOf = false) => `
    SELECT fill_id, ${columns}
    FROM {db:Identifier}.fills_v2
    WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}${asOf ? ' AND ts <= {as_of:UInt32}' : ''}
    ORDER BY fill_id, source_rank DESC
    LIMIT 1 BY fill_id`;

/** A row of the default `traderMarketFillsPart`: the fill's key, time and serialized trade fields. */
export interface TraderMarketFillRowSerialized {
  fill_id: string;
  ts: number;
  fill_row: string;
}

/** A trader's fill from its serialized row (a fills page's rows too). */
export function traderMarketFillOf(row: TraderMarketFillRowSerialized): TraderMarketFillRow {
  const fill = JSON.parse(row.fill_row) as FillRowFields;
  return {
    ts: row.ts,
    fill_id: row.fill_id,
    side: fill.side,
    price: fill.up_price,
    token_side: fill.token_side,
    size_tokens: fill.size_tokens,
    usd: fill.usd,
  };
}

export interface TraderMarketFillRow {
  ts: number;
  fill_id: string;
  side: 'BUY' | 'SELL';
  /** UP space. */
  price: number;
  token_side: 1 | 2;
  size_tokens: number;
  usd: number;
}

export interface Resolution {
  /** Null: a split payout (no winner). */
  winnerTokenSide: 1 | 2 | null;
  ts: number;
  /** A split payout: what one token 1 paid (0.5 for numerators [1, 1]). */
  upPayout?: number;
}

/** What places a market in time: the start its title names, its trades, its resolution. */
export interface MarketTimes {
  conditionId: string;
  titleStartTs: number | null;
  outcome1: string;
  outcome2: string;
  firstTradeTs: number | null;
  lastTradeTs: number | null;
  resolution: Resolution | null;
}

/** A trader's market as a chart or tape starts from: the trader's header of it and the market's times. */
export interface TraderMarket {
  header: MarketHeader;
  times: MarketTimes;
}

/** The times from the market's parts (each absent without a row); null when the market is unknown (no metadata and no trades). */
export function marketTimesOf(
  conditionId: string,
  meta: MarketMetaRow | undefined,
  trades: MarketTradeSpanRow | undefined,
  resolution: MarketResolutionRow | undefined,
): MarketTimes | null {
  if (!meta && !trades) return null;
  return {
    conditionId,
    titleStartTs: meta?.title_start_ts ?? null,
    outcome1: meta?.outcome1 ?? '',
    outcome2: meta?.outcome2 ?? '',
    firstTradeTs: trades?.first_ts ?? null,
    lastTradeTs: trades?.last_ts ?? null,
    resolution: resolution ? resolutionOf(resolution) : null,
  };
}

/**
 * A winner (token 1 or 2), or a split payout (winner 0): token 1's share of the payout numerators; none
 * when no payouts were reported (not resolved).
 */
function resolutionOf(row: MarketResolutionRow): Resolution | null {
  const winner = row.winner_token_side;
  if (winner === 1 || winner === 2) return { winnerTokenSide: winner, ts: row.ts };
  const payout1 = row.payout1 ?? 0;
  const payout2 = row.payout2 ?? 0;
  return payout1 + payout2 > 0 ? { winnerTokenSide: null, ts: row.ts, upPayout: payout1 / (payout1 + payout2) } : null;
}

/** Whether a trader's market never changes again: the header and the resolution both say resolved. */
export function traderMarketResolved(market: TraderMarket | null): boolean {
  return market?.header.resolved === true && market.times.resolution !== null;
}

/** Byte order of two ids (ClickHouse's String order; the ids are ASCII): a bundle's rows come in no order, folds sort them. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
