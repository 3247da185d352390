/**
 * The `upstream` role: runs the upstream poller (ingest/sources/upstream/) until aborted. With KAFKA_BROKERS
 * it publishes to Kafka; without, to the in-process log of an in-process ingest worker (a laptop trial
 * against embedded ClickHouse).
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { readRecentArchiveWallets } from '../projections/upstream.ts';
import { openStore, type Store } from '../projections/store.ts';
import {
  createUpstreamClient,
  FileStateStore,
  MemoryRequestedWallets,
  RedisRequestedWallets,
  systemClock,
  UpstreamPoller,
  type RejectionReport,
} from '../ingest/sources/upstream/index.ts';
import type { RequestedWallets } from '../ingest/sources/upstream/requests.ts';
import { openSlotStore } from '../operations/gates/open.ts';
import { fastPathWallets } from '../operations/gates/slots.ts';
import { withPublisher } from './runtime.ts';

/** Runs the poller until aborted; returns the exit code. */
export async function runUpstream(config: Config, log: Logger, signal: AbortSignal): Promise<number> {
  let requested: RequestedWallets = new MemoryRequestedWallets();
  let closeRedis = async () => {};
  if (config.redis.url) {
    const { Redis } = await import('ioredis');
    const redis = new Redis(config.redis.url, { commandTimeout: 2000, maxRetriesPerRequest: 1, lazyConnect: false });
    redis.on('error', (error: Error) => log.warn({ err: { message: error.message } }, 'redis connection error'));
    requested = new RedisRequestedWallets(redis, config.upstream.requestedWalletsKey);
    closeRedis = async () => {
      await redis.quit().catch(() => undefined);
    };
  } else {
    log.info(
      'REDIS_URL is not set: wallets requested through the API do not reach this poller (leaderboard and archive wallets only)',
    );
  }
  // Archive activity is read from a ClickHouse server only: embedded chDB belongs to one process.
  let store: Store | undefined;
  if (config.clickhouse.url) store = await openStore(config.clickhouse);
  // The live plane's watches and follows, on every instance: their wallets' new activity is polled every few seconds.
  const slots = config.redis.url ? openSlotStore(config, log) : null;

  try {
    await withPublisher(config, log, async ({ publisher, eventLog, topics }) => {
      const producer = await eventLog.producer();
      const http = createUpstreamClient(config, log);
      const poller = new UpstreamPoller({
        http,
        sink: publisher,
        state: new FileStateStore(config.upstream.stateFile),
        config: config.upstream,
        clock: systemClock,
        log: log.child({ name: 'upstream' }),
        requested,
        ...(store
          ? { activeWallets: (since: number, limit: number) => readRecentArchiveWallets(store, since, limit) }
          : {}),
        ...(slots ? { watched: () => fastPathWallets(slots, null) } : {}),
        reject: async (report: RejectionReport) => {
          await producer.send(topics.deadLetter(), [
            {
              key: null,
              value: JSON.stringify(report.raw ?? null),
              headers: { 'dlq.reason': report.reason, 'dlq.origin': report.origin, 'dlq.what': report.what },
            },
          ]);
        },
      });
      log.info(
        {
          baseUrls: config.upstream.baseUrls,
          rateFraction: config.upstream.rateFraction,
          leaderboard: config.upstream.leaderboard,
          watched: slots
            ? config.upstream.watched
            : 'off (REDIS_URL is not set: no live-plane watches or follows reach this role)',
        },
        'upstream poller started',
      );
      try {
        await poller.run(signal);
      } finally {
        await producer.close();
      }
    });
  } finally {
    await slots?.close();
    await store?.close();
    await closeRedis();
  }
  return 0;
}
