/**
 * The `all` role: the embedded default a newcomer runs first. One process holds embedded ClickHouse
 * (or CLICKHOUSE_URL), the log (in process, or KAFKA_BROKERS), an ingest worker, the simulator and the
 * HTTP server. On first start it backfills a demo data set; afterwards it resumes the simulator where
 * it stopped, and keeps it running live.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { buildApp, type Readiness } from '../api/app.ts';
import { openGateStore } from '../api/gates/open.ts';
import { MemoryLog } from '../ingest/bus/memory.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { openMigratedStore, shutdownSignal, throttled } from './runtime.ts';
import { storeAnswers } from '../projections/store.ts';
import { ensureDemoAccounts } from '../ingest/sources/accounts.ts';
import { publishSessions, recordSessions } from '../ingest/sources/simulator/tapes.ts';
import { createSimulator, runSimulator } from '../ingest/sources/simulator/index.ts';
import { openEventLog, startIngestWorker } from '../ingest/worker.ts';

const SECONDS_PER_DAY = 86_400;
/** How often the live simulator's position is saved, so a restart resumes instead of backfilling again. */
const STATE_SAVE_INTERVAL_MS = 30_000;

interface SimulatorState {
  seed: number;
  /** Start of the simulated period: a resumed world continues its traders' books from here. */
  genesisTs: number;
  /** Everything before this instant has been published. */
  emittedUntil: number;
}

async function readSimulatorState(file: string, seed: number): Promise<SimulatorState | undefined> {
  try {
    const state = JSON.parse(await readFile(file, 'utf8')) as Partial<SimulatorState>;
    if (state.seed === seed && Number.isInteger(state.emittedUntil) && Number.isInteger(state.genesisTs)) {
      return { seed, genesisTs: state.genesisTs!, emittedUntil: state.emittedUntil! };
    }
  } catch {
    // First start.
  }
  return undefined;
}

