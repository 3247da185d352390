/**
 * The cluster variant is what the single-node DDL says, table by table. There is no ClickHouse cluster
 * here (chDB has no Keeper and no remote_servers), so the proof goes through the single node:
 *   1. the migrations are applied as written (the default, single node) to database A;
 *   2. the generated cluster DDL is taken apart by the test's own inverse (ON CLUSTER removed, each
 *      Replicated engine back to its plain engine, its replication arguments dropped) and applied to
 *      database B: every `_local` table and every view;
 *   3. for every table of A, B's `<table>_local` has the same columns (names, types, defaults, codecs,
 *      order), engine, sorting, primary and partition keys, TTL and settings; every view selects the same
 *      thing from the local tables; and each table has its Distributed twin over `<table>_local`,
 *      sharded by wallet when the table has one (else market, else account), as the test derives from
 *      A's own columns.
 * The generator also works on a migration it has never seen, refuses statements it has no rule for,
 * and `migrate` in cluster mode runs exactly the generated statements.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { ClusterDdl } from '../projections/cluster.ts';
import { loadMigrations, migrate, splitStatements } from '../projections/migrate.ts';
import { openStore, type Store } from '../projections/store.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

const CLUSTER = 'analytics_cluster';
const ON_CLUSTER = ` ON CLUSTER '${CLUSTER}'`;

/** The test's inverse of the cluster rewrite, for the statements that create or alter local tables and views. */
function backToOneNode(statement: string): string {
  return statement
    .replaceAll(ON_CLUSTER, '')
    .replace(/ENGINE = Replicated(\w+)\('[^']*', '\{replica\}'(?:, )?/, 'ENGINE = $1(')
    .replace(/ENGINE = (\w+)\(\)/, 'ENGINE = $1')
    .replace(/\breplicated_deduplication_window\b/g, 'non_replicated_deduplication_window');
}

interface ColumnRow {
  table: string;
  name: string;
  type: string;
  position: number;
  default_kind: string;
  default_expression: string;
  compression_codec: string;
}

interface TableRow {
  name: string;
  engine: string;
  engine_full: string;
  sorting_key: string;
  primary_key: string;
  partition_key: string;
  as_select: string;
}

describe('ClickHouse cluster variant', () => {
  let single: Store;
  let localized: Store;
  const generated: string[] = [];

  beforeAll(async () => {
    const config = parseConfig(testEnvironment(uniqueId('cluster'), PROCESS_DATA_DIR));
    single = await openStore({ ...config.clickhouse, database: `${config.clickhouse.database}_one` });
    localized = await openStore({ ...config.clickhouse, database: `${config.clickhouse.database}_local` });
    await migrate(single, createLogger('silent'));

    const ddl = new ClusterDdl({ cluster: CLUSTER });
    await localized.ensureDatabase();
    for (const migration of await loadMigrations()) {
      for (const statement of migration.statements) {
        for (const clustered of ddl.statements(statement)) {
          generated.push(clustered);
          // The Distributed twins and their ALTERs need a cluster: checked from their text below.
          if (/ENGINE = Distributed\(/.test(clustered)) continue;
          if (
            /^ALTER TABLE \{db:Identifier\}\.(\w+) /.test(clustered) &&
            !/^ALTER TABLE \{db:Identifier\}\.\w+_local /.test(clustered)
          )
            continue;
          // Data statements (a migration's backfill) write through the Distributed tables: the same text as on one node.
          if (/^INSERT\s+INTO\b/i.test(clustered)) {
            expect(clustered).toBe(statement);
            continue;
          }
          await localized.command(backToOneNode(clustered));
        }
      }
    }
  });

  afterAll(async () => {
    for (const store of [single, localized]) {
      await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
      await store?.close();
    }
  });

  async function tablesOf(store: Store): Promise<Map<string, TableRow>> {
    const rows = await store.query<TableRow>(
      'SELECT name, engine, engine_full, sorting_key, primary_key, partition_key, as_select FROM system.tables WHERE database = {db:String} ORDER BY name',
    );
    return new Map(rows.map((row) => [row.name, row]));
  }

  async function columnsOf(store: Store): Promise<ColumnRow[]> {
    return store.query<ColumnRow>(
      'SELECT table, name, type, position, default_kind, default_expression, compression_codec FROM system.columns WHERE database = {db:String} ORDER BY table, position',
    );
  }

  it('runs every statement on the cluster and replicates every table engine', () => {
    expect(generated.length).toBeGreaterThan(0);
    for (const statement of generated) {
      if (/^INSERT/i.test(statement)) continue;
      expect(statement, statement.slice(0, 120)).toContain(ON_CLUSTER);
      const engine = /ENGINE = (\w+)/.exec(statement)?.[1];
      if (engine)
        expect(engine === 'Distributed' || engine.startsWith('Replicated'), statement.slice(0, 120)).toBe(true);
    }
  });

  it('gives every single-node table a local twin with the same columns, engine, keys, TTL and settings', async () => {
    const oneTables = await tablesOf(single);
    const localTables = await tablesOf(localized);
    const oneColumns = await columnsOf(single);
    const localColumns = await columnsOf(localized);
    const tables = [...oneTables.values()].filter(
      (table) => table.engine !== 'MaterializedView' && table.name !== 'schema_migrations',
    );
    expect(tables.length).toBeGreaterThan(10);
    for (const table of tables) {
      const twin = localTables.get(`${table.name}_local`);
      expect(twin, `${table.name}_local`).toBeDefined();
      expect(twin!.engine, table.name).toBe(table.engine);
      expect(twin!.engine_full, table.name).toBe(table.engine_full);
      expect(twin!.sorting_key, table.name).toBe(table.sorting_key);
      expect(twin!.primary_key, table.name).toBe(table.primary_key);
      expect(twin!.partition_key, table.name).toBe(table.partition_key);
      const strip = ({ table: _table, ...column }: ColumnRow) => column;
      expect(localColumns.filter((column) => column.table === `${table.name}_local`).map(strip), table.name).toEqual(
        oneColumns.filter((column) => column.table === table.name).map(strip),
      );
    }
    // Nothing else: B holds exactly the local twins and the views.
    const expectedNames = [
      ...tables.map((table) => `${table.name}_local`),
      ...[...oneTables.values()].filter((table) => table.engine === 'MaterializedView').map((table) => table.name),
    ];
    expect([...localTables.keys()].sort()).toEqual(expectedNames.sort());
  });

  it('keeps every materialized view selecting the same thing, from and into the local tables', async () => {
    const oneTables = await tablesOf(single);
    const localTables = await tablesOf(localized);
    const views = [...oneTables.values()].filter((table) => table.engine === 'MaterializedView');
    expect(views.length).toBeGreaterThan(5);
    for (const view of views) {
      const twin = localTables.get(view.name)!;
      const normalized = twin.as_select.replaceAll(`${localized.database}.`, 'DB.').replace(/(DB\.\w+)_local\b/g, '$1');
      expect(normalized, view.name).toBe(view.as_select.replaceAll(`${single.database}.`, 'DB.'));
      // Reads and writes stay on the shard: every table the view names is a local one.
      expect(
        twin.as_select
          .match(new RegExp(`${localized.database}\\.(\\w+)`, 'g'))!
          .every((name) => name.endsWith('_local')),
        view.name,
      ).toBe(true);
    }
    for (const statement of generated.filter((text) => text.startsWith('CREATE MATERIALIZED VIEW'))) {
      expect(statement).toMatch(/\sTO \{db:Identifier\}\.\w+_local\b/);
    }
  });

  it('puts a Distributed table over each local table, sharded by wallet, else market, else account', async () => {
    const oneTables = await tablesOf(single);
    const oneColumns = await columnsOf(single);
    const tables = [...oneTables.values()].filter(
      (table) => table.engine !== 'MaterializedView' && table.name !== 'schema_migrations',
    );
    const distributed = generated.filter((statement) => statement.includes('ENGINE = Distributed('));
    // A table a later migration replaced and dropped (0011) is dropped on the cluster too: both its tables.
    const dropped = [
      ...new Set(distributed.map((text) => /^CREATE TABLE IF NOT EXISTS \{db:Identifier\}\.(\w+) /.exec(text)![1]!)),
    ].filter((name) => !oneTables.has(name));
    expect(dropped.length).toBeGreaterThan(0);
    for (const name of dropped) {
      expect(generated).toContain(`DROP TABLE IF EXISTS {db:Identifier}.${name}${ON_CLUSTER} SYNC`);
      expect(generated).toContain(`DROP TABLE IF EXISTS {db:Identifier}.${name}_local${ON_CLUSTER} SYNC`);
    }
    expect(distributed).toHaveLength(tables.length + dropped.length);
    for (const table of tables) {
      const columns = new Set(oneColumns.filter((column) => column.table === table.name).map((column) => column.name));
      const key = columns.has('wallet')
        ? 'cityHash64(wallet)'
        : columns.has('condition_id')
          ? 'cityHash64(condition_id)'
          : columns.has('account_id')
            ? 'cityHash64(account_id)'
            : 'rand()';
      const statement = distributed.find((text) =>
        text.startsWith(`CREATE TABLE IF NOT EXISTS {db:Identifier}.${table.name} `),
      );
      expect(statement, table.name).toBe(
        `CREATE TABLE IF NOT EXISTS {db:Identifier}.${table.name}${ON_CLUSTER}\nAS {db:Identifier}.${table.name}_local\nENGINE = Distributed('${CLUSTER}', {db:Identifier}, '${table.name}_local', ${key})`,
      );
    }
    // The landing table of fills is sharded by wallet (the design's rule).
    expect(distributed.find((text) => text.includes('.fills_local\n'))).toContain('cityHash64(wallet)');
    // A column added by a later migration reaches both the local and the Distributed table.
    expect(generated).toContain(
      `ALTER TABLE {db:Identifier}.fills${ON_CLUSTER} ADD COLUMN IF NOT EXISTS fee_usd Float64 DEFAULT 0 AFTER usd`,
    );
    expect(generated).toContain(
      `ALTER TABLE {db:Identifier}.fills_local${ON_CLUSTER} ADD COLUMN IF NOT EXISTS fee_usd Float64 DEFAULT 0 AFTER usd`,
    );
  });

  it('works on a migration it has never seen and refuses a statement it has no rule for', () => {
    const ddl = new ClusterDdl({ cluster: CLUSTER });
    const migration = splitStatements(`
      CREATE TABLE IF NOT EXISTS {db:Identifier}.new_things
      (
          wallet String CODEC(ZSTD(3)),
          n      UInt64 DEFAULT toUInt64(1),
          INDEX n_index n TYPE minmax GRANULARITY 1
      )
      ENGINE = SummingMergeTree((n))
      ORDER BY wallet;
      CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.new_things_from_self TO {db:Identifier}.new_things AS SELECT wallet, n FROM {db:Identifier}.new_things WHERE n > 1;
      ALTER TABLE {db:Identifier}.new_things MODIFY TTL toDateTime(n) + INTERVAL 1 DAY;
      DROP TABLE IF EXISTS {db:Identifier}.new_things;
    `);
    const out = migration.flatMap((statement) => ddl.statements(statement));
    expect(out[0]).toContain(
      "ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/{database}/new_things_local', '{replica}', (n))",
    );
    expect(out[0]).toContain('INDEX n_index n TYPE minmax GRANULARITY 1');
    expect(out[1]).toContain(
      "Distributed('analytics_cluster', {db:Identifier}, 'new_things_local', cityHash64(wallet))",
    );
    expect(out[2]).toBe(
      `CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.new_things_from_self${ON_CLUSTER} TO {db:Identifier}.new_things_local AS SELECT wallet, n FROM {db:Identifier}.new_things_local WHERE n > 1`,
    );
    // A TTL change is the local table's alone (a Distributed table stores nothing).
    expect(out[3]).toBe(
      `ALTER TABLE {db:Identifier}.new_things_local${ON_CLUSTER} MODIFY TTL toDateTime(n) + INTERVAL 1 DAY`,
    );
    expect(out.slice(4)).toEqual([
      `DROP TABLE IF EXISTS {db:Identifier}.new_things${ON_CLUSTER} SYNC`,
      `DROP TABLE IF EXISTS {db:Identifier}.new_things_local${ON_CLUSTER} SYNC`,
    ]);
    expect(() => ddl.statements('RENAME TABLE {db:Identifier}.a TO {db:Identifier}.b')).toThrow(
      /no rule for this migration statement/,
    );
    expect(() => ddl.statements('ALTER TABLE {db:Identifier}.unknown ADD COLUMN x UInt8')).toThrow(
      /not a table created by the migrations/,
    );
  });

  it('is chosen by CLICKHOUSE_CLUSTER: migrate then runs exactly the generated statements, ON CLUSTER', async () => {
    expect(parseConfig({}).clickhouse.cluster).toBeNull();
    expect(parseConfig({ CLICKHOUSE_CLUSTER: CLUSTER }).clickhouse.cluster).toBe(CLUSTER);
    expect(() => parseConfig({ CLICKHOUSE_CLUSTER: "x' OR 1" })).toThrow(/CLICKHOUSE_CLUSTER/);

    const commands: string[] = [];
    const recording: Store = {
      database: 'ta_cluster',
      kind: 'server',
      query: async <Row>() => [] as Row[],
      command: async (sql: string) => {
        commands.push(sql);
      },
      insert: async () => {},
      insertJsonLines: async () => {},
      ensureDatabase: async () => {
        throw new Error('a cluster database is created ON CLUSTER');
      },
      close: async () => {},
    };
    await migrate(recording, createLogger('silent'), { cluster: CLUSTER });
    expect(commands[0]).toBe(`CREATE DATABASE IF NOT EXISTS \`ta_cluster\`${ON_CLUSTER}`);
    expect(commands[1]).toMatch(/^CREATE TABLE IF NOT EXISTS \{db:Identifier\}\.schema_migrations_local ON CLUSTER/);
    expect(commands[2]).toMatch(
      /^CREATE TABLE IF NOT EXISTS \{db:Identifier\}\.schema_migrations ON CLUSTER .*\n.*\nENGINE = Distributed/,
    );
    expect(commands.slice(3)).toEqual(generated);
  });
});
