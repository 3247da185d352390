/**
 * What the landing tables already hold, read without FINAL (every row counts, duplicates included). The
 * embedded mode resumes a source from what the store holds: after a crash, the events a source publishes
 * again are compared with these identities, and only the ones the store lacks are published.
 *
 * An identity is the row's key columns (its ReplacingMergeTree key, plus source_rank for fills: the
 * archive and the upstream copy of a fill are two rows), joined with '|'. `landedIdentity` builds the
 * same string from a landing row in TypeScript.
 */
import type { Store } from './store.ts';

/** Landing tables the simulator feeds, with their identity columns and the column that dates a row. */
export const SIMULATED_LANDING = {
  markets_meta: { columns: ['condition_id', 'version'], time: 'version' },
  market_resolutions: { columns: ['condition_id', 'ts'], time: 'ts' },
  fills: { columns: ['wallet', 'fill_id', 'source_rank'], time: 'ts' },
  position_legs: { columns: ['wallet', 'leg_id'], time: 'ts' },
  trades: { columns: ['condition_id', 'trade_id'], time: 'ts' },
  book_ticks: { columns: ['condition_id', 'seq'], time: 'ts' },
  upstream_profiles: { columns: ['wallet', 'as_of'], time: 'as_of' },
  upstream_equity: { columns: ['wallet', 'ts'], time: 'ts' },
  upstream_status: { columns: ['ts'], time: 'ts' },
  upstream_leaderboard: { columns: ['period', 'metric', 'as_of', 'rank'], time: 'as_of' },
  watchers: { columns: ['wallet', 'ts'], time: 'ts' },
} as const;

/** Landing tables of recorded sessions, which belong to an account. */
export const ACCOUNT_LANDING = {
  tapes: { columns: ['tape_id', 'version'] },
  tape_events: { columns: ['tape_id', 'seq'] },
} as const;

export type SimulatedLandingTable = keyof typeof SIMULATED_LANDING;
export type AccountLandingTable = keyof typeof ACCOUNT_LANDING;

/** The identity of a landing row, as the queries below build it (integers and strings print alike in both). */
export function landedIdentity(columns: readonly string[], row: Record<string, unknown>): string {
  return columns.map((column) => String(row[column])).join('|');
}

function identityExpression(columns: readonly string[]): string {
  return `arrayStringConcat([${columns.map((column) => `toString(${column})`).join(', ')}], '|')`;
}

/** One query per table: the identities landed at or after an instant, with how many rows each has. */
const READ_LANDED_SINCE = Object.fromEntries(
  Object.entries(SIMULATED_LANDING).map(([table, { columns, time }]) => [
    table,
    `SELECT ${identityExpression(columns)} AS id, count() AS n FROM {db:Identifier}.${table} WHERE ${time} >= {from_ts:UInt64} GROUP BY id`,
  ]),
) as Record<SimulatedLandingTable, string>;

const READ_LANDED_OF_ACCOUNTS = Object.fromEntries(
  Object.entries(ACCOUNT_LANDING).map(([table, { columns }]) => [
    table,
    `SELECT ${identityExpression(columns)} AS id, count() AS n FROM {db:Identifier}.${table} WHERE account_id IN {account_ids:Array(String)} GROUP BY id`,
  ]),
) as Record<AccountLandingTable, string>;

interface LandedRow {
  id: string;
  n: number;
}

/** Identities (and their row counts) of a simulated table's rows dated at or after `fromTs`. */
export async function readLandedSince(
  store: Store,
  table: SimulatedLandingTable,
  fromTs: number,
): Promise<Map<string, number>> {
  const rows = await store.query<LandedRow>(READ_LANDED_SINCE[table], { from_ts: fromTs });
  return new Map(rows.map((row) => [row.id, Number(row.n)]));
}

/** Identities (and their row counts) of the recorded-session rows of these accounts. */
export async function readLandedOfAccounts(
  store: Store,
  table: AccountLandingTable,
  accountIds: readonly string[],
): Promise<Map<string, number>> {
  const rows = await store.query<LandedRow>(READ_LANDED_OF_ACCOUNTS[table], { account_ids: accountIds });
  return new Map(rows.map((row) => [row.id, Number(row.n)]));
}

const LANDING_TABLES = [
  ...Object.keys(SIMULATED_LANDING),
  ...Object.keys(ACCOUNT_LANDING),
  'market_tokens',
  'market_migrations',
  'accounts',
  'api_keys',
];

const READ_STORED_ROWS = `
SELECT sum(rows) AS n
FROM system.parts
WHERE database = {database:String} AND active AND table IN {tables:Array(String)}`;

/**
 * Rows in the landing tables' active parts (from the parts' metadata: cheap enough for a readiness probe).
 * A size, not a count of events: a merge that folds an event stored twice lowers it.
 */
export async function readStoredRowCount(store: Store): Promise<number> {
  const [row] = await store.query<{ n: number | null }>(READ_STORED_ROWS, {
    database: store.database,
    tables: LANDING_TABLES,
  });
  return Number(row?.n ?? 0);
}
