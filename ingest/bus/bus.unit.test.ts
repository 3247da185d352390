import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../log.ts';
import { logMessagesSkipped } from '../../metrics/registry.ts';
import { PREPARE_PART_MESSAGES, SliceAccumulator } from './accumulator.ts';
import { MemoryLog } from './memory.ts';
import { commitOffsetsOf, type BatchProcessor, type PartitionSlice, type SliceRange } from './types.ts';

const log = createLogger('silent');

function slice(topic: string, partition: number, from: number, count: number): PartitionSlice {
  return {
    topic,
    partition,
    messages: Array.from({ length: count }, (_, index) => ({
      offset: String(from + index),
      key: null,
      value: Buffer.from('x'),
      headers: {},
    })),
  };
}

/** A processor that records writes and can be told to fail the next one. */
function recorder() {
  const writes: SliceRange[][] = [];
  let failNext = false;
  const processor: BatchProcessor<number> = {
    prepare: (s) => s.messages.length,
    write: async (_prepared, ranges) => {
      if (failNext) {
        failNext = false;
        throw new Error('ClickHouse is down');
      }
      writes.push(ranges);
    },
  };
  return { processor, writes, failNextWrite: () => (failNext = true) };
}

describe('SliceAccumulator', () => {
  it('gathers slices of several partitions into one write and commits their ranges after it', async () => {
    const { processor, writes } = recorder();
    const commits: SliceRange[][] = [];
    const accumulator = new SliceAccumulator(
      processor,
      async (ranges) => void commits.push(ranges),
      { maxBatchMessages: 10, maxBatchBytes: 1 << 20, lingerMs: 60_000 },
      log,
    );
    await accumulator.add(slice('t', 0, 0, 4));
    await accumulator.add(slice('t', 1, 0, 4));
    expect(writes).toHaveLength(0);
    await accumulator.add(slice('t', 0, 4, 4)); // 12 ≥ 10: written now
    expect(writes).toHaveLength(1);
    expect(writes[0]!.map((range) => `${range.partition}:${range.firstOffset}-${range.lastOffset}`)).toEqual([
      '0:0-3',
      '1:0-3',
      '0:4-7',
    ]);
    expect(commits).toEqual(writes);
  });

  it('writes a partial batch after the linger time', async () => {
    const { processor, writes } = recorder();
    let committed: () => void = () => {};
    const done = new Promise<void>((resolve) => (committed = resolve));
    const accumulator = new SliceAccumulator(
      processor,
      async () => committed(),
      { maxBatchMessages: 1000, maxBatchBytes: 1 << 20, lingerMs: 5 },
      log,
    );
    await accumulator.add(slice('t', 0, 0, 3));
    await done;
    expect(writes).toHaveLength(1);
  });

  it('writes a batch that reached the eager size as soon as the store is free, without lingering', async () => {
    const writes: number[][] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const processor: BatchProcessor<number> = {
      prepare: (s) => s.messages.length,
      write: async (prepared) => {
        writes.push(prepared);
        if (writes.length === 1) await gate;
      },
    };
    let commits = 0;
    let bothCommitted: () => void = () => {};
    const written = new Promise<void>((resolve) => (bothCommitted = resolve));
    const limits = { maxBatchMessages: 1000, maxBatchBytes: 1 << 20, lingerMs: 60_000, eagerBatchMessages: 5 };
    const accumulator = new SliceAccumulator(
      processor,
      async () => void (++commits === 2 && bothCommitted()),
      limits,
      log,
    );
    await accumulator.add(slice('t', 0, 0, 3));
    expect(writes).toHaveLength(0); // 3 < 5: it lingers
    await accumulator.add(slice('t', 1, 0, 3));
    await Promise.resolve();
    expect(writes).toEqual([[3, 3]]); // 6 ≥ 5: written without waiting out the linger
    // While that write runs, the next batch fills; past the eager size it follows right after.
    await accumulator.add(slice('t', 0, 3, 2));
    await accumulator.add(slice('t', 1, 3, 4));
    release();
    await written;
    expect(writes).toEqual([
      [3, 3],
      [2, 4],
    ]);
  });

  it('commits nothing of a failed write, reports it once, and refuses slices until reset', async () => {
    const { processor, writes, failNextWrite } = recorder();
    const commits: SliceRange[][] = [];
    const failures: unknown[] = [];
    const accumulator = new SliceAccumulator(
      processor,
      async (ranges) => void commits.push(ranges),
      { maxBatchMessages: 2, maxBatchBytes: 1 << 20, lingerMs: 60_000 },
      log,
      (error) => failures.push(error),
    );
    failNextWrite();
    expect(await accumulator.add(slice('t', 0, 0, 2))).toBe(false);
    expect(await accumulator.add(slice('t', 0, 2, 2))).toBe(false);
    expect(commits).toHaveLength(0);
    expect(failures).toHaveLength(1);
    expect(accumulator.failed).toBe(true);
    await accumulator.reset();
    expect(await accumulator.add(slice('t', 0, 0, 2))).toBe(true);
    expect(writes).toHaveLength(1);
    expect(commits).toHaveLength(1);
  });

  it('starts the next write while the previous batch is being committed, and commits in the order of the writes', async () => {
    const events: string[] = [];
    const processor: BatchProcessor<number> = {
      prepare: (s) => s.messages.length,
      write: async (_prepared, ranges) => void events.push(`write ${ranges[0]!.partition}`),
      committed: (_prepared, ranges) => void events.push(`reported ${ranges[0]!.partition}`),
    };
    let releaseFirstCommit: () => void = () => {};
    const firstCommitHeld = new Promise<void>((resolve) => (releaseFirstCommit = resolve));
    let bothCommitted: () => void = () => {};
    const done = new Promise<void>((resolve) => (bothCommitted = resolve));
    const commit = async (ranges: SliceRange[]) => {
      const partition = ranges[0]!.partition;
      events.push(`commit ${partition} started`);
      if (partition === 0) await firstCommitHeld;
      events.push(`commit ${partition} done`);
      if (partition === 1) bothCommitted();
    };
    const limits = { maxBatchMessages: 1000, maxBatchBytes: 1 << 20, lingerMs: 60_000, eagerBatchMessages: 2 };
    const accumulator = new SliceAccumulator(processor, commit, limits, log);
    await accumulator.add(slice('t', 0, 0, 2)); // eager: written at once, its commit held
    await new Promise((resolve) => setImmediate(resolve));
    await accumulator.add(slice('t', 1, 0, 2));
    await new Promise((resolve) => setImmediate(resolve));
    // The second write did not wait for the first commit; its own commit waits for it.
    expect(events).toEqual(['write 0', 'commit 0 started', 'write 1']);
    releaseFirstCommit();
    await done;
    expect(events).toEqual([
      'write 0',
      'commit 0 started',
      'write 1',
      'commit 0 done',
      'reported 0',
      'commit 1 started',
      'commit 1 done',
    ]);
    await accumulator.close();
    expect(events.at(-1)).toBe('reported 1');
  });

  it('a failed commit is reported once and refuses slices until reset; nothing of the old generation is committed after the reset', async () => {
    const { processor, writes } = recorder();
    const commits: SliceRange[][] = [];
    const failures: unknown[] = [];
    let failCommits = true;
    const commit = async (ranges: SliceRange[]) => {
      if (failCommits) throw new Error('not the owner of the partition any more');
      commits.push(ranges);
    };
    const accumulator = new SliceAccumulator(
      processor,
      commit,
      { maxBatchMessages: 2, maxBatchBytes: 1 << 20, lingerMs: 60_000 },
      log,
      (error) => failures.push(error),
    );
    expect(await accumulator.add(slice('t', 0, 0, 2))).toBe(false); // written, its commit failed
    expect(writes).toHaveLength(1);
    expect(failures).toHaveLength(1);
    expect(accumulator.failed).toBe(true);
    expect(await accumulator.add(slice('t', 0, 2, 2))).toBe(false);
    expect(writes).toHaveLength(1);
    failCommits = false;
    await accumulator.reset();
    expect(commits).toHaveLength(0);
    // Read again from the committed offsets: written and committed anew.
    expect(await accumulator.add(slice('t', 0, 0, 2))).toBe(true);
    expect(writes).toHaveLength(2);
    expect(commits.map((ranges) => `${ranges[0]!.firstOffset}-${ranges[0]!.lastOffset}`)).toEqual(['0-1']);
    expect(failures).toHaveLength(1);
  });

  it('drops what it holds on reset: those messages are read again from the committed offsets', async () => {
    const { processor, writes } = recorder();
    const accumulator = new SliceAccumulator(
      processor,
      async () => {},
      { maxBatchMessages: 100, maxBatchBytes: 1 << 20, lingerMs: 60_000 },
      log,
    );
    await accumulator.add(slice('t', 0, 0, 5));
    await accumulator.reset();
    await accumulator.flush();
    expect(writes).toHaveLength(0);
  });
});

