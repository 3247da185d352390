import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Logger } from '../log.ts';
import { loadMigrations, migrate } from './migrate.ts';
import type { Store } from './store.ts';

/** A store whose ledger already records every migration with the checksum `recordedOf` gives it. */
function storeWithLedger(recorded: Map<number, string>): Store {
  return {
    database: 'ledger_test',
    ensureDatabase: async () => {},
    command: async () => {},
    query: async () => [...recorded].map(([version, checksum]) => ({ version, checksum })),
    insert: async () => {},
  } as unknown as Store;
}

function capturingLog(): { log: Logger; warnings: unknown[] } {
  const warnings: unknown[] = [];
  const log = { warn: (fields: unknown) => warnings.push(fields), info: () => {} } as unknown as Logger;
  return { log, warnings };
}

const MIGRATIONS_DIR = path.join(import.meta.dirname, 'migrations');

describe('migrate: an applied migration', () => {
  it('is not re-applied and raises no warning when the ledger holds its statements checksum', async () => {
    const migrations = await loadMigrations();
    const { log, warnings } = capturingLog();
    const applied = await migrate(
      storeWithLedger(new Map(migrations.map((migration) => [migration.version, migration.checksum]))),
      log,
    );
    expect(applied).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('raises no warning when the ledger holds the whole file checksum recorded before checksums skipped comments', async () => {
    const migrations = await loadMigrations();
    const ledger = new Map<number, string>();
    for (const migration of migrations) {
      const file = `${String(migration.version).padStart(4, '0')}_${migration.name}.sql`;
      ledger.set(
        migration.version,
        createHash('sha256')
          .update(await readFile(path.join(MIGRATIONS_DIR, file), 'utf8'))
          .digest('hex'),
      );
    }
    const { log, warnings } = capturingLog();
    expect(await migrate(storeWithLedger(ledger), log)).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('warns, naming it, when its statements differ from what the ledger recorded', async () => {
    const migrations = await loadMigrations();
    const changed = migrations[2]!;
    const ledger = new Map(migrations.map((migration) => [migration.version, migration.checksum]));
    ledger.set(
      changed.version,
      createHash('sha256')
        .update(`${changed.statements.join(';\n')} -- altered`)
        .digest('hex'),
    );
    const { log, warnings } = capturingLog();
    await migrate(storeWithLedger(ledger), log);
    expect(warnings).toEqual([{ version: changed.version, name: changed.name }]);
  });

  it('has a checksum that ignores comment lines but not statements', async () => {
    const [first] = await loadMigrations();
    const statementsChecksum = createHash('sha256').update(first!.statements.join(';\n')).digest('hex');
    expect(first!.checksum).toBe(statementsChecksum);
    expect(first!.earlierChecksums).not.toContain(first!.checksum);
  });
});
