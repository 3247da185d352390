import { describe, expect, it } from 'vitest';
import type { UpstreamStatusEvent } from '../../contract/events.ts';
import { createSimulator, runSimulator, type SimulationCounts } from './index.ts';
import { RecordingSink, TEST_GENESIS, recordWindow } from './test-support.ts';

const SMALL_WORLD = { seed: 21, traders: 8, intensity: 0.2 } as const;

describe('runSimulator', () => {
  it('backfills [now − days, now) in order and publishes what one emit of that window does', async () => {
    const nowTs = TEST_GENESIS + 5_000;
    const backfillSeconds = 0.05 * 86_400;
    const progress: { phase: string; doneTs: number }[] = [];
    const sink = new RecordingSink();
    const counts = await runSimulator(createSimulator(SMALL_WORLD), sink, {
      backfillDays: 0.05,
      live: false,
      now: () => nowTs * 1_000 + 250,
      onProgress: ({ phase, doneTs }) => progress.push({ phase, doneTs }),
    });

    const reference = await recordWindow(SMALL_WORLD, nowTs - backfillSeconds, nowTs);
    expect(sink.digestByTopic()).toEqual(reference.sink.digestByTopic());
    expect(counts.trades).toBe(reference.sink.events('trades').length);
    expect(counts.fills).toBe(reference.sink.events('fillsArchive').length);
    expect(progress.every((step) => step.phase === 'backfill')).toBe(true);
    expect(progress.map((step) => step.doneTs)).toEqual([...progress.map((step) => step.doneTs)].sort((a, b) => a - b));
    expect(progress[progress.length - 1]!.doneTs).toBe(nowTs);
  });

  it('goes live after the backfill, second by second, until aborted', async () => {
    const startTs = TEST_GENESIS + 3_600;
    let clockMs = startTs * 1_000;
    // Each look at the clock finds it a second later, so the live loop never waits for real.
    const now = () => {
      const reading = clockMs;
      clockMs += 1_000;
      return reading;
    };
    const controller = new AbortController();
    const live: number[] = [];
    const sink = new RecordingSink();
    const simulator = createSimulator(SMALL_WORLD);
    const finalCounts: SimulationCounts = await runSimulator(simulator, sink, {
      backfillDays: 600 / 86_400,
      live: true,
      signal: controller.signal,
      now,
      onProgress: ({ phase, doneTs }) => {
        if (phase !== 'live') return;
        live.push(doneTs);
        if (live.length === 20) controller.abort();
      },
    });

    expect(live).toHaveLength(20);
    expect(live[0]).toBeGreaterThan(startTs);
    const lastTs = live[live.length - 1]!;
    const reference = await recordWindow(SMALL_WORLD, startTs - 600, lastTs);
    expect(sink.digestByTopic()).toEqual(reference.sink.digestByTopic());
    expect(finalCounts.statuses).toBe(reference.sink.events('upstreamStatus').length);
  });

  it('resumes exactly at fromTs when given one', async () => {
    const simulator = createSimulator({ ...SMALL_WORLD, genesisTs: TEST_GENESIS });
    const sink = new RecordingSink();
    await runSimulator(simulator, sink, {
      backfillDays: 99,
      live: false,
      fromTs: TEST_GENESIS + 1_200,
      now: () => (TEST_GENESIS + 1_800) * 1_000,
    });
    const statuses = sink.events('upstreamStatus') as UpstreamStatusEvent[];
    expect(statuses[0]!.ts).toBe(TEST_GENESIS + 1_200);
    expect(statuses[statuses.length - 1]!.ts).toBe(TEST_GENESIS + 1_740);
  });
});

describe('upstream heartbeats', () => {
  it('beats every minute, with one outage of a few minutes per day when the upstream says nothing', async () => {
    const dayStart = Math.floor(TEST_GENESIS / 86_400) * 86_400;
    const { sink } = await recordWindow({ seed: 4, traders: 6, intensity: 0.05 }, dayStart, dayStart + 86_400);
    const statuses = sink.events('upstreamStatus') as UpstreamStatusEvent[];
    expect(statuses).toHaveLength(1_440);
    expect(statuses.every((status, index) => status.ts === dayStart + index * 60)).toBe(true);

    const offline = statuses.filter((status) => status.state === 'offline');
    expect(offline.length).toBeGreaterThanOrEqual(3);
    expect(offline.length).toBeLessThanOrEqual(8);
    expect(offline[offline.length - 1]!.ts - offline[0]!.ts).toBe((offline.length - 1) * 60);
    const outageStart = offline[0]!.ts;
    const outageEnd = offline[offline.length - 1]!.ts + 60;

    const during = (ts: number) => ts >= outageStart && ts < outageEnd;
    expect(sink.events('upstreamProfiles').filter((profile) => during(profile.as_of))).toEqual([]);
    expect(sink.events('upstreamEquity').filter((point) => during(point.ts))).toEqual([]);
    expect(sink.events('fillsUpstream').filter((fill) => during(fill.ts))).toEqual([]);
    expect(sink.events('fillsArchive').length).toBeGreaterThan(0);
  });
});
