/**
 * The embedded default (`main.ts all`: simulator → in-process log → ingest → chDB) killed with SIGKILL
 * early, mid-backfill and during live, restarted each time, ends with exactly the store of an
 * uninterrupted run of the same world (same seed, genesis and end): nothing missing, nothing twice.
 *
 * Both worlds live in one chDB directory (the config's clickhouse.embeddedPath), in two databases, with their own
 * DATA_DIRs; this test process opens that directory only after every child is gone (chDB binds a
 * directory to one process). Background merges are off on the landing tables (harness/frozen-landing.ts),
 * so the raw rows below — read without FINAL — show any duplicate insert.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig, type ConfigOverrides } from '../config.ts';
import { openStore, type Store } from '../projections/store.ts';
import { readTraderCard } from '../projections/cards.ts';
import { cardSettingsOf } from '../operations/traders.ts';
import { sha256Hex } from '../ingest/sources/accounts.ts';
import { runScript, startRole, type LogLine, type RoleProcess } from './harness/child.ts';

const WORLD_SECONDS = 1800;
const isBatch = (line: LogLine) => line.msg === 'batch ingested';

/** Landing tables whose rows are the same in any run of one world (accounts and keys carry the run's clock and random keys). */
const WORLD_TABLES = [
  'markets_meta',
  'market_resolutions',
  'fills',
  'position_legs',
  'trades',
  'book_ticks',
  'upstream_profiles',
  'upstream_equity',
  'upstream_status',
  'upstream_leaderboard',
  'tapes',
  'tape_events',
];

async function readState(
  dataDir: string,
): Promise<{ resumeFromTs: number; backfillUntilTs: number; genesisTs: number }> {
  return JSON.parse(await readFile(path.join(dataDir, 'simulator-state.json'), 'utf8')) as {
    resumeFromTs: number;
    backfillUntilTs: number;
    genesisTs: number;
  };
}

