/**
 * An in-process event log with Kafka's semantics where the pipeline relies on them: partitions chosen by
 * key, offsets, consumer-group commits, redelivery of an uncommitted batch after a failure. The
 * embedded mode (`npm start` with no KAFKA_BROKERS) runs the simulator, replay and import through it.
 *
 * Memory stays bounded by `maxRetainedBytes` (plus one append), and only a reader that must not lose a
 * message can make a producer wait (backpressure, not buffering). The rule, per topic partition:
 * - A message every group that reads the topic has committed is dropped at once. A group holds back only
 *   the topics it reads (those its consumer started on), never the others.
 * - A durable group (ingest) holds what it has not committed: while those bytes alone exceed the bound,
 *   producers wait for its commits.
 * - A lossy group (`LogConsumerOptions.lossy`: the live plane's feed) holds nothing. What it has not read
 *   yet stays while there is room; when the log is over its bound, the oldest messages no durable group
 *   needs are dropped until it is not, whether a lossy reader read them or not (so is a topic no group
 *   reads yet). The lossy reader then skips them: it counts them and says so in the log.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../log.ts';
import { retryDelayMs, SliceAccumulator } from './accumulator.ts';
import { consumerLag, ingestLastCommit, logMessagesSkipped } from '../../metrics/registry.ts';
import {
  nextOffset,
  type BatchProcessor,
  type EventLog,
  type LogConsumer,
  type LogConsumerOptions,
  type LogMessage,
  type LogProducer,
  type OutgoingMessage,
} from './types.ts';

interface Partition {
  /** Offset of messages[0]. */
  base: bigint;
  messages: LogMessage[];
  bytes: number[];
}

interface Topic {
  partitions: Partition[];
}

/** A consumer group that started on this log: what it reads, and whether it may miss messages. */
interface Group {
  topics: Set<string>;
  lossy: boolean;
}

export interface MemoryLogOptions {
  partitions: number;
  /**
   * The log never retains more than this many bytes (plus one append): producers wait while the bytes
   * durable groups have not committed exceed it, and other messages are dropped, oldest first, to stay under it.
   */
  maxRetainedBytes: number;
  log: Logger;
}

/** FNV-1a: a stable partitioner, so that one key always lands on one partition. */
function partitionOf(key: string | null, partitions: number, roundRobin: number): number {
  if (key === null) return roundRobin % partitions;
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index++) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/**
 * The first offset of every partition of a new log. The pipeline's deduplication tokens are built from
 * topic, partition and offsets; a store outlives the process (npm start again, or several publishing
 * commands on one DATA_DIR), so each log instance numbers its messages from its own epoch: a later run's
 * batches never reuse an earlier run's tokens (which the store would drop as duplicates). A million
 * offsets per millisecond apart, within Kafka's int64.
 */
let lastEpoch = 0n;
function nextEpoch(): bigint {
  const candidate = BigInt(Date.now()) * 1_000_000n;
  lastEpoch = candidate > lastEpoch ? candidate : lastEpoch + 1_000_000n;
  return lastEpoch;
}

class Signal {
  private waiters: (() => void)[] = [];
  wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

export class MemoryLog implements EventLog {
  readonly kind = 'memory' as const;
  private readonly topics = new Map<string, Topic>();
  /** group → topic → partition → next offset to read */
  private readonly commits = new Map<string, Map<string, Map<number, bigint>>>();
  /** The groups whose consumer started: only they hold messages back, and only on the topics they read. */
  private readonly groups = new Map<string, Group>();
  private retainedBytes = 0;
  private closed = false;
  private roundRobin = 0;
  /** Woken on every append (consumers wait for data). */
  readonly appended = new Signal();
  /** Woken on every trim and commit (producers wait for room: a commit may let them make some). */
  private readonly trimmed = new Signal();
  /** Woken on every commit (waiting for a group to drain). */
  private readonly committedSignal = new Signal();

  /** See nextEpoch. */
  private readonly epoch = nextEpoch();

  constructor(private readonly options: MemoryLogOptions) {}

  private topic(name: string): Topic {
    let topic = this.topics.get(name);
    if (!topic) {
      topic = {
        partitions: Array.from({ length: this.options.partitions }, () => ({
          base: this.epoch,
          messages: [],
          bytes: [],
        })),
      };
      this.topics.set(name, topic);
    }
    return topic;
  }

  /** Bytes the log holds now (never above `maxRetainedBytes` plus one append). */
  get retained(): number {
    return this.retainedBytes;
  }