describe('SliceAccumulator, long slices', () => {
  it('prepares a long slice in parts with a turn of the event loop between them, and writes all of it in order', async () => {
    const prepared: number[] = [];
    const writes: SliceRange[][] = [];
    const processor: BatchProcessor<number> = {
      prepare: (s) => {
        prepared.push(s.messages.length);
        return s.messages.length;
      },
      write: async (_prepared, ranges) => void writes.push(ranges),
    };
    const accumulator = new SliceAccumulator(
      processor,
      async () => {},
      { maxBatchMessages: 10_000, maxBatchBytes: 1 << 30, lingerMs: 60_000 },
      log,
    );
    // A callback queued before the add: it runs once the first part is prepared, before the second.
    let preparedWhenTheLoopTurned: number | undefined;
    setImmediate(() => (preparedWhenTheLoopTurned = prepared.length));
    const count = 2 * PREPARE_PART_MESSAGES + 250;
    expect(await accumulator.add(slice('t', 3, 1000, count))).toBe(true);
    expect(prepared).toEqual([PREPARE_PART_MESSAGES, PREPARE_PART_MESSAGES, 250]);
    expect(preparedWhenTheLoopTurned).toBe(1);
    await accumulator.flush();
    const ranges = writes.flat().map((range) => `${range.partition}:${range.firstOffset}-${range.lastOffset}`);
    expect(ranges).toEqual([
      `3:1000-${999 + PREPARE_PART_MESSAGES}`,
      `3:${1000 + PREPARE_PART_MESSAGES}-${999 + 2 * PREPARE_PART_MESSAGES}`,
      `3:${1000 + 2 * PREPARE_PART_MESSAGES}-${999 + count}`,
    ]);
  });

  it('prepares in the parts a reader asks for (the live feed, whose preparation is cheap, takes larger ones)', async () => {
    const prepared: number[] = [];
    const accumulator = new SliceAccumulator(
      { prepare: (s: PartitionSlice) => prepared.push(s.messages.length), write: async () => {} },
      async () => {},
      {
        maxBatchMessages: 1 << 20,
        maxBatchBytes: 1 << 30,
        lingerMs: 60_000,
        preparePartMessages: 4 * PREPARE_PART_MESSAGES,
      },
      log,
    );
    expect(await accumulator.add(slice('t', 0, 0, 9 * PREPARE_PART_MESSAGES))).toBe(true);
    expect(prepared).toEqual([4 * PREPARE_PART_MESSAGES, 4 * PREPARE_PART_MESSAGES, PREPARE_PART_MESSAGES]);
    await accumulator.flush();
  });

  it('refuses the rest of a long slice after a reset between its parts (nothing after a dropped part is written)', async () => {
    const { processor, writes } = recorder();
    const accumulator = new SliceAccumulator(
      processor,
      async () => {},
      { maxBatchMessages: 100_000, maxBatchBytes: 1 << 30, lingerMs: 60_000 },
      log,
    );
    // A rebalance lands between the first and the second part.
    setImmediate(() => void accumulator.reset());
    expect(await accumulator.add(slice('t', 0, 0, 3 * PREPARE_PART_MESSAGES))).toBe(false);
    await accumulator.flush();
    expect(writes).toHaveLength(0);
  });
});

