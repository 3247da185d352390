/**
 * Run as a child process (`node --import tsx test/harness/frozen-landing.ts <embedded path> <database>...`):
 * creates the databases (migrated) and switches off background merges on their landing tables, then
 * exits, leaving the chDB directory to the processes under test.
 *
 * Why: a ReplacingMergeTree merge collapses rows with one key, so a duplicate insert that a merge has
 * already folded is invisible even without FINAL. With merges off, every inserted row stays a row, and
 * a test that counts rows sees every duplicate. (A table setting: it is kept in the table's metadata, so
 * it holds in the later processes that open this directory.)
 */
import { parseConfig } from '../../config.ts';
import { createLogger } from '../../log.ts';
import { openMigratedStore } from '../../roles/runtime.ts';
import { ACCOUNT_LANDING, SIMULATED_LANDING } from '../../projections/landed.ts';

const [embeddedPath, ...databases] = process.argv.slice(2);
if (!embeddedPath || databases.length === 0) throw new Error('usage: frozen-landing.ts <embedded path> <database>...');
const tables = [...Object.keys(SIMULATED_LANDING), ...Object.keys(ACCOUNT_LANDING), 'accounts', 'api_keys'];
for (const database of databases) {
  const config = parseConfig(
    { CLICKHOUSE_DATABASE: database, DATA_DIR: embeddedPath },
    { clickhouse: { embeddedPath } },
  );
  const store = await openMigratedStore(config, createLogger('error'));
  for (const table of tables) {
    // No part is ever small enough to be merged.
    await store.command(
      `ALTER TABLE {db:Identifier}.${table} MODIFY SETTING max_bytes_to_merge_at_max_space_in_pool = 1, max_bytes_to_merge_at_min_space_in_pool = 1`,
    );
  }
  await store.close();
}
process.stdout.write(`${JSON.stringify({ msg: 'frozen', databases })}\n`);
