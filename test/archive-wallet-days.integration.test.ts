/**
 * The upstream poller's wallets with recent archive fills (projections/upstream.ts), read from
 * archive_wallet_days (migration 0022) instead of every granule of `fills`: for arbitrary fills of both
 * sources over several days, landed in several inserts, the answer for any window equals a model of the
 * fills (the wallets with an archive fill at or after `since`, most recent first, then by wallet), both as
 * the view fills the table and after the migration's backfill rebuilt it from the fills alone.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { readRecentArchiveWallets } from '../projections/upstream.ts';
import type { Store } from '../projections/store.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { makeFill, makeWallet } from './factories.ts';
import { inProcessConfig } from './harness/api.ts';
import { REPO_ROOT } from './harness/child.ts';
import { landEvents } from './harness/land.ts';

const DAY = 86_400;
const T0 = 1_780_000_000;
const WALLETS = Array.from({ length: 6 }, (_, index) => makeWallet(`archive-days-${index}`));

/** The migration's backfill: its one INSERT, as `migrate` runs it. */
const BACKFILL = readFileSync(path.join(REPO_ROOT, 'projections/migrations/0022_archive_wallet_days.sql'), 'utf8')
  .split(';')
  .map((statement) => statement.replace(/^(\s*--[^\n]*\n)*/g, '').trim())
  .find((statement) => statement.startsWith('INSERT INTO'))!;

interface LandedFill {
  wallet: number;
  ts: number;
  archive: boolean;
}

/** The wallets with an archive fill at or after `since`, the most recent last fill first, then by wallet. */
function model(fills: readonly LandedFill[], since: number, limit: number): string[] {
  const last = new Map<string, number>();
  for (const fill of fills) {
    if (!fill.archive || fill.ts < since) continue;
    const wallet = WALLETS[fill.wallet]!;
    last.set(wallet, Math.max(last.get(wallet) ?? 0, fill.ts));
  }
  return [...last]
    .sort(([a, ta], [b, tb]) => tb - ta || (a < b ? -1 : a > b ? 1 : 0))
    .map(([wallet]) => wallet)
    .slice(0, limit);
}

describe('wallets with recent archive fills', () => {
  let store: Store | undefined;
  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('equal the model of the fills for any window, through the view and after the backfill', async () => {
    store = await openMigratedStore(inProcessConfig('archivedays'), createLogger('error'));
    const db = store;
    const fill = fc.record({
      wallet: fc.integer({ min: 0, max: WALLETS.length - 1 }),
      ts: fc.integer({ min: T0, max: T0 + 9 * DAY }),
      archive: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fill, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.integer({ min: T0 - DAY, max: T0 + 10 * DAY }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: WALLETS.length }),
        async (inserts, windows, limit) => {
          await db.command('TRUNCATE TABLE {db:Identifier}.fills');
          await db.command('TRUNCATE TABLE {db:Identifier}.archive_wallet_days');
          for (const batch of inserts)
            for (const archive of [true, false]) {
              const events = batch
                .filter((landed) => landed.archive === archive)
                .map((landed) => makeFill({ wallet: WALLETS[landed.wallet]!, ts: landed.ts }));
              if (events.length > 0) await landEvents(db, archive ? 'fillsArchive' : 'fillsUpstream', events);
            }
          const fills = inserts.flat();
          for (const since of windows)
            expect(await readRecentArchiveWallets(db, since, limit)).toEqual(model(fills, since, limit));
          // A store whose fills landed before 0022: the backfill alone rebuilds the same answers.
          await db.command('TRUNCATE TABLE {db:Identifier}.archive_wallet_days');
          await db.command(BACKFILL);
          for (const since of windows)
            expect(await readRecentArchiveWallets(db, since, limit)).toEqual(model(fills, since, limit));
        },
      ),
      { numRuns: 15 },
    );
  });
});
