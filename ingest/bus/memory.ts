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
import type { BatchHandler, EventLog, LogConsumer, LogConsumerOptions, LogMessage, LogProducer, OutgoingMessage } from './types.ts';

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

  constructor(private readonly options: MemoryLogOptions) {}

  private topic(name: string): Topic {
    let topic = this.topics.get(name);
    if (!topic) {
      topic = {
        partitions: Array.from({ length: this.options.partitions }, () => ({ base: 0n, messages: [], bytes: [] })),
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

  /** Next uncommitted messages of one partition for a group, up to `maxBytes`. */
  fetch(groupId: string, topicName: string, partitionIndex: number, maxBytes: number): LogMessage[] {
    const partition = this.topic(topicName).partitions[partitionIndex];
    if (!partition) return [];
    const next = this.committed(groupId, topicName, partitionIndex);
    let start = Number(next - partition.base);
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

  partitionCount(topicName: string): number {
    return this.topic(topicName).partitions.length;
  }

  committed(groupId: string, topicName: string, partition: number): bigint {
    return this.commits.get(groupId)?.get(topicName)?.get(partition) ?? 0n;
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
          (partition, index) => this.committed(groupId, name, index) < partition.base + BigInt(partition.messages.length),
        ),
      );
      if (!behind) return;
      await next;
    }
  }

  /** Drops messages every group has committed. */
  private trim(topicName: string, partitionIndex: number): void {
    const partition = this.topic(topicName).partitions[partitionIndex];
    if (!partition) return;
    let lowest: bigint | undefined;
    for (const group of this.commits.values()) {
      const next = group.get(topicName)?.get(partitionIndex) ?? 0n;
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
        new Map(this.topic(name).partitions.map((partition, index) => [index, partition.base + BigInt(partition.messages.length)])),
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

  constructor(
    private readonly memoryLog: MemoryLog,
    private readonly options: LogConsumerOptions,
    private readonly log: Logger,
  ) {}

  async start(topics: readonly string[], handler: BatchHandler): Promise<void> {
    this.running = true;
    // Register the group at once, so that producers see a consumer and apply backpressure.
    for (const topic of topics) {
      for (let partition = 0; partition < this.memoryLog.partitionCount(topic); partition++) {
        this.memoryLog.commit(this.options.groupId, topic, partition, this.memoryLog.committed(this.options.groupId, topic, partition));
      }
    }
    this.loop = this.consume(topics, handler);
  }

  private async consume(topics: readonly string[], handler: BatchHandler): Promise<void> {
    let failures = 0;
    while (this.running) {
      const woken = this.memoryLog.appended.wait();
      const work: { topic: string; partition: number; messages: LogMessage[] }[] = [];
      for (const topic of topics) {
        for (let partition = 0; partition < this.memoryLog.partitionCount(topic); partition++) {
          const messages = this.memoryLog.fetch(this.options.groupId, topic, partition, this.options.maxBytesPerPartition);
          if (messages.length > 0) work.push({ topic, partition, messages });
        }
      }
      if (work.length === 0) {
        await woken;
        continue;
      }
      try {
        // Partitions are processed concurrently up to the configured bound, like kafkajs does.
        for (let start = 0; start < work.length && this.running; start += this.options.partitionsConsumedConcurrently) {
          await Promise.all(
            work.slice(start, start + this.options.partitionsConsumedConcurrently).map(async (batch) => {
              await handler(batch);
              const last = BigInt(batch.messages[batch.messages.length - 1]!.offset);
              this.memoryLog.commit(this.options.groupId, batch.topic, batch.partition, last + 1n);
            }),
          );
        }
        failures = 0;
      } catch (error) {
        failures += 1;
        const delayMs = Math.min(30_000, 250 * 2 ** Math.min(failures, 7));
        this.log.error({ err: error, failures, retryInMs: delayMs }, 'batch failed; it will be delivered again');
        await sleep(delayMs);
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.memoryLog.appended.notify();
    await this.loop;
  }
}
