/**
 * The archive as a source: wires the loop to the node (viem transports with failover), the log (events and
 * dead letters) and the store (checkpoint, token directory). The `archive` role and the `all` role (with
 * POLYGON_RPC_URL set) both run it through `runArchiveSource`.
 */
import type { ArchiveConfig } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import type { Store } from '../../../projections/store.ts';
import type { LogProducer } from '../../bus/types.ts';
import type { TopicNames } from '../../contract/topics.ts';
import type { EventPublisher } from '../../publisher.ts';
import { Archive, type ArchiveProgress } from './archive.ts';
import type { ArchiveDeadLetter, ArchiveSink } from './fact-publisher.ts';
import { encodeArchiveEvents } from './encode.ts';
import { HEAD_TOPIC } from '../../contract/head.ts';
import { sourceEventsPublished } from '../../../metrics/registry.ts';
import { PolygonRpc } from './rpc.ts';

export { readCheckpoint } from './checkpoint.ts';
export { ArchiveReorgError } from './reorg.ts';

/** The pseudo-topic the archive's dead letters name as their origin (the node, not a Kafka topic). */
const ARCHIVE_DEAD_LETTER_ORIGIN = 'archive';

export function archiveSink(options: {
  publisher: EventPublisher;
  producer: LogProducer;
  topics: TopicNames;
  store: Store;
  durable: () => Promise<void>;
}): ArchiveSink {
  const { publisher, producer, topics, store } = options;
  return {
    // The archive's events are built by its own code from logs checked once at the boundary (decode.ts):
    // they are encoded as they are, without a second schema pass (ingest validates every message it reads).
    publish: (topicId, events) => publisher.publishEncoded(topicId, encodeArchiveEvents(topicId, events)),
    durable: options.durable,
    // One key: the head's events and marks stay in order on one partition (a mark never overtakes its events).
    async publishHead(events) {
      await producer.send(
        topics.physical(HEAD_TOPIC),
        events.map((event) => ({ key: 'head', value: JSON.stringify(event) })),
      );
      sourceEventsPublished.inc({ topic: HEAD_TOPIC }, events.length);
    },
    async deadLetter(letters: readonly ArchiveDeadLetter[]) {
      await producer.send(
        topics.deadLetter(),
        letters.map((letter) => ({
          key: letter.key,
          value: letter.value,
          headers: {
            'dlq.reason': letter.reason,
            'dlq.topic': ARCHIVE_DEAD_LETTER_ORIGIN,
            'dlq.partition': '0',
            'dlq.offset': String(letter.position),
          },
        })),
      );
      const receivedAt = Math.floor(Date.now() / 1000);
      await store.insert(
        'dead_letters',
        letters.map((letter) => ({
          topic: ARCHIVE_DEAD_LETTER_ORIGIN,
          partition: 0,
          offset: letter.position,
          reason: letter.reason,
          original_base64: Buffer.from(letter.value).toString('base64'),
          received_at: receivedAt,
        })),
      );
    },
  };
}

export interface ArchiveSourceOptions {
  config: ArchiveConfig;
  log: Logger;
  store: Store;
  sink: ArchiveSink;
  signal: AbortSignal;
  onCaughtUp?: (progress: ArchiveProgress) => void;
  onCheckpoint?: (block: number, progress: ArchiveProgress) => void;
  /** See ArchiveOptions.checkpointIntervalMs (tests checkpoint every range). */
  checkpointIntervalMs?: number;
}

/** Runs the archive until the signal aborts (or ARCHIVE_END_BLOCK is reached); returns the last checkpoint. */
export async function runArchiveSource(options: ArchiveSourceOptions): Promise<number | null> {
  const { config, log, signal } = options;
  const rpc = new PolygonRpc(
    {
      urls: config.rpcUrls,
      requestsPerSecond: config.requestsPerSecond,
      retries: config.retries,
      retryBaseMs: config.retryBaseMs,
      retryMaxMs: config.retryMaxMs,
      timeoutMs: config.timeoutMs,
      signal,
    },
    log.child({ name: 'rpc' }),
  );
  const archive = new Archive({
    config,
    rpc,
    sink: options.sink,
    store: options.store,
    log,
    signal,
    ...(options.onCaughtUp ? { onCaughtUp: options.onCaughtUp } : {}),
    ...(options.onCheckpoint ? { onCheckpoint: options.onCheckpoint } : {}),
    ...(options.checkpointIntervalMs === undefined ? {} : { checkpointIntervalMs: options.checkpointIntervalMs }),
  });
  return archive.run();
}