describe('SliceAccumulator, closing', () => {
  it('writes nothing offered after close(): the rest of a long slice being added is refused', async () => {
    const { processor, writes } = recorder();
    const commits: SliceRange[][] = [];
    const accumulator = new SliceAccumulator(
      processor,
      async (ranges) => void commits.push(ranges),
      { maxBatchMessages: 100_000, maxBatchBytes: 1 << 30, lingerMs: 60_000 },
      log,
    );
    // The consumer stops between the first and the second part of a fetch.
    let closed: Promise<void> = Promise.resolve();
    setImmediate(() => (closed = accumulator.close()));
    expect(await accumulator.add(slice('t', 0, 0, 3 * PREPARE_PART_MESSAGES))).toBe(false);
    await closed;
    // The final write holds the first part, committed; nothing after it.
    expect(writes.flat().map((range) => `${range.firstOffset}-${range.lastOffset}`)).toEqual([
      `0-${PREPARE_PART_MESSAGES - 1}`,
    ]);
    expect(commits).toEqual(writes);
    expect(await accumulator.add(slice('t', 0, 3 * PREPARE_PART_MESSAGES, 5))).toBe(false);
    await accumulator.flush();
    expect(writes).toHaveLength(1);
  });
});

describe('SliceAccumulator, a partition lost mid-fetch', () => {
  it('refuses the rest of a long slice once the consumer no longer holds its partition', async () => {
    const { processor, writes } = recorder();
    const accumulator = new SliceAccumulator(
      processor,
      async () => {},
      { maxBatchMessages: 100_000, maxBatchBytes: 1 << 30, lingerMs: 60_000 },
      log,
    );
    let owned = true;
    setImmediate(() => (owned = false));
    expect(await accumulator.add(slice('t', 2, 0, 3 * PREPARE_PART_MESSAGES), () => owned)).toBe(false);
    await accumulator.flush();
    // What was added before is written (its offsets are the partition's, committed or refused by Kafka).
    expect(writes.flat().map((range) => `${range.partition}:${range.firstOffset}-${range.lastOffset}`)).toEqual([
      `2:0-${PREPARE_PART_MESSAGES - 1}`,
    ]);
  });
});

