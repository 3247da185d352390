import { describe, expect, it } from 'vitest';
import { SIMULATED_LANDING, landedIdentity } from '../../projections/landed.ts';
import { TOPICS, type TopicId } from '../contract/topics.ts';
import { SkipLandedSink, type LandedSnapshot } from './skip-landed.ts';
import { RecordingSink, TEST_GENESIS, recordWindow } from './simulator/test-support.ts';

const WORLD = { seed: 7, traders: 12, intensity: 0.3, genesisTs: TEST_GENESIS } as const;

/** The landing rows of what a sink recorded, in order: [table, row]. */
function landed(sink: RecordingSink): [string, Record<string, unknown>][] {
  return sink.calls.flatMap(({ topicId, events }) =>
    events.map((event) => {
      const { table, row } = (
        TOPICS[topicId].land as (value: unknown) => { table: string; row: Record<string, unknown> }
      )(TOPICS[topicId].schema.parse(event));
      return [table, row] as [string, Record<string, unknown>];
    }),
  );
}

describe('resuming the simulator from what the store holds', () => {
  it('dates every event of an emit inside its window (the resume snapshot reads rows dated from the checkpoint)', {
    timeout: 60_000,
  }, async () => {
    // The resume reads the store's rows dated at or after the checkpoint; an event dated before the window
    // that emitted it would be published again after a crash without being recognized.
    const from = TEST_GENESIS + 600;
    const to = from + 1200;
    const { sink } = await recordWindow(WORLD, from, to);
    const rows = landed(sink);
    expect(new Set(rows.map(([table]) => table)).size).toBeGreaterThanOrEqual(8);
    for (const [table, row] of rows) {
      const time = Number(row[SIMULATED_LANDING[table as keyof typeof SIMULATED_LANDING].time]);
      expect(time, `${table} ${JSON.stringify(row)}`).toBeGreaterThanOrEqual(from);
      expect(time, `${table} ${JSON.stringify(row)}`).toBeLessThan(to);
    }
  });

  it('publishes again exactly the events the store lacks, one stored row cancelling one event', {
    timeout: 60_000,
  }, async () => {
    const from = TEST_GENESIS;
    const to = from + 1200;
    const { sink: reference } = await recordWindow(WORLD, from, to);
    const rows = landed(reference);
    // A crash left an arbitrary subset in the store (every third row, of every table).
    const snapshot: LandedSnapshot = new Map();
    const stored = rows.filter((_, index) => index % 3 === 0);
    for (const [table, row] of stored) {
      const key = `${table}|${landedIdentity(SIMULATED_LANDING[table as keyof typeof SIMULATED_LANDING].columns, row)}`;
      snapshot.set(key, (snapshot.get(key) ?? 0) + 1);
    }
    const resumed = new RecordingSink();
    const skipping = new SkipLandedSink(resumed, snapshot);
    const { simulator } = await recordWindow(WORLD, from, from);
    await simulator.emit(from, to, skipping);

    const expected = rows
      .filter((_, index) => index % 3 !== 0)
      .map(([table, row]) => `${table}:${JSON.stringify(row)}`);
    expect(landed(resumed).map(([table, row]) => `${table}:${JSON.stringify(row)}`)).toEqual(expected);
    expect(skipping.skipped).toBe(stored.length);
    expect(skipping.outstanding).toBe(0);
    const topics = new Set<TopicId>(resumed.calls.map((call) => call.topicId));
    expect(topics.size).toBeGreaterThan(3);
  });
});