  async append(topicName: string, messages: readonly OutgoingMessage[]): Promise<void> {
    // Room first from what no durable group needs; then wait for their commits (a closed log waits for nothing).
    while (!this.closed && this.retainedBytes > this.options.maxRetainedBytes) {
      this.makeRoom();
      if (this.retainedBytes <= this.options.maxRetainedBytes) break;
      await this.trimmed.wait();
    }
    const topic = this.topic(topicName);
    for (const message of messages) {
      const partition = topic.partitions[partitionOf(message.key, topic.partitions.length, this.roundRobin++)]!;
      const value = typeof message.value === 'string' ? Buffer.from(message.value) : message.value;
      const offset = partition.base + BigInt(partition.messages.length);
      partition.messages.push({
        offset: offset.toString(),
        key: message.key === null ? null : Buffer.from(message.key),
        value,
        headers: { ...message.headers },
      });
      const size = value.length + (message.key?.length ?? 0) + 64;
      partition.bytes.push(size);
      this.retainedBytes += size;
    }
    this.appended.notify();
  }

  /** Messages of one partition from an offset on, up to `maxBytes`. */
  fetchFrom(topicName: string, partitionIndex: number, from: bigint, maxBytes: number): LogMessage[] {
    const partition = this.topic(topicName).partitions[partitionIndex];
    if (!partition) return [];
    let start = Number(from - partition.base);
    if (start < 0) start = 0;
    const out: LogMessage[] = [];
    let bytes = 0;
    for (let index = start; index < partition.messages.length; index++) {
      bytes += partition.bytes[index]!;
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(partition.messages[index]!);
    }
    return out;
  }

  /** The first offset a partition still holds (what is before it was dropped). */
  startOffset(topicName: string, partitionIndex: number): bigint {
    return this.topic(topicName).partitions[partitionIndex]?.base ?? this.epoch;
  }

  /** The next offset a producer would get on a partition (its high watermark). */
  endOffset(topicName: string, partitionIndex: number): bigint {
    const partition = this.topic(topicName).partitions[partitionIndex];
    return partition ? partition.base + BigInt(partition.messages.length) : 0n;
  }

  partitionCount(topicName: string): number {
    return this.topic(topicName).partitions.length;
  }

  /**
   * A consumer of the group starts on these topics: from now on the group holds back what it has not
   * committed of them (a durable group), or only reads what is there (a lossy one).
   */
  join(groupId: string, topics: readonly string[], lossy: boolean): void {
    const group = this.groups.get(groupId);
    if (group) {
      for (const topic of topics) group.topics.add(topic);
      group.lossy &&= lossy;
    } else {
      this.groups.set(groupId, { topics: new Set(topics), lossy });
    }
  }

  /**
   * A lossy group's consumer stopped: the group and its offsets are forgotten (it has no past to resume
   * from), and what it alone held is dropped. A durable group never leaves: its offsets outlive its
   * consumer, like Kafka's, and keep holding what it has not read.
   */
  leave(groupId: string): void {
    const group = this.groups.get(groupId);
    if (!group?.lossy) return;
    this.groups.delete(groupId);
    this.commits.delete(groupId);
    for (const topicName of group.topics) {
      const topic = this.topics.get(topicName);
      if (topic) for (let index = 0; index < topic.partitions.length; index++) this.trim(topicName, index);
    }
  }

  committed(groupId: string, topicName: string, partition: number): bigint {
    return this.commits.get(groupId)?.get(topicName)?.get(partition) ?? this.epoch;
  }

  hasCommitted(groupId: string, topicName: string, partition: number): boolean {
    return this.commits.get(groupId)?.get(topicName)?.has(partition) ?? false;
  }

  commit(groupId: string, topicName: string, partitionIndex: number, nextOffset: bigint): void {
    let group = this.commits.get(groupId);
    if (!group) this.commits.set(groupId, (group = new Map()));
    let topic = group.get(topicName);
    if (!topic) group.set(topicName, (topic = new Map()));
    topic.set(partitionIndex, nextOffset);
    this.trim(topicName, partitionIndex);
    this.trimmed.notify();
    this.committedSignal.notify();
  }

  /** Resolves once the group has committed everything appended to these topics so far. */
  async drained(groupId: string, topics: readonly string[]): Promise<void> {
    for (;;) {
      const next = this.committedSignal.wait();
      const behind = topics.some((name) =>
        this.topic(name).partitions.some(
          (partition, index) =>
            this.committed(groupId, name, index) < partition.base + BigInt(partition.messages.length),
        ),
      );
      if (!behind) return;
      await next;
    }
  }

