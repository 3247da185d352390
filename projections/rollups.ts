/**
 * Rollups that hold sums (trader_markets_v2 per trader and market, whale_accumulations_v2: migration
 * 0010 re-shaped them; trader_skill_markets, per trader and resolved market, migration 0020; a trader's career is folded from its trader_markets_v2 rows at read time) and the
 * change-only tapes (tape_changes) are recomputed for the keys that ingested events touched, from the deduplicated landing tables. This is what makes a fill that
 * arrives twice (replayed, or from both the archive and the upstream) change nothing: a sum view would
 * count it twice, a recomputation from each fill's kept copy (the highest source_rank, as FINAL keeps)
 * cannot. Recomputation is idempotent. A pair whose events are all recent is read from fills_recent, a range
 * of its wallet's fills by time (migration 0025); an older one from fills_v2 by its key: a refresh reads
 * what changed and not the wallets' whole histories.
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
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BACKGROUND_READ, type Store } from './store.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const sqlFile = (name: string) => readFileSync(path.join(here, 'rollups', name), 'utf8');

/** The fills of the staged pairs as each refresh file reads them (one definition, kept readable as it is). */
const STAGED_PAIRS_FILLS =
  /FROM \{db:Identifier\}\.fills_v2\s+WHERE wallet IN \(SELECT wallet FROM \{db:Identifier\}\.rollup_keys WHERE batch IN \{batches:Array\(String\)\}\)\s+AND \(wallet, condition_id\) IN \(SELECT wallet, condition_id FROM \{db:Identifier\}\.rollup_keys WHERE batch IN \{batches:Array\(String\)\}\)/g;
const STAGED_FILLS = sqlFile('staged_fills.sql')
  .split('\n')
  .filter((line) => !line.startsWith('--'))
  .join('\n')
  .trim();

/** A refresh file with its read of the staged pairs' fills replaced by staged_fills.sql (exactly one per file). */
function refreshStatement(name: string): string {
  const sql = sqlFile(name);
  const found = sql.match(STAGED_PAIRS_FILLS)?.length ?? 0;
  if (found !== 1) throw new Error(`rollups/${name}: ${found} reads of the staged pairs' fills, expected 1`);
  return sql.replace(STAGED_PAIRS_FILLS, () => STAGED_FILLS);
}

const REFRESH_TRADER_MARKETS = refreshStatement('refresh_trader_markets.sql');
const REFRESH_TRADER_SKILL_MARKETS = refreshStatement('refresh_trader_skill_markets.sql');
const REFRESH_WHALE_ACCUMULATIONS = refreshStatement('refresh_whale_accumulations.sql');
const REFRESH_TAPE_CHANGES = sqlFile('refresh_tape_changes.sql');
const STAGE_REFRESH_PAIRS = sqlFile('stage_refresh_pairs.sql');

/**
 * How far before the newest staged fill a refresh reads the touched wallets' recent fills: a pair whose
 * first event is older is read by its key instead (long-lived markets, late copies of old fills).
 */
const RECENT_LOOKBACK_SECONDS = 3600;
/**
 * The oldest fill time the refresh reads from fills_recent, as an age: fills_recent's view writes the fills
 * of the last day (migration 0025); an hour inside it, so that every copy at or after it has landed there.
 */
const RECENT_MAX_AGE_SECONDS = 23 * 3600;

/**
 * Every wallet with a position in a market that just resolved: their results changed. Staged without a fill
 * (from_ts the largest UInt32), so the pair reaches back to the first event its row holds.
 */
const STAGE_WALLETS_OF_MARKETS = `
INSERT INTO {db:Identifier}.rollup_keys (batch, wallet, condition_id, from_ts)
SELECT {batch:String}, wallet, condition_id, 4294967295
FROM {db:Identifier}.market_wallets FINAL
WHERE condition_id IN {condition_ids:Array(String)}`;

/** What the batches staged, the newest staged event time among them (0: none) and the store's clock. */
const COUNT_STAGED = `
SELECT
    (SELECT count() FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)}) AS trader_keys,
    (SELECT count() FROM {db:Identifier}.tape_keys WHERE batch IN {batches:Array(String)}) AS tape_keys,
    (SELECT maxIf(from_ts, from_ts < 4294967295) FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)}) AS newest_from,
    toUInt32(now()) AS now`;

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

