/**
 * Rollups that hold sums (trader_markets_v2 per trader and market, whale_accumulations_v2: migration
 * 0010 re-shaped them; trader_skill_markets, per trader and resolved market, migration 0020; a trader's career is folded from its trader_markets_v2 rows at read time) and the
 * change-only tapes (tape_changes) are recomputed for the keys that ingested events touched, from the deduplicated landing tables. This is what makes a fill that
 * arrives twice (replayed, or from both the archive and the upstream) change nothing: a sum view would
 * count it twice, a recomputation from each fill's kept copy (the highest source_rank, as FINAL keeps)
 * cannot. Recomputation is idempotent. The fills are read by the staged (wallet, market) pairs from
 * fills_by_pair, whose small granules hold few pairs each (migration 0025), so a refresh reads the touched
 * pairs' fills and not the wallets' whole histories.
 *
 * Two steps, so that the ingest worker can commit offsets early and recompute in bulk:
 *   staging            — in the same write as the events, under the insert's deduplication token:
 *                        views on fills and position_legs stage (wallet, market) keys in `rollup_keys`,
 *                        the view on trades stages (market, earliest second) in `tape_keys`;
 *                        `stageResolvedMarkets` stages the wallets of markets that resolved;
 *   refreshRollups     — later, for many batches at once: recompute trader_markets and the
 *                        skill sums read from them, then whale accumulations (for staged trader keys), then the change-only tapes (for
 *                        staged tape keys), reading the keys by subquery (small SQL whatever their
 *                        count), and mark the batches done.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inferStagedResolutions, type InferenceOutcome } from './resolution-inference.ts';
import { BACKGROUND_READ, type Store } from './store.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const sqlFile = (name: string) => readFileSync(path.join(here, 'rollups', name), 'utf8');

/**
 * The read of the staged pairs' fills in each refresh file: fills_v2, the fills as the reads use them, keeps
 * the files the one definition of a row (projections/as-of.ts derives its rows from them).
 */
const STAGED_PAIRS_FILLS =
  /FROM \{db:Identifier\}\.fills_v2(\s+WHERE wallet IN \(SELECT wallet FROM \{db:Identifier\}\.rollup_keys WHERE batch IN \{batches:Array\(String\)\}\)\s+AND \(wallet, condition_id\) IN \(SELECT wallet, condition_id FROM \{db:Identifier\}\.rollup_keys WHERE batch IN \{batches:Array\(String\)\}\))/g;

/** A refresh file reading the staged pairs' fills from fills_by_pair (the same rows in granules of few pairs). */
function refreshStatement(name: string): string {
  const sql = sqlFile(name);
  const found = sql.match(STAGED_PAIRS_FILLS)?.length ?? 0;
  if (found !== 1) throw new Error(`rollups/${name}: ${found} reads of the staged pairs' fills, expected 1`);
  return sql.replace(STAGED_PAIRS_FILLS, (_read, filter: string) => `FROM {db:Identifier}.fills_by_pair${filter}`);
}

const REFRESH_TRADER_MARKETS = refreshStatement('refresh_trader_markets.sql');
const REFRESH_TRADER_SKILL_MARKETS = refreshStatement('refresh_trader_skill_markets.sql');
const REFRESH_WHALE_ACCUMULATIONS = refreshStatement('refresh_whale_accumulations.sql');
const REFRESH_TAPE_CHANGES = sqlFile('refresh_tape_changes.sql');

/** Every wallet with a position in a market that just resolved: their results changed. */
const STAGE_WALLETS_OF_MARKETS = `
INSERT INTO {db:Identifier}.rollup_keys (batch, wallet, condition_id)
SELECT {batch:String}, wallet, condition_id
FROM {db:Identifier}.market_wallets FINAL
WHERE condition_id IN {condition_ids:Array(String)}`;

const COUNT_STAGED = `
SELECT
    (SELECT count() FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)}) AS trader_keys,
    (SELECT count() FROM {db:Identifier}.tape_keys WHERE batch IN {batches:Array(String)}) AS tape_keys`;