describe('commitOffsetsOf', () => {
  it('commits each partition once, past the furthest range of it in the write', () => {
    const range = (topic: string, partition: number, first: number, last: number): SliceRange => ({
      topic,
      partition,
      firstOffset: String(first),
      lastOffset: String(last),
      messageCount: last - first + 1,
    });
    expect(
      commitOffsetsOf([
        range('a', 0, 0, 499),
        range('a', 1, 10, 19),
        range('a', 0, 500, 999),
        range('b', 0, 7, 7),
        range('a', 0, 1000, 1249),
      ]),
    ).toEqual([
      { topic: 'a', partition: 0, offset: '1250' },
      { topic: 'a', partition: 1, offset: '20' },
      { topic: 'b', partition: 0, offset: '8' },
    ]);
  });
});

describe('MemoryLog', () => {
  const options = {
    maxBatchMessages: 50,
    maxBatchBytes: 1 << 20,
    lingerMs: 1,
    maxBytes: 1 << 20,
    maxBytesPerPartition: 1 << 20,
    partitionsConsumedConcurrently: 2,
    fromBeginning: true,
  };

  it('keeps one key on one partition, in order, and delivers everything once to a group', async () => {
    const memory = new MemoryLog({ partitions: 4, maxRetainedBytes: 1 << 20, log });
    const producer = await memory.producer();
    const seen = new Map<string, number[]>();
    const consumer = memory.consumer({ ...options, groupId: 'g' });
    await consumer.start(['t'], {
      prepare: (s) => s,
      write: async (slices) => {
        for (const s of slices) {
          for (const m of s.messages) {
            const [key, index] = m.value!.toString().split(':');
            const list = seen.get(`${key}@${s.partition}`) ?? [];
            list.push(Number(index));
            seen.set(`${key}@${s.partition}`, list);
          }
        }
      },
    });
    for (let index = 0; index < 300; index++)
      await producer.send('t', [{ key: `k${index % 7}`, value: `k${index % 7}:${index}` }]);
    await memory.drained('g', ['t']);
    await consumer.stop();
    const keys = [...seen.keys()].map((entry) => entry.split('@')[0]);
    expect(new Set(keys).size).toBe(keys.length); // each key on exactly one partition
    const all = [...seen.values()].flat();
    expect(all.sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, index) => index));
    for (const list of seen.values()) expect(list).toEqual([...list].sort((a, b) => a - b));
  });

  it('starts a new group that does not read from the beginning at the end of the log (Kafka: latest)', async () => {
    const memory = new MemoryLog({ partitions: 2, maxRetainedBytes: 1 << 20, log });
    const producer = await memory.producer();
    await producer.send('t', [
      { key: 'a', value: 'before-1' },
      { key: 'b', value: 'before-2' },
    ]);
    const written: string[] = [];
    const consumer = memory.consumer({ ...options, groupId: 'late', fromBeginning: false, reportsProgress: false });
    await consumer.start(['t'], {
      prepare: (s) => s.messages.map((m) => m.value!.toString()),
      write: async (prepared) => {
        written.push(...prepared.flat());
      },
    });
    await producer.send('t', [{ key: 'a', value: 'after' }]);
    await memory.drained('late', ['t']);
    await consumer.stop();
    expect(written).toEqual(['after']);
  });

  it('delivers a failed write again, from the committed offset', async () => {
    const memory = new MemoryLog({ partitions: 1, maxRetainedBytes: 1 << 20, log });
    const producer = await memory.producer();
    let attempts = 0;
    const written: string[] = [];
    const consumer = memory.consumer({ ...options, groupId: 'g' });
    await consumer.start(['t'], {
      prepare: (s) => s.messages.map((m) => m.value!.toString()),
      write: async (prepared) => {
        attempts += 1;
        if (attempts === 1) throw new Error('transient');
        written.push(...prepared.flat());
      },
    });
    await producer.send('t', [
      { key: 'a', value: '1' },
      { key: 'a', value: '2' },
    ]);
    await memory.drained('g', ['t']);
    await consumer.stop();
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(written).toEqual(['1', '2']);
  });
});

