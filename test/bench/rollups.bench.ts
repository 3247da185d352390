/**
 * `npm run bench:rollups` — what one rollup refresh costs, for the same amount of change, on a store
 * that holds --days-small and then --days-large days of the simulated world (issue 17: the cost must
 * grow with what changed, not with the tables).
 *
 * For each size, in its own database of one embedded engine: backfill the world, then ingest the next
 * --step seconds of it (the change), and time refreshRollups over exactly the batches that change
 * staged, --repeat times (a recomputation is idempotent, so every repeat does the same work). Prints
 * the medians per part (trader_markets, whales, tape; careers are folded at read time since 0011) and
 * the ratio large ÷ small, also per
 * changed key (the next --step seconds of two worlds are not the same amount of change): near 1× means
 * the cost follows the change; near the size ratio means it follows the tables. Then the rows the
 * primary index selects (EXPLAIN ESTIMATE) for point reads of one trader's market at each size.
 *
 * Options: --days-small N (1), --days-large N (7), --traders N (30), --step S (120), --repeat N (5).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../config.ts';
import { createLogger } from '../../log.ts';
import { openMigratedStore, withPublisher } from '../../roles/runtime.ts';
import { createSimulator, runSimulator } from '../../ingest/sources/simulator/index.ts';
import { refreshRollups, type RefreshTimings } from '../../projections/rollups.ts';
import type { Store } from '../../projections/store.ts';
import { median, runBenchmark } from './support.ts';

const { values } = parseArgs({
  options: {
    'days-small': { type: 'string', default: '1' },
    'days-large': { type: 'string', default: '7' },
    traders: { type: 'string', default: '30' },
    step: { type: 'string', default: '120' },
    repeat: { type: 'string', default: '5' },
  },
});
const TRADERS = Number(values.traders);
const STEP = Number(values.step);
const REPEAT = Number(values.repeat);
const PARTS = ['traderMarketsMs', 'whalesMs', 'tapeMs'] as const;

interface SizeFigures {
  days: number;
  rows: Record<string, number>;
  changed: { traderKeys: number; tapeKeys: number; batches: number };
  medians: RefreshTimings & { totalMs: number };
  /** Rows the primary index selects (EXPLAIN ESTIMATE) for point reads of one trader's market. */
  pointReads: Record<string, number>;
}

/** Point reads of one trader's market, by table: the landing table fills (index granularity 8,192) beside fills_v2 (256). */
const POINT_READS: Record<string, string> = {
  'fills (8,192)':
    'SELECT * FROM {db:Identifier}.fills WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}',
  'fills_v2 (256)':
    'SELECT * FROM {db:Identifier}.fills_v2 WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}',
  'trader_markets_v2 (256)':
    'SELECT * FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}',
};

async function pointReadRows(store: Store): Promise<Record<string, number>> {
  // The busiest trader's market with the most fills: the worst case of a point read.
  const [key] = await store.query<{ wallet: string; condition_id: string }>(
    'SELECT wallet, condition_id FROM {db:Identifier}.fills_v2 GROUP BY wallet, condition_id ORDER BY count() DESC LIMIT 1',
  );
  const out: Record<string, number> = {};
  if (!key) return out;
  for (const [name, sql] of Object.entries(POINT_READS)) {
    const rows = await store.query<{ rows: number }>(`EXPLAIN ESTIMATE ${sql}`, key);
    out[name] = rows.reduce((sum, row) => sum + Number(row.rows), 0);
  }
  return out;
}

