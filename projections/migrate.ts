/**
 * Applies the numbered SQL migrations in `projections/migrations/` in order and records each in
 * `schema_migrations`. Every statement is idempotent (`IF NOT EXISTS`), so a half-applied migration is
 * simply applied again.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log.ts';
import type { Store } from './store.ts';
import { ClusterDdl } from './cluster.ts';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export interface Migration {
  version: number;
  name: string;
  statements: string[];
  /** Of the statements alone: a comment edited later does not make an applied migration look changed. */
  checksum: string;
  /** Checksums a store may have recorded for this same SQL before checksums skipped comments. */
  earlierChecksums: string[];
}

/**
 * Checksums of whole files (comments included), as stores recorded them before checksums skipped
 * comments, of the migrations whose comments were edited since: the same statements, so not a change.
 */
const CHECKSUMS_BEFORE_COMMENT_EDITS: Readonly<Record<number, readonly string[]>> = {
  12: ['8b60e2fea0d6dfc66d1fa840d62f6d2f74a4a128174f1283b3f08e347990461a'],
  13: ['df30b7b5b3cd7f71645590d0ad456d418171499a9d5d0f4874aefea80ca6b28c'],
  14: ['8ca3e9e9bb00f03c5f11065c9b0601a1bed253d770124b82c04cd1e833b14eee'],
};

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Splits a migration file into statements: each ends with a `;` at the end of a line. Comment lines are dropped. */
export function splitStatements(sqlText: string): string[] {
  const withoutComments = sqlText
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n');
  return withoutComments
    .split(/;\s*$/m)
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}

export async function loadMigrations(directory = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(directory)).filter((file) => MIGRATION_FILE.test(file)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = MIGRATION_FILE.exec(file);
    if (!match) continue;
    const text = await readFile(path.join(directory, file), 'utf8');
    const version = Number(match[1]);
    const statements = splitStatements(text);
    migrations.push({
      version,
      name: match[2] ?? file,
      statements,
      checksum: sha256(statements.join(';\n')),
      earlierChecksums: [sha256(text), ...(CHECKSUMS_BEFORE_COMMENT_EDITS[version] ?? [])],
    });
  }
  return migrations;
}

const CREATE_LEDGER = `
CREATE TABLE IF NOT EXISTS {db:Identifier}.schema_migrations
(
    version    UInt32,
    name       String,
    checksum   String,
    applied_at DateTime('UTC') DEFAULT now()
)
ENGINE = ReplacingMergeTree
ORDER BY version`;

const SELECT_APPLIED = `SELECT version, checksum FROM {db:Identifier}.schema_migrations FINAL`;

export interface MigrateOptions {
  /** A ClickHouse cluster name: apply the cluster variant (Replicated tables, Distributed reads, ON CLUSTER). */
  cluster?: string | null | undefined;
}

/** Applies every migration not yet recorded; returns the versions applied by this call. */
export async function migrate(store: Store, log: Logger, options: MigrateOptions = {}): Promise<number[]> {
  // Single node: the statements as written. Cluster: each rewritten from them (projections/cluster.ts).
  const cluster = options.cluster ? new ClusterDdl({ cluster: options.cluster }) : null;
  const variant = (statement: string): string[] => (cluster ? cluster.statements(statement) : [statement]);
  if (cluster) await store.command(cluster.createDatabase(store.database));
  else await store.ensureDatabase();
  for (const statement of variant(CREATE_LEDGER)) await store.command(statement);
  const applied = new Map(
    (await store.query<{ version: number; checksum: string }>(SELECT_APPLIED)).map((row) => [
      row.version,
      row.checksum,
    ]),
  );
  const done: number[] = [];
  for (const migration of await loadMigrations()) {
    const recorded = applied.get(migration.version);
    // The cluster generator learns every table, also those of migrations applied before.
    const statements = migration.statements.flatMap(variant);
    if (recorded !== undefined) {
      if (recorded !== migration.checksum && !migration.earlierChecksums.includes(recorded)) {
        log.warn(
          { version: migration.version, name: migration.name },
          'applied migration file has changed since it was applied; add a new migration instead of editing',
        );
      }
      continue;
    }
    for (const statement of statements) {
      await store.command(statement);
    }
    await store.insert('schema_migrations', [
      { version: migration.version, name: migration.name, checksum: migration.checksum },
    ]);
    log.info({ version: migration.version, name: migration.name, database: store.database }, 'migration applied');
    done.push(migration.version);
  }
  return done;
}
