/**
 * The event log on Kafka, through kafkajs. Offsets are resolved and committed only after the handler
 * (the ClickHouse write) resolved: `eachBatchAutoResolve: false`, `autoCommit: false`.
 */
import { Kafka, logLevel as kafkaLogLevel, Partitioners, type Consumer, type Producer, type LogEntry } from 'kafkajs';
import type { Logger } from '../../log.ts';
import type { BatchHandler, EventLog, LogConsumer, LogConsumerOptions, LogMessage, LogProducer, OutgoingMessage } from './types.ts';

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

function toHeaders(headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined): Record<string, string> {
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

class KafkaConsumer implements LogConsumer {
  private consumer: Consumer | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly options: LogConsumerOptions,
    private readonly log: Logger,
  ) {}

  async start(topics: readonly string[], handler: BatchHandler): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: this.options.groupId,
      maxBytesPerPartition: this.options.maxBytesPerPartition,
      maxBytes: this.options.maxBytes,
      allowAutoTopicCreation: true,
      ...(this.options.sessionTimeoutMs ? { sessionTimeout: this.options.sessionTimeoutMs, rebalanceTimeout: this.options.sessionTimeoutMs } : {}),
      ...(this.options.heartbeatIntervalMs ? { heartbeatInterval: this.options.heartbeatIntervalMs } : {}),
      // A crashed handler restarts the consumer from the last committed offset.
      retry: { retries: 8, initialRetryTime: 300, restartOnFailure: async () => true },
    });
    this.consumer = consumer;
    // start() resolves once this member has joined the group and holds its assignment.
    const joined = new Promise<void>((resolve) => {
      const remove = consumer.on(consumer.events.GROUP_JOIN, () => {
        remove();
        resolve();
      });
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [...topics], fromBeginning: this.options.fromBeginning });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.options.partitionsConsumedConcurrently,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        if (!isRunning() || isStale() || batch.messages.length === 0) return;
        const messages: LogMessage[] = batch.messages.map((message) => ({
          offset: message.offset,
          key: message.key,
          value: message.value,
          headers: toHeaders(message.headers),
        }));
        await handler({ topic: batch.topic, partition: batch.partition, messages });
        const lastOffset = messages[messages.length - 1]!.offset;
        resolveOffset(lastOffset);
        const next = (BigInt(lastOffset) + 1n).toString();
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }]);
        this.log.debug({ topic: batch.topic, partition: batch.partition, offset: next }, 'offsets committed');
        await heartbeat();
      },
    });
    await joined;
    this.log.info({ groupId: this.options.groupId, topics: topics.length }, 'consumer joined its group');
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = undefined;
    if (!consumer) return;
    // disconnect() stops the fetch loop and waits for the batch in flight to finish and commit.
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
        const lows = new Map((await admin.fetchTopicOffsets(topic)).map((entry) => [entry.partition, BigInt(entry.low)]));
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
