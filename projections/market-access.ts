/**
 * Where one market of a trader stands for a caller who sees some history depth: traded at all, and
 * within the visible set (the history wall every market-scoped read passes).
 */
import { UINT32_MAX } from './params.ts';
import { historyDepthParam, MARKETS_WITHIN_DEPTH, type TraderMarketRow, visibleInListOrder } from './market-rows.ts';
import type { Store } from './store.ts';

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
export async function readMarketAccess(
  store: Store,
  wallet: string,
  conditionId: string,
  historyDepth: number,
): Promise<MarketAccess> {
  const [row] = await store.query<{ traded: boolean | number; visible: boolean | number }>(READ_MARKET_ACCESS, {
    wallet,
    condition_id: conditionId,
    history_depth: historyDepth < 0 ? UINT32_MAX : historyDepthParam(historyDepth),
  });
  if (!row?.traded) return 'not_traded';
  return row.visible ? 'visible' : 'beyond_depth';
}

/** The same, among rows the caller already holds (the wallet's rows as of a past instant). */
export function marketAccessAmong(
  rows: readonly TraderMarketRow[],
  conditionId: string,
  historyDepth: number,
): MarketAccess {
  if (!rows.some((row) => row.condition_id === conditionId)) return 'not_traded';
  return visibleInListOrder(rows, historyDepth).some((row) => row.condition_id === conditionId)
    ? 'visible'
    : 'beyond_depth';
}