describe('npm start (role all) killed at any moment', () => {
  const children: RoleProcess[] = [];
  afterAll(() => {
    for (const child of children)
      if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
  });

  it('restarts into exactly the store of an uninterrupted run: SIGKILL early, mid-backfill and live', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'ta-embedded-crash-'));
    const embeddedPath = path.join(root, 'clickhouse');
    const nowSeconds = Math.floor(Date.now() / 1000);
    const genesisTs = nowSeconds - WORLD_SECONDS;
    const base = {
      PORT: '0',
      LOG_LEVEL: 'debug',
      SIM_TRADERS: '20',
      SIM_GENESIS_TS: String(genesisTs),
      SIM_BACKFILL_DAYS: String(WORLD_SECONDS / 86_400),
      INGEST_LINGER_MS: '10',
    };
    // Many small writes, so that the kills land between them; both worlds in one chDB directory.
    const overrides: ConfigOverrides = {
      clickhouse: { embeddedPath },
      ingest: { maxBatchMessages: 400, rollupIntervalMs: 100 },
    };
    const crashDir = path.join(root, 'crashed');
    const referenceDir = path.join(root, 'reference');
    const crashed = { ...base, DATA_DIR: crashDir, CLICKHOUSE_DATABASE: 'crashed' };
    expect(await runScript(['test/harness/frozen-landing.ts', embeddedPath, 'crashed', 'reference'])).toBe(0);

    const start = (environment: Record<string, string>) => {
      const child = startRole('all', [], environment, { overrides });
      children.push(child);
      return child;
    };
    const kill = async (child: RoleProcess) => {
      child.child.kill('SIGKILL');
      expect(await child.exited).toBe('SIGKILL');
    };

    // 1. Early: at the first write (the demo accounts, maybe the first events of the world).
    const early = start(crashed);
    await early.waitFor(isBatch);
    await kill(early);

    // 2. Mid-backfill: the restart resumes the same world from what the store holds, and is killed after a few writes.
    const midBackfill = start(crashed);
    const listening = await midBackfill.waitFor((line) => line.msg === 'listening');
    const resumed = await midBackfill.waitFor((line) => line.msg === 'resuming the simulated world');
    expect(resumed.genesisTs).toBe(genesisTs);
    // The resumed tail's views are derived again (a kill between a landing insert and its views' inserts
    // would otherwise lose the view rows for good: projections/rederive.ts, test/rederive).
    const rederived = await midBackfill.waitFor((line) => line.msg === 'derived the views of the resumed tail again');
    expect(rederived.views).toBeGreaterThanOrEqual(10);
    // While the backfill is missing, readiness says so and what it waits for.
    const starting = await fetch(`${String(listening.address)}/readyz`);
    expect(starting.status).toBe(503);
    const startingBody = (await starting.json()) as { waiting_for: string[]; store_until: string };
    expect(startingBody.waiting_for.join(' ')).toContain('demo backfill');
    let batches = 0;
    await midBackfill.waitFor((line) => isBatch(line) && ++batches >= 4);
    await kill(midBackfill);
    const afterMidBackfill = await readState(crashDir);
    expect(afterMidBackfill.resumeFromTs).toBeLessThan(afterMidBackfill.backfillUntilTs);

    // 3. Live: after the demo data is ready and the simulator runs in real time, a few live writes in.
    const live = start(crashed);
    await live.waitFor((line) => line.msg === 'demo data ready');
    await live.waitFor((line) => line.msg === 'simulating live');
    const liveFrom = live.lines.length;
    let liveBatches = 0;
    await live.waitFor((line) => isBatch(line) && live.lines.indexOf(line) >= liveFrom && ++liveBatches >= 2);
    await kill(live);

    // 4. The last restart runs to a fixed end of the world a few seconds ahead (live until then) and stops cleanly.
    const stopTs = Math.floor(Date.now() / 1000) + 4;
    const last = start({ ...crashed, SIM_STOP_TS: String(stopTs) });
    await last.waitFor((line) => line.msg === 'the simulated world is complete in the store');
    await last.waitFor((line) => line.msg === 'demo data ready');
    last.child.kill('SIGTERM');
    expect(await last.exited).toBe(0);
    expect((await readState(crashDir)).resumeFromTs).toBe(stopTs);

    // 5. The reference: the same world, [genesis, stopTs), in one uninterrupted run.
    const reference = start({
      ...base,
      DATA_DIR: referenceDir,
      CLICKHOUSE_DATABASE: 'reference',
      SIM_STOP_TS: String(stopTs),
    });
    await reference.waitFor((line) => line.msg === 'the simulated world is complete in the store');
    await reference.waitFor((line) => line.msg === 'demo data ready');
    reference.child.kill('SIGTERM');
    expect(await reference.exited).toBe(0);

    const open = (database: string) =>
      openStore({ ...parseConfig({ ...base, DATA_DIR: root, CLICKHOUSE_DATABASE: database }, overrides).clickhouse });
    const stores: Record<'crashed' | 'reference', Store> = {
      crashed: await open('crashed'),
      reference: await open('reference'),
    };
    try {
      // Every landing table. Nothing twice: without FINAL, no row is there twice (a crash-restart duplicate
      // is an identical row in another part; merges are off, so it would stay). Nothing missing: the
      // deduplicated content (FINAL: the copies a single insert may fold, like a fill's archive and
      // upstream copies written together, depend on how the worker batched them) equals the reference's.
      const raw = async (store: Store, table: string) => {
        const [row] = await store.query<{ n: number; distinct: number }>(
          `SELECT count() AS n, uniqExact(sipHash64(tuple(*))) AS distinct FROM {db:Identifier}.${table}`,
        );
        return row!;
      };
      const content = async (store: Store, table: string) => {
        const [row] = await store.query<{ n: number; h: string }>(
          `SELECT count() AS n, toString(sum(sipHash64(tuple(*)))) AS h FROM {db:Identifier}.${table} FINAL`,
        );
        return row!;
      };
      let rows = 0;
      for (const table of WORLD_TABLES) {
        const crashedRaw = await raw(stores.crashed, table);
        expect({ table, twice: crashedRaw.n - crashedRaw.distinct }).toEqual({ table, twice: 0 });
        const want = await content(stores.reference, table);
        expect({ table, ...(await content(stores.crashed, table)) }).toEqual({ table, ...want });
        rows += Number(want.n);
      }
      expect(rows).toBeGreaterThan(10_000);

      // The demo accounts and keys: one row each (none twice), and the keys of the crashed world's demo-keys.json.
      const keys = JSON.parse(await readFile(path.join(crashDir, 'demo-keys.json'), 'utf8')) as Record<string, string>;
      const storedKeys = await stores.crashed.query<{ key_sha256: string; account_id: string }>(
        'SELECT key_sha256, account_id FROM {db:Identifier}.api_keys ORDER BY account_id',
      );
      expect(storedKeys).toEqual(
        ['basic', 'max', 'pro'].map((plan) => ({ key_sha256: sha256Hex(keys[plan]!), account_id: `demo-${plan}` })),
      );
      const accounts = await stores.crashed.query<{ account_id: string }>(
        'SELECT account_id FROM {db:Identifier}.accounts ORDER BY account_id',
      );
      expect(accounts.map((row) => row.account_id)).toEqual(['demo-basic', 'demo-max', 'demo-pro']);

      // The rollups and cards: every trader's market rollups, and the cards of the busiest traders.
      const rollups = (store: Store) =>
        store.query(
          `SELECT wallet, condition_id, fills_count, round(buy_usd, 6) AS buy, round(sell_usd, 6) AS sell
           FROM {db:Identifier}.trader_markets_v2 FINAL ORDER BY wallet, condition_id`,
        );
      const crashedRollups = await rollups(stores.crashed);
      expect(crashedRollups.length).toBeGreaterThan(20);
      expect(crashedRollups).toEqual(await rollups(stores.reference));
      const busiest = await stores.reference.query<{ wallet: string }>(
        'SELECT wallet FROM {db:Identifier}.fills GROUP BY wallet ORDER BY count() DESC, wallet LIMIT 8',
      );
      // The world is seeded by its genesis (now − 30 min), so how many of its 20 traders traded varies from
      // run to run (7 once in CI): the cards of up to 8 of them, and at least 3, are compared.
      expect(busiest.length).toBeGreaterThanOrEqual(3);
      const settings = { ...cardSettingsOf(parseConfig({})), includeV1: false, upstreamStaleAfterSeconds: 300 };
      for (const { wallet } of busiest) {
        const [got, want] = await Promise.all(
          [stores.crashed, stores.reference].map((store) =>
            readTraderCard(store, { wallet, name: '' }, settings, stopTs),
          ),
        );
        expect(got).toEqual(want);
      }
    } finally {
      await stores.crashed.close();
      await stores.reference.close();
    }
  });
});
