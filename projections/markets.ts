/**
 * A trader's markets: the recency-ordered list (keyset-paged), the four ranked highlight slices, and
 * one market's header and computed summary. Everything reads `trader_markets_v2` (the rollup the ingest
 * worker keeps per wallet and market), joined with market metadata and, for open rows, the market's
 * mark (its last trade, UP space).
 *
 * The zod schemas here are the single definition of these shapes: the REST routes and MCP tools derive
 * their response schemas (and so OpenAPI) from them.
 */
import { z } from 'zod';
import { clampUInt32, UINT32_MAX } from './params.ts';
import { bundle, readBundle } from './bundle.ts';
import {
  compareIds,
  MARKET_TRADE_SPAN_PART,
  marketMetaPart,
  marketResolutionPart,
  marketTimesOf,
  marksOfOpenMarketsPart,
  traderMarketFillsPart,
  traderMarketKey,
  traderMarketResolved,
  type MarketResolutionRow,
  type MarketTradeSpanRow,
  type TraderMarket,
  type TraderMarketFillRow,
} from './market-parts.ts';
import { NO_MARKET_NAMES, readForTrader, readWithMarketNames, type MarketNames } from './read-cache.ts';
import type { Store } from './store.ts';
import { keptWalletMarkets, readWalletMarkets, TRADE_BREAKDOWN_COLUMNS, type TradeBreakdown, type WalletMarketRow, type WalletMarkets } from './wallet-markets.ts';

const epochSeconds = z.int().min(0).meta({ description: 'Epoch seconds (UTC).' });
const upPrice = z.number().meta({ description: 'UP-normalized price, 0 to 1: the probability of token 1.' });

export const marketRowSchema = z.object({
  condition_id: z.string().meta({ description: 'Market id: 0x + 64 hex.' }),
  title: z.string(),
  outcome: z.string().meta({ description: 'Name of token 1.' }),
  resolved: z.boolean(),
  winner: z
    .string()
    .nullable()
    .meta({ description: 'Name of the winning token; after a split payout (no winner, e.g. 50/50) the percent each token paid, token 1 first: "50/50"; null while the market is open.' }),
  last_traded_at: epochSeconds.meta({ description: "The trader's last activity in this market (epoch seconds)." }),
  trader_last_action: z
    .enum(['BUY', 'SELL'])
    .nullable()
    .meta({ description: "Side of the trader's last fill here; null when the trader only split, merged or redeemed." }),
  last_price: upPrice.nullable().meta({ description: "UP-space price of the trader's last fill here; null without fills." }),
  fills_count: z.int().min(0),
  pnl_usd: z.number().meta({
    description:
      'Resolved: the result (unredeemed tokens at what they paid: 1.00 for the winner, 0.50 each after a 50/50 split payout). Open: cash flow (money deployed counts as spent); the standing of an open market is pnl_marked_usd. Includes mint, split and redemption legs that never appear as fills, and is net of the fees the fills paid.',
  }),
  open: z.boolean(),
  volume_usd: z.number().meta({ description: 'Buy plus sell notional of the fills.' }),
  market_value_usd: z
    .number()
    .nullable()
    .optional()
    .meta({ description: 'Open rows only: holdings valued at the market\'s last trade; null when the market has no trade yet (unmarked).' }),
  pnl_marked_usd: z
    .number()
    .nullable()
    .optional()
    .meta({ description: 'Open rows only: cash flow plus market_value_usd; null when unmarked.' }),
});
export type MarketRow = z.infer<typeof marketRowSchema>;

/** Keyset position in the recency order: everything up to and including it has been returned. */
export interface MarketListPosition {
  lastTradedAt: number;
  conditionId: string;
}

export const marketHeaderSchema = z.object({
  condition_id: z.string(),
  title: z.string(),
  outcome: z.string().meta({ description: 'Name of token 1.' }),
  outcome2: z.string().meta({ description: 'Name of token 2.' }),
  resolved: z.boolean(),
  winner: z.string().nullable().meta({ description: 'Name of the winning token; "50/50" (percent paid per token, token 1 first) after a split payout; null while open.' }),
  pnl_usd: z.number().meta({ description: "The trader's result (resolved) or cash flow (open) in this market." }),
  open: z.boolean(),
});
export type MarketHeader = z.infer<typeof marketHeaderSchema>;

