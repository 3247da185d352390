/**
 * `SIM_LIVE=false` holds across restarts: a world run with it stays where its backfill ended when
 * `main.ts all` starts again (before, the restart simulated the time the process was down and published
 * it). Its own file: the test opens the children's embedded store once they are gone, and a test process
 * opens one chDB directory only.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { openStore } from '../projections/store.ts';
import { startRole, type RoleProcess } from './harness/child.ts';
describe('main.ts all with SIM_LIVE=false, restarted', () => {
  const children: RoleProcess[] = [];
  afterAll(() => {
    for (const child of children)
      if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
  });

  it('publishes nothing after the restart: the world stays where its backfill ended', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-simlive-'));
    const nowSeconds = Math.floor(Date.now() / 1000);
    // A world of an hour that ended an hour ago: a restart that simulated the time since would publish an hour more.
    const genesisTs = nowSeconds - 7200;
    const endTs = nowSeconds - 3600;
    const environment = {
      DATA_DIR: dataDir,
      PORT: '0',
      LOG_LEVEL: 'info',
      SIM_LIVE: 'false',
      SIM_TRADERS: '20',
      SIM_GENESIS_TS: String(genesisTs),
      SIM_BACKFILL_DAYS: String(3600 / 86_400),
    };
    type Counts = Record<string, number>;
    const run = async (extra: Record<string, string>) => {
      const child = startRole('all', [], { ...environment, ...extra });
      children.push(child);
      const stopped = await child.waitFor((line) => line.msg === 'simulator stopped');
      await child.waitFor((line) => line.msg === 'the simulated world is complete in the store');
      await child.waitFor((line) => line.msg === 'demo data ready');
      child.child.kill('SIGTERM');
      expect(await child.exited).toBe(0);
      return { child, counts: stopped.counts as Counts };
    };
    const total = (counts: Counts) => Object.values(counts).reduce((sum, count) => sum + count, 0);

    const first = await run({ SIM_STOP_TS: String(endTs) });
    expect(first.counts.fills).toBeGreaterThan(0);
    const state = JSON.parse(await readFile(path.join(dataDir, 'simulator-state.json'), 'utf8')) as {
      resumeFromTs: number;
    };
    expect(state.resumeFromTs).toBe(endTs);

    // The restart, without SIM_STOP_TS: it resumes the same world, and the simulator publishes nothing.
    const second = await run({});
    expect(second.child.lines.some((line) => line.msg === 'resuming the simulated world')).toBe(true);
    expect(total(second.counts)).toBe(0);
    expect(
      JSON.parse(await readFile(path.join(dataDir, 'simulator-state.json'), 'utf8')) as { resumeFromTs: number },
    ).toMatchObject({ resumeFromTs: endTs });

    // The store holds no event of the world at or after its end (the child is gone: the store is free).
    const store = await openStore(parseConfig(environment).clickhouse);
    try {
      for (const table of ['fills', 'trades', 'book_ticks', 'position_legs']) {
        const [row] = await store.query<{ rows: string; after: string }>(
          `SELECT count() AS rows, countIf(ts >= {end:UInt32}) AS after FROM {db:Identifier}.${table}`,
          { end: endTs },
        );
        expect({ table, after: Number(row!.after) }).toEqual({ table, after: 0 });
        if (table !== 'position_legs') expect(Number(row!.rows)).toBeGreaterThan(0);
      }
    } finally {
      await store.close();
    }
  }, 240_000);
});
