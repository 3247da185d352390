/**
 * A trader's markets list: the recency order (last traded DESC, condition_id DESC), keyset-paged, with
 * each open row's mark; within a history depth for callers that see only the most recent markets.
 */
import { clampUInt32 } from './params.ts';
import { compareIds } from './market-parts.ts';
import {
  lastTradedAt,
  toMarketRow,
  visibleInListOrder,
  type DepthOption,
  type TraderMarketRow,
} from './market-rows.ts';
import type { MarketListPosition, MarketRow } from './market-schemas.ts';
import { plainSources, type ReadSources } from './sources.ts';
import type { Store } from './store.ts';
import type { MarketNames } from './market-names.ts';

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
  // The wallet's every market, at hand (the card or top-markets just read it) or read now, paged in
  // memory: the page's own statement reads every row of the wallet too (its order needs them all), and
  // its marks part reads them again to find the open markets.
  const atHand = sources.walletMarketsAtHand(wallet);
  if (atHand) {
    const kept = await atHand;
    return pageOf(sources, pageRowsOf(kept.markets, page), kept.marks);
  }
  // Read now: the page is cut from the rows alone, so its market names are read beside the marks.
  let names: Promise<Map<string, MarketNames>> | undefined;
  const walletMarkets = await sources.walletMarkets(wallet, (rows) => {
    names = sources.marketNames(pageRowsOf(rows, page).pageRows.map((row) => row.condition_id));
    // Awaited in pageOf; a failure meanwhile (the marks' read failing first) is not left unhandled.
    names.catch(() => {});
  });
  return pageOf(sources, pageRowsOf(walletMarkets.markets, page), walletMarkets.marks, names);
}

/** The rows of the list after the page's position (in list order), and the page's first `limit` of them. */
function pageRowsOf(
  markets: readonly TraderMarketRow[],
  page: MarketsPageRequest,
): { rows: readonly TraderMarketRow[]; pageRows: readonly TraderMarketRow[] } {
  const limit = Math.max(1, Math.trunc(page.limit));
  const visible = visibleInListOrder(markets, page.historyDepth ?? -1);
  const after = page.after;
  const afterTs = clampUInt32(after?.lastTradedAt ?? 0);
  const afterId = after?.conditionId ?? '';
  const rows = after
    ? visible.filter(
        (row) =>
          lastTradedAt(row) < afterTs || (lastTradedAt(row) === afterTs && compareIds(row.condition_id, afterId) < 0),
      )
    : visible;
  return { rows, pageRows: rows.slice(0, limit) };
}

/** The page's rows as list rows with names and marks (the names read now unless already being read), and where the next page starts. */
async function pageOf(
  sources: ReadSources,
  { rows, pageRows }: { rows: readonly TraderMarketRow[]; pageRows: readonly TraderMarketRow[] },
  markRows: readonly { condition_id: string; mark: number }[],
  namesReading?: Promise<Map<string, MarketNames>>,
): Promise<MarketsPage> {
  const lastRow = pageRows[pageRows.length - 1];
  const marks = new Map(markRows.map((row) => [row.condition_id, row.mark]));
  const names = await (namesReading ?? sources.marketNames(pageRows.map((row) => row.condition_id)));
  return {
    markets: pageRows.map((row) => toMarketRow(row, names, marks)),
    next:
      rows.length > pageRows.length && lastRow
        ? { lastTradedAt: lastTradedAt(lastRow), conditionId: lastRow.condition_id }
        : null,
  };
}
