/**
 * A trader's markets list: the recency order (last traded DESC, condition_id DESC), keyset-paged, with
 * each open row's mark; within a history depth for callers that see only the most recent markets.
 */
import { clampUInt32 } from './params.ts';
import { bundle, readBundle } from './bundle.ts';
import { compareIds, marksOfOpenMarketsPart } from './market-parts.ts';
import {
  historyDepthParam,
  inListOrder,
  LAST_TRADED_AT,
  lastTradedAt,
  newestTraderMarkets,
  ROW_COLUMNS,
  toMarketRow,
  visibleInListOrder,
  withinDepth,
  type DepthOption,
  type TraderMarketRow,
} from './market-rows.ts';
import type { MarketListPosition, MarketRow } from './market-schemas.ts';
import { plainSources, type ReadSources } from './sources.ts';
import type { Store } from './store.ts';
import type { WalletMarkets } from './wallet-markets.ts';

/**
 * One page of the recency order (last traded DESC, condition_id DESC), strictly after the keyset
 * position, by the wallet prefix of the key; the filter on the last fill applies to each market's newest
 * version. Unlimited depth.
 */
const READ_TRADER_MARKETS = `
SELECT ${ROW_COLUMNS}
FROM ${newestTraderMarkets(ROW_COLUMNS)}
WHERE ({has_after:UInt8} = 0 OR (${LAST_TRADED_AT}, condition_id) < ({after_ts:UInt32}, {after_condition_id:String}))
ORDER BY ${LAST_TRADED_AT} DESC, condition_id DESC
LIMIT {limit:UInt32}`;

/** The same page within a history depth: the keyset walks the visible rows only. */
const READ_TRADER_MARKETS_WITHIN_DEPTH = `
SELECT ${ROW_COLUMNS}
FROM
(${withinDepth(ROW_COLUMNS)}
)
WHERE ({has_after:UInt8} = 0 OR (${LAST_TRADED_AT}, condition_id) < ({after_ts:UInt32}, {after_condition_id:String}))
ORDER BY ${LAST_TRADED_AT} DESC, condition_id DESC
LIMIT {limit:UInt32}`;

/** The marks of the wallet's open markets (market-parts.ts). */
const MARKS_OF_OPEN_MARKETS = marksOfOpenMarketsPart();

/**
 * A page of the markets list and the marks of the wallet's open markets, in one statement (a bundle: the
 * page's rows come back unordered and are sorted again); the names come from the sources (kept, or one more read).
 */
type MarketsPageParts = { rows: TraderMarketRow; marks: { condition_id: string; mark: number } };
const READ_TRADER_MARKETS_PAGE = bundle<MarketsPageParts>({ rows: READ_TRADER_MARKETS, marks: MARKS_OF_OPEN_MARKETS });
const READ_TRADER_MARKETS_PAGE_WITHIN_DEPTH = bundle<MarketsPageParts>({
  rows: READ_TRADER_MARKETS_WITHIN_DEPTH,
  marks: MARKS_OF_OPEN_MARKETS,
});

/** A page of the markets list asked for: after a keyset position, at most `limit` rows, within a history depth. */
type MarketsPageRequest = { after?: MarketListPosition | undefined; limit: number } & DepthOption;

/** A page of the markets list and the position the next one starts from (null at the end). */
interface MarketsPage {
  markets: MarketRow[];
  next: MarketListPosition | null;
}

/**
 * A page of the trader's markets, most recently traded first (then condition_id descending), strictly
 * after `after`. Returns the rows and the position to continue from (null at the end). With a history
 * depth ≥ 0 only the `historyDepth` most recent markets exist for the list (and its paging).
 */
export async function readTraderMarkets(
  store: Store,
  wallet: string,
  page: MarketsPageRequest,
  sources: ReadSources = plainSources(store),
): Promise<MarketsPage> {
  // The wallet's every market, when at hand (the card or top-markets just read it): paged in memory.
  const walletMarkets = sources.walletMarketsAtHand(wallet);
  if (walletMarkets) return pageOfWalletMarkets(sources, await walletMarkets, page);
  return readTraderMarketsPage(store, wallet, page, sources);
}

/** The page READ_TRADER_MARKETS(_WITHIN_DEPTH) selects, from every market of the wallet in memory. */
async function pageOfWalletMarkets(
  sources: ReadSources,
  walletMarkets: WalletMarkets,
  page: MarketsPageRequest,
): Promise<MarketsPage> {
  const limit = Math.max(1, Math.trunc(page.limit));
  const visible = visibleInListOrder(walletMarkets.markets, page.historyDepth ?? -1);
  const after = page.after;
  const afterTs = clampUInt32(after?.lastTradedAt ?? 0);
  const afterId = after?.conditionId ?? '';
  const rows = after
    ? visible.filter(
        (row) =>
          lastTradedAt(row) < afterTs || (lastTradedAt(row) === afterTs && compareIds(row.condition_id, afterId) < 0),
      )
    : visible;
  return pageOf(sources, rows, limit, walletMarkets.marks);
}

/** The first `limit` of `rows` (in list order, after the position) as list rows with names and marks, and where the next page starts. */
async function pageOf(
  sources: ReadSources,
  rows: readonly TraderMarketRow[],
  limit: number,
  markRows: readonly { condition_id: string; mark: number }[],
): Promise<MarketsPage> {
  const pageRows = rows.slice(0, limit);
  const lastRow = pageRows[pageRows.length - 1];
  const marks = new Map(markRows.map((row) => [row.condition_id, row.mark]));
  const names = await sources.marketNames(pageRows.map((row) => row.condition_id));
  return {
    markets: pageRows.map((row) => toMarketRow(row, names, marks)),
    next:
      rows.length > limit && lastRow
        ? { lastTradedAt: lastTradedAt(lastRow), conditionId: lastRow.condition_id }
        : null,
  };
}

async function readTraderMarketsPage(
  store: Store,
  wallet: string,
  page: MarketsPageRequest,
  sources: ReadSources,
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
      ? await readBundle(store, READ_TRADER_MARKETS_PAGE_WITHIN_DEPTH, {
          ...params,
          history_depth: historyDepthParam(depth),
        })
      : await readBundle(store, READ_TRADER_MARKETS_PAGE, params);
  // The list's order (a bundle keeps none); the statement returned at most limit + 1 rows.
  return pageOf(sources, [...parts.rows].sort(inListOrder), limit, parts.marks);
}
