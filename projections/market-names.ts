/**
 * The names of markets (title, outcome names, the start the title names) from their metadata, through the
 * read caches (read-cache.ts says how long they are kept).
 */
import type { MarketNames } from './read-cache.ts';
import type { Store } from './store.ts';

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
export async function readMarketNames(
  store: Store,
  conditionIds: readonly string[],
): Promise<Map<string, MarketNames>> {
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
    const market: MarketNames = {
      title: row.title,
      outcome1: row.outcome1,
      outcome2: row.outcome2,
      title_start_ts: row.title_start_ts,
    };
    names.set(row.condition_id, market);
    caches?.keepMarketNames(row.condition_id, market, readStart);
  }
  // No metadata yet: kept as such while this process's worker watches (read-cache.ts).
  for (const conditionId of missing) if (!names.has(conditionId)) caches?.keepMarketNames(conditionId, null, readStart);
  return names;
}