  /**
   * Resolves once the group has committed everything appended to these topics up to now. Unlike
   * `drained`, later appends do not move the target (a live producer cannot keep it from resolving).
   */
  async committedThroughNow(groupId: string, topics: readonly string[]): Promise<void> {
    const targets = topics.flatMap((name) =>
      this.topic(name).partitions.map((partition, index) => ({
        name,
        index,
        end: partition.base + BigInt(partition.messages.length),
      })),
    );
    for (;;) {
      const next = this.committedSignal.wait();
      if (targets.every(({ name, index, end }) => this.committed(groupId, name, index) >= end)) return;
      await next;
    }
  }

  /** Drops what every group reading the topic has committed (nothing while no group reads it). */
  private trim(topicName: string, partitionIndex: number): void {
    const partition = this.topic(topicName).partitions[partitionIndex];
    if (!partition) return;
    let lowest: bigint | undefined;
    for (const [groupId, group] of this.groups) {
      if (!group.topics.has(topicName)) continue;
      const next = this.committed(groupId, topicName, partitionIndex);
      if (lowest === undefined || next < lowest) lowest = next;
    }
    if (lowest !== undefined) this.dropBefore(partition, lowest);
  }

  /** The first offset of a partition that a durable group reading the topic has not committed (its end if none). */
  private heldFrom(topicName: string, partitionIndex: number, partition: Partition): bigint {
    let held = partition.base + BigInt(partition.messages.length);
    for (const [groupId, group] of this.groups) {
      if (group.lossy || !group.topics.has(topicName)) continue;
      const next = this.committed(groupId, topicName, partitionIndex);
      if (next < held) held = next;
    }
    return held;
  }

  /**
   * Over the bound: drops the oldest messages no durable group holds (a lossy reader's unread ones, a
   * topic nobody reads), partition by partition, until the log is back under its bound or only held
   * messages are left.
   */
  private makeRoom(): void {
    const bound = this.options.maxRetainedBytes;
    for (const [topicName, topic] of this.topics) {
      for (let index = 0; index < topic.partitions.length; index++) {
        if (this.retainedBytes <= bound) return;
        const partition = topic.partitions[index]!;
        const held = this.heldFrom(topicName, index, partition);
        let until = partition.base;
        let freed = 0;
        for (let at = 0; until < held && this.retainedBytes - freed > bound; at++, until++)
          freed += partition.bytes[at]!;
        this.dropBefore(partition, until);
      }
    }
  }

  private dropBefore(partition: Partition, offset: bigint): void {
    const drop = Number(offset - partition.base);
    if (drop <= 0) return;
    partition.messages.splice(0, drop);
    for (const size of partition.bytes.splice(0, drop)) this.retainedBytes -= size;
    partition.base = offset;
    this.trimmed.notify();
  }

  async producer(): Promise<LogProducer> {
    return {
      send: (topic, messages) => this.append(topic, messages),
      close: async () => {},
    };
  }

  consumer(options: LogConsumerOptions): LogConsumer {
    return new MemoryConsumer(this, options, this.options.log.child({ name: 'memory-consumer' }));
  }

  async endOffsets(topics: readonly string[]): Promise<Map<string, Map<number, bigint>>> {
    return new Map(
      topics.map((name) => [
        name,
        new Map(
          this.topic(name).partitions.map((partition, index) => [
            index,
            partition.base + BigInt(partition.messages.length),
          ]),
        ),
      ]),
    );
  }

  async committedOffsets(groupId: string, topics: readonly string[]): Promise<Map<string, Map<number, bigint>>> {
    return new Map(
      topics.map((name) => [
        name,
        new Map(this.topic(name).partitions.map((_, index) => [index, this.committed(groupId, name, index)])),
      ]),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    this.appended.notify();
    this.trimmed.notify();
    this.committedSignal.notify();
  }
}

/** A lossy reader that keeps falling behind says so at most this often (with the count since the last line). */
const SKIP_REPORT_INTERVAL_MS = 10_000;

class MemoryConsumer implements LogConsumer {
  private running = false;
  private loop: Promise<void> | undefined;
  private accumulator: SliceAccumulator<unknown> | undefined;
  /** Failed writes since the last successful one: the pause before reading again grows with it. */
  private consecutiveFailures = 0;
  /** Skipped messages not reported yet, and when the last report went out (at most one line per interval). */
  private skippedSinceReport = 0n;
  private lastSkipReport = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly memoryLog: MemoryLog,
    private readonly options: LogConsumerOptions,
    private readonly log: Logger,
  ) {}

