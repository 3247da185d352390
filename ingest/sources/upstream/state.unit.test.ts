import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyState, FileStateStore } from './state.ts';

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'upstream-state-'));
});
afterAll(() => rm(directory, { recursive: true, force: true }));

describe('the poller state file', () => {
  it('starts empty, and gives back what was saved (a restart resumes)', async () => {
    const file = path.join(directory, 'nested', 'upstream-state.json');
    const store = new FileStateStore(file);
    expect(await store.load()).toEqual(emptyState());
    const state = emptyState();
    state.markets = { cursor: 'MTAw', highWater: 1_786_000_000, sweepMax: 1_786_100_000, nextAt: 1_786_200_300 };
    state.events = { cursor: 'ZXY', highWater: 1_785_000_000, sweepMax: 1_785_500_000, nextAt: 1_786_200_300 };
    state.leaderboard = { nextAt: 1_786_203_600, wallets: ['0x' + '1'.repeat(40)] };
    state.wallets['0x' + '2'.repeat(40)] = { nextAt: 1_786_200_900, activityFrom: 1_786_120_255 };
    await store.save(state);
    expect(await new FileStateStore(file).load()).toEqual(state);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(state);
  });

  it('reads a file written before events were polled: its markets sweep kept, the events sweep from the start', async () => {
    const file = path.join(directory, 'before-events.json');
    const markets = { cursor: null, highWater: 1_786_000_000, sweepMax: 0, nextAt: 1_786_200_300 };
    await writeFile(
      file,
      JSON.stringify({ version: 1, markets, leaderboard: { nextAt: 5, wallets: [] }, wallets: {} }),
    );
    const loaded = await new FileStateStore(file).load();
    expect(loaded.markets).toEqual(markets);
    expect(loaded.events).toEqual(emptyState().events);
    expect(loaded.events).toEqual({ cursor: null, highWater: 0, sweepMax: 0, nextAt: 0 });
  });

  it('starts over from an empty state when the file is of another version (republishing is harmless)', async () => {
    const file = path.join(directory, 'old.json');
    await writeFile(file, JSON.stringify({ version: 99, markets: { cursor: 'x' } }));
    expect(await new FileStateStore(file).load()).toEqual(emptyState());
  });
});
