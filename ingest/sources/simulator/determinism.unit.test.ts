import { describe, expect, it } from 'vitest';
import { createSimulator } from './index.ts';
import { RecordingSink, TEST_GENESIS, recordWindow } from './test-support.ts';

const OPTIONS = { seed: 42, traders: 24, intensity: 0.5 } as const;
const FROM = TEST_GENESIS;
const TO = TEST_GENESIS + 2 * 3_600;

describe('simulator determinism', () => {
  it('emits the same events for the same seed and window', async () => {
    const first = await recordWindow(OPTIONS, FROM, TO);
    const second = await recordWindow(OPTIONS, FROM, TO);
    expect(first.sink.events('fillsArchive').length).toBeGreaterThan(100);
    expect(second.sink.digestOfCalls()).toBe(first.sink.digestOfCalls());
    expect(second.simulator.traders).toEqual(first.simulator.traders);
  });

  it('emits a different world for a different seed', async () => {
    const first = await recordWindow(OPTIONS, FROM, FROM + 1_800);
    const other = await recordWindow({ ...OPTIONS, seed: 43 }, FROM, FROM + 1_800);
    const firstDigests = first.sink.digestByTopic();
    const otherDigests = other.sink.digestByTopic();
    for (const topic of ['markets', 'trades', 'fillsArchive', 'upstreamProfiles'] as const) {
      expect(otherDigests[topic]).not.toBe(firstDigests[topic]);
    }
    expect(other.simulator.traders.map((trader) => trader.wallet)).not.toEqual(
      first.simulator.traders.map((trader) => trader.wallet),
    );
  });

  it('emits [a,b) then [b,c) exactly as [a,c), whatever b is', async () => {
    const whole = await recordWindow(OPTIONS, FROM, TO);
    for (const split of [FROM + 1, FROM + 2_917, FROM + 3_600]) {
      const simulator = createSimulator(OPTIONS);
      const sink = new RecordingSink();
      await simulator.emit(FROM, split, sink);
      await simulator.emit(split, TO, sink);
      expect(sink.digestByTopic()).toEqual(whole.sink.digestByTopic());
      // On a multiple of the publish interval the publish calls themselves are the same.
      if (split % 600 === 0) expect(sink.digestOfCalls()).toBe(whole.sink.digestOfCalls());
    }
  });

  it('emits one-second steps (the live mode) exactly as one window', async () => {
    const from = FROM + 600;
    const to = from + 240;
    const simulator = createSimulator(OPTIONS);
    await simulator.emit(FROM, from, new RecordingSink());
    const stepped = new RecordingSink();
    for (let ts = from; ts < to; ts++) await simulator.emit(ts, ts + 1, stepped);

    const reference = createSimulator(OPTIONS);
    await reference.emit(FROM, from, new RecordingSink());
    const whole = new RecordingSink();
    await reference.emit(from, to, whole);
    expect(stepped.events('trades').length).toBeGreaterThan(20);
    expect(stepped.digestByTopic()).toEqual(whole.digestByTopic());
  });

  it('catches its books up when a fresh simulator resumes a later window of the same period', async () => {
    const whole = await recordWindow(OPTIONS, FROM, TO);
    const resumeAt = FROM + 4_321;
    const resumed = await recordWindow({ ...OPTIONS, genesisTs: FROM }, resumeAt, TO);

    const tail = new RecordingSink();
    for (const topicId of whole.sink.topics()) {
      const events = whole.sink.events(topicId).filter((event) => eventTs(event) >= resumeAt);
      if (events.length > 0) await tail.publish(topicId, events);
    }
    expect(resumed.sink.digestByTopic()).toEqual(tail.digestByTopic());
  });

  it('refuses to emit before the start of its simulated period', async () => {
    const simulator = createSimulator({ ...OPTIONS, genesisTs: FROM });
    await expect(simulator.emit(FROM - 60, FROM, new RecordingSink())).rejects.toThrow(RangeError);
  });
});

/** The instant an event belongs to, whatever its topic calls it. */
function eventTs(event: object): number {
  const record = event as Record<string, unknown>;
  for (const field of ['ts', 'as_of', 'version']) {
    if (typeof record[field] === 'number') return record[field] as number;
  }
  throw new Error(`event without a time: ${JSON.stringify(event)}`);
}
