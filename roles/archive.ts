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

/**
 * Runs the archive; a reorg deeper than the confirmations ends it with 'reorg' instead of an error. The
 * `archive` role and the `all` role (with POLYGON_RPC_URL) both stop through here: the archive logged the
 * reorg with both hashes and counted it; this says it once more on stderr for the operator, and the role
 * exits EXIT_REORG. A restart finds the same mismatch and stops again until an operator decides (docs/archive.md:
 * "Resumable and reorg-safe").
 */
export async function runUntilReorg(run: () => Promise<unknown>): Promise<'done' | 'reorg'> {
  try {
    await run();
    return 'done';
  } catch (error) {
    if (!(error instanceof ArchiveReorgError)) throw error;
    process.stderr.write(`archive stopped (exit ${EXIT_REORG}): ${error.message}\n`);
    return 'reorg';
  }
}

export async function runArchive(config: Config, log: Logger): Promise<number> {
  if (!config.archive) {
    log.error('the archive role reads Polygon: set POLYGON_RPC_URL (one or more JSON-RPC endpoints, comma-separated)');
    return 2;
  }
  const archiveConfig = config.archive;
  const signal = shutdownSignal(log, config.shutdown.graceMs);
  const store = await openMigratedStore(config, log);
  const eventLog = openEventLog(config, log);
  const topics = new TopicNames(config.kafka.topicPrefix);
  const groupId = config.kafka.groupId;
  const worker =
    eventLog instanceof MemoryLog ? await startIngestWorker({ config, eventLog, store, log, groupId }) : null;
  const producer = await eventLog.producer();
  const publisher = new EventPublisher(producer, topics);
  const durable =
    eventLog instanceof MemoryLog ? () => eventLog.committedThroughNow(groupId, topics.all()) : async () => {};
  try {
    const outcome = await runUntilReorg(() =>
      runArchiveSource({
        config: archiveConfig,
        log: log.child({ name: 'archive' }),
        store,
        sink: archiveSink({ publisher, producer, topics, store, durable }),
        signal,
      }),
    );
    // After a reorg the checkpoint stays where it was; what was published before it still lands.
    await durable();
    if (outcome === 'reorg') return EXIT_REORG;
    await worker?.rollups.settled();
  } finally {
    await worker?.stop();
    await producer.close();
    await eventLog.close();
    await store.close();
  }
  return 0;
}
