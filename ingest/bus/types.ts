/**
 * Our own small interface over the event log. kafkajs lives behind it (bus/kafka.ts), and so does the
 * in-process log of the embedded mode (bus/memory.ts); the pipeline, the sources and the tests only
 * see these types.
 */

export interface LogMessage {
  /** Offset within its partition, as a decimal string (Kafka offsets are 64-bit). */
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

/** Consecutive messages of one partition, in offset order; never empty. */
export interface PartitionSlice {
  topic: string;
  partition: number;
  messages: LogMessage[];
}

/** Where a slice sits in the log: what a write covers and what its commit advances. */
export interface SliceRange {
  topic: string;
  partition: number;
  firstOffset: string;
  lastOffset: string;
  messageCount: number;
}

/**
 * How a consumer hands messages over. `prepare` runs as each slice arrives (CPU work: decoding and
 * validating), so it overlaps with the previous write; `write` makes everything prepared since the last
 * write durable. Offsets are committed only after `write` resolved; when it rejects, nothing is
 * committed and the messages are delivered again.
 */
export interface BatchProcessor<Prepared> {
  prepare(slice: PartitionSlice): Prepared;
  write(prepared: Prepared[], ranges: SliceRange[]): Promise<void>;
  /** Called after the offsets of a write were committed. */
  committed?(prepared: Prepared[], ranges: SliceRange[]): void;
}

export interface OutgoingMessage {
  key: string | null;
  value: string | Buffer;
  headers?: Record<string, string>;
}

export interface LogProducer {
  /** Resolves once the log acknowledged every message (acks from all in-sync replicas on Kafka). */
  send(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  close(): Promise<void>;
}

export interface LogConsumer {
  /** Starts consuming; resolves once the consumer has joined its group and holds its assignment. */
  start<Prepared>(topics: readonly string[], processor: BatchProcessor<Prepared>): Promise<void>;
  /** Stops fetching, writes and commits what it holds, then leaves the group. */
  stop(): Promise<void>;
}

export interface LogConsumerOptions {
  groupId: string;
  /** Read topics from their beginning when the group has no committed offset (else from their end). */
  fromBeginning: boolean;
  /**
   * Whether this consumer's lag and commits are the ingest metrics (default true). A reader beside
   * ingest (the live plane, a group of its own) says false, so that it does not overwrite them.
   */
  reportsProgress?: boolean;
  /**
   * A reader that may miss messages rather than hold the pipeline (the live plane's best-effort feed).
   * On the in-process log it holds nothing back: what it falls behind by more than the log's bound is
   * dropped before it reads it, and it skips ahead, counting (`trader_analytics_log_skipped_messages_total`)
   * and logging what it missed (bus/memory.ts). Kafka's retention is the same thing there: the option
   * changes nothing on Kafka.
   */
  lossy?: boolean;
  /** Upper bound of one fetch per partition, and of all partitions together. */
  maxBytesPerPartition: number;
  maxBytes: number;
  partitionsConsumedConcurrently: number;
  /** How long a fetch waits at the broker for data (Kafka's fetch.max.wait.ms). */
  fetchMaxWaitMs?: number;
  /** A write happens when this many messages (or bytes) are prepared, or `lingerMs` after the first. */
  maxBatchMessages: number;
  maxBatchBytes: number;
  lingerMs: number;
  /** A batch this large is written as soon as the store is free, without lingering. */
  eagerBatchMessages?: number;
  /**
   * The most messages prepared in one synchronous step of a long fetch (default: the accumulator's
   * PREPARE_PART_MESSAGES, sized for decoding); a reader whose preparation is cheaper takes larger parts.
   */
  preparePartMessages?: number;
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
}

export interface EventLog {
  readonly kind: 'kafka' | 'memory';
  producer(): Promise<LogProducer>;
  consumer(options: LogConsumerOptions): LogConsumer;
  /** Offsets committed by a group, per topic and partition (the next offset to read). */
  committedOffsets(groupId: string, topics: readonly string[]): Promise<Map<string, Map<number, bigint>>>;
  /** Latest offsets (high watermarks) per topic and partition. */
  endOffsets(topics: readonly string[]): Promise<Map<string, Map<number, bigint>>>;
  close(): Promise<void>;
}

/** Messages a group still has to read, summed over topics and partitions. */
export async function consumerLag(log: EventLog, groupId: string, topics: readonly string[]): Promise<bigint> {
  const [ends, committed] = await Promise.all([log.endOffsets(topics), log.committedOffsets(groupId, topics)]);
  let lag = 0n;
  for (const [topic, partitions] of ends) {
    for (const [partition, end] of partitions) {
      const next = committed.get(topic)?.get(partition) ?? 0n;
      if (end > next) lag += end - next;
    }
  }
  return lag;
}

export function rangeOf(slice: PartitionSlice): SliceRange {
  return {
    topic: slice.topic,
    partition: slice.partition,
    firstOffset: slice.messages[0]!.offset,
    lastOffset: slice.messages[slice.messages.length - 1]!.offset,
    messageCount: slice.messages.length,
  };
}

/** The offset to commit after a range: the next one to read. */
export function nextOffset(range: SliceRange): string {
  return (BigInt(range.lastOffset) + 1n).toString();
}

/**
 * What to commit after a write of these ranges: one offset per partition, the furthest. A write holds
 * several slices of a partition (fetches, and the parts a long fetch is prepared in); a commit request
 * names each partition once.
 */
export function commitOffsetsOf(ranges: readonly SliceRange[]): { topic: string; partition: number; offset: string }[] {
  const furthest = new Map<string, { topic: string; partition: number; offset: string }>();
  for (const range of ranges) {
    const key = `${range.topic}|${range.partition}`;
    const offset = nextOffset(range);
    const known = furthest.get(key);
    if (!known || BigInt(offset) > BigInt(known.offset))
      furthest.set(key, { topic: range.topic, partition: range.partition, offset });
  }
  return [...furthest.values()];
}
