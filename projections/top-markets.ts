/**
 * A trader's top markets: four ranked slices (best and worst results, most traded, top volume), from every
 * market of the wallet (wallet-markets.ts), within a history depth for callers that see only the most
 * recent markets.
 */
import { compareIds } from './market-parts.ts';
import {
  lastTradedAt,
  toMarketRow,
  visibleInListOrder,
  type DepthOption,
  type TraderMarketRow,
} from './market-rows.ts';
import { TOP_MARKETS_NOTE, type TopMarkets } from './market-schemas.ts';
import type { Store } from './store.ts';
import { plainSources, type ReadSources } from './sources.ts';
import type { WalletMarketRow } from './wallet-markets.ts';

/**
 * The four slices of at most `n` rows each. Ties: last traded DESC, then condition_id. Wins and losses
 * rank resolved markets by their result (best first, worst first), most traded every market by fills,
 * top volume by bought plus sold USD.
 */
function rankTopMarkets<R extends TraderMarketRow>(
  rows: readonly R[],
  n: number,
): { top_wins: R[]; top_losses: R[]; most_traded: R[]; top_volume: R[] } {
  const ranked = (candidates: readonly R[], key: (row: R) => number) =>
    [...candidates]
      .sort(
        (a, b) => key(b) - key(a) || lastTradedAt(b) - lastTradedAt(a) || compareIds(a.condition_id, b.condition_id),
      )
      .slice(0, n);
  return {
    top_wins: ranked(
      rows.filter((row) => row.resolved && row.pnl_usd > 0),
      (row) => row.pnl_usd,
    ),
    top_losses: ranked(
      rows.filter((row) => row.resolved && row.pnl_usd < 0),
      (row) => -row.pnl_usd,
    ),
    most_traded: ranked(rows, (row) => row.fills_count),
    top_volume: ranked(rows, (row) => row.buy_usd + row.sell_usd),
  };
}

/**
 * The four slices, each at most `n` rows; with a history depth ≥ 0, ranked within the visible markets
 * only. Ranked in rankTopMarkets from every market of the wallet (wallet-markets.ts): four window
 * functions over the rows cost the engine more to plan than the wallet's rows cost to send.
 */
export async function readTopMarkets(
  store: Store,
  wallet: string,
  n: number,
  options: DepthOption = {},
  sources: ReadSources = plainSources(store),
): Promise<TopMarkets> {
  const size = Math.trunc(n);
  if (!(size >= 1)) return { top_wins: [], top_losses: [], most_traded: [], top_volume: [], note: TOP_MARKETS_NOTE };
  const depth = options.historyDepth ?? -1;
  const parts = await sources.walletMarkets(wallet);
  // The visible set: the first `depth` of the markets list's order.
  const visible = visibleInListOrder(parts.markets, depth);
  const top = rankTopMarkets(visible, size);
  const shown = [...new Set([...top.top_wins, ...top.top_losses, ...top.most_traded, ...top.top_volume])];
  const names = await sources.marketNames(shown.map((row) => row.condition_id));
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
