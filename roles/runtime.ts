/**
 * Process wiring every role uses: the shutdown signal (SIGINT / SIGTERM), progress logging, opening the
 * store (migrated), and giving a source somewhere to publish.
 * With Kafka configured, a source publishes to Kafka and ingest workers elsewhere consume it. Without
 * Kafka, the source publishes to the in-process log and an in-process worker ingests it into the store
 * before the command returns: `replay`, `import` and `simulate` work on a laptop with nothing installed.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { migrate } from '../projections/migrate.ts';
import {
  embeddedThreadPoolShortfall,
  exitAtOnce,
  LAUNCHER_THREAD_POOL_SIZE,
  openStore,
  type Store,
} from '../projections/store.ts';
import { MemoryLog } from '../ingest/bus/memory.ts';
import type { EventLog } from '../ingest/bus/types.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { openEventLog, startIngestWorker } from '../ingest/worker.ts';

/**
 * For the roles that serve reads from an embedded store (all, api): a warning when libuv's pool has fewer
 * threads than the store's lanes need (projections/store.ts, embeddedThreadPoolShortfall). Not fatal: the
 * store works, but its reads queue for the pool's threads behind inserts and refreshes. One-shot roles
 * (import, migrate, keys…) serve no reads beside their writes and say nothing.
 */
export function warnIfThreadPoolShort(config: Config, log: Logger): void {
  const shortfall = embeddedThreadPoolShortfall(config.clickhouse);
  if (!shortfall) return;
  log.warn(
    { threadPoolSize: shortfall.threads, needed: shortfall.needed, suggested: LAUNCHER_THREAD_POOL_SIZE },
    `UV_THREADPOOL_SIZE gives ${shortfall.threads} threads, fewer than the embedded store's ${shortfall.needed} (its sessions and Node's own work): reads will wait for a thread behind writes; start the process with UV_THREADPOOL_SIZE=${LAUNCHER_THREAD_POOL_SIZE} (npm start and the image do)`,
  );
}

export async function openMigratedStore(config: Config, log: Logger): Promise<Store> {
  const store = await openStore(config.clickhouse);
  await migrate(store, log.child({ name: 'migrate' }), { cluster: config.clickhouse.cluster });
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
export async function withPublisher<T>(
  config: Config,
  log: Logger,
  work: (context: PublishingContext) => Promise<T>,
): Promise<T> {
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

/** Signals this close to the first are the same request to stop, not an impatient second one. */
const SAME_REQUEST_MS = 1_000;

/** The exit code of a drain that did not finish within the grace (config shutdown.graceMs). */
const EXIT_SHUTDOWN_FORCED = 124;

/** How long an exit at once waits for the log's last lines to be written (pino writes asynchronously). */
const LOG_FLUSH_MS = 500;

/**
 * exitAtOnce, once the reason is out: on stderr at once (synchronous on Linux, as a fatal start writes its
 * reason), and in the log after pino's flush (it writes asynchronously: a kill would lose its last lines).
 */
function exitAfterLog(log: Logger, code: number, reason: string): void {
  process.stderr.write(`${reason}\n`);
  setTimeout(() => exitAtOnce(code), LOG_FLUSH_MS);
  log.flush(() => exitAtOnce(code));
}

/**
 * Aborts on SIGINT / SIGTERM, so that roles drain and exit cleanly; a drain that outlasts the grace, or a
 * second signal, ends the process at once.
 */
export function shutdownSignal(log: Logger, graceMs: number): AbortSignal {
  const controller = new AbortController();
  let firstAt = 0;
  const stop = (signal: string) => {
    if (controller.signal.aborted) {
      // Ctrl-C under `npm start` reaches the service twice at once: from the terminal, and forwarded by npm.
      if (performance.now() - firstAt < SAME_REQUEST_MS) return;
      log.warn({ signal }, 'second signal: exiting at once');
      exitAfterLog(log, 130, 'second signal: exiting at once');
      return;
    }
    firstAt = performance.now();
    log.info({ signal }, 'shutting down: draining the batch in flight');
    controller.abort();
    // Unreferenced: a drain that finishes lets the process end without waiting for it.
    setTimeout(() => {
      const reason = 'shutdown did not finish within its grace: exiting without it';
      log.error({ signal, graceMs }, reason);
      exitAfterLog(log, EXIT_SHUTDOWN_FORCED, `${reason} (${graceMs} ms after ${signal})`);
    }, graceMs).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  return controller.signal;
}

export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Logs at most every `intervalMs`, so that long runs show progress without flooding the log. */
export function throttled(intervalMs: number, report: () => void): () => void {
  let last = 0;
  return () => {
    const now = Date.now();
    if (now - last >= intervalMs) {
      last = now;
      report();
    }
  };
}
