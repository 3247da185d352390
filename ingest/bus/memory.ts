/**
 * An in-process event log with Kafka's semantics where the pipeline relies on them: partitions chosen by
 * key, offsets, consumer-group commits, redelivery of an uncommitted batch after a failure. The
 * embedded mode (`npm start` with no KAFKA_BROKERS) runs the simulator, replay and import through it.
 *
 * Memory stays bounded: committed messages are dropped, and producers wait while the retained backlog
 * is above `maxRetainedBytes` (backpressure, not buffering).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../log.ts';
import { retryDelayMs, SliceAccumulator } from './accumulator.ts';
import { consumerLag, ingestLastCommit } from '../../metrics/registry.ts';
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

export interface MemoryLogOptions {
  partitions: number;
  /** Producers wait while more than this many bytes are retained (uncommitted) in the log. */
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
  private retainedBytes = 0;
  private roundRobin = 0;
  /** Woken on every append (consumers wait for data). */
  readonly appended = new Signal();
  /** Woken on every trim (producers wait for room). */
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

  async append(topicName: string, messages: readonly OutgoingMessage[]): Promise<void> {
    while (this.retainedBytes > this.options.maxRetainedBytes && this.commits.size > 0) {
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

  /** The next offset a producer would get on a partition (its high watermark). */
  endOffset(topicName: string, partitionIndex: number): bigint {
    const partition = this.topic(topicName).partitions[partitionIndex];
    return partition ? partition.base + BigInt(partition.messages.length) : 0n;
  }

  partitionCount(topicName: string): number {
    return this.topic(topicName).partitions.length;
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

  /** Drops messages every group has committed. */
  private trim(topicName: string, partitionIndex: number): void {
    const partition = this.topic(topicName).partitions[partitionIndex];
    if (!partition) return;
    let lowest: bigint | undefined;
    for (const group of this.commits.values()) {
      const next = group.get(topicName)?.get(partitionIndex) ?? this.epoch;
      if (lowest === undefined || next < lowest) lowest = next;
    }
    if (lowest === undefined) return;
    const drop = Number(lowest - partition.base);
    if (drop <= 0) return;
    partition.messages.splice(0, drop);
    for (const size of partition.bytes.splice(0, drop)) this.retainedBytes -= size;
    partition.base = lowest;
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
    this.appended.notify();
    this.trimmed.notify();
    this.committedSignal.notify();
  }
}

class MemoryConsumer implements LogConsumer {
  private running = false;
  private loop: Promise<void> | undefined;
  private accumulator: SliceAccumulator<unknown> | undefined;
  /** Failed writes since the last successful one: the pause before reading again grows with it. */
  private consecutiveFailures = 0;

  constructor(
    private readonly memoryLog: MemoryLog,
    private readonly options: LogConsumerOptions,
    private readonly log: Logger,
  ) {}

  async start<Prepared>(topics: readonly string[], processor: BatchProcessor<Prepared>): Promise<void> {
    this.running = true;
    const groupId = this.options.groupId;
    // Register the group at once, so that producers see a consumer and apply backpressure. A new group
    // that does not read from the beginning starts at the end, as Kafka's `latest` does.
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
          const from = position.get(key) ?? this.memoryLog.committed(groupId, topic, partition);
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

  async stop(): Promise<void> {
    this.running = false;
    this.memoryLog.appended.notify();
    await this.loop;
    await this.accumulator
      ?.close()
      .catch((error: unknown) => this.log.warn({ err: error }, 'final write failed; it will be read again'));
  }
}