/** Batches staged a while ago and never marked done: their worker stopped before refreshing them. */
const ORPHAN_BATCHES = `
SELECT DISTINCT batch
FROM
(
    SELECT batch, staged_at FROM {db:Identifier}.rollup_keys
    UNION ALL
    SELECT batch, staged_at FROM {db:Identifier}.tape_keys
)
WHERE staged_at < now() - {older_than_s:UInt32}
  AND batch NOT IN (SELECT batch FROM {db:Identifier}.rollup_batches_done)
LIMIT 10000`;

/** The wallets with a position in these markets (the ones STAGE_WALLETS_OF_MARKETS stages). */
const WALLETS_OF_MARKETS = `
SELECT DISTINCT wallet
FROM {db:Identifier}.market_wallets FINAL
WHERE condition_id IN {condition_ids:Array(String)}
LIMIT {limit:UInt32}`;

/** Past this many holders, a resolution counts as changing everyone's data (the list is not worth its memory). */
const MAX_NAMED_HOLDERS = 50_000;

/**
 * Stages every wallet holding a position in these markets (their results changed) under `batch`, and
 * returns them ('everyone' past MAX_NAMED_HOLDERS), so that their cached answers can be dropped.
 */
export async function stageResolvedMarkets(
  store: Store,
  batch: string,
  conditionIds: readonly string[],
): Promise<ReadonlySet<string> | 'everyone'> {
  const markets = [...new Set(conditionIds)];
  await store.command(STAGE_WALLETS_OF_MARKETS, { batch, condition_ids: markets });
  const holders = await store.query<{ wallet: string }>(
    WALLETS_OF_MARKETS,
    { condition_ids: markets, limit: MAX_NAMED_HOLDERS + 1 },
    BACKGROUND_READ,
  );
  return holders.length > MAX_NAMED_HOLDERS ? 'everyone' : new Set(holders.map((row) => row.wallet));
}

let lastTapeVersion = 0;
function nextTapeVersion(): number {
  lastTapeVersion = Math.max(lastTapeVersion + 1, Date.now() * 1000);
  return lastTapeVersion;
}

export interface RollupSettings {
  /** Whale flow: a pause this long ends a burst. */
  burstGapSeconds: number;
  /** Whale flow: accumulations are tracked above this many USD. */
  exactAboveUsd: number;
}

export interface RefreshTimings {
  traderMarketsMs: number;
  whalesMs: number;
  tapeMs: number;
}

/** What a refresh did beyond its batches' keys: resolutions it inferred (and the holders it recomputed), contradictions. */
export interface RefreshOutcome extends RefreshTimings {
  inference: InferenceOutcome;
  /** The holders of the markets it resolved by inference: their rows changed too. */
  holders: ReadonlySet<string> | 'everyone';
}

/**
 * Recomputes trader_markets, then whale accumulations, then the change-only tapes, for
 * every key staged under these batches; marks them done.
 */