export const summarySideSchema = z.object({
  token_side: z.union([z.literal(1), z.literal(2)]),
  outcome: z.string(),
  buy_count: z.int().min(0),
  sell_count: z.int().min(0),
  buy_usd: z.number(),
  sell_usd: z.number(),
  avg_entry: z.number().nullable().meta({ description: "Average price paid per token of this side, in the token's own frame; null without buys." }),
  net_tokens: z.number().meta({ description: 'Tokens of this side held now (bought − sold, plus split − merged, minus redeemed).' }),
});

export const marketSummarySchema = z.object({
  fills_count: z.int().min(0),
  buy_count: z.int().min(0),
  sell_count: z.int().min(0),
  buy_usd: z.number(),
  sell_usd: z.number(),
  avg_entry_price: upPrice.nullable().meta({ description: 'UP-space volume-weighted (token-weighted) average price of the buys; null without buys.' }),
  size_p50_usd: z.number().nullable().meta({ description: 'Median fill size in USD (nearest rank); null without fills.' }),
  size_p90_usd: z.number().nullable().meta({ description: '90th percentile fill size in USD (nearest rank); null without fills.' }),
  size_max_usd: z.number().nullable(),
  first_fill_ts: epochSeconds.nullable(),
  last_fill_ts: epochSeconds.nullable(),
  hold_seconds: z.int().min(0).meta({
    description: 'From the first fill to the last fill, or to the resolution when tokens were still held then.',
  }),
  usd_share_first_tenth: z.number().min(0).max(1).meta({
    description: "Fraction of the trader's fill USD placed in the first 10% of the market's whole traded window.",
  }),
  usd_share_last_tenth: z.number().min(0).max(1).meta({
    description: "Fraction placed in the last 10%; near-zero first plus high last marks a late piler.",
  }),
  pnl_usd: z.number(),
  roi: z.number().nullable().meta({ description: 'pnl_usd / buy_usd; null without buys. Meaningless for split-sellers (sell-dominated flow).' }),
  won: z.boolean().nullable().meta({ description: 'Resolved: pnl_usd > 0. Null while open.' }),
  open: z.boolean(),
  sides: z.array(summarySideSchema),
});
export type MarketSummary = z.infer<typeof marketSummarySchema>;

export const TOP_MARKETS_NOTE =
  'top_wins and top_losses rank the realized result (pnl_usd) over resolved markets only; most_traded ranks by fills, top_volume by volume, over every market, where an open market\'s pnl_usd is cash flow (its standing is pnl_marked_usd).';

export interface TopMarkets {
  top_wins: MarketRow[];
  top_losses: MarketRow[];
  most_traded: MarketRow[];
  top_volume: MarketRow[];
  note: string;
}

export interface TraderMarketDetail {
  market: MarketHeader;
  summary: MarketSummary;
}

// ---------------------------------------------------------------------------------------------------
// Market rows

/** The trader_markets_v2 columns a market row is built from (each market's newest version: the latest recomputation). */
const ROW_COLUMNS = `
        condition_id, last_ts, last_action, last_price, fills_count, buy_usd, sell_usd,
        net_tokens1, net_tokens2, cash_flow_usd, resolved, winner_token_side, up_payout, pnl_usd`;

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
 * activity DESC, condition_id DESC: the markets list's order). Basic callers see only these; every read
 * that is clamped to the visible set selects from this (the columns vary, the set does not).
 */
const withinDepth = (columns: string) => `
    SELECT ${columns}
    FROM ${newestTraderMarkets(ROW_COLUMNS)}
    ORDER BY last_ts DESC, condition_id DESC
    LIMIT {history_depth:UInt32}`;

/** The condition_ids of the wallet's visible markets (params `wallet`, `history_depth`), for `IN (…)`. */
export const MARKETS_WITHIN_DEPTH = withinDepth('condition_id');

/** A history depth as the UInt32 the statements bind; call only with a depth ≥ 0 (-1 is unlimited: no clamp). */
export function historyDepthParam(historyDepth: number): number {
  return clampUInt32(historyDepth);
}

/**
 * One page of the recency order (last activity DESC, condition_id DESC), strictly after the keyset
 * position, by the wallet prefix of the key; the filter on last_ts applies to each market's newest
 * version. Unlimited depth.
 */
const READ_TRADER_MARKETS = `
SELECT ${ROW_COLUMNS}
FROM ${newestTraderMarkets(ROW_COLUMNS)}
WHERE ({has_after:UInt8} = 0 OR (last_ts, condition_id) < ({after_ts:UInt32}, {after_condition_id:String}))
ORDER BY last_ts DESC, condition_id DESC
LIMIT {limit:UInt32}`;

