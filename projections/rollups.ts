/**
 * Rollups that hold sums (per trader-market, per career) are recomputed for the keys that ingested
 * events touched, from the deduplicated landing tables. This is what makes a fill that arrives twice
 * (replayed, or from both the archive and the upstream) change nothing: a sum view would count it
 * twice, a recomputation from `FINAL` cannot. Recomputation is idempotent.
 *
 * Two steps, so that the ingest worker can commit offsets early and recompute in bulk:
 *   staging            — in the same write as the events: views on fills and position_legs stage the
 *                        touched keys in `rollup_keys` under the insert's deduplication token;
 *                        `stageResolvedMarkets` stages the wallets of markets that resolved;
 *   refreshRollups     — later, for many batches at once: recompute trader_markets, then careers, for
 *                        every staged key, reading them by subquery (small SQL whatever the key count),
 *                        and mark the batches done.
 */
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

/** Batches staged a while ago and never marked done: their worker stopped before refreshing them. */
const ORPHAN_BATCHES = `
SELECT DISTINCT batch
FROM {db:Identifier}.rollup_keys
WHERE staged_at < now() - {older_than_s:UInt32}
  AND batch NOT IN (SELECT batch FROM {db:Identifier}.rollup_batches_done)
LIMIT 10000`;

/** Stages every wallet holding a position in these markets (their results changed) under `batch`. */
export async function stageResolvedMarkets(store: Store, batch: string, conditionIds: readonly string[]): Promise<void> {
  await store.command(STAGE_WALLETS_OF_MARKETS, { batch, condition_ids: [...new Set(conditionIds)] });
}

/** Recomputes trader_markets, then careers, for every key staged under these batches; marks them done. */
export async function refreshRollups(
  store: Store,
  batches: readonly string[],
  includeV1: boolean,
): Promise<{ traderMarketsMs: number; careersMs: number }> {
  if (batches.length === 0) return { traderMarketsMs: 0, careersMs: 0 };
  const started = performance.now();
  await store.command(REFRESH_TRADER_MARKETS, { batches });
  const traderMarketsDone = performance.now();
  await store.command(REFRESH_CAREERS, { batches, include_v1: includeV1 ? 1 : 0 });
  const careersDone = performance.now();
  await store.insert(
    'rollup_batches_done',
    batches.map((batch) => ({ batch })),
  );
  return { traderMarketsMs: Math.round(traderMarketsDone - started), careersMs: Math.round(careersDone - traderMarketsDone) };
}

export async function orphanRollupBatches(store: Store, olderThanSeconds: number): Promise<string[]> {
  const rows = await store.query<{ batch: string }>(ORPHAN_BATCHES, { older_than_s: olderThanSeconds });
  return rows.map((row) => row.batch);
}
