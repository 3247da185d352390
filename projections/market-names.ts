/** The names of markets (title, outcome names, the start the title names) from their metadata. */
import type { Store } from './store.ts';

/** A market's names as the lists show them. */
export interface MarketNames {
  title: string;
  outcome1: string;
  outcome2: string;
  /** The start the title names (metadata like the names, kept with them): a chart's default window starts there. */
  title_start_ts: number | null;
}

/** A market without metadata: the lists show '' for its title and outcome names. */
export const NO_MARKET_NAMES: Readonly<MarketNames> = Object.freeze({
  title: '',
  outcome1: '',
  outcome2: '',
  title_start_ts: null,
});

/** Names of some markets: point lookups by the primary key of their metadata (a market without metadata has no row). */
const READ_MARKET_NAMES = `
SELECT condition_id, title, outcome1, outcome2, title_start_ts
FROM {db:Identifier}.markets_meta_v2
WHERE condition_id IN {names_of:Array(String)}
ORDER BY version DESC
LIMIT 1 BY condition_id`;

/** Title and outcome names of some markets, in one read (absent: no metadata). */
export async function readMarketNames(
  store: Store,
  conditionIds: readonly string[],
): Promise<Map<string, MarketNames>> {
  const names = new Map<string, MarketNames>();
  const unique = [...new Set(conditionIds)];
  if (unique.length === 0) return names;
  const rows = await store.query<{ condition_id: string } & MarketNames>(READ_MARKET_NAMES, { names_of: unique });
  for (const row of rows)
    names.set(row.condition_id, {
      title: row.title,
      outcome1: row.outcome1,
      outcome2: row.outcome2,
      title_start_ts: row.title_start_ts,
    });
  return names;
}