async function measure(dataDir: string, days: number, label: string): Promise<SizeFigures> {
  const config = parseConfig({
    DATA_DIR: dataDir,
    CLICKHOUSE_DATABASE: `bench_rollups_${label}`,
    LOG_LEVEL: 'error',
    SIM_TRADERS: String(TRADERS),
    SIM_LIVE: 'false',
  });
  const log = createLogger('error');
  const store = await openMigratedStore(config, log);
  try {
    let genesisTs: number | undefined;
    let until = 0;
    const started = performance.now();
    await withPublisher(config, log, async ({ publisher }) => {
      const simulator = createSimulator({ seed: config.simulator.seed, traders: TRADERS });
      await runSimulator(simulator, publisher, {
        backfillDays: days,
        live: false,
        onProgress: (info) => (until = info.doneTs),
      });
      genesisTs = simulator.genesisTs;
    });
    console.log(`${days} day(s): backfilled in ${((performance.now() - started) / 1000).toFixed(0)} s`);

    // The change: the next STEP seconds of the same world, staged under batches we can name afterwards.
    const [mark] = await store.query<{ at: number }>('SELECT toUInt32(now()) - 1 AS at');
    await withPublisher(config, log, async ({ publisher }) => {
      const simulator = createSimulator({
        seed: config.simulator.seed,
        traders: TRADERS,
        ...(genesisTs === undefined ? {} : { genesisTs }),
      });
      await simulator.emit(until, until + STEP, publisher);
    });
    const batches = (
      await store.query<{ batch: string }>(
        `SELECT DISTINCT batch FROM
         (SELECT batch, staged_at FROM {db:Identifier}.rollup_keys UNION ALL SELECT batch, staged_at FROM {db:Identifier}.tape_keys)
         WHERE staged_at >= toDateTime({at:UInt32})`,
        { at: mark!.at },
      )
    ).map((row) => row.batch);
    const [changed] = await store.query<{ trader_keys: number; tape_keys: number }>(
      `SELECT (SELECT count() FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)}) AS trader_keys,
              (SELECT count() FROM {db:Identifier}.tape_keys WHERE batch IN {batches:Array(String)}) AS tape_keys`,
      { batches },
    );
    const [rows] = await store.query<Record<string, number>>(
      `SELECT (SELECT count() FROM {db:Identifier}.fills) AS fills, (SELECT count() FROM {db:Identifier}.trader_markets_v2) AS trader_markets,
              (SELECT count() FROM {db:Identifier}.tape_changes) AS tape_changes, (SELECT count() FROM {db:Identifier}.price_ladder) AS price_ladder`,
    );

    const settings = { burstGapSeconds: config.whales.burstGapSeconds, exactAboveUsd: config.whales.exactAboveUsd };
    const timings: (RefreshTimings & { totalMs: number })[] = [];
    for (let run = 0; run < REPEAT; run++) {
      const runStarted = performance.now();
      const parts = await refreshRollups(store, batches, settings);
      timings.push({ ...parts, totalMs: performance.now() - runStarted });
    }
    const medians = Object.fromEntries(
      [...PARTS, 'totalMs'].map((part) => [part, median(timings.map((t) => t[part as keyof typeof t]))]),
    ) as unknown as SizeFigures['medians'];
    const pointReads = await pointReadRows(store);
    await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    return {
      days,
      rows: rows!,
      changed: { traderKeys: changed!.trader_keys, tapeKeys: changed!.tape_keys, batches: batches.length },
      medians,
      pointReads,
    };
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  console.log(
    `${os.cpus().length} CPUs; load average at start ${os
      .loadavg()
      .map((v) => v.toFixed(1))
      .join(' ')}`,
  );
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-rollups-'));
  try {
    const small = await measure(dataDir, Number(values['days-small']), 'small');
    const large = await measure(dataDir, Number(values['days-large']), 'large');
    console.log('');
    console.log(
      `one refresh of the next ${STEP} s of the world (${TRADERS} named traders), medians of ${REPEAT} repeats, ms:`,
    );
    for (const size of [small, large]) {
      console.log(
        `  ${String(size.days).padStart(2)} day(s): tables ${Object.entries(size.rows)
          .map(([table, n]) => `${table} ${n}`)
          .join(', ')}; ` +
          `changed ${size.changed.traderKeys} trader keys, ${size.changed.tapeKeys} tape keys in ${size.changed.batches} batches`,
      );
    }
    // The two changes are the next STEP seconds of two worlds: their sizes differ. Per changed key, the
    // ratio compares the cost of the same amount of change (trader keys for the trader parts, tape keys for the tape).
    const keys = (size: SizeFigures, part: (typeof PARTS)[number] | 'totalMs') =>
      part === 'tapeMs'
        ? size.changed.tapeKeys
        : part === 'totalMs'
          ? size.changed.traderKeys + size.changed.tapeKeys
          : size.changed.traderKeys;
    console.log(
      `  ${'part'.padEnd(16)}${`${small.days} d`.padStart(10)}${`${large.days} d`.padStart(10)}${'÷'.padStart(8)}${'÷ per key'.padStart(12)}`,
    );
    for (const part of [...PARTS, 'totalMs'] as const) {
      const a = small.medians[part];
      const b = large.medians[part];
      const perKey =
        a > 0 && keys(small, part) > 0 && keys(large, part) > 0
          ? `${(b / keys(large, part) / (a / keys(small, part))).toFixed(2)}×`
          : '-';
      console.log(
        `  ${part.replace('Ms', '').padEnd(16)}${a.toFixed(0).padStart(10)}${b.toFixed(0).padStart(10)}${(a > 0 ? `${(b / a).toFixed(2)}×` : '-').padStart(8)}${perKey.padStart(12)}`,
      );
    }
    console.log(
      `  (tables grew ${(large.rows.fills! / Math.max(1, small.rows.fills!)).toFixed(1)}× in fills; a cost that follows the change stays near 1×)`,
    );
    console.log('');
    console.log(
      "rows the primary index selects for a point read of one trader's market (EXPLAIN ESTIMATE; the market with the most fills):",
    );
    console.log(
      `  ${'table (granularity)'.padEnd(26)}${`${small.days} d`.padStart(10)}${`${large.days} d`.padStart(10)}`,
    );
    for (const name of Object.keys(POINT_READS)) {
      console.log(
        `  ${name.padEnd(26)}${String(small.pointReads[name] ?? '-').padStart(10)}${String(large.pointReads[name] ?? '-').padStart(10)}`,
      );
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

runBenchmark(main);