/** The same page within a history depth: the keyset walks the visible rows only. */
const READ_TRADER_MARKETS_WITHIN_DEPTH = `
SELECT ${ROW_COLUMNS}
FROM
(${withinDepth(ROW_COLUMNS)}
)
WHERE ({has_after:UInt8} = 0 OR (last_ts, condition_id) < ({after_ts:UInt32}, {after_condition_id:String}))
ORDER BY last_ts DESC, condition_id DESC
LIMIT {limit:UInt32}`;

/** The marks of the wallet's open markets (market-parts.ts). */
const MARKS_OF_OPEN_MARKETS = marksOfOpenMarketsPart();

/**
 * A page of the markets list and the marks of the wallet's open markets, in one statement (a bundle: the
 * page's rows come back unordered and are sorted again); the names come from the cache, or one more read.
 */
type MarketsPageParts = { rows: TraderMarketRow; marks: { condition_id: string; mark: number } };
const READ_TRADER_MARKETS_PAGE = bundle<MarketsPageParts>({ rows: READ_TRADER_MARKETS, marks: MARKS_OF_OPEN_MARKETS });
const READ_TRADER_MARKETS_PAGE_WITHIN_DEPTH = bundle<MarketsPageParts>({ rows: READ_TRADER_MARKETS_WITHIN_DEPTH, marks: MARKS_OF_OPEN_MARKETS });

/** Names of some markets: point lookups by the primary key of their metadata (a market without metadata has no row). */
const READ_MARKET_NAMES = `
SELECT condition_id, title, outcome1, outcome2, title_start_ts
FROM {db:Identifier}.markets_meta_v2
WHERE condition_id IN {names_of:Array(String)}
ORDER BY version DESC
LIMIT 1 BY condition_id`;


/**
 * Title and outcome names of some markets (absent: no metadata): from the cache (names change rarely:
 * read-cache.ts says how long they are kept), the rest in one read.
 */
export async function readMarketNames(store: Store, conditionIds: readonly string[]): Promise<Map<string, MarketNames>> {
  const names = new Map<string, MarketNames>();
  const caches = store.caches;
  const readStart = caches?.marketNamesReadStart() ?? null;
  const missing: string[] = [];
  for (const conditionId of new Set(conditionIds)) {
    const cached = caches?.marketNames(conditionId);
    if (cached) names.set(conditionId, cached);
    else missing.push(conditionId);
  }
  if (missing.length === 0) return names;
  const rows = await store.query<{ condition_id: string } & MarketNames>(READ_MARKET_NAMES, { names_of: missing });
  for (const row of rows) {
    const market: MarketNames = { title: row.title, outcome1: row.outcome1, outcome2: row.outcome2, title_start_ts: row.title_start_ts };
    names.set(row.condition_id, market);
    caches?.keepMarketNames(row.condition_id, market, readStart);
  }
  // No metadata yet: kept as such while this process's worker watches (read-cache.ts).
  for (const conditionId of missing) if (!names.has(conditionId)) caches?.keepMarketNames(conditionId, null, readStart);
  return names;
}

interface TraderMarketRow {
  condition_id: string;
  last_ts: number;
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
}

/**
 * The winning token's name; for a split payout (no winner, e.g. payouts [1, 1]) the percent each token paid,
 * token 1 first: "50/50".
 */