  async start<Prepared>(topics: readonly string[], processor: BatchProcessor<Prepared>): Promise<void> {
    this.running = true;
    const groupId = this.options.groupId;
    // Register the group at once, so that it holds back what it has not read from now on. A new group
    // that does not read from the beginning starts at the end, as Kafka's `latest` does.
    this.memoryLog.join(groupId, topics, this.options.lossy === true);
    for (const topic of topics) {
      for (let partition = 0; partition < this.memoryLog.partitionCount(topic); partition++) {
        const start =
          this.options.fromBeginning || this.memoryLog.hasCommitted(groupId, topic, partition)
            ? this.memoryLog.committed(groupId, topic, partition)
            : this.memoryLog.endOffset(topic, partition);
        this.memoryLog.commit(groupId, topic, partition, start);
      }
    }
    const accumulator = new SliceAccumulator<Prepared>(
      processor,
      async (ranges) => {
        for (const range of ranges) {
          const next = BigInt(nextOffset(range));
          this.memoryLog.commit(groupId, range.topic, range.partition, next);
          if (this.options.reportsProgress === false) continue;
          const lag = this.memoryLog.endOffset(range.topic, range.partition) - next;
          consumerLag.set({ topic: range.topic, partition: String(range.partition) }, Number(lag > 0n ? lag : 0n));
        }
        if (this.options.reportsProgress !== false) ingestLastCommit.setToCurrentTime();
        this.consecutiveFailures = 0;
      },
      this.options,
      this.log,
      // Wake the loop, which then rewinds to the committed offsets.
      () => this.memoryLog.appended.notify(),
    );
    this.accumulator = accumulator as SliceAccumulator<unknown>;
    this.loop = this.consume(topics, accumulator);
  }

  private async consume<Prepared>(topics: readonly string[], accumulator: SliceAccumulator<Prepared>): Promise<void> {
    const groupId = this.options.groupId;
    /** Next offset to fetch per topic-partition: ahead of the committed one while a write is pending. */
    const position = new Map<string, bigint>();
    while (this.running) {
      if (accumulator.failed) {
        // Start again from the committed offsets, after a pause that grows with repeated failures.
        this.consecutiveFailures += 1;
        const delayMs = retryDelayMs(this.consecutiveFailures);
        this.log.warn(
          { failures: this.consecutiveFailures, retryInMs: delayMs },
          'reading again from the committed offsets',
        );
        await sleep(delayMs);
        await accumulator.reset();
        position.clear();
        continue;
      }
      const woken = this.memoryLog.appended.wait();
      let fetched = 0;
      for (const topic of topics) {
        for (let partition = 0; partition < this.memoryLog.partitionCount(topic) && this.running; partition++) {
          const key = `${topic}|${partition}`;
          let from = position.get(key) ?? this.memoryLog.committed(groupId, topic, partition);
          const start = this.memoryLog.startOffset(topic, partition);
          if (from < start) {
            // A lossy group fell behind what the log holds (a durable one holds it back; a new one that
            // reads from the beginning starts where the log does, with nothing missed since it joined).
            if (this.options.lossy === true) this.skipped(topic, start - from);
            from = start;
          }
          const messages = this.memoryLog.fetchFrom(topic, partition, from, this.options.maxBytesPerPartition);
          if (messages.length === 0) continue;
          if (!(await accumulator.add({ topic, partition, messages }))) break;
          fetched += messages.length;
          position.set(key, BigInt(messages[messages.length - 1]!.offset) + 1n);
        }
      }
      if (fetched === 0 && this.running && !accumulator.failed) await woken;
    }
  }

  /** Messages a lossy reader never got: the log dropped them to stay within its bound before it read them. */
  private skipped(topic: string, count: bigint): void {
    logMessagesSkipped.inc({ topic }, Number(count));
    this.skippedSinceReport += count;
    const now = Date.now();
    if (now - this.lastSkipReport < SKIP_REPORT_INTERVAL_MS) return;
    this.log.warn(
      { groupId: this.options.groupId, skipped: Number(this.skippedSinceReport), topic },
      'a lossy reader fell behind the log by more than its bound: skipped messages it had not read',
    );
    this.skippedSinceReport = 0n;
    this.lastSkipReport = now;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.memoryLog.appended.notify();
    await this.loop;
    await this.accumulator
      ?.close()
      .catch((error: unknown) => this.log.warn({ err: error }, 'final write failed; it will be read again'));
    this.memoryLog.leave(this.options.groupId);
  }
}