/** Whether a promise has settled once the microtasks and one turn of the event loop have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

/** A message of `bytes` bytes as the log counts them (value + key + 64). */
const message = (key: string, bytes: number) => ({ key, value: 'x'.repeat(bytes - key.length - 64) });

describe('MemoryLog: what is retained, and who can make a producer wait', () => {
  const KIB = 1024;

  it('drops what every group reading a topic committed, whatever the groups that do not read it', async () => {
    const memory = new MemoryLog({ partitions: 1, maxRetainedBytes: 64 * KIB, log });
    memory.join('ingest', ['fills', 'positions'], false);
    // A group of its own that reads only fills (the live feed's shape, durable here to show the rule).
    memory.join('feed', ['fills'], false);
    const producer = await memory.producer();
    for (let index = 0; index < 10; index++) await producer.send('positions', [message('w', KIB)]);
    expect(memory.retained).toBe(10 * KIB);
    memory.commit('ingest', 'positions', 0, memory.endOffset('positions', 0));
    // `feed` never read positions: it holds none of them back.
    expect(memory.retained).toBe(0);
    expect(memory.startOffset('positions', 0)).toBe(memory.endOffset('positions', 0));

    for (let index = 0; index < 4; index++) await producer.send('fills', [message('w', KIB)]);
    memory.commit('ingest', 'fills', 0, memory.endOffset('fills', 0));
    // Both read fills: what `feed` has not committed stays.
    expect(memory.retained).toBe(4 * KIB);
    memory.commit('feed', 'fills', 0, memory.endOffset('fills', 0) - 1n);
    expect(memory.retained).toBe(KIB);
  });

  it('makes producers wait for a durable group only, and lets them on once it commits', async () => {
    const memory = new MemoryLog({ partitions: 1, maxRetainedBytes: 8 * KIB, log });
    memory.join('ingest', ['t'], false);
    memory.join('feed', ['t'], true);
    const producer = await memory.producer();
    for (let index = 0; index <= 8; index++) await producer.send('t', [message('k', KIB)]);
    expect(memory.retained).toBe(9 * KIB);
    const waiting = producer.send('t', [message('k', KIB)]);
    expect(await settled(waiting)).toBe(false);
    memory.commit('ingest', 't', 0, memory.startOffset('t', 0) + 2n);
    // `feed` is lossy and read nothing: what ingest committed goes, oldest first, until there is room.
    expect(await settled(waiting)).toBe(true);
    expect(memory.retained).toBeLessThanOrEqual(9 * KIB);
    expect(memory.startOffset('t', 0)).toBe(memory.endOffset('t', 0) - 9n);
  });

  it('never waits on a lossy group: ingest keeps going, the lossy reader skips what was dropped and counts it', async () => {
    const bound = 16 * KIB;
    const memory = new MemoryLog({ partitions: 1, maxRetainedBytes: bound, log });
    const options = {
      maxBatchMessages: 1,
      maxBatchBytes: 1 << 20,
      lingerMs: 0,
      maxBytes: 1 << 20,
      maxBytesPerPartition: 4 * KIB,
      partitionsConsumedConcurrently: 1,
      fromBeginning: false,
    };
    const ingested: string[] = [];
    const ingest = memory.consumer({ ...options, groupId: 'ingest', fromBeginning: true, maxBatchMessages: 50 });
    await ingest.start(['t'], {
      prepare: (s) => s.messages.map((m) => m.value!.toString().slice(-6)),
      write: async (prepared) => void ingested.push(...prepared.flat()),
    });
    // The live reader stalls on its first write (a plane too busy to read) until told to go on.
    let release: () => void = () => {};
    const stalled = new Promise<void>((resolve) => (release = resolve));
    let firstWrite: () => void = () => {};
    const wroteOnce = new Promise<void>((resolve) => (firstWrite = resolve));
    const seen: string[] = [];
    const topicSkipped = async () =>
      (await logMessagesSkipped.get()).values.find((value) => value.labels.topic === 't')?.value ?? 0;
    const skippedBefore = await topicSkipped();
    const live = memory.consumer({ ...options, groupId: 'live', lossy: true, reportsProgress: false });
    await live.start(['t'], {
      prepare: (s) => s.messages.map((m) => m.value!.toString().slice(-6)),
      write: async (prepared) => {
        seen.push(...prepared.flat());
        firstWrite();
        await stalled;
      },
    });
    const producer = await memory.producer();
    const total = 200; // 200 KiB through a log of 16 KiB
    let highest = 0;
    for (let index = 0; index < total; index++) {
      await producer.send('t', [
        { key: 'k', value: `${'x'.repeat(KIB - 64 - 1 - 6)}${String(index).padStart(6, '0')}` },
      ]);
      highest = Math.max(highest, memory.retained);
      if (index === 0) await wroteOnce;
    }
    expect(highest).toBeLessThanOrEqual(bound + KIB);
    await memory.drained('ingest', ['t']);
    release();
    await memory.drained('live', ['t']);
    await live.stop();
    await ingest.stop();
    // Ingest got everything, in order; the live reader the first message, then only the tail the log still held.
    expect(ingested).toEqual(Array.from({ length: total }, (_, index) => String(index).padStart(6, '0')));
    expect(seen[0]).toBe('000000');
    expect(seen.at(-1)).toBe(String(total - 1).padStart(6, '0'));
    const skipped = (await topicSkipped()) - skippedBefore;
    expect(skipped).toBeGreaterThan(0);
    // Every message was either read or counted as skipped, none both.
    expect(seen.length + skipped).toBe(total);
    expect(new Set(seen).size).toBe(seen.length);
    // A stopped lossy group holds nothing: with ingest done, the log is empty.
    expect(memory.retained).toBe(0);
  });

  it('keeps messages of a topic nobody reads yet while there is room, and drops the oldest past the bound', async () => {
    const memory = new MemoryLog({ partitions: 1, maxRetainedBytes: 4 * KIB, log });
    const producer = await memory.producer();
    for (let index = 0; index < 4; index++) await producer.send('later', [message('k', KIB)]);
    expect(memory.retained).toBe(4 * KIB);
    expect(memory.startOffset('later', 0)).toBe(memory.endOffset('later', 0) - 4n);
    for (let index = 0; index < 20; index++)
      expect(await settled(producer.send('later', [message('k', KIB)]))).toBe(true);
    expect(memory.retained).toBeLessThanOrEqual(5 * KIB);
  });

  it('lets a producer waiting for room go when the log is closed (a shutdown never waits for commits that cannot come)', async () => {
    const memory = new MemoryLog({ partitions: 1, maxRetainedBytes: 2 * KIB, log });
    memory.join('ingest', ['t'], false);
    const producer = await memory.producer();
    for (let index = 0; index < 3; index++) await producer.send('t', [message('k', KIB)]);
    const waiting = producer.send('t', [message('k', KIB)]);
    expect(await settled(waiting)).toBe(false);
    await memory.close();
    expect(await settled(waiting)).toBe(true);
  });

  type Operation =
    | { kind: 'join'; group: number; topics: number[]; lossy: boolean }
    | { kind: 'commit'; group: number; topic: number; partition: number; fraction: number }
    | { kind: 'commitAll' }
    | { kind: 'publish'; topic: number; key: number; bytes: number };

  const operation: fc.Arbitrary<Operation> = fc.oneof(
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('join' as const),
        group: fc.nat(3),
        topics: fc.uniqueArray(fc.nat(2), { minLength: 1, maxLength: 3 }),
        lossy: fc.boolean(),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('commit' as const),
        group: fc.nat(3),
        topic: fc.nat(2),
        partition: fc.nat(1),
        fraction: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'commitAll' as const }) },
    {
      weight: 8,
      arbitrary: fc.record({
        kind: fc.constant('publish' as const),
        topic: fc.nat(2),
        key: fc.nat(5),
        bytes: fc.integer({ min: 70, max: 2 * KIB }),
      }),
    },
  );

  it('property: retained bytes stay within the bound plus one message, and producers wait only on durable groups', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { maxLength: 200, size: 'max' }), async (operations) => {
        const bound = 8 * KIB;
        const largest = 2 * KIB;
        const memory = new MemoryLog({ partitions: 2, maxRetainedBytes: bound, log });
        const producer = await memory.producer();
        const topicName = (topic: number) => `t${topic}`;
        /** What each group joined as (the first join decides lossy: later joins only add topics here). */
        const groups = new Map<number, { topics: Set<number>; lossy: boolean }>();
        const joinedAt = new Map<string, bigint>();
        /** Bytes durable groups have not committed: what alone may make a producer wait. */
        const heldBytes = () => {
          let held = 0;
          for (let topic = 0; topic < 3; topic++)
            for (let partition = 0; partition < 2; partition++) {
              let from = memory.endOffset(topicName(topic), partition);
              for (const [group, joined] of groups)
                if (!joined.lossy && joined.topics.has(topic)) {
                  const next = memory.committed(`g${group}`, topicName(topic), partition);
                  if (next < from) from = next;
                }
              const start = memory.startOffset(topicName(topic), partition);
              const messages = memory.fetchFrom(topicName(topic), partition, from > start ? from : start, Infinity);
              for (const m of messages) held += m.value!.length + (m.key?.length ?? 0) + 64;
            }
          return held;
        };
        const commitAll = () => {
          for (const [group, joined] of groups)
            for (const topic of joined.topics)
              for (let partition = 0; partition < 2; partition++)
                memory.commit(`g${group}`, topicName(topic), partition, memory.endOffset(topicName(topic), partition));
        };
        for (const step of operations) {
          if (step.kind === 'join') {
            const known = groups.get(step.group);
            if (known && known.lossy !== step.lossy) continue; // a group is one kind of reader for good
            const joined = known ?? { topics: new Set<number>(), lossy: step.lossy };
            for (const topic of step.topics) {
              if (joined.topics.has(topic)) continue;
              joined.topics.add(topic);
              // As a consumer does: from the end of the log (a group that reads the past is held from then).
              memory.join(`g${step.group}`, [topicName(topic)], step.lossy);
              for (let partition = 0; partition < 2; partition++) {
                const end = memory.endOffset(topicName(topic), partition);
                memory.commit(`g${step.group}`, topicName(topic), partition, end);
                joinedAt.set(`g${step.group}|${topic}|${partition}`, end);
              }
            }
            groups.set(step.group, joined);
          } else if (step.kind === 'commit') {
            const joined = groups.get(step.group);
            if (!joined?.topics.has(step.topic)) continue;
            const name = topicName(step.topic);
            const from = memory.committed(`g${step.group}`, name, step.partition);
            const end = memory.endOffset(name, step.partition);
            const to = from + BigInt(Math.floor(Number(end - from) * step.fraction));
            memory.commit(`g${step.group}`, name, step.partition, to);
          } else if (step.kind === 'commitAll') {
            commitAll();
            // Every reader has committed everything: nothing is held, and a producer cannot wait.
            expect(heldBytes()).toBe(0);
            expect(await settled(producer.send(topicName(0), [message('k', largest)]))).toBe(true);
          } else {
            const sending = producer.send(topicName(step.topic), [message(`k${step.key}`, step.bytes)]);
            if (!(await settled(sending))) {
              // It waits only while durable groups hold more than the bound; their commits let it on.
              expect(heldBytes()).toBeGreaterThan(bound);
              commitAll();
              expect(await settled(sending)).toBe(true);
            }
          }
          expect(memory.retained).toBeLessThanOrEqual(bound + largest);
          // Nothing a durable group has not committed was dropped.
          for (const [group, joined] of groups) {
            if (joined.lossy) continue;
            for (const topic of joined.topics)
              for (let partition = 0; partition < 2; partition++)
                expect(memory.startOffset(topicName(topic), partition)).toBeLessThanOrEqual(
                  memory.committed(`g${group}`, topicName(topic), partition),
                );
          }
        }
        await memory.close();
      }),
      { numRuns: 200 },
    );
  });
});
