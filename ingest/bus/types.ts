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

export interface MessageBatch {
  topic: string;
  partition: number;
  /** In offset order; never empty. */
  messages: LogMessage[];
}

/**
 * Processes one batch durably. When it resolves, the batch's offsets are committed; when it rejects,
 * nothing is committed and the batch is delivered again.
 */
export type BatchHandler = (batch: MessageBatch) => Promise<void>;

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
  /** Starts consuming; resolves once the consumer has joined and is running. */
  start(topics: readonly string[], handler: BatchHandler): Promise<void>;
  /** Stops fetching, lets the in-flight batch finish (and commit), then leaves the group. */
  stop(): Promise<void>;
}

export interface LogConsumerOptions {
  groupId: string;
  /** Read topics from their beginning when the group has no committed offset. */
  fromBeginning: boolean;
  maxBytesPerPartition: number;
  maxBytes: number;
  partitionsConsumedConcurrently: number;
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
