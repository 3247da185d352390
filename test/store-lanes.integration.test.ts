/**
 * The embedded store's lanes (projections/store.ts): inserts, rollup refreshes and DDL run reniced
 * (ClickHouse's os_thread_priority, `writeNice`, default 10), reads at the normal priority, so
 * that on busy cores the kernel runs the reads first. Each lane's setting is read back from the engine,
 * as the statement sees it, through the lane itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { openStore, type Store } from '../projections/store.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

describe('lanes of the embedded store', () => {
  let store: Store;

  beforeAll(async () => {
    const config = parseConfig({ ...testEnvironment(uniqueId('lanes'), PROCESS_DATA_DIR), KAFKA_BROKERS: '' });
    expect(config.clickhouse.writeNice).toBeUndefined();
    store = await openStore(config.clickhouse);
    await store.ensureDatabase();
    // What a statement saw: the default is computed in the inserting statement's own context.
    await store.command(
      "CREATE TABLE IF NOT EXISTS {db:Identifier}.lane_priority (lane String, nice Int64 DEFAULT toInt64(getSetting('os_thread_priority'))) ENGINE = MergeTree ORDER BY lane",
    );
  });

  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('runs reads at the normal priority', async () => {
    const [row] = await store.query<{ nice: number }>("SELECT toInt64(getSetting('os_thread_priority')) AS nice");
    expect(row).toEqual({ nice: 0 });
  });

  it("runs ingest's own reads (background) reniced on the command lane, not on the read pool", async () => {
    // The read pool's sessions run at 0 (the test above): a 10 is the command lane's.
    const [row] = await store.query<{ nice: number }>(
      "SELECT toInt64(getSetting('os_thread_priority')) AS nice",
      {},
      { background: true },
    );
    expect(row).toEqual({ nice: 10 });
  });

  it('runs inserts and commands (refreshes, DDL) reniced by 10', async () => {
    await store.insertJsonLines('lane_priority', [JSON.stringify({ lane: 'ingest' })]);
    await store.command(
      "INSERT INTO {db:Identifier}.lane_priority SELECT 'commands', toInt64(getSetting('os_thread_priority'))",
    );
    const rows = await store.query<{ lane: string; nice: number }>(
      'SELECT lane, nice FROM {db:Identifier}.lane_priority ORDER BY lane',
    );
    expect(rows).toEqual([
      { lane: 'commands', nice: 10 },
      { lane: 'ingest', nice: 10 },
    ]);
  });
});
