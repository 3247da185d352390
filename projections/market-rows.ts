/**
 * A trader's rows of `trader_markets_v2` (the rollup the ingest worker keeps per wallet and market) as the
 * markets list and the top-markets show them: the columns they read, the history depth that clamps them,
 * the list's order, and a row with its market's names and, open, its mark (its last trade, UP space).
 */
import { clampUInt32 } from './params.ts';
import { compareIds } from './market-parts.ts';
import { resolutionSourceOf, type MarketRow } from './market-schemas.ts';
import { NO_MARKET_NAMES, type MarketNames } from './market-names.ts';

/** The trader_markets_v2 columns a market row is built from (each market's newest version: the latest recomputation). */
const ROW_COLUMNS = `
        condition_id, last_ts, last_fill_ts, last_action, last_price, fills_count, buy_usd, sell_usd,
        net_tokens1, net_tokens2, cash_flow_usd, resolved, winner_token_side, up_payout, pnl_usd, resolution_source`;

/**
 * A row's place in the recency order, in SQL: its last fill; a market the trader only split, merged or
 * redeemed has no fill and takes its last leg (legs never move a traded market's place).
 */
const LAST_TRADED_AT = 'ifNull(last_fill_ts, last_ts)';

/**
 * The same for a row in memory (the answer's `last_traded_at`). A serialized row written before migration
 * 0016 was materialized has no last_fill_ts: it keeps its last activity until the rewrite reaches it.
 */
export function lastTradedAt(row: { last_fill_ts?: number | null; last_ts: number }): number {
  return row.last_fill_ts ?? row.last_ts;
}

/**
 * The wallet's rows of trader_markets_v2, each market's newest version (ORDER BY version DESC LIMIT 1 BY:
 * ReplacingMergeTree's own rule) instead of FINAL, read by the wallet prefix of the key (index granularity
 * 256: about the wallet's rows, not 8,192-row granules). Filters on other columns go outside, so that they
 * apply to the newest version as they did after FINAL.
 */
const newestTraderMarkets = (columns: string) => `
    (
        SELECT ${columns}
        FROM {db:Identifier}.trader_markets_v2
        WHERE wallet = {wallet:String}
        ORDER BY version DESC
        LIMIT 1 BY condition_id
    )`;

/**
 * The wallet's markets within a history depth: the first `{history_depth}` of the recency order (last
 * traded DESC, condition_id DESC: the markets list's order). Basic callers see only these; every read
 * that is clamped to the visible set selects from this (the columns vary, the set does not).
 */
const withinDepth = (columns: string) => `
    SELECT ${columns}
    FROM ${newestTraderMarkets(ROW_COLUMNS)}
    ORDER BY ${LAST_TRADED_AT} DESC, condition_id DESC
    LIMIT {history_depth:UInt32}`;

/** The condition_ids of the wallet's visible markets (params `wallet`, `history_depth`), for `IN (…)`. */
export const MARKETS_WITHIN_DEPTH = withinDepth('condition_id');

/** A history depth as the UInt32 the statements bind; call only with a depth ≥ 0 (-1 is unlimited: no clamp). */
export function historyDepthParam(historyDepth: number): number {
  return clampUInt32(historyDepth);
}

export interface TraderMarketRow {
  condition_id: string;
  /** The last fill or leg (the card's last_seen folds it). */
  last_ts: number;
  /** The last fill; null when the trader only split, merged or redeemed here. */
  last_fill_ts: number | null;
  last_action: string;
  last_price: number | null;
  fills_count: number;
  buy_usd: number;
  sell_usd: number;
  net_tokens1: number;
  net_tokens2: number;
  cash_flow_usd: number;
  resolved: boolean;
  winner_token_side: number;
  /** What one token 1 paid at the resolution (1, 0, or a split's share); null while open. */
  up_payout: number | null;
  pnl_usd: number;
  /** Who said it resolved ('' while open); absent from a serialized row written before migration 0026. */
  resolution_source?: string;
}

/**
 * The winning token's name; for a split payout (no winner, e.g. payouts [1, 1]) the percent each token paid,
 * token 1 first: "50/50".
 */
export function winnerName(row: {
  resolved: boolean;
  winner_token_side: number;
  up_payout: number | null;
  outcome1: string;
  outcome2: string;
}): string | null {
  if (!row.resolved) return null;
  if (row.winner_token_side === 1) return row.outcome1;
  if (row.winner_token_side === 2) return row.outcome2;
  if (row.up_payout === null) return null;
  const percent1 = Math.round(row.up_payout * 100);
  return `${percent1}/${100 - percent1}`;
}

function lastAction(action: string): 'BUY' | 'SELL' | null {
  return action === 'BUY' || action === 'SELL' ? action : null;
}

/** Holdings at the mark: token 1 at `mark`, token 2 at `1 − mark`. */
function marketValue(net1: number, net2: number, mark: number): number {
  return net1 * mark + net2 * (1 - mark);
}

/** A row of the lists, with its market's names (none: '') and, open, its mark (none: unmarked). */
export function toMarketRow(
  row: TraderMarketRow,
  namesOf: ReadonlyMap<string, MarketNames>,
  marks: ReadonlyMap<string, number>,
): MarketRow {
  const names = namesOf.get(row.condition_id) ?? NO_MARKET_NAMES;
  const market: MarketRow = {
    condition_id: row.condition_id,
    title: names.title,
    outcome: names.outcome1,
    resolved: row.resolved,
    winner: winnerName({ ...row, ...names }),
    last_traded_at: lastTradedAt(row),
    trader_last_action: lastAction(row.last_action),
    last_price: row.last_price,
    fills_count: row.fills_count,
    pnl_usd: row.pnl_usd,
    open: !row.resolved,
    volume_usd: row.buy_usd + row.sell_usd,
  };
  if (row.resolved) market.resolution_source = resolutionSourceOf(row);
  if (!row.resolved) {
    // Open rows only: unmarked (no trade yet) is null, never zero.
    const mark = marks.get(row.condition_id);
    const value = mark === undefined ? null : marketValue(row.net_tokens1, row.net_tokens2, mark);
    market.market_value_usd = value;
    market.pnl_marked_usd = value === null ? null : row.cash_flow_usd + value;
  }
  return market;
}

/** How far back a caller sees a trader: `historyDepth` most recent markets; -1 (or absent) is unlimited. */
export interface DepthOption {
  historyDepth?: number | undefined;
}

/** The markets list's order: last traded DESC, then condition_id DESC. */
function inListOrder(a: TraderMarketRow, b: TraderMarketRow): number {
  return lastTradedAt(b) - lastTradedAt(a) || compareIds(b.condition_id, a.condition_id);
}

/** The markets a caller with `historyDepth` sees (-1: all), in the markets list's order. */
export function visibleInListOrder<R extends TraderMarketRow>(rows: readonly R[], historyDepth: number): R[] {
  const ordered = [...rows].sort(inListOrder);
  return historyDepth >= 0 ? ordered.slice(0, historyDepthParam(historyDepth)) : ordered;
}
