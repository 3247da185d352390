/**
 * The event log on Kafka, through kafkajs. Offsets are resolved and committed only after the handler
 * (the ClickHouse write) resolved: `eachBatchAutoResolve: false`, `autoCommit: false`.
 */
import {
  Kafka,
  logLevel as kafkaLogLevel,
  Partitioners,
  type Consumer,
  type ConsumerRunConfig,
  type Producer,
  type LogEntry,
} from 'kafkajs';
import type { Logger } from '../../log.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { retryDelayMs, SliceAccumulator } from './accumulator.ts';
import { consumerLag, ingestLastCommit } from '../../metrics/registry.ts';
import {
  commitOffsetsOf,
  type BatchProcessor,
  type EventLog,
  type LogConsumer,
  type LogConsumerOptions,
  type LogProducer,
  type OutgoingMessage,
  type PartitionSlice,
} from './types.ts';

export interface KafkaLogOptions {
  brokers: string[];
  clientId: string;
  log: Logger;
}

function kafkaLogCreator(log: Logger) {
  const child = log.child({ name: 'kafkajs' });
  return () =>
    ({ level, log: entry }: LogEntry) => {
      const { message, ...context } = entry;
      // kafkajs reports recoverable protocol conditions (rebalances, retried requests) at ERROR; the
      // client retries them itself, so they are warnings for us. Failures that matter surface as
      // rejected calls and are logged where they are handled.
      if (level === kafkaLogLevel.ERROR || level === kafkaLogLevel.WARN) child.warn(context, message);
      else if (level === kafkaLogLevel.INFO) child.debug(context, message);
    };
}

function toHeaders(
  headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name] = first.toString();
  }
  return out;
}

class KafkaProducer implements LogProducer {
  constructor(private readonly producer: Producer) {}

  async send(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.producer.send({
      topic,
      acks: -1,
      messages: messages.map((message) => ({
        key: message.key,
        value: message.value,
        ...(message.headers ? { headers: message.headers } : {}),
      })),
    });
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}

/** One consumer-group member (KafkaLog.consumer); exported for its unit test, which drives it with a fake kafkajs. */
export class KafkaConsumer implements LogConsumer {
  private consumer: Consumer | undefined;
  private accumulator: SliceAccumulator<unknown> | undefined;
  private runConfig: ConsumerRunConfig | undefined;
  private stopping = false;
  /** Ends the pause before a restart when the consumer stops. */
  private readonly stopped = new AbortController();
  /** The consumer's restarts, one after another (recover). */
  private restarting: Promise<void> = Promise.resolve();
  /** A restart is queued and has not begun: a failure reported meanwhile is handled by it. */
  private restartQueued = false;
  /** Failed writes and crashes since the last successful commit: the pause before reading again grows with it. */
  private consecutiveFailures = 0;
  /** Per `topic|partition` of the assignment: the high watermark of the last fetch and the next offset to commit. */
  private readonly positions = new Map<string, { highWatermark: bigint; committed: bigint | undefined }>();

  /** Lag = high watermark − committed offset (before a first commit, the fetch position stands in). */
  private trackLag(
    topic: string,
    partition: number,
    highWatermark: bigint | undefined,
    committed: bigint | undefined,
  ): void {
    if (this.options.reportsProgress === false) return;
    const key = `${topic}|${partition}`;
    const position = this.positions.get(key) ?? { highWatermark: 0n, committed: undefined };
    if (highWatermark !== undefined) position.highWatermark = highWatermark;
    if (committed !== undefined) position.committed = committed;
    this.positions.set(key, position);
    const lag = position.committed === undefined ? 0n : position.highWatermark - position.committed;
    consumerLag.set({ topic, partition: String(partition) }, Number(lag > 0n ? lag : 0n));
  }

  constructor(
    private readonly kafka: Kafka,
    private readonly options: LogConsumerOptions,
    private readonly log: Logger,
  ) {}