/**
 * Recomputes trader_markets, then whale accumulations, then the change-only tapes, for
 * every key staged under these batches; marks them done.
 */
export async function refreshRollups(
  store: Store,
  batches: readonly string[],
  settings: RollupSettings,
): Promise<RefreshTimings> {
  if (batches.length === 0) return { traderMarketsMs: 0, whalesMs: 0, tapeMs: 0 };
  // A batch stages trader keys (fills, legs, resolutions) or tape keys (trades): skip what has none.
  const [staged] = await store.query<{ trader_keys: number; tape_keys: number; newest_from: number; now: number }>(
    COUNT_STAGED,
    { batches },
    BACKGROUND_READ,
  );
  const started = performance.now();
  let traderMarketsDone = started;
  if (staged?.trader_keys) {
    const refresh = randomUUID();
    const now = Number(staged.now);
    const newest = Number(staged.newest_from) || now;
    const fills = {
      batches,
      refresh,
      recent_from: Math.max(newest - RECENT_LOOKBACK_SECONDS, now - RECENT_MAX_AGE_SECONDS),
    };
    await store.command(STAGE_REFRESH_PAIRS, fills);
    await store.command(REFRESH_TRADER_MARKETS, fills);
    // The skill sums read the rows just written (migration 0020).
    await store.command(REFRESH_TRADER_SKILL_MARKETS, fills);
    traderMarketsDone = performance.now();
    await store.command(REFRESH_WHALE_ACCUMULATIONS, {
      ...fills,
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
    batches.map((batch) => ({ batch })),
  );
  return {
    traderMarketsMs: Math.round(traderMarketsDone - started),
    whalesMs: Math.round(whalesDone - traderMarketsDone),
    tapeMs: Math.round(tapeDone - whalesDone),
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

/** What the newest refresh read its fills from: its pairs, those read as recent, and the rows of each read. */
export interface RefreshFillsRead {
  pairs: number;
  recentPairs: number;
  /** The kept and other copies of the pairs' fills: what a recomputation has to fold. */
  pairFills: number;
  /** Rows the primary indexes select for the refresh's read of the fills (EXPLAIN ESTIMATE). */
  selectedRows: number;
  /** The same for a read of every pair by its key from fills_v2 alone, as before fills_recent. */
  byKeyRows: number;
}

const NEWEST_REFRESH = `
SELECT refresh, any(recent_from) AS recent_from, count() AS pairs, countIf(recent) AS recent_pairs
FROM {db:Identifier}.rollup_refresh_pairs
GROUP BY refresh
ORDER BY max(made_at) DESC, pairs DESC
LIMIT 1`;

const REFRESH_PAIRS_BY_KEY = `FROM {db:Identifier}.fills_v2
WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_refresh_pairs WHERE refresh = {refresh:String})
  AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_refresh_pairs WHERE refresh = {refresh:String})`;

/** For benchmarks: how much the newest refresh's read of fills selected, beside what its pairs hold. */
export async function readNewestRefreshFills(store: Store): Promise<RefreshFillsRead | null> {
  const [newest] = await store.query<{ refresh: string; recent_from: number; pairs: number; recent_pairs: number }>(
    NEWEST_REFRESH,
    {},
    BACKGROUND_READ,
  );
  if (!newest) return null;
  const params = { refresh: newest.refresh, recent_from: Number(newest.recent_from) };
  const selected = async (sql: string) =>
    (await store.query<{ rows: number }>(`EXPLAIN ESTIMATE SELECT count() ${sql}`, params, BACKGROUND_READ)).reduce(
      (sum, row) => sum + Number(row.rows),
      0,
    );
  const [fills] = await store.query<{ n: number }>(
    `SELECT count() AS n ${REFRESH_PAIRS_BY_KEY}`,
    params,
    BACKGROUND_READ,
  );
  return {
    pairs: Number(newest.pairs),
    recentPairs: Number(newest.recent_pairs),
    pairFills: Number(fills?.n ?? 0),
    selectedRows: await selected(STAGED_FILLS),
    byKeyRows: await selected(REFRESH_PAIRS_BY_KEY),
  };
}
