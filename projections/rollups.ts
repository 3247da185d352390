/**
 * Rollups that hold sums (per trader-market, per career) are recomputed for the keys an ingested batch
 * touched, from the deduplicated landing tables. This is what makes a fill that arrives twice (replayed,
 * or from both the archive and the upstream) change nothing: a sum view would count it twice, a
 * recomputation from `FINAL` cannot. The recomputation is idempotent, so a crashed batch that is
 * consumed again recomputes the same rows.
 *
 * The touched keys are staged in `rollup_keys` under a batch id (one JSONEachRow insert) and the
 * recomputation reads them by subquery: its SQL stays small whatever the batch size, where a bound
 * array of thousands of keys would be parsed as a literal by the embedded engine.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Store } from './store.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const REFRESH_TRADER_MARKETS = readFileSync(path.join(here, 'rollups', 'refresh_trader_markets.sql'), 'utf8');
const REFRESH_CAREERS = readFileSync(path.join(here, 'rollups', 'refresh_careers.sql'), 'utf8');

/** Every wallet with a position in a market that just resolved: their results changed. */
const STAGE_WALLETS_OF_MARKETS = `
INSERT INTO {db:Identifier}.rollup_keys (batch, wallet, condition_id)
SELECT {batch:String}, wallet, condition_id
FROM {db:Identifier}.market_wallets FINAL
WHERE condition_id IN {condition_ids:Array(String)}`;

export interface TraderMarketKey {
  wallet: string;
  condition_id: string;
}

export interface RollupChanges {
  /** (wallet, market) pairs whose fills or legs changed. */
  traderMarkets: readonly TraderMarketKey[];
  /** Markets that received a resolution. */
  resolvedMarkets: readonly string[];
}

export function distinctKeys(keys: Iterable<TraderMarketKey>): TraderMarketKey[] {
  const seen = new Map<string, TraderMarketKey>();
  for (const key of keys) seen.set(`${key.wallet}|${key.condition_id}`, key);
  return [...seen.values()];
}

/** Recomputes trader_markets, then careers, for everything these changes touched. */
export async function refreshRollups(store: Store, changes: RollupChanges, includeV1: boolean): Promise<void> {
  if (changes.traderMarkets.length === 0 && changes.resolvedMarkets.length === 0) return;
  const batch = randomUUID();
  const keys = distinctKeys(changes.traderMarkets);
  await store.insert(
    'rollup_keys',
    keys.map((key) => ({ batch, wallet: key.wallet, condition_id: key.condition_id })),
  );
  if (changes.resolvedMarkets.length > 0) {
    await store.command(STAGE_WALLETS_OF_MARKETS, { batch, condition_ids: [...new Set(changes.resolvedMarkets)] });
  }
  await store.command(REFRESH_TRADER_MARKETS, { batch });
  await store.command(REFRESH_CAREERS, { batch, include_v1: includeV1 ? 1 : 0 });
}
