/**
 * The ingest worker: a consumer-group member that feeds every topic of the contract through the
 * pipeline. Several workers in one group share the partitions; each partition's offsets are committed
 * only after its batch reached ClickHouse.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { KafkaLog } from './bus/kafka.ts';
import { MemoryLog } from './bus/memory.ts';
import type { EventLog, LogConsumer, LogProducer } from './bus/types.ts';
import { TopicNames } from './contract/topics.ts';
import { IngestPipeline } from './pipeline.ts';
import { RollupRefresher } from './rollup-refresher.ts';
import { changeFeedOf } from '../projections/changes.ts';

/** The configured log: Kafka when brokers are set, otherwise the in-process log. */
export function openEventLog(config: Config, log: Logger): EventLog {
  if (config.kafka.brokers && config.kafka.brokers.length > 0) {
    return new KafkaLog({ brokers: config.kafka.brokers, clientId: config.kafka.clientId, log });
  }
  return new MemoryLog({ partitions: 4, maxRetainedBytes: 64 * 1024 * 1024, log });
}

export interface IngestWorker {
  readonly pipeline: IngestPipeline;
  /** Recomputes rollups behind the pipeline; `settled()` resolves when it has caught up. */
  readonly rollups: RollupRefresher;
  /** Drains the batch in flight, commits it, and leaves the group. */
  stop(): Promise<void>;
}

export interface IngestWorkerOptions {
  config: Config;
  eventLog: EventLog;
  store: Store;
  log: Logger;
  /** Overrides the configured group id (tests run several groups on one cluster). */
  groupId?: string;
}

export async function startIngestWorker(options: IngestWorkerOptions): Promise<IngestWorker> {
  const { config, eventLog, store } = options;
  const log = options.log.child({ name: 'ingest' });
  const topics = new TopicNames(config.kafka.topicPrefix);
  const deadLetterProducer: LogProducer = await eventLog.producer();
  // The API of this process keeps answers about traders until this worker says their data changed.
  const changes = changeFeedOf(store.database);
  const stopReporting = changes.report();
  const rollups = new RollupRefresher({
    store,
    changes,
    log: log.child({ name: 'rollups' }),
    intervalMs: config.ingest.rollupIntervalMs,
    orphanAfterSeconds: config.ingest.rollupOrphanAfterSeconds,
    settings: {
      burstGapSeconds: config.whales.burstGapSeconds,
      exactAboveUsd: config.whales.exactAboveUsd,
    },
  });
  rollups.start();
  const pipeline = new IngestPipeline({
    store,
    topics,
    deadLetterProducer,
    log,
    writeRetries: config.ingest.writeRetries,
    retryBaseMs: config.ingest.retryBaseMs,
    rollups,
    changes,
  });
  const consumer: LogConsumer = eventLog.consumer({
    groupId: options.groupId ?? config.kafka.groupId,
    fromBeginning: true,
    maxBytesPerPartition: config.ingest.maxBytesPerPartition,
    maxBytes: config.ingest.maxBytes,
    partitionsConsumedConcurrently: config.ingest.partitionsConsumedConcurrently,
    fetchMaxWaitMs: config.ingest.fetchMaxWaitMs,
    maxBatchMessages: config.ingest.maxBatchMessages,
    maxBatchBytes: config.ingest.maxBatchBytes,
    lingerMs: config.ingest.lingerMs,
    eagerBatchMessages: config.ingest.eagerBatchMessages,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    heartbeatIntervalMs: config.kafka.heartbeatIntervalMs,
  });
  try {
    await consumer.start(topics.all(), pipeline);
  } catch (error) {
    stopReporting();
    await rollups.stop();
    throw error;
  }
  log.info(
    { topics: topics.all().length, groupId: options.groupId ?? config.kafka.groupId, log: eventLog.kind },
    'ingest worker started',
  );
  return {
    pipeline,
    rollups,
    async stop() {
      await consumer.stop();
      await rollups.stop();
      stopReporting();
      await deadLetterProducer.close();
      log.info({ stats: pipeline.stats }, 'ingest worker stopped');
    },
  };
}
