/**
 * The refresher tells whose rollups it recomputed, after the recomputation (not before: a read in
 * between would keep the old rollup as current): the wallets of the batches it refreshed, or everyone
 * for a batch whose wallets it was not told (a resolution's holders, a stopped worker's orphans).
 * The store is a stand-in that records the statements; the recomputation itself is tested against
 * ClickHouse elsewhere.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import type { QueryOptions, Store } from '../projections/store.ts';
import { stageResolvedMarkets } from '../projections/rollups.ts';
import type { StoreChanged } from '../projections/changes.ts';
import { RollupRefresher } from './rollup-refresher.ts';

/** A store that answers the refresh's count of staged keys and the orphan sweep, and logs what ran. */
function fakeStore(orphans: string[] = []) {
  const statements: string[] = [];
  /** The options of every read, in order. */
  const reads: (QueryOptions | undefined)[] = [];
  const store = {
    database: 'fake',
    kind: 'embedded',
    async query(sql: string, _params?: unknown, options?: QueryOptions) {
      reads.push(options);
      if (sql.includes('rollup_batches_done)')) return orphans.splice(0).map((batch) => ({ batch }));
      if (sql.includes('wallet')) return [{ wallet: '0xh' }];
      return [{ trader_keys: 1, tape_keys: 0 }];
    },
    async command(sql: string) {
      statements.push(sql.includes('trader_markets') ? 'refresh trader_markets' : 'refresh other');
    },
    async insert(table: string) {
      statements.push(`insert ${table}`);
    },
  } as unknown as Store;
  return { store, statements, reads };
}

function refresher(store: Store, changes: { changed(notice: StoreChanged): void }) {
  return new RollupRefresher({
    store,
    log: createLogger('silent'),
    intervalMs: 1,
    orphanAfterSeconds: 3600,
    settings: { burstGapSeconds: 900, exactAboveUsd: 1000 },
    changes,
  });
}

describe('RollupRefresher tells whose rollups changed', () => {
  it('names the wallets of the refreshed batches once their recomputation is done', async () => {
    const { store, statements } = fakeStore();
    const told: { notice: StoreChanged; statementsBefore: number }[] = [];
    const rollups = refresher(store, {
      changed: (notice) => told.push({ notice, statementsBefore: statements.length }),
    });
    rollups.start();
    rollups.enqueue('b1', new Set(['0xa', '0xb']));
    rollups.enqueue('b2', new Set(['0xb', '0xc']));
    await rollups.settled();
    await rollups.stop();
    const wallets = told.flatMap(({ notice }) => (notice.wallets === 'all' ? ['all'] : [...notice.wallets]));
    expect(new Set(wallets)).toEqual(new Set(['0xa', '0xb', '0xc']));
    // Wallets only: a refresh recomputes rollups, never names, market metadata or the provider's rows.
    for (const { notice } of told) expect(Object.keys(notice)).toEqual(['wallets']);
    // Only after the refresh statements and the batches' "done" mark.
    for (const entry of told) expect(entry.statementsBefore).toBeGreaterThanOrEqual(3);
  });

  it('counts everyone as changed for a batch without wallets and for orphans of a stopped worker', async () => {
    for (const setup of ['unnamed', 'orphan'] as const) {
      const { store } = fakeStore(setup === 'orphan' ? ['left-behind'] : []);
      const told: StoreChanged[] = [];
      const rollups = refresher(store, { changed: (notice) => told.push(notice) });
      rollups.start();
      if (setup === 'unnamed') rollups.enqueue('resolution-batch');
      await rollups.caughtUp();
      await rollups.settled();
      await rollups.stop();
      expect(told, setup).toEqual([{ wallets: 'all', markets: 'all', named: 'all', upstream: 'all' }]);
    }
  });
});

describe("the worker's reads stay off the API's read sessions", () => {
  it("counts staged keys, sweeps orphans and finds a resolution's holders on the background lane", async () => {
    const { store, reads } = fakeStore(['left-behind']);
    const rollups = refresher(store, { changed: () => {} });
    rollups.start();
    rollups.enqueue('b1', new Set(['0xa']));
    await rollups.caughtUp();
    await rollups.settled();
    await rollups.stop();
    const holders = await stageResolvedMarkets(store, 'resolutions', ['0xc']);
    expect(holders).toEqual(new Set(['0xh']));
    // The sweep, at least one count, and the holders: every one asked for the background lane.
    expect(reads.length).toBeGreaterThanOrEqual(3);
    for (const options of reads) expect(options?.background).toBe(true);
  });
});

describe('RollupRefresher pauses to coalesce only while writes keep coming', () => {
  it('refreshes the last batch of a stream at once instead of waiting out the pause its costly refresh earned', async () => {
    const refreshedAt: number[] = [];
    let first = true;
    let rollups: RollupRefresher | undefined;
    const store = {
      database: 'fake',
      kind: 'embedded',
      query: async () => [{ trader_keys: 1, tape_keys: 0 }],
      async command(sql: string) {
        if (!sql.includes('trader_markets')) return;
        if (first) {
          first = false;
          // The stream's last write lands during a costly refresh (600 ms: a pause of 4 × 600 ms earned).
          rollups!.enqueue('last', new Set(['0xb']));
          await new Promise((resolve) => setTimeout(resolve, 600));
        }
      },
      async insert() {
        refreshedAt.push(performance.now());
      },
    } as unknown as Store;
    rollups = new RollupRefresher({
      store,
      log: createLogger('silent'),
      intervalMs: 20,
      orphanAfterSeconds: 3600,
      settings: { burstGapSeconds: 900, exactAboveUsd: 1000 },
    });
    rollups.start();
    rollups.enqueue('first', new Set(['0xa']));
    await rollups.caughtUp();
    await rollups.settled();
    await rollups.stop();
    expect(refreshedAt).toHaveLength(2);
    // Waiting out the pause would put 1,800 ms between them; no write came after 'last', so it goes at once.
    expect(refreshedAt[1]! - refreshedAt[0]!).toBeLessThan(900);
  });
});
