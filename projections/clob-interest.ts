/**
 * What the clob source subscribes besides the live plane's watched markets: the open markets of given
 * traders (the popular shelf), and the outcome tokens of markets (the channel subscribes token ids).
 */
import { BACKGROUND_READ, type Store } from './store.ts';

/** The traders' unresolved markets active since `since`, most recently active first. */
const READ_OPEN_MARKETS = `
SELECT condition_id, max(last_ts) AS active_at
FROM {db:Identifier}.trader_markets_v2 FINAL
WHERE wallet IN {wallets:Array(String)} AND NOT resolved AND last_ts >= {since:UInt32}
GROUP BY condition_id
ORDER BY active_at DESC, condition_id
LIMIT {limit:UInt32}`;

export async function readOpenMarketsOf(
  store: Store,
  wallets: readonly string[],
  since: number,
  limit: number,
): Promise<string[]> {
  if (wallets.length === 0 || limit < 1) return [];
  const rows = await store.query<{ condition_id: string }>(
    READ_OPEN_MARKETS,
    { wallets: [...wallets], since: Math.max(0, Math.trunc(since)), limit: Math.trunc(limit) },
    BACKGROUND_READ,
  );
  return rows.map((row) => row.condition_id);
}

const READ_MARKET_TOKENS = `
SELECT condition_id, token1_id, token2_id
FROM {db:Identifier}.market_tokens FINAL
WHERE condition_id IN {ids:Array(String)}`;

/** Each market's two tokens (token 1 first), for the markets whose tokens are known. */
export async function readMarketTokens(
  store: Store,
  conditionIds: readonly string[],
): Promise<Map<string, { token1: string; token2: string }>> {
  if (conditionIds.length === 0) return new Map();
  const rows = await store.query<{ condition_id: string; token1_id: string; token2_id: string }>(
    READ_MARKET_TOKENS,
    { ids: [...conditionIds] },
    BACKGROUND_READ,
  );
  return new Map(rows.map((row) => [row.condition_id, { token1: row.token1_id, token2: row.token2_id }]));
}