export async function refreshRollups(
  store: Store,
  batches: readonly string[],
  settings: RollupSettings,
): Promise<RefreshOutcome> {
  let inference: InferenceOutcome = { resolved: [], contradictions: [] };
  let holders: ReadonlySet<string> | 'everyone' = new Set();
  if (batches.length === 0) return { traderMarketsMs: 0, whalesMs: 0, tapeMs: 0, inference, holders };
  // A batch stages trader keys (fills, legs, resolutions) or tape keys (trades): skip what has none.
  const [staged] = await store.query<{ trader_keys: number; tape_keys: number }>(
    COUNT_STAGED,
    { batches },
    BACKGROUND_READ,
  );
  const started = performance.now();
  let traderMarketsDone = started;
  // The batches this refresh recomputes, with the one that stages the holders of markets it resolves by inference.
  const refreshed = [...batches];
  if (staged?.trader_keys) {
    await store.command(REFRESH_TRADER_MARKETS, { batches });
    // The redemptions just counted may resolve their markets; then every holder's row changes, as when a
    // stated resolution lands (ingest/pipeline.ts). Those rows have no redemption of a market without a
    // stated resolution that they did not already have: the second pass infers nothing new.
    const batch = `inferred|${batches[0]}|${batches.length}`;
    inference = await inferStagedResolutions(store, batches, async (conditionIds) => {
      holders = await stageResolvedMarkets(store, batch, conditionIds);
    });
    if (inference.resolved.length > 0) {
      await store.command(REFRESH_TRADER_MARKETS, { batches: [batch] });
      refreshed.push(batch);
    }
    // The skill sums read the rows just written (migration 0020).
    await store.command(REFRESH_TRADER_SKILL_MARKETS, { batches: refreshed });
    traderMarketsDone = performance.now();
    await store.command(REFRESH_WHALE_ACCUMULATIONS, {
      batches: refreshed,
      burst_gap_s: settings.burstGapSeconds,
      exact_above_usd: settings.exactAboveUsd,
    });
  }
  const whalesDone = performance.now();
  if (staged?.tape_keys) {
    // The newest recomputation of a second wins: microseconds of the wall clock, increasing per refresh.
    await store.command(REFRESH_TAPE_CHANGES, { batches, version: nextTapeVersion() });
  }
  const tapeDone = performance.now();
  await store.insert(
    'rollup_batches_done',
    refreshed.map((batch) => ({ batch })),
  );
  return {
    traderMarketsMs: Math.round(traderMarketsDone - started),
    whalesMs: Math.round(whalesDone - traderMarketsDone),
    tapeMs: Math.round(tapeDone - whalesDone),
    inference,
    holders,
  };
}

export async function orphanRollupBatches(store: Store, olderThanSeconds: number): Promise<string[]> {
  const rows = await store.query<{ batch: string }>(
    ORPHAN_BATCHES,
    { older_than_s: olderThanSeconds },
    BACKGROUND_READ,
  );
  return rows.map((row) => row.batch);
}

/** What a refresh's read of fills selects, beside what its pairs hold. */
export interface RefreshFillsRead {
  batches: number;
  pairs: number;
  /** Every copy of the pairs' fills: what a recomputation has to fold. */
  pairFills: number;
  /** Rows the primary index selects for the refresh's read (fills_by_pair; EXPLAIN ESTIMATE). */
  selectedRows: number;
  /** The same for the read of fills_v2 it replaced. */
  fillsV2Rows: number;
}

const NEWEST_REFRESHED_BATCHES = `
SELECT batch FROM {db:Identifier}.rollup_batches_done
WHERE done_at = (SELECT max(done_at) FROM {db:Identifier}.rollup_batches_done)`;

const STAGED_PAIRS = `
SELECT count() AS pairs FROM
(
    SELECT DISTINCT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)}
)`;

/** The read of the staged pairs' fills, from one table or the other (EXPLAIN ESTIMATE of each). */
const PAIR_FILLS_READ = (table: 'fills_by_pair' | 'fills_v2') => `
SELECT count() AS n
FROM {db:Identifier}.${table}
WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
  AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})`;

/** For benchmarks: what the newest refresh's read of fills selected (rows, not time: the machine's load does not move it). */
export async function readNewestRefreshFills(store: Store): Promise<RefreshFillsRead | null> {
  const batches = (await store.query<{ batch: string }>(NEWEST_REFRESHED_BATCHES, {}, BACKGROUND_READ)).map(
    (row) => row.batch,
  );
  if (batches.length === 0) return null;
  const selected = async (table: 'fills_by_pair' | 'fills_v2') =>
    (
      await store.query<{ rows: number }>(`EXPLAIN ESTIMATE ${PAIR_FILLS_READ(table)}`, { batches }, BACKGROUND_READ)
    ).reduce((sum, row) => sum + Number(row.rows), 0);
  const [pairs] = await store.query<{ pairs: number }>(STAGED_PAIRS, { batches }, BACKGROUND_READ);
  const [fills] = await store.query<{ n: number }>(PAIR_FILLS_READ('fills_by_pair'), { batches }, BACKGROUND_READ);
  return {
    batches: batches.length,
    pairs: Number(pairs?.pairs ?? 0),
    pairFills: Number(fills?.n ?? 0),
    selectedRows: await selected('fills_by_pair'),
    fillsV2Rows: await selected('fills_v2'),
  };
}