export function winnerName(row: { resolved: boolean; winner_token_side: number; up_payout: number | null; outcome1: string; outcome2: string }): string | null {
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
function toMarketRow(row: TraderMarketRow, namesOf: ReadonlyMap<string, MarketNames>, marks: ReadonlyMap<string, number>): MarketRow {
  const names = namesOf.get(row.condition_id) ?? NO_MARKET_NAMES;
  const market: MarketRow = {
    condition_id: row.condition_id,
    title: names.title,
    outcome: names.outcome1,
    resolved: row.resolved,
    winner: winnerName({ ...row, ...names }),
    last_traded_at: row.last_ts,
    trader_last_action: lastAction(row.last_action),
    last_price: row.last_price,
    fills_count: row.fills_count,
    pnl_usd: row.pnl_usd,
    open: !row.resolved,
    volume_usd: row.buy_usd + row.sell_usd,
  };
  if (!row.resolved) {
    // Open rows only: unmarked (no trade yet) is null, never zero.
    const mark = marks.get(row.condition_id);
    const value = mark === undefined ? null : marketValue(row.net_tokens1, row.net_tokens2, mark);
    market.market_value_usd = value;
    market.pnl_marked_usd = value === null ? null : row.cash_flow_usd + value;
  }
  return market;
}

/** A page of the markets list asked for: after a keyset position, at most `limit` rows, within a history depth. */
type MarketsPageRequest = { after?: MarketListPosition | undefined; limit: number } & DepthOption;

/** A page of the markets list and the position the next one starts from (null at the end). */
interface MarketsPage {
  markets: MarketRow[];
  next: MarketListPosition | null;
}

/** How far back a caller sees a trader: `historyDepth` most recent markets; -1 (or absent) is unlimited. */
export interface DepthOption {
  historyDepth?: number | undefined;
}

/**
 * A page of the trader's markets, most recent activity first (then condition_id descending), strictly
 * after `after`. Returns the rows and the position to continue from (null at the end). With a history
 * depth ≥ 0 only the `historyDepth` most recent markets exist for the list (and its paging).
 */
export async function readTraderMarkets(
  store: Store,
  wallet: string,
  page: MarketsPageRequest,
): Promise<MarketsPage> {
  const args = [page.after ?? null, page.limit, page.historyDepth ?? -1];
  // The wallet's every market, when at hand (the card or top-markets just read it): paged in memory.
  const walletMarkets = keptWalletMarkets(store, wallet);
  if (walletMarkets) return pageOfWalletMarkets(store, await walletMarkets, page);
  return readForTrader(store, 'markets', wallet, args, () => readTraderMarketsFromStore(store, wallet, page));
}

/** The page READ_TRADER_MARKETS(_WITHIN_DEPTH) selects, from every market of the wallet in memory. */
async function pageOfWalletMarkets(
  store: Store,
  walletMarkets: WalletMarkets,
  page: MarketsPageRequest,
): Promise<MarketsPage> {
  const limit = Math.max(1, Math.trunc(page.limit));
  const depth = page.historyDepth ?? -1;
  const ordered = [...walletMarkets.markets].sort(inListOrder);
  const visible = depth >= 0 ? ordered.slice(0, historyDepthParam(depth)) : ordered;
  const after = page.after;
  const afterTs = clampUInt32(after?.lastTradedAt ?? 0);
  const afterId = after?.conditionId ?? '';
  const rows = after ? visible.filter((row) => row.last_ts < afterTs || (row.last_ts === afterTs && compareIds(row.condition_id, afterId) < 0)) : visible;
  return pageOf(store, rows, limit, walletMarkets.marks);
}

/** The markets list's order: last activity DESC, then condition_id DESC. */
function inListOrder(a: TraderMarketRow, b: TraderMarketRow): number {
  return b.last_ts - a.last_ts || compareIds(b.condition_id, a.condition_id);
}

/** The first `limit` of `rows` (in list order, after the position) as list rows with names and marks, and where the next page starts. */
async function pageOf(
  store: Store,
  rows: readonly TraderMarketRow[],
  limit: number,
  markRows: readonly { condition_id: string; mark: number }[],
): Promise<MarketsPage> {
  const pageRows = rows.slice(0, limit);
  const lastRow = pageRows[pageRows.length - 1];
  const marks = new Map(markRows.map((row) => [row.condition_id, row.mark]));
  const names = await readMarketNames(
    store,
    pageRows.map((row) => row.condition_id),
  );
  return {
    markets: pageRows.map((row) => toMarketRow(row, names, marks)),
    next: rows.length > limit && lastRow ? { lastTradedAt: lastRow.last_ts, conditionId: lastRow.condition_id } : null,
  };
}

async function readTraderMarketsFromStore(
  store: Store,
  wallet: string,
  page: MarketsPageRequest,
): Promise<MarketsPage> {
  const limit = Math.max(1, Math.trunc(page.limit));
  const after = page.after;
  const params = {
    wallet,
    has_after: after ? 1 : 0,
    after_ts: clampUInt32(after?.lastTradedAt ?? 0),
    after_condition_id: after?.conditionId ?? '',
    // One row more than asked tells whether a next page exists.
    limit: limit + 1,
  };
  const depth = page.historyDepth ?? -1;
  const parts =
    depth >= 0
      ? await readBundle(store, READ_TRADER_MARKETS_PAGE_WITHIN_DEPTH, { ...params, history_depth: historyDepthParam(depth) })
      : await readBundle(store, READ_TRADER_MARKETS_PAGE, params);
  // The list's order (a bundle keeps none); the statement returned at most limit + 1 rows.
  return pageOf(store, [...parts.rows].sort(inListOrder), limit, parts.marks);
}

/**
 * The four slices of at most `n` rows each. Ties: last activity DESC, then condition_id. Wins and losses
 * rank resolved markets by their result (best first, worst first), most traded every market by fills,
 * top volume by bought plus sold USD.
 */
export function rankTopMarkets<R extends TraderMarketRow>(rows: readonly R[], n: number): { top_wins: R[]; top_losses: R[]; most_traded: R[]; top_volume: R[] } {
  const ranked = (candidates: readonly R[], key: (row: R) => number) =>
    [...candidates].sort((a, b) => key(b) - key(a) || b.last_ts - a.last_ts || compareIds(a.condition_id, b.condition_id)).slice(0, n);
  return {
    top_wins: ranked(rows.filter((row) => row.resolved && row.pnl_usd > 0), (row) => row.pnl_usd),
    top_losses: ranked(rows.filter((row) => row.resolved && row.pnl_usd < 0), (row) => -row.pnl_usd),
    most_traded: ranked(rows, (row) => row.fills_count),
    top_volume: ranked(rows, (row) => row.buy_usd + row.sell_usd),
  };
}

/**
 * The four slices, each at most `n` rows; with a history depth ≥ 0, ranked within the visible markets
 * only. Ranked in rankTopMarkets from every market of the wallet (wallet-markets.ts): four window
 * functions over the rows cost the engine more to plan than the wallet's rows cost to send.
 */
export async function readTopMarkets(store: Store, wallet: string, n: number, options: DepthOption = {}): Promise<TopMarkets> {
  const size = Math.trunc(n);
  if (!(size >= 1)) return { top_wins: [], top_losses: [], most_traded: [], top_volume: [], note: TOP_MARKETS_NOTE };
  const depth = options.historyDepth ?? -1;
  const parts = await readWalletMarkets(store, wallet);
  // The visible set: the first `depth` of the markets list's order.
  const visible = depth >= 0 ? [...parts.markets].sort(inListOrder).slice(0, depth) : parts.markets;
  const top = rankTopMarkets(visible, size);
  const shown = [...new Set([...top.top_wins, ...top.top_losses, ...top.most_traded, ...top.top_volume])];
  const names = await readMarketNames(store, shown.map((row) => row.condition_id));
  const marks = new Map(parts.marks.map((row) => [row.condition_id, row.mark]));
  const rowOf = new Map(shown.map((row) => [row, toMarketRow(row, names, marks)]));
  const rowsOf = (slice: readonly WalletMarketRow[]) => slice.map((row) => rowOf.get(row)!);
  return {
    top_wins: rowsOf(top.top_wins),
    top_losses: rowsOf(top.top_losses),
    most_traded: rowsOf(top.most_traded),
    top_volume: rowsOf(top.top_volume),
    note: TOP_MARKETS_NOTE,
  };
}

/**
 * Where one market stands for a caller who sees `{history_depth}` of the trader's markets: traded at
 * all (a row of the wallet), and within the visible set. Two lookups by the wallet prefix; the visible
 * set is at most `history_depth` rows. A market is traded when any version of its row exists (no need
 * for the newest one).
 */
const READ_MARKET_ACCESS = `
SELECT
    (SELECT count() FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}) > 0 AS traded,
    {condition_id:String} IN (${MARKETS_WITHIN_DEPTH}
    ) AS visible`;

/** A market of a trader as a caller with some history depth sees it. */
export type MarketAccess = 'not_traded' | 'beyond_depth' | 'visible';

/**
 * Whether the trader traded the market and, if so, whether it is among the `historyDepth` most recent
 * (the markets list's order). Unlimited (-1): every traded market is visible.
 */
export async function readMarketAccess(store: Store, wallet: string, conditionId: string, historyDepth: number): Promise<MarketAccess> {
  const [row] = await store.query<{ traded: boolean | number; visible: boolean | number }>(READ_MARKET_ACCESS, {
    wallet,
    condition_id: conditionId,
    history_depth: historyDepth < 0 ? UINT32_MAX : historyDepthParam(historyDepth),
  });
  if (!row?.traded) return 'not_traded';
  return row.visible ? 'visible' : 'beyond_depth';
}

// ---------------------------------------------------------------------------------------------------
// One market: header and summary

/** The wallet's newest row of one market (ORDER BY version DESC LIMIT 1: ReplacingMergeTree's own rule, without FINAL). */
const newestTraderMarket = (columns: string) => `
    SELECT ${columns}
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}
    ORDER BY version DESC
    LIMIT 1`;

const HEADER_COLUMNS = 'condition_id, resolved, winner_token_side, up_payout, pnl_usd';

/** The header's part of a bundle: the wallet's newest row of the market (its header's columns). */
export const TRADER_MARKET_HEADER_PART = newestTraderMarket(HEADER_COLUMNS);

/**
 * Point lookups by primary key, as one bundle of plain parts (projections/bundle.ts): the wallet's row of
 * the market and, unless the read caches hold them, the market's names (its metadata).
 */
const MARKET_NAMES_PART = marketMetaPart('title, outcome1, outcome2, title_start_ts');
const READ_MARKET_HEADER = bundle<{ tm: TraderMarketHeaderRow; names: MarketNames }>({ tm: TRADER_MARKET_HEADER_PART, names: MARKET_NAMES_PART });
const READ_MARKET_HEADER_NAMED = bundle<{ tm: TraderMarketHeaderRow }>({ tm: TRADER_MARKET_HEADER_PART });

const SUMMARY_COLUMNS = `${HEADER_COLUMNS},
        fills_count, buy_usd, sell_usd, buy_tokens, net_tokens1, net_tokens2,
        ${TRADE_BREAKDOWN_COLUMNS}`;

/**
 * Everything a summary needs, every part a point lookup by primary key, in one bundle: the wallet's
 * trader_markets row, the market's names (unless cached), its resolution, its traded window (marks),
 * and the wallet's fills in the market (projections/market-parts.ts). Folded in summaryRowOf. The
 * market's parts alone (all but the trader's row) when the wallet's kept markets have the row
 * (readSummaryParts).
 */
const summaryMarketParts = {
  resolution: marketResolutionPart(),
  window: MARKET_TRADE_SPAN_PART,
  fills: traderMarketFillsPart('ts, usd'),
};
interface SummaryMarketParts {
  resolution: MarketResolutionRow;
  window: MarketTradeSpanRow;
  fills: Pick<TraderMarketFillRow, 'fill_id' | 'ts' | 'usd'>;
}
interface SummaryParts extends SummaryMarketParts {
  tm: SummaryTraderMarketRow;
}
const summaryParts = { tm: newestTraderMarket(SUMMARY_COLUMNS), ...summaryMarketParts };
const READ_MARKET_SUMMARY = bundle<SummaryParts & { names: MarketNames }>({ ...summaryParts, names: MARKET_NAMES_PART });
const READ_MARKET_SUMMARY_NAMED = bundle<SummaryParts>(summaryParts);
const READ_SUMMARY_MARKET_PARTS = bundle<SummaryMarketParts & { names: MarketNames }>({ ...summaryMarketParts, names: MARKET_NAMES_PART });
const READ_SUMMARY_MARKET_PARTS_NAMED = bundle<SummaryMarketParts>(summaryMarketParts);

export interface TraderMarketHeaderRow {
  condition_id: string;
  resolved: boolean;
  winner_token_side: number;
  /** What one token 1 paid at the resolution (1, 0, or a split's share); null while open. */
  up_payout: number | null;
  pnl_usd: number;
}

interface SummaryTraderMarketRow extends TraderMarketHeaderRow, TradeBreakdown {
  fills_count: number;
  buy_usd: number;
  sell_usd: number;
  buy_tokens: number;
  net_tokens1: number;
  net_tokens2: number;
}

/** A header's row: the wallet's row of the market and the market's names. */
type HeaderRow = TraderMarketHeaderRow & Pick<MarketNames, 'title' | 'outcome1' | 'outcome2'>;

/** A summary's row: the wallet's row of the market, the market's names, and what summaryRowOf folds from the other parts. */
interface SummaryRow extends SummaryTraderMarketRow, MarketNames {
  resolution_ts: number | null;
  first_fill_ts: number | null;
  last_fill_ts: number | null;
  size_p50_usd: number | null;
  size_p90_usd: number | null;
  size_max_usd: number | null;
  usd_total: number;
  usd_first_tenth: number;
  usd_last_tenth: number;
}

export function toHeader(row: HeaderRow): MarketHeader {
  return {
    condition_id: row.condition_id,
    title: row.title,
    outcome: row.outcome1,
    outcome2: row.outcome2,
    resolved: row.resolved,
    winner: winnerName(row),
    pnl_usd: row.pnl_usd,
    open: !row.resolved,
  };
}

/** Tokens below this are dust: a position this small does not count as held. */
const HELD_EPSILON = 1e-9;

/**
 * From the first fill to the last, or to the resolution when the market resolved with tokens still
 * held (the position was carried to the end); 0 without fills, never negative.
 */
function holdSeconds(row: SummaryRow): number {
  if (row.first_fill_ts === null || row.last_fill_ts === null) return 0;
  const held = row.net_tokens1 > HELD_EPSILON || row.net_tokens2 > HELD_EPSILON;
  const end = row.resolved && held && row.resolution_ts !== null ? row.resolution_ts : row.last_fill_ts;
  return Math.max(0, end - row.first_fill_ts);
}

/**
 * A part of the trader's USD as a share of the whole, in 0..1 (0 when there is no USD at all). Part and
 * whole are sums over one array in one order, so part ≤ whole already; the bound holds the contract's
 * range against any rounding all the same.
 */
export function usdShare(part: number, whole: number): number {
  if (!(whole > 0)) return 0;
  return Math.min(1, Math.max(0, part / whole));
}

function toSummary(row: SummaryRow): MarketSummary {
  return {
    fills_count: row.fills_count,
    buy_count: row.buy_count,
    sell_count: row.sell_count,
    buy_usd: row.buy_usd,
    sell_usd: row.sell_usd,
    avg_entry_price: row.buy_count > 0 && row.buy_tokens > 0 ? row.buy_up_price_tokens / row.buy_tokens : null,
    size_p50_usd: row.size_p50_usd,
    size_p90_usd: row.size_p90_usd,
    size_max_usd: row.size_max_usd,
    first_fill_ts: row.first_fill_ts,
    last_fill_ts: row.last_fill_ts,
    hold_seconds: holdSeconds(row),
    usd_share_first_tenth: usdShare(row.usd_first_tenth, row.usd_total),
    usd_share_last_tenth: usdShare(row.usd_last_tenth, row.usd_total),
    pnl_usd: row.pnl_usd,
    roi: row.buy_usd !== 0 ? row.pnl_usd / row.buy_usd : null,
    won: row.resolved ? row.pnl_usd > 0 : null,
    open: !row.resolved,
    sides: [
      {
        token_side: 1,
        outcome: row.outcome1,
        buy_count: row.side1_buy_count,
        sell_count: row.side1_sell_count,
        buy_usd: row.side1_buy_usd,
        sell_usd: row.side1_sell_usd,
        avg_entry: row.side1_buy_count > 0 && row.side1_buy_tokens > 0 ? row.side1_buy_usd / row.side1_buy_tokens : null,
        net_tokens: row.net_tokens1,
      },
      {
        token_side: 2,
        outcome: row.outcome2,
        buy_count: row.side2_buy_count,
        sell_count: row.side2_sell_count,
        buy_usd: row.side2_buy_usd,
        sell_usd: row.side2_sell_usd,
        avg_entry: row.side2_buy_count > 0 && row.side2_buy_tokens > 0 ? row.side2_buy_usd / row.side2_buy_tokens : null,
        net_tokens: row.net_tokens2,
      },
    ],
  };
}

/**
 * The summary's row from its parts. Percentiles are nearest-rank over the ascending sizes (1-based index
 * ceil(q·n): ceil(n/2), ceil(9n/10)). The market's whole traded window spans its trades and the trader's
 * own fills; the tenth shares compare in integers: ts ≤ start + span/10 ⇔ 10·(ts − start) ≤ span, and
 * ts ≥ end − span/10 ⇔ 10·(end − ts) ≤ span (a window of one second puts every fill in both tenths). The
 * USD of each tenth and the total are summed in one order (by fill_id: the same figures on every read,
 * so a resolved summary's ETag never moves), adding 0 for a fill outside the tenth, so each part is
 * ≤ the whole; the shares are divided and bounded in `usdShare`.
 */
function summaryRowOf(parts: { [Name in keyof SummaryMarketParts]: SummaryMarketParts[Name][] }, tm: SummaryTraderMarketRow, names: MarketNames): SummaryRow {
  const fills = [...parts.fills].sort((a, b) => compareIds(a.fill_id, b.fill_id));
  const n = fills.length;
  const sizes = fills.map((fill) => fill.usd).sort((a, b) => a - b);
  let firstFill = Number.POSITIVE_INFINITY;
  let lastFill = Number.NEGATIVE_INFINITY;
  for (const fill of fills) {
    firstFill = Math.min(firstFill, fill.ts);
    lastFill = Math.max(lastFill, fill.ts);
  }
  const window = parts.window[0];
  const start = window ? Math.min(window.first_ts, firstFill) : firstFill;
  const end = window ? Math.max(window.last_ts, lastFill) : lastFill;
  const span = end - start;
  let usdTotal = 0;
  let usdFirstTenth = 0;
  let usdLastTenth = 0;
  for (const fill of fills) {
    usdTotal += fill.usd;
    usdFirstTenth += 10 * (fill.ts - start) <= span ? fill.usd : 0;
    usdLastTenth += 10 * (end - fill.ts) <= span ? fill.usd : 0;
  }
  return {
    ...tm,
    ...names,
    resolution_ts: parts.resolution[0]?.ts ?? null,
    first_fill_ts: n === 0 ? null : firstFill,
    last_fill_ts: n === 0 ? null : lastFill,
    size_p50_usd: n === 0 ? null : sizes[Math.ceil(n / 2) - 1]!,
    size_p90_usd: n === 0 ? null : sizes[Math.ceil((9 * n) / 10) - 1]!,
    size_max_usd: n === 0 ? null : sizes[n - 1]!,
    usd_total: usdTotal,
    usd_first_tenth: usdFirstTenth,
    usd_last_tenth: usdLastTenth,
  };
}

/**
 * A summary's parts: the trader's row of the market (none: never traded) from the wallet's kept markets
 * when they are at hand (the card's read, kept until the trader changes: an agent asks for the card, then
 * the summaries of its markets), then the market's parts alone; else all of them in one bundle.
 */
async function readSummaryParts(
  store: Store,
  wallet: string,
  conditionId: string,
): Promise<{ tm: SummaryTraderMarketRow | undefined; parts: { [Name in keyof SummaryMarketParts]: SummaryMarketParts[Name][] }; names: MarketNames }> {
  const params = { wallet, condition_id: conditionId };
  const kept = keptWalletMarkets(store, wallet);
  const keptRow = kept ? (await kept).markets.find((row) => row.condition_id === conditionId) : undefined;
  if (keptRow) return { tm: keptRow, ...(await readWithMarketNames(store, conditionId, READ_SUMMARY_MARKET_PARTS, READ_SUMMARY_MARKET_PARTS_NAMED, params)) };
  const { parts, names } = await readWithMarketNames(store, conditionId, READ_MARKET_SUMMARY, READ_MARKET_SUMMARY_NAMED, params);
  return { tm: parts.tm[0], parts, names };
}

/** Header and summary of one market of a trader; null when the trader never traded it (or it is unknown). */
export async function readMarketSummary(store: Store, wallet: string, conditionId: string): Promise<TraderMarketDetail | null> {
  const readMarketSummaryFromStore = async () => {
    const { tm, parts, names } = await readSummaryParts(store, wallet, conditionId);
    if (!tm) return null;
    const row = summaryRowOf(parts, tm, names);
    const market = toHeader(row);
    // The same parts are the trader's market a chart or tape of this market starts from (an agent's next
    // call, as crack_this_trader asks): kept under its own key, it costs that call its first statement.
    const times = marketTimesOf(conditionId, names === NO_MARKET_NAMES ? undefined : names, parts.window[0], parts.resolution[0]);
    if (times) {
      const traderMarket: TraderMarket = { header: market, times };
      store.caches?.keepMarket(traderMarketKey(wallet, conditionId), traderMarket, traderMarketResolved(traderMarket));
    }
    return { market, summary: toSummary(row) };
  };
  // A resolved market's summary never changes (immutable, strong ETag); an open one is kept briefly.
  return store.caches ? store.caches.market(`summary|${wallet}|${conditionId}`, readMarketSummaryFromStore, (detail) => detail?.market.resolved === true) : readMarketSummaryFromStore();
}

/** The header alone (sampled chart, tape): null when the trader never traded the market. */
export async function readMarketHeader(store: Store, wallet: string, conditionId: string): Promise<MarketHeader | null> {
  const { parts, names } = await readWithMarketNames(store, conditionId, READ_MARKET_HEADER, READ_MARKET_HEADER_NAMED, { wallet, condition_id: conditionId });
  const [tm] = parts.tm;
  return tm ? toHeader({ ...tm, ...names }) : null;
}
