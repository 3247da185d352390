/**
 * Tables shaped for their reads (migrations 0010–0011, issue 17): the re-shaped tables give the answers
 * the tables they replace gave, and a point read reads far fewer rows.
 *
 * One simulated world is ingested into a fully migrated store ("after": the `_v2` tables, the rollups
 * refreshed batch by batch as ingest runs). A second database ("before") holds the schema as it was up
 * to 0009, the same landing rows (copied), and the rollups recomputed from scratch by the refresh SQL
 * as it was before 0010 (test/fixtures/refresh-before-0010, over every pair in one batch). Then:
 *   - every re-shaped table equals the one it replaces (newest versions; sums within rounding, since
 *     the rows are summed in another order), and fills_v2 equals fills deduplicated;
 *   - the read functions answer the same from both (the "before" store reads the old table names), and
 *     the markets list equals the old FINAL read of the wallet's rows;
 *   - EXPLAIN ESTIMATE (rows the primary index selects) of a point read of one trader's market is far
 *     below that of the old table;
 *   - migrating a store that holds old-shape rows (0010's backfill) carries them over.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../config.ts';
import { createLogger } from '../log.ts';
import { createSimulator, runSimulator } from '../ingest/sources/simulator/index.ts';
import { withPublisher } from '../roles/runtime.ts';
import { readCareer } from '../projections/careers.ts';
import { WALLET_MARKET_FIELDS } from '../projections/wallet-markets.ts';
import { readTraderFills } from '../projections/fills.ts';
import { FILL_ROW_FIELDS } from '../projections/market-parts.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import type { MarketListPosition } from '../projections/market-schemas.ts';
import { readMarketSummary } from '../projections/market-summary.ts';
import { readTopMarkets } from '../projections/top-markets.ts';
import { loadMigrations, migrate } from '../projections/migrate.ts';
import { openStore, type QueryParams, type Store } from '../projections/store.ts';
import { readWhaleFlow } from '../projections/whales.ts';
import { expectClose } from './harness/close.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const beforeSql = (name: string) =>
  readFileSync(path.join(here, 'fixtures', 'refresh-before-0010', `${name}.sql`), 'utf8');

/** The tables 0010 re-shaped; the old name is the new one without `_v2`. */
const RESHAPED =
  /\b(trader_markets|whale_accumulations|market_marks|fills|position_legs|markets_meta|market_resolutions)_v2\b/g;

/** The landing tables 0010 gave a read copy (`<table>_v2`): the copy's columns, the key. */
const READ_COPIES: [string, string, string][] = [
  [
    'fills',
    'wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank',
    'wallet, condition_id, fill_id',
  ],
  ['position_legs', 'wallet, condition_id, leg_id, kind, tokens, usd, era, ts', 'wallet, condition_id, leg_id'],
  [
    'markets_meta',
    'condition_id, title, slug, outcome1, outcome2, category, title_start_ts, end_ts, icon, version',
    'condition_id',
  ],
  [
    'market_resolutions',
    'condition_id, winner_token_side, payout1, payout2, ts, inferred, source',
    'condition_id, inferred',
  ],
];

/** The same store, every statement sent with the old table names (the "before" database). */
function withOldNames(store: Store): Store {
  return {
    ...store,
    query: <Row>(sql: string, params?: QueryParams) => store.query<Row>(sql.replace(RESHAPED, '$1'), params),
  };
}

/** Rows the primary index selects for a statement (EXPLAIN ESTIMATE, summed over its tables). */
async function estimatedRows(store: Store, sql: string, params: QueryParams): Promise<number> {
  const rows = await store.query<{ rows: number }>(`EXPLAIN ESTIMATE ${sql}`, params);
  return rows.reduce((sum, row) => sum + Number(row.rows), 0);
}

