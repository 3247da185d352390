/**
 * The `archive` role: Polygon → topics. With KAFKA_BROKERS the events go to Kafka (ingest workers elsewhere
 * write them; an event is durable once Kafka acknowledged it) and the store (CLICKHOUSE_URL) holds only the
 * checkpoint and is read for the token directory. Without, an in-process worker ingests them and an event
 * is durable once ingested.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { MemoryLog } from '../ingest/bus/memory.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { ArchiveReorgError, archiveSink, runArchiveSource } from '../ingest/sources/archive/index.ts';
import { openEventLog, startIngestWorker } from '../ingest/worker.ts';
import { openMigratedStore, shutdownSignal } from './runtime.ts';

/** The archive stopped on a reorg deeper than its confirmations. */
export const EXIT_REORG = 3;

export async function runArchive(config: Config, log: Logger): Promise<number> {
  if (!config.archive) {
    log.error('the archive role reads Polygon: set POLYGON_RPC_URL (one or more JSON-RPC endpoints, comma-separated)');
    return 2;
  }
  const signal = shutdownSignal(log);
  const store = await openMigratedStore(config, log);
  const eventLog = openEventLog(config, log);
  const topics = new TopicNames(config.kafka.topicPrefix);
  const groupId = config.kafka.groupId;
  const worker = eventLog instanceof MemoryLog ? await startIngestWorker({ config, eventLog, store, log, groupId }) : null;
  const producer = await eventLog.producer();
  const publisher = new EventPublisher(producer, topics);
  const durable = eventLog instanceof MemoryLog ? () => eventLog.committedThroughNow(groupId, topics.all()) : async () => {};
  try {
    await runArchiveSource({ config: config.archive, log: log.child({ name: 'archive' }), store, sink: archiveSink({ publisher, producer, topics, store, durable }), signal });
    await durable();
    await worker?.rollups.settled();
  } catch (error) {
    if (!(error instanceof ArchiveReorgError)) throw error;
    // Logged with both hashes where it was found; the checkpoint stays where it was. Exit code 3: a restart
    // finds the same mismatch and stops again until an operator decides (README: "Resumable and reorg-safe").
    await durable();
    return EXIT_REORG;
  } finally {
    await worker?.stop();
    await producer.close();
    await eventLog.close();
    await store.close();
  }
  return 0;
}
