/**
 * What the display-name cache relies on (read-cache.ts `traderName`, changes.ts `namesChanged`): every
 * view that writes trader_names reads a landing table whose rows carry the wallet and a name, and keeps
 * only rows whose name is not empty. The ingest decode reports exactly such rows; a new view that
 * named traders from another source, or from rows without a name, would leave cached names stale.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { StoreChanges } from './changes.ts';

const migrations = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

describe('the views that name traders', () => {
  it('read fills, upstream profiles or leaderboard rows, and only those with a non-empty name', () => {
    const views: { file: string; source: string; filtersEmptyNames: boolean }[] = [];
    for (const file of readdirSync(migrations).filter((name) => name.endsWith('.sql'))) {
      const sql = readFileSync(path.join(migrations, file), 'utf8');
      for (const statement of sql.split(';')) {
        if (!/TO\s+\{db:Identifier\}\.trader_names\s/.test(statement)) continue;
        const sources = [...statement.matchAll(/FROM\s+\{db:Identifier\}\.(\w+)/g)].map((match) => match[1]!);
        for (const source of sources)
          views.push({ file, source, filtersEmptyNames: /WHERE\s+name\s*!=\s*''/.test(statement) });
      }
    }
    expect(views.length).toBeGreaterThanOrEqual(3);
    for (const view of views) {
      expect(
        ['fills', 'upstream_profiles', 'upstream_leaderboard'],
        `${view.file}: trader_names from ${view.source}`,
      ).toContain(view.source);
      expect(view.filtersEmptyNames, `${view.file}: trader_names from ${view.source} without WHERE name != ''`).toBe(
        true,
      );
    }
  });
});

describe('StoreChanges', () => {
  it('moves each kind of version only for what changed, and all of them on everythingChanged', () => {
    const changes = new StoreChanges();
    const start = changes.latest;
    changes.changed(['0xa']);
    expect(changes.versionOf('0xa')).toBeGreaterThan(start);
    expect(changes.versionOfName('0xa')).toBe(0);
    expect(changes.versionOf('0xb')).toBe(0);
    changes.namesChanged(['0xb']);
    expect(changes.versionOfName('0xb')).toBe(changes.latest);
    expect(changes.versionOf('0xb')).toBe(0);
    changes.marketsChanged(['0xc1']);
    expect(changes.versionOfMarket('0xc1')).toBe(changes.latest);
    expect(changes.versionOfMarket('0xc2')).toBe(0);
    const before = changes.latest;
    changes.everythingChanged();
    for (const version of [
      changes.versionOf('0xa'),
      changes.versionOf('0xz'),
      changes.versionOfName('0xb'),
      changes.versionOfMarket('0xc2'),
    ]) {
      expect(version).toBeGreaterThan(before);
    }
  });

  it('is watched while a worker reports, and counts its start and stop as everything changed', () => {
    const changes = new StoreChanges();
    expect(changes.watched).toBe(false);
    const stopOne = changes.watch();
    const stopTwo = changes.watch();
    const whileWatched = changes.versionOf('0xa');
    stopOne();
    stopOne();
    expect(changes.watched).toBe(true);
    expect(changes.versionOf('0xa')).toBeGreaterThan(whileWatched);
    stopTwo();
    expect(changes.watched).toBe(false);
  });
});