describe('tables shaped for their reads', () => {
  let config: Config;
  let after: Store;
  let before: Store;
  let wallets: string[] = [];
  const nowSeconds = Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    const environment = testEnvironment(uniqueId('reshape'), PROCESS_DATA_DIR);
    delete (environment as Record<string, string | undefined>).KAFKA_BROKERS;
    config = parseConfig({ ...environment, SIM_LIVE: 'false' });
    const log = createLogger('error');

    // After: the world through the in-process log and the ingest worker (rollups refreshed per batch).
    await withPublisher(config, log, async ({ publisher }) => {
      const simulator = createSimulator({ seed: 17, traders: 8 });
      await runSimulator(simulator, publisher, { backfillDays: 0.25, live: false, now: () => nowSeconds * 1000 });
    });
    after = await openStore(config.clickhouse);

    // Before: the schema up to 0009, the same landing rows, the rollups as the refresh SQL computed them.
    before = await openStore({ ...config.clickhouse, database: `${config.clickhouse.database}_before` });
    await before.ensureDatabase();
    const migrations = await loadMigrations();
    for (const migration of migrations) {
      if (migration.version > 9) continue;
      for (const statement of migration.statements) await before.command(statement);
    }
    // The wallet's rows are read as one serialized column (0012): the old table gets it from the same migration.
    for (const statement of migrations.find((migration) => migration.version === 12)!.statements) {
      await before.command(statement.replaceAll('trader_markets_v2', 'trader_markets'));
    }
    // It names the last fill since 0016.
    for (const statement of migrations.find((migration) => migration.version === 16)!.statements) {
      await before.command(statement.replaceAll('trader_markets_v2', 'trader_markets'));
    }
    // So are a fill's trade fields (0013): the old fills page reads them from the landing table.
    for (const statement of migrations.find((migration) => migration.version === 13)!.statements) {
      await before.command(statement.replaceAll('fills_v2', 'fills'));
    }
    // Resolutions are kept by source since 0026: the old landing table gets the columns from the same migration.
    const sourced = migrations.find((migration) => migration.version === 26)!.statements;
    for (const statement of sourced.filter((statement) => statement.includes('.market_resolutions ADD')))
      await before.command(statement);
    for (const table of [
      'markets_meta',
      'market_resolutions',
      'fills',
      'position_legs',
      'trades',
      'upstream_profiles',
      'upstream_leaderboard',
    ]) {
      await before.command(`INSERT INTO {db:Identifier}.${table} SELECT * FROM {source:Identifier}.${table}`, {
        source: after.database,
      });
    }
    // The fills page reads its window in time order (0014): the old store gets the table, from its own landing rows.
    for (const statement of migrations.find((migration) => migration.version === 14)!.statements)
      await before.command(statement);
    await before.command(
      `INSERT INTO {db:Identifier}.rollup_keys (batch, wallet, condition_id)
       SELECT DISTINCT 'everything', wallet, condition_id FROM {db:Identifier}.market_wallets`,
    );
    const batches = ['everything'];
    await before.command(beforeSql('refresh_trader_markets'), { batches });
    await before.command(beforeSql('refresh_careers'), { batches, include_v1: config.card.includeV1 ? 1 : 0 });
    await before.command(beforeSql('refresh_whale_accumulations'), {
      batches,
      burst_gap_s: config.whales.burstGapSeconds,
      exact_above_usd: config.whales.exactAboveUsd,
    });
    // A market row names who resolved it since 0026 (and serializes it); in a simulated world the simulator
    // states every resolution.
    await before.command(
      `ALTER TABLE {db:Identifier}.trader_markets ADD COLUMN resolution_source LowCardinality(String) DEFAULT if(resolved, 'simulator', '')`,
    );
    for (const statement of sourced.filter((statement) => statement.includes('MODIFY COLUMN wallet_row')))
      await before.command(statement.replaceAll('trader_markets_v2', 'trader_markets'));
    await before.command(
      'ALTER TABLE {db:Identifier}.trader_markets MATERIALIZE COLUMN wallet_row SETTINGS mutations_sync = 2',
    );
    wallets = (
      await after.query<{ wallet: string }>(
        'SELECT DISTINCT wallet FROM {db:Identifier}.trader_markets_v2 ORDER BY wallet',
      )
    ).map((row) => row.wallet);
  });

  afterAll(async () => {
    for (const store of [before, after]) {
      await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
      await store?.close();
    }
  });

  it('holds a world with traders, markets, fills and whales', async () => {
    const [counts] = await after.query<{ fills: number; markets: number; whales: number }>(
      `SELECT (SELECT count() FROM {db:Identifier}.fills_v2 FINAL) AS fills, (SELECT count() FROM {db:Identifier}.trader_markets_v2 FINAL) AS markets,
              (SELECT count() FROM {db:Identifier}.whale_accumulations_v2 FINAL WHERE tracked) AS whales`,
    );
    expect(wallets.length).toBeGreaterThanOrEqual(5);
    expect(counts!.fills).toBeGreaterThan(1000);
    expect(counts!.markets).toBeGreaterThan(50);
    expect(counts!.whales).toBeGreaterThan(0);
  });

  it('gives every re-shaped table the content of the table it replaces', async () => {
    const pairs: [string, string, string][] = [
      ['trader_markets_v2', 'trader_markets', 'wallet, condition_id'],
      ['whale_accumulations_v2', 'whale_accumulations', 'wallet, condition_id, token_side'],
    ];
    for (const [table, old, key] of pairs) {
      // The versions differ by design: the refreshes now rank a copy replaced by a higher source rank above
      // the copy it replaces (test/version-ties), which the old tables' versions did not.
      const now = await after.query<Record<string, unknown>>(
        `SELECT * EXCEPT (version) FROM {db:Identifier}.${table} FINAL ORDER BY ${key}`,
      );
      const then = await before.query<Record<string, unknown>>(
        `SELECT * EXCEPT (version) FROM {db:Identifier}.${old} FINAL ORDER BY ${key}`,
      );
      expect(now.length, table).toBeGreaterThan(0);
      expectClose(now, then, table);
    }
    const marks =
      'SELECT condition_id, argMaxMerge(last_up_price) AS last, max(last_ts) AS last_ts, min(first_ts) AS first_ts FROM {db:Identifier}.TABLE GROUP BY condition_id ORDER BY condition_id';
    expect(await after.query(marks.replace('TABLE', 'market_marks_v2'))).toEqual(
      await before.query(marks.replace('TABLE', 'market_marks')),
    );
    // The career the card folds from trader_markets_v2 is the careers rollup's row.
    const careers = await before.query<Record<string, unknown> & { wallet: string }>(
      'SELECT * FROM {db:Identifier}.careers FINAL ORDER BY wallet',
    );
    // A career counts the eras the card counts: a wallet that traded only in the simulated V1 hour has none.
    const counted = await after.query<{ wallet: string }>(
      `SELECT DISTINCT wallet FROM {db:Identifier}.trader_markets_v2 FINAL
       WHERE {include_v1:UInt8} = 1 OR era = 'v2' ORDER BY wallet`,
      { include_v1: config.card.includeV1 ? 1 : 0 },
    );
    expect(counted.length).toBeGreaterThanOrEqual(5);
    expect(careers.map((row) => row.wallet)).toEqual(counted.map((row) => row.wallet));
    for (const { wallet, wins: _wins, buy_usd: _buy, buy_tokens: _tokens, version: _version, ...row } of careers) {
      const {
        open_value_usd: _value,
        unmarked_markets: _unmarked,
        marked_at: _marked,
        pnl_marked_usd: _marked_pnl,
        ...career
      } = await readCareer(after, wallet, config.card.includeV1);
      expectClose(career, row, `career of ${wallet}`);
    }
    // The read copies of the landing tables hold what the landing tables hold, deduplicated alike.
    for (const [table, columns, key] of READ_COPIES) {
      // The resolutions' copy also holds those the rollup refresh inferred from redemptions (never landed: derived).
      const landed = table === 'market_resolutions' ? 'WHERE inferred = 0' : '';
      const copy = await after.query(
        `SELECT ${columns} FROM {db:Identifier}.${table}_v2 FINAL ${landed} ORDER BY ${key}`,
      );
      expect(copy.length, table).toBeGreaterThan(0);
      expect(copy, table).toEqual(
        await after.query(`SELECT ${columns} FROM {db:Identifier}.${table} FINAL ORDER BY ${key}`),
      );
    }
  });

  it('answers every trader read as the old tables did', async () => {
    const old = withOldNames(before);
    for (const wallet of wallets) {
      // The markets list, paged, against the old FINAL read of the wallet's rows.
      const listed: { condition_id: string; last_traded_at: number; pnl_usd: number; fills_count: number }[] = [];
      let position: MarketListPosition | undefined;
      do {
        const page = await readTraderMarkets(after, wallet, { after: position, limit: 7 });
        expectClose(page, await readTraderMarkets(old, wallet, { after: position, limit: 7 }), `markets of ${wallet}`);
        listed.push(...page.markets);
        position = page.next ?? undefined;
      } while (position);
      const finalRows = await before.query<{
        condition_id: string;
        last_traded_at: number;
        pnl_usd: number;
        fills_count: number;
      }>(
        // the last fill (a market with legs only: its last leg), the list's order
        `SELECT condition_id, ifNull(last_fill_ts, last_ts) AS last_traded_at, pnl_usd, fills_count
         FROM {db:Identifier}.trader_markets FINAL
         WHERE wallet = {wallet:String} ORDER BY last_traded_at DESC, condition_id DESC`,
        { wallet },
      );
      expectClose(
        listed.map((row) => [row.condition_id, row.last_traded_at, row.pnl_usd, row.fills_count]),
        finalRows.map((row) => [row.condition_id, row.last_traded_at, row.pnl_usd, row.fills_count]),
        `markets list of ${wallet} vs FINAL`,
      );
      expectClose(
        await readTopMarkets(after, wallet, 3),
        await readTopMarkets(old, wallet, 3),
        `top markets of ${wallet}`,
      );
      expectClose(
        await readTopMarkets(after, wallet, 3, { historyDepth: 4 }),
        await readTopMarkets(old, wallet, 3, { historyDepth: 4 }),
        `top markets of ${wallet} within depth`,
      );
      expectClose(
        await readCareer(after, wallet, config.card.includeV1),
        await readCareer(old, wallet, config.card.includeV1),
        `career of ${wallet}`,
      );
      for (const market of listed.slice(0, 3)) {
        expectClose(
          await readMarketSummary(after, wallet, market.condition_id),
          await readMarketSummary(old, wallet, market.condition_id),
          `summary ${wallet} ${market.condition_id}`,
        );
      }
      const fills = await readTraderFills(after, wallet, { limit: 100 });
      expectClose(fills, await readTraderFills(old, wallet, { limit: 100 }), `fills of ${wallet}`);
      expect(fills.fills.length).toBeGreaterThan(0);
    }
    const whales = { minUsd: 0, by: 'burst' as const, windowHours: 24, limit: 50, nowSeconds };
    const coverage = { exactAboveUsd: config.whales.exactAboveUsd, burstGapSeconds: config.whales.burstGapSeconds };
    const flow = await readWhaleFlow(after, whales, coverage);
    expect(flow.rows.length).toBeGreaterThan(0);
    expectClose(flow, await readWhaleFlow(old, whales, coverage), 'whale flow');
  });

  it("serializes each trader_markets_v2 row's fields in wallet_row exactly as a read of its columns returns them (0012)", async () => {
    const rows = await after.query<Record<string, unknown> & { wallet_row: string }>(
      `SELECT wallet_row, ${WALLET_MARKET_FIELDS.join(', ')} FROM {db:Identifier}.trader_markets_v2 ORDER BY wallet, condition_id, version`,
    );
    expect(rows.length).toBeGreaterThan(100);
    const kinds = { resolved: 0, open: 0, nullPrice: 0 };
    for (const { wallet_row, ...columns } of rows) {
      const serialized = JSON.parse(wallet_row) as Record<string, unknown>;
      expect(Object.keys(serialized)).toEqual([...WALLET_MARKET_FIELDS]);
      expect(serialized).toEqual(columns);
      if (serialized.resolved === true) kinds.resolved++;
      else if (serialized.up_payout === null) kinds.open++;
      if (serialized.last_price === null) kinds.nullPrice++;
    }
    // Both kinds of market (a payout, and none yet) are among them.
    expect(kinds.resolved).toBeGreaterThan(0);
    expect(kinds.open).toBeGreaterThan(0);
  });

  it("serializes each fills_v2 row's trade fields in fill_row exactly as a read of its columns returns them (0013), and fills_by_time the same (0014)", async () => {
    const rows = await after.query<Record<string, unknown> & { fill_row: string }>(
      `SELECT fill_row, ${FILL_ROW_FIELDS.join(', ')} FROM {db:Identifier}.fills_v2 ORDER BY wallet, condition_id, fill_id, source_rank`,
    );
    expect(rows.length).toBeGreaterThan(1000);
    const kinds = { buy: 0, sell: 0, token1: 0, token2: 0 };
    for (const { fill_row, ...columns } of rows) {
      const serialized = JSON.parse(fill_row) as Record<string, unknown>;
      expect(Object.keys(serialized)).toEqual([...FILL_ROW_FIELDS]);
      expect(serialized).toEqual(columns);
      if (serialized.side === 'BUY') kinds.buy++;
      else kinds.sell++;
      if (serialized.token_side === 1) kinds.token1++;
      else kinds.token2++;
    }
    // Both sides and both tokens are among them.
    expect(Math.min(kinds.buy, kinds.sell, kinds.token1, kinds.token2)).toBeGreaterThan(0);

    // fills_by_time (0014) holds the same fills with the same text: a page reads it there, a chart in fills_v2.
    // Compared by each fill's kept copy (its highest rank: its second and its text), which merges of either
    // table leave as it is (a merge folds copies of one key, in each table on its own schedule).
    const keptCopies = (table: string) =>
      after.query<Record<string, unknown>>(
        `SELECT wallet, condition_id, fill_id, max(source_rank) AS rank, argMax(ts, source_rank) AS ts, argMax(fill_row, source_rank) AS fill_row
         FROM {db:Identifier}.${table} GROUP BY wallet, condition_id, fill_id ORDER BY wallet, condition_id, fill_id`,
      );
    const byTime = await keptCopies('fills_by_time');
    expect(byTime.length).toBeGreaterThan(1000);
    expect(byTime).toEqual(await keptCopies('fills_v2'));
  });

  it('reads far fewer rows for a point read of one trader’s market', async () => {
    // The trader's market with the most fills: the worst case of a point read.
    const [key] = await after.query<{ wallet: string; condition_id: string }>(
      'SELECT wallet, condition_id FROM {db:Identifier}.fills_v2 GROUP BY wallet, condition_id ORDER BY count() DESC, wallet, condition_id LIMIT 1',
    );
    const point =
      'SELECT * FROM {db:Identifier}.TABLE WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}';
    const partsOf = async (store: Store, table: string) =>
      (
        await store.query<{ n: number }>(
          'SELECT count() AS n FROM system.parts WHERE database = {database:String} AND table = {table:String} AND active',
          {
            database: store.database,
            table,
          },
        )
      )[0]!.n;
    // Background merges may join parts while this runs: the bound counts the parts there were before.
    const partsBefore = {
      trader_markets_v2: await partsOf(after, 'trader_markets_v2'),
      fills_v2: await partsOf(after, 'fills_v2'),
    };
    const figures = {
      trader_markets: await estimatedRows(before, point.replace('TABLE', 'trader_markets'), key!),
      trader_markets_v2: await estimatedRows(after, point.replace('TABLE', 'trader_markets_v2'), key!),
      fills: await estimatedRows(after, point.replace('TABLE', 'fills'), key!),
      fills_v2: await estimatedRows(after, point.replace('TABLE', 'fills_v2'), key!),
    };
    const [pairFills] = await after.query<{ n: number }>(
      `SELECT count() AS n FROM (${point.replace('TABLE', 'fills_v2')})`,
      key!,
    );
    // At most the key's own rows plus one 256-row granule at each end, per part.
    expect(figures.trader_markets_v2).toBeLessThanOrEqual(2 * 256 * partsBefore.trader_markets_v2);
    expect(figures.fills_v2).toBeLessThanOrEqual(pairFills!.n + 2 * 256 * partsBefore.fills_v2);
    // The old shapes select whole 8,192-row granules: far more.
    const [oldRows] = await before.query<{ n: number }>('SELECT count() AS n FROM {db:Identifier}.trader_markets');
    expect(figures.trader_markets).toBeGreaterThanOrEqual(Math.min(oldRows!.n, 8192));
    expect(figures.fills_v2 * 4).toBeLessThanOrEqual(figures.fills);
    console.log(
      'rows selected by a point read (EXPLAIN ESTIMATE):',
      JSON.stringify(figures),
      'pair fills',
      pairFills!.n,
    );
  });

  it('carries old-shape rows over when a store is migrated (0010’s backfill), and runs again to no change', async () => {
    const log = createLogger('silent');
    // An old-shape store's rows name no resolution source (0026 adds the column, after 0010 carried the rows over).
    const migrations = await loadMigrations();
    const statementsOf = (version: number) => migrations.find((migration) => migration.version === version)!.statements;
    for (const statement of statementsOf(19).filter((statement) => statement.includes('MODIFY COLUMN wallet_row')))
      await before.command(statement.replaceAll('trader_markets_v2', 'trader_markets'));
    await before.command('ALTER TABLE {db:Identifier}.trader_markets DROP COLUMN resolution_source');
    const snapshot = async (store: Store, suffix: string) => ({
      trader_markets: (
        await store.query<Record<string, unknown>>(
          `SELECT * FROM {db:Identifier}.trader_markets${suffix} FINAL ORDER BY wallet, condition_id`,
        )
      ).map(({ resolution_source: _source, ...row }) => row),
      whales: await store.query(
        `SELECT * FROM {db:Identifier}.whale_accumulations${suffix} FINAL ORDER BY wallet, condition_id, token_side`,
      ),
      marks: await store.query(
        `SELECT condition_id, argMaxMerge(last_up_price) AS last, max(last_ts) AS last_ts, min(first_ts) AS first_ts FROM {db:Identifier}.market_marks${suffix} GROUP BY condition_id ORDER BY condition_id`,
      ),
      whale_recent: await store.query('SELECT * FROM {db:Identifier}.whale_recent FINAL ORDER BY ALL'),
    });
    const old = await snapshot(before, '');
    expect(old.trader_markets.length).toBeGreaterThan(0);
    // 0010 half-applied (a crash before its ledger row), then migrate: without a ledger (an earlier release's
    // store whose migrations are all idempotent) it applies every migration again, 0010 a second time, then 0011.
    for (const statement of statementsOf(10)) await before.command(statement);
    expect(await migrate(before, log)).toEqual(migrations.map((migration) => migration.version));
    expect(await snapshot(before, '_v2')).toEqual(old);
    // 0011 again: nothing left to drop, nothing changes.
    for (const statement of statementsOf(11)) await before.command(statement);
    expect(await snapshot(before, '_v2')).toEqual(old);
    for (const [table, allColumns, key] of READ_COPIES) {
      // 0010 copies the columns an old-shape store has; this one's landing rows name their source (0026) already.
      const columns = allColumns.replace(', inferred, source', '');
      expect(
        await before.query(`SELECT ${columns} FROM {db:Identifier}.${table}_v2 FINAL ORDER BY ${key}`),
        table,
      ).toEqual(await before.query(`SELECT ${columns} FROM {db:Identifier}.${table} FINAL ORDER BY ${key}`));
    }
    const tables = (
      await before.query<{ name: string }>('SELECT name FROM system.tables WHERE database = {database:String}', {
        database: before.database,
      })
    ).map((table) => table.name);
    for (const gone of [
      'trader_markets',
      'careers',
      'whale_accumulations',
      'market_marks',
      'market_marks_from_trades',
      'whale_recent_from_accumulations',
    ])
      expect(tables).not.toContain(gone);
    expect(await migrate(before, log)).toEqual([]);
  });
});
