/**
 * What the materialized views derive from landing rows, derived again for the rows dated at or after an
 * instant: the repair of an embedded restart.
 *
 * Why: an insert into a landing table and the inserts its views make (fills → fills_v2, rollup_keys,
 * market_wallets, trader_names; trades → price_ladder, market_marks_v2, tape_keys; …) are separate part
 * commits. A SIGKILL between them leaves a landing row without its view rows. A resumed source publishes
 * only what the landing tables lack (ingest/sources/skip-landed.ts), so such an event would never land
 * again, and the projections computed from the views (trader_markets from fills_v2, refreshed for the
 * pairs rollup_keys staged) would miss it for good.
 *
 * How: for each landing table with views, a scratch table of the same columns with the Null engine, and
 * for each of its views a scratch view with the same SELECT (the engine's own text of it, the source
 * renamed to the scratch table) into the same target; the landing rows of the tail are inserted into the
 * scratch table, which feeds every view exactly as the original insert did, and nothing lands in the
 * landing table itself (its raw rows stay exactly once). Every target takes a repeated row without harm:
 * ReplacingMergeTree read copies, max/min/argMax states, name tables, staging rows. The insert carries a
 * deduplication token, which is also the rollup staging's batch id: the caller has it refreshed.
 */
import { SIMULATED_LANDING, type SimulatedLandingTable } from './landed.ts';
import { sqlLiteral } from './sql-values.ts';
import type { Store } from './store.ts';

const PLAIN = /^[A-Za-z_][A-Za-z0-9_]*$/;
const TOKEN = /^[A-Za-z0-9._:,|-]{1,200}$/;

const READ_VIEWS_OF = `
SELECT dependencies_table AS views
FROM system.tables
WHERE database = {database:String} AND name = {table:String}`;

const READ_VIEW = `
SELECT as_select, create_table_query
FROM system.tables
WHERE database = {database:String} AND name = {view:String} AND engine = 'MaterializedView'`;

/** `TO db.target` of a view's CREATE statement. */
const TARGET = /\bTO\s+`?([A-Za-z_][A-Za-z0-9_]*)`?\.`?([A-Za-z_][A-Za-z0-9_]*)`?/;

const scratchName = (name: string) => `_rederive_${name}`;

/** The views of these landing tables, derived again from their rows dated at or after `fromTs`. Returns the views fed. */
export async function rederiveViewsSince(
  store: Store,
  fromTs: number,
  token: string,
  tables: readonly SimulatedLandingTable[] = Object.keys(SIMULATED_LANDING) as SimulatedLandingTable[],
): Promise<string[]> {
  if (!TOKEN.test(token))
    throw new Error(`rederive token ${JSON.stringify(token)} has characters outside [A-Za-z0-9._:,|-]`);
  const database = store.database;
  const fed: string[] = [];
  for (const table of tables) {
    const [row] = await store.query<{ views: string[] }>(READ_VIEWS_OF, { database, table });
    const views = (row?.views ?? []).filter((view) => PLAIN.test(view) && !view.startsWith('_rederive_'));
    if (views.length === 0) continue;
    const scratchTable = scratchName(table);
    const scratchViews: string[] = [];
    try {
      await store.command('DROP TABLE IF EXISTS {db:Identifier}.{scratch:Identifier}', { scratch: scratchTable });
      await store.command(
        'CREATE TABLE {db:Identifier}.{scratch:Identifier} AS {db:Identifier}.{table:Identifier} ENGINE = Null',
        { scratch: scratchTable, table },
      );
      for (const view of views) {
        const [definition] = await store.query<{ as_select: string; create_table_query: string }>(READ_VIEW, {
          database,
          view,
        });
        const target = definition ? TARGET.exec(definition.create_table_query) : null;
        if (!definition || !target || target[1] !== database)
          throw new Error(`view ${view} of ${table}: no definition with a target in ${database}`);
        // The engine's own SELECT of the view, its source renamed: braces would read as parameters.
        if (definition.as_select.includes('{'))
          throw new Error(`view ${view} of ${table}: its SELECT has braces; not derived again`);
        const source = new RegExp(`\`?\\b${database}\`?\\.\`?${table}\\b\`?`, 'g');
        const select = definition.as_select.replace(source, `${database}.${scratchTable}`);
        const scratchView = scratchName(view);
        scratchViews.push(scratchView);
        await store.command('DROP VIEW IF EXISTS {db:Identifier}.{view:Identifier}', { view: scratchView });
        await store.command(
          `CREATE MATERIALIZED VIEW {db:Identifier}.{view:Identifier} TO {db:Identifier}.{target:Identifier} AS ${select}`,
          {
            view: scratchView,
            target: target[2]!,
          },
        );
      }
      const time = SIMULATED_LANDING[table].time;
      await store.command(
        `INSERT INTO {db:Identifier}.{scratch:Identifier}
         SETTINGS insert_deduplication_token = ${sqlLiteral(batchOf(token, table))}, deduplicate_blocks_in_dependent_materialized_views = 1
         SELECT * FROM {db:Identifier}.{table:Identifier} WHERE {time:Identifier} >= {from_ts:UInt64}`,
        { scratch: scratchTable, table, time, from_ts: fromTs },
      );
      fed.push(...views);
    } finally {
      for (const scratchView of scratchViews)
        await store.command('DROP VIEW IF EXISTS {db:Identifier}.{view:Identifier}', { view: scratchView });
      await store.command('DROP TABLE IF EXISTS {db:Identifier}.{scratch:Identifier}', { scratch: scratchTable });
    }
  }
  return fed;
}

/** A landing table's insert of a derivation: its deduplication token, which the rollup staging views take as the batch id. */
function batchOf(token: string, table: SimulatedLandingTable): string {
  return `${token}:${table}`;
}

/** The rollup batches a derivation with this token stages (one per landing table). */
export function rederivedBatches(
  token: string,
  tables: readonly SimulatedLandingTable[] = Object.keys(SIMULATED_LANDING) as SimulatedLandingTable[],
): string[] {
  return tables.map((table) => batchOf(token, table));
}
