/**
 * What the display-name cache relies on (operations/reads.ts `trader_name` follows a notice's `named`): every
 * view that writes trader_names reads a landing table whose rows carry the wallet and a name, and keeps
 * only rows whose name is not empty. The ingest decode reports exactly such rows; a new view that
 * named traders from another source, or from rows without a name, would leave cached names stale.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EVERYTHING_CHANGED, StoreChangeFeed, type StoreChanged } from './changes.ts';

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

describe('StoreChangeFeed', () => {
  it('hands each notice to every listener until it stops listening', () => {
    const feed = new StoreChangeFeed();
    const first: StoreChanged[] = [];
    const second: StoreChanged[] = [];
    const stopFirst = feed.listen({ changed: (notice) => first.push(notice) });
    feed.listen({ changed: (notice) => second.push(notice) });
    const notice = { wallets: new Set(['0xa']), markets: new Set(['0xc1']) };
    feed.changed(notice);
    stopFirst();
    feed.changed(EVERYTHING_CHANGED);
    expect(first).toEqual([notice]);
    expect(second).toEqual([notice, EVERYTHING_CHANGED]);
  });

  it('is reported while a worker reports, and tells everything changed at its start and stop', () => {
    const feed = new StoreChangeFeed();
    const told: StoreChanged[] = [];
    feed.listen({ changed: (notice) => told.push(notice) });
    expect(feed.reported).toBe(false);
    const stopOne = feed.report();
    const stopTwo = feed.report();
    stopOne();
    stopOne();
    expect(feed.reported).toBe(true);
    stopTwo();
    expect(feed.reported).toBe(false);
    expect(told).toEqual([EVERYTHING_CHANGED, EVERYTHING_CHANGED, EVERYTHING_CHANGED, EVERYTHING_CHANGED]);
  });
});
