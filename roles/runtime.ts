/**
 * Wiring shared by the roles: opening the store (migrated), and giving a source somewhere to publish.
 * With Kafka configured, a source publishes to Kafka and ingest workers elsewhere consume it. Without
 * Kafka, the source publishes to the in-process log and an in-process worker ingests it into the store
 * before the command returns: `replay`, `import` and `simulate` work on a laptop with nothing installed.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { migrate } from '../projections/migrate.ts';
import { openStore, type Store } from '../projections/store.ts';
import { MemoryLog } from './bus/memory.ts';
import type { EventLog } from './bus/types.ts';
import { TopicNames } from './contract/topics.ts';
import { EventPublisher } from './publisher.ts';
import { openEventLog, startIngestWorker } from './worker.ts';

export async function openMigratedStore(config: Config, log: Logger): Promise<Store> {
  const store = await openStore(config.clickhouse);
  await migrate(store, log.child({ name: 'migrate' }));
  return store;
}

export interface PublishingContext {
  publisher: EventPublisher;
  eventLog: EventLog;
  topics: TopicNames;
}

/**
 * Runs `work` with a publisher. In the in-process mode, returns only after every published event is
 * in the store (the in-process worker drained the log).
 */
export async function withPublisher<T>(config: Config, log: Logger, work: (context: PublishingContext) => Promise<T>): Promise<T> {
  const eventLog = openEventLog(config, log);
  const topics = new TopicNames(config.kafka.topicPrefix);
  const producer = await eventLog.producer();
  const publisher = new EventPublisher(producer, topics);
  if (!(eventLog instanceof MemoryLog)) {
    try {
      return await work({ publisher, eventLog, topics });
    } finally {
      await producer.close();
      await eventLog.close();
    }
  }

  const store = await openMigratedStore(config, log);
  const groupId = config.kafka.groupId;
  const worker = await startIngestWorker({ config, eventLog, store, log, groupId });
  try {
    const result = await work({ publisher, eventLog, topics });
    await eventLog.drained(groupId, topics.all());
    await worker.rollups.settled();
    return result;
  } finally {
    await worker.stop();
    await producer.close();
    await eventLog.close();
    await store.close();
  }
}