export async function runAll(config: Config, log: Logger): Promise<number> {
  const signal = shutdownSignal(log);
  const startedAt = Date.now();
  const store = await openMigratedStore(config, log);
  const eventLog = openEventLog(config, log);
  const topics = new TopicNames(config.kafka.topicPrefix);
  const worker = await startIngestWorker({ config, eventLog, store, log });
  const producer = await eventLog.producer();
  const publisher = new EventPublisher(producer, topics);
  const nowSeconds = () => Math.floor(Date.now() / 1000);

  const demo = await ensureDemoAccounts(publisher, config.dataDir, nowSeconds());
  // The demo accounts' recorded sessions (Pro and Max record; Basic's library stays empty), published once with them.
  if (demo.created) {
    const untilTs = Math.floor(nowSeconds() / 3600) * 3600;
    for (const [plan, count] of [['pro', 3], ['max', 5]] as const) await publishSessions(publisher, recordSessions(config.simulator.seed, `demo-${plan}`, count, untilTs));
  }

  const stateFile = path.join(config.dataDir, 'simulator-state.json');
  const previous = await readSimulatorState(stateFile, config.simulator.seed);
  const backfillDays = previous ? (nowSeconds() - previous.emittedUntil) / SECONDS_PER_DAY : config.simulator.backfillDays;

  let readiness: Readiness = { ready: false, detail: { phase: 'backfill', backfill_days: Math.round(backfillDays * 100) / 100 } };
  const gates = openGateStore(config, log);
  const app = await buildApp({
    log,
    storeAlive: () => storeAnswers(store),
    readiness: () => readiness,
    api: { config, store, gates },
  });
  const address = await app.listen({ host: config.http.host, port: config.http.port });
  const publicAddress = address.replace('0.0.0.0', 'localhost').replace('[::]', 'localhost');
  log.info({ address: publicAddress, store: store.kind, log: eventLog.kind, demoKeysFile: demo.file }, 'listening');
  // For the human who ran `npm start`: where to go and which keys to use. These are demo keys only.
  process.stdout.write(
    [
      '',
      `Trader Analytics is listening on ${publicAddress}`,
      `  readiness: ${publicAddress}/readyz   (503 until the demo backfill is in)`,
      `  read API:  ${publicAddress}${config.api.prefix}   (e.g. curl -H "Authorization: Bearer <key>" ${publicAddress}${config.api.prefix}/me)`,
      `  store: ${store.kind === 'embedded' ? `embedded ClickHouse at ${config.clickhouse.embeddedPath}` : 'ClickHouse server'}; log: ${eventLog.kind === 'memory' ? 'in process' : 'Kafka'}`,
      `  demo keys (${demo.file}):`,
      `    basic ${demo.keys.basic}`,
      `    pro   ${demo.keys.pro}`,
      `    max   ${demo.keys.max}`,
      '',
    ].join('\n'),
  );

  if (config.archive) {
    // With POLYGON_RPC_URL the chain is the source: the archive runs instead of the simulator.
    const { archiveSink, runArchiveSource } = await import('../ingest/sources/archive/index.ts');
    const durable = eventLog instanceof MemoryLog ? () => eventLog.drained(config.kafka.groupId, topics.all()) : async () => {};
    readiness = { ready: false, detail: { phase: 'archive backfill' } };
    await runArchiveSource({
      config: config.archive,
      log: log.child({ name: 'archive' }),
      store,
      signal,
      sink: archiveSink({ publisher, producer, topics, store, durable }),
      onCaughtUp: (progress) => {
        readiness = { ready: true, detail: { phase: 'live', block: progress.nextBlock - 1, events_ingested: worker.pipeline.stats.events } };
      },
    });
    if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await app.close();
    await gates.close();
    await worker.stop();
    await producer.close();
    await eventLog.close();
    await store.close();
    return 0;
  }

  // A restart resumes the same world: same genesis, from where it stopped publishing.
  const simulator = createSimulator({
    seed: config.simulator.seed,
    traders: config.simulator.traders,
    ...(previous ? { genesisTs: previous.genesisTs } : {}),
  });
  if (previous) log.info({ genesisTs: previous.genesisTs, fromTs: previous.emittedUntil }, 'resuming the simulated world');
  let emittedUntil = previous?.emittedUntil ?? 0;
  const saveState = async () => {
    const genesisTs = simulator.genesisTs;
    if (emittedUntil > 0 && genesisTs !== undefined) {
      await writeFile(stateFile, JSON.stringify({ seed: config.simulator.seed, genesisTs, emittedUntil } satisfies SimulatorState));
    }
  };
  const saveThrottled = throttled(STATE_SAVE_INTERVAL_MS, () => void saveState());
  const reportBackfill = throttled(2000, () => log.info({ doneTs: emittedUntil, published: publisher.count, ingested: worker.pipeline.stats.events }, 'backfilling demo data'));
  let backfillDone = false;

  const simulation = runSimulator(simulator, publisher, {
    backfillDays,
    ...(previous ? { fromTs: previous.emittedUntil } : {}),
    live: config.simulator.live,
    signal,
    onProgress: (info) => {
      if (emittedUntil === 0) log.info({ genesisTs: simulator.genesisTs, backfillDays }, 'starting a new simulated world');
      emittedUntil = info.doneTs;
      if (info.phase === 'live' && !backfillDone) {
        backfillDone = true;
        void markReadyWhenIngested();
      }
      if (info.phase === 'backfill') reportBackfill();
      saveThrottled();
    },
  });

  async function markReadyWhenIngested(): Promise<void> {
    if (eventLog instanceof MemoryLog) await eventLog.drained(config.kafka.groupId, topics.all());
    await worker.rollups.settled();
    await saveState();
    readiness = { ready: true, detail: { phase: 'live', events_ingested: worker.pipeline.stats.events } };
    log.info({ seconds: Math.round((Date.now() - startedAt) / 1000), ingested: worker.pipeline.stats.events }, 'demo data ready');
  }

  const counts = await simulation;
  if (!backfillDone) {
    backfillDone = true;
    await markReadyWhenIngested();
  }
  log.info({ counts }, 'simulator stopped');
  if (!signal.aborted) {
    // --no-live: the simulator finished; keep serving until asked to stop.
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  // Shutdown order: stop producing, close HTTP, drain the consumer's batch, then the store.
  await saveState();
  await app.close();
  await gates.close();
  await worker.stop();
  await producer.close();
  await eventLog.close();
  await store.close();
  return 0;
}