  async start<Prepared>(topics: readonly string[], processor: BatchProcessor<Prepared>): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: this.options.groupId,
      maxBytesPerPartition: this.options.maxBytesPerPartition,
      maxBytes: this.options.maxBytes,
      ...(this.options.fetchMaxWaitMs ? { maxWaitTimeInMs: this.options.fetchMaxWaitMs } : {}),
      allowAutoTopicCreation: true,
      ...(this.options.sessionTimeoutMs
        ? { sessionTimeout: this.options.sessionTimeoutMs, rebalanceTimeout: this.options.sessionTimeoutMs }
        : {}),
      ...(this.options.heartbeatIntervalMs ? { heartbeatInterval: this.options.heartbeatIntervalMs } : {}),
      // Should kafkajs itself crash (a broker error), it restarts from the committed offsets.
      retry: { retries: 8, initialRetryTime: 300, restartOnFailure: async () => true },
    });
    this.consumer = consumer;
    const accumulator = new SliceAccumulator<Prepared>(
      processor,
      async (ranges) => {
        const offsets = commitOffsetsOf(ranges);
        await consumer.commitOffsets(offsets);
        this.consecutiveFailures = 0;
        if (this.options.reportsProgress !== false) ingestLastCommit.setToCurrentTime();
        for (const offset of offsets) this.trackLag(offset.topic, offset.partition, undefined, BigInt(offset.offset));
        for (const offset of offsets) this.log.debug(offset, 'offsets committed');
      },
      this.options,
      this.log,
      () => void this.recover('write'),
    );
    this.accumulator = accumulator as SliceAccumulator<unknown>;

    // Every (re)join starts a new generation: what was prepared but not written is dropped and read
    // again from the committed offsets, which is where kafkajs resumes fetching after a join.
    let joinedOnce: () => void = () => {};
    const joined = new Promise<void>((resolve) => (joinedOnce = resolve));
    consumer.on(consumer.events.GROUP_JOIN, () => {
      // A new assignment: partitions now read by another member must not keep reporting lag here.
      this.positions.clear();
      if (this.options.reportsProgress !== false) consumerLag.reset();
      void accumulator.reset().then(() => joinedOnce());
    });
    // kafkajs starts a crashed consumer again itself only after an error it deems retriable. After any
    // other (the librdkafka mock brokers answer a rejoin's SyncGroup with INVALID_REQUEST now and then;
    // a real cluster has its own non-retriable answers) it has disconnected the consumer and stops there:
    // the worker would run on, consuming nothing, and a worker still joining would never finish starting.
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart || this.stopping) return;
      this.log.error({ err: payload.error }, 'the consumer crashed on an error kafkajs does not retry');
      void this.recover('crash');
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [...topics], fromBeginning: this.options.fromBeginning });
    this.runConfig = {
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.options.partitionsConsumedConcurrently,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        if (this.stopping || !isRunning() || isStale()) return;
        const committed = this.positions.get(`${batch.topic}|${batch.partition}`)?.committed;
        this.trackLag(
          batch.topic,
          batch.partition,
          BigInt(batch.highWatermark),
          committed ?? (batch.messages.length > 0 ? BigInt(batch.firstOffset()!) : BigInt(batch.highWatermark)),
        );
        if (batch.messages.length === 0) return;
        const slice: PartitionSlice = {
          topic: batch.topic,
          partition: batch.partition,
          messages: batch.messages.map((message) => ({
            offset: message.offset,
            key: message.key,
            value: message.value,
            headers: toHeaders(message.headers),
          })),
        };
        // Waits while the batch is full. A refused slice (a write failed) is not resolved: the
        // consumer is about to restart from the committed offsets.
        if (!(await accumulator.add(slice, () => !this.stopping && isRunning() && !isStale()))) return;
        // Resolving moves the fetch position only: with autoCommit off, kafkajs commits nothing itself.
        resolveOffset(batch.lastOffset());
        await heartbeat();
      },
    };
    await consumer.run(this.runConfig);
    await joined;
    this.log.info({ groupId: this.options.groupId, topics: topics.length }, 'consumer joined its group');
  }

  /**
   * After a failed write, or a crash kafkajs does not recover from: pause (longer after each failure in a
   * row), then stop the consumer, connect it (a crashed one was disconnected; a connected one stays as it
   * is) and run it again, so that it rejoins its group and reads from the committed offsets (a rejoin
   * resets the accumulator). One restart at a time: a crash during a restart's run queues another one
   * after it, and a restart that fails queues the next.
   */
  private recover(cause: 'write' | 'crash'): Promise<void> {
    if (this.restartQueued) return this.restarting;
    this.restartQueued = true;
    this.restarting = this.restarting.then(async () => {
      this.restartQueued = false;
      if (this.stopping) return;
      this.consecutiveFailures += 1;
      const delayMs = retryDelayMs(this.consecutiveFailures);
      this.log.warn(
        { cause, failures: this.consecutiveFailures, retryInMs: delayMs },
        'restarting the consumer from the committed offsets',
      );
      try {
        await sleep(delayMs, undefined, { signal: this.stopped.signal });
        const consumer = this.consumer;
        if (!consumer || this.stopping || !this.runConfig) return;
        await consumer.stop();
        await this.accumulator?.reset();
        await consumer.connect();
        await consumer.run(this.runConfig);
      } catch (error) {
        if (this.stopping) return;
        this.log.error({ err: error }, 'consumer restart failed; trying again');
        void this.recover(cause);
      }
    });
    return this.restarting;
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    this.stopping = true;
    this.stopped.abort();
    await this.restarting;
    this.consumer = undefined;
    // Write and commit what is held, then leave (disconnect waits for a batch handler in flight).
    await this.accumulator
      ?.close()
      .catch((error: unknown) => this.log.warn({ err: error }, 'final write failed; it will be read again'));
    await consumer.disconnect();
  }
}

