/**
 * One market of a trader, its computed summary (counts, sizes, hold time, timing shares, result, sides)
 * with its header: every part a point lookup by primary key, in one bundle (projections/bundle.ts),
 * folded here.
 */
import { bundle } from './bundle.ts';
import {
  MARKET_NAMES_PART,
  toHeader,
  TRADER_MARKET_ROW_PART,
  traderMarketRowOf,
  type SerializedTraderMarketRow,
  type TraderMarketHeaderRow,
} from './market-header.ts';
import {
  compareIds,
  MARKET_TRADE_SPAN_AS_OF_PART,
  MARKET_TRADE_SPAN_PART,
  marketResolutionPart,
  marketTimesOf,
  traderMarketFillsPart,
  type MarketResolutionRow,
  type MarketTradeSpanRow,
  type TraderMarket,
  type TraderMarketFillRow,
} from './market-parts.ts';
import type { MarketSummary, TraderMarketDetail } from './market-schemas.ts';
import { NO_MARKET_NAMES, type MarketNames } from './market-names.ts';
import { plainSources, readBundleNamed, type ReadSources } from './sources.ts';
import type { Store } from './store.ts';
import type { TradeBreakdown } from './wallet-markets.ts';

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
  tm: SerializedTraderMarketRow;
}
const summaryParts = { tm: TRADER_MARKET_ROW_PART, ...summaryMarketParts };
const READ_MARKET_SUMMARY = bundle<SummaryParts & { names: MarketNames }>({
  ...summaryParts,
  names: MARKET_NAMES_PART,
});
const READ_MARKET_SUMMARY_NAMED = bundle<SummaryParts>(summaryParts);
const READ_SUMMARY_MARKET_PARTS = bundle<SummaryMarketParts & { names: MarketNames }>({
  ...summaryMarketParts,
  names: MARKET_NAMES_PART,
});
const READ_SUMMARY_MARKET_PARTS_NAMED = bundle<SummaryMarketParts>(summaryMarketParts);
/** The market's parts as of a past instant: its resolution, traded span and the trader's fills up to `as_of`. */
const summaryMarketPartsAsOf = {
  resolution: marketResolutionPart(undefined, true),
  window: MARKET_TRADE_SPAN_AS_OF_PART,
  fills: traderMarketFillsPart('ts, usd', true),
};
const READ_SUMMARY_MARKET_PARTS_AS_OF = bundle<SummaryMarketParts & { names: MarketNames }>({
  ...summaryMarketPartsAsOf,
  names: MARKET_NAMES_PART,
});
const READ_SUMMARY_MARKET_PARTS_AS_OF_NAMED = bundle<SummaryMarketParts>(summaryMarketPartsAsOf);

interface SummaryTraderMarketRow extends TraderMarketHeaderRow, TradeBreakdown {
  fills_count: number;
  buy_usd: number;
  sell_usd: number;
  buy_tokens: number;
  net_tokens1: number;
  net_tokens2: number;
}

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
function usdShare(part: number, whole: number): number {
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
        avg_entry:
          row.side1_buy_count > 0 && row.side1_buy_tokens > 0 ? row.side1_buy_usd / row.side1_buy_tokens : null,
        net_tokens: row.net_tokens1,
      },
      {
        token_side: 2,
        outcome: row.outcome2,
        buy_count: row.side2_buy_count,
        sell_count: row.side2_sell_count,
        buy_usd: row.side2_buy_usd,
        sell_usd: row.side2_sell_usd,
        avg_entry:
          row.side2_buy_count > 0 && row.side2_buy_tokens > 0 ? row.side2_buy_usd / row.side2_buy_tokens : null,
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
function summaryRowOf(
  parts: { [Name in keyof SummaryMarketParts]: SummaryMarketParts[Name][] },
  tm: SummaryTraderMarketRow,
  names: MarketNames,
): SummaryRow {
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
  sources: ReadSources,
  asOf?: number,
): Promise<{
  tm: SummaryTraderMarketRow | undefined;
  parts: { [Name in keyof SummaryMarketParts]: SummaryMarketParts[Name][] };
  names: MarketNames;
}> {
  const params = { wallet, condition_id: conditionId };
  const atHand = sources.walletMarketsAtHand(wallet);
  const keptRow = atHand ? (await atHand).markets.find((row) => row.condition_id === conditionId) : undefined;
  // As of a past instant the row is the as-of sources' (always at hand; none: not traded by then).
  if (asOf !== undefined && !keptRow)
    return { tm: undefined, parts: { resolution: [], window: [], fills: [] }, names: NO_MARKET_NAMES };
  if (keptRow) {
    const [withNames, named] =
      asOf === undefined
        ? [READ_SUMMARY_MARKET_PARTS, READ_SUMMARY_MARKET_PARTS_NAMED]
        : [READ_SUMMARY_MARKET_PARTS_AS_OF, READ_SUMMARY_MARKET_PARTS_AS_OF_NAMED];
    return {
      tm: keptRow,
      ...(await readBundleNamed(
        store,
        sources,
        conditionId,
        withNames,
        named,
        asOf === undefined ? params : { ...params, as_of: asOf },
      )),
    };
  }
  const { parts, names } = await readBundleNamed(
    store,
    sources,
    conditionId,
    READ_MARKET_SUMMARY,
    READ_MARKET_SUMMARY_NAMED,
    params,
  );
  return { tm: traderMarketRowOf(parts.tm), parts, names };
}

/**
 * Header and summary of one market of a trader (null when the trader never traded it, or it is unknown),
 * and the trader's market a chart or tape of it starts from: the same parts, so that a summary's reader
 * can keep both (an agent's next call after a summary is often the chart, as crack_this_trader asks).
 */
export async function readMarketSummaryAndMarket(
  store: Store,
  wallet: string,
  conditionId: string,
  sources: ReadSources = plainSources(store),
  asOf?: number,
): Promise<{ detail: TraderMarketDetail | null; traderMarket: TraderMarket | null }> {
  const { tm, parts, names } = await readSummaryParts(store, wallet, conditionId, sources, asOf);
  if (!tm) return { detail: null, traderMarket: null };
  const row = summaryRowOf(parts, tm, names);
  const market = toHeader(row);
  const times = marketTimesOf(
    conditionId,
    names === NO_MARKET_NAMES ? undefined : names,
    parts.window[0],
    parts.resolution[0],
  );
  return { detail: { market, summary: toSummary(row) }, traderMarket: times ? { header: market, times } : null };
}

/** Header and summary of one market of a trader; null when the trader never traded it (or it is unknown). */
export async function readMarketSummary(
  store: Store,
  wallet: string,
  conditionId: string,
  sources: ReadSources = plainSources(store),
): Promise<TraderMarketDetail | null> {
  return (await readMarketSummaryAndMarket(store, wallet, conditionId, sources)).detail;
}