export class KafkaLog implements EventLog {
  readonly kind = 'kafka' as const;
  private readonly kafka: Kafka;
  private readonly producers: KafkaProducer[] = [];

  constructor(private readonly options: KafkaLogOptions) {
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: kafkaLogLevel.WARN,
      logCreator: kafkaLogCreator(options.log),
      retry: { retries: 8 },
    });
  }

  async producer(): Promise<LogProducer> {
    const producer = this.kafka.producer({
      allowAutoTopicCreation: true,
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 8 },
    });
    await producer.connect();
    const wrapped = new KafkaProducer(producer);
    this.producers.push(wrapped);
    return wrapped;
  }

  consumer(options: LogConsumerOptions): LogConsumer {
    return new KafkaConsumer(this.kafka, options, this.options.log.child({ name: 'consumer' }));
  }

  private async withAdmin<T>(work: (admin: ReturnType<Kafka['admin']>) => Promise<T>): Promise<T> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      return await work(admin);
    } finally {
      await admin.disconnect();
    }
  }

  async endOffsets(topics: readonly string[]): Promise<Map<string, Map<number, bigint>>> {
    return this.withAdmin(async (admin) => {
      const out = new Map<string, Map<number, bigint>>();
      for (const topic of topics) {
        const offsets = await admin.fetchTopicOffsets(topic);
        out.set(topic, new Map(offsets.map((entry) => [entry.partition, BigInt(entry.high)])));
      }
      return out;
    });
  }

  async committedOffsets(groupId: string, topics: readonly string[]): Promise<Map<string, Map<number, bigint>>> {
    return this.withAdmin(async (admin) => {
      const out = new Map<string, Map<number, bigint>>();
      const committed = await admin.fetchOffsets({ groupId, topics: [...topics] });
      for (const { topic, partitions } of committed) {
        // -1 means nothing committed yet: the group would start at the partition's low watermark.
        const lows = new Map(
          (await admin.fetchTopicOffsets(topic)).map((entry) => [entry.partition, BigInt(entry.low)]),
        );
        out.set(
          topic,
          new Map(
            partitions.map((entry) => [
              entry.partition,
              entry.offset === '-1' ? (lows.get(entry.partition) ?? 0n) : BigInt(entry.offset),
            ]),
          ),
        );
      }
      return out;
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.producers.splice(0).map((producer) => producer.close()));
  }
}
