/**
 * The `all` role: the embedded default a newcomer runs first. One process holds embedded ClickHouse
 * (or CLICKHOUSE_URL), the log (in process, or KAFKA_BROKERS), an ingest worker, the simulator and the
 * HTTP server. On first start it backfills a demo data set; afterwards it resumes the simulator where
 * the store stopped, and keeps it running live.
 *
 * Crash safety (SIGKILL at any moment, then a restart, gives exactly the store of an uninterrupted run):
 * the in-process log dies with the process, so the position saved in `simulator-state.json` is how far
 * the *store* holds the world (`resumeFromTs`: every round of the simulator before it is ingested and
 * committed), never how far the simulator published. A restart emits the world again from there; the
 * events of that stretch which had landed before the crash are recognized in the store and not
 * published twice (sources/skip-landed.ts). State files are written atomically and read strictly.
 */
import { changeFeedOf, EVERYTHING_CHANGED } from '../projections/changes.ts';
import path from 'node:path';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Readiness } from '../api/app.ts';
import { buildRoleServer } from './http-server.ts';
import { readStoredRowCount } from '../projections/landed.ts';
import { EPOCH_MAX, EPOCH_MIN } from '../ingest/contract/primitives.ts';
import { MemoryLog } from '../ingest/bus/memory.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { openMigratedStore, shutdownSignal, throttled, warnIfThreadPoolShort } from './runtime.ts';
import { DEMO_ACCOUNT_IDS, ensureDemoAccounts, readDemoKeys } from '../ingest/sources/accounts.ts';
import { SkipLandedSink, snapshotAccountSessions, snapshotSimulatedSince } from '../ingest/sources/skip-landed.ts';
import { rederivedBatches, rederiveViewsSince } from '../projections/rederive.ts';
import { publishSessions, recordSessions } from '../ingest/sources/simulator/tapes.ts';
import { createSimulator, runSimulator } from '../ingest/sources/simulator/index.ts';
import { readStateFile, StateFileError, writeFileAtomic } from '../ingest/state-file.ts';
import { openEventLog, startIngestWorker } from '../ingest/worker.ts';

const SECONDS_PER_DAY = 86_400;
/** How often the resume position is saved at most (a restart re-emits at most this much more). */
const STATE_SAVE_INTERVAL_MS = 1_000;

/** An instant of the world: one the event contract accepts (a state file outside it is corrupt, not a world). */
const instantSchema = z.number().int().min(EPOCH_MIN).max(EPOCH_MAX);

const simulatorStateSchema = z
  .object({
    seed: z.number().int(),
    /** Start of the simulated period: a resumed world continues its traders' books from here. */
    genesisTs: instantSchema,
    /** Every event of the world before this instant is in the store (in-process log) or on Kafka. */
    resumeFromTs: instantSchema,
    /** The demo backfill ends here: the service is ready once the store holds the world up to it. */
    backfillUntilTs: instantSchema.optional(),
    /** The demo accounts' recorded sessions end before this instant (fixed with the world, so a restart publishes the same ones). */
    sessionsUntilTs: instantSchema.optional(),
  })
  // The world is stored from its genesis on: a resume point or a backfill end before it never was written.
  .refine((state) => state.resumeFromTs >= state.genesisTs, {
    message: 'resumeFromTs is before genesisTs',
    path: ['resumeFromTs'],
  })
  .refine((state) => state.backfillUntilTs === undefined || state.backfillUntilTs >= state.genesisTs, {
    message: 'backfillUntilTs is before genesisTs',
    path: ['backfillUntilTs'],
  });

type SimulatorStateFile = z.output<typeof simulatorStateSchema>;

interface WorldState {
  seed: number;
  genesisTs: number;
  resumeFromTs: number;
  backfillUntilTs: number;
  sessionsUntilTs: number;
}

const hourOf = (ts: number) => Math.floor(ts / 3600) * 3600;

const iso = (ts: number) => new Date(ts * 1000).toISOString().replace('.000Z', 'Z');

export async function runAll(config: Config, log: Logger): Promise<number> {
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const stateFile = path.join(config.dataDir, 'simulator-state.json');
  // Both state files are read before anything is opened: an unusable one stops the start, with its reason.
  let previous: SimulatorStateFile | undefined;
  let demoKeys: Awaited<ReturnType<typeof readDemoKeys>>;
  try {
    previous = await readStateFile(stateFile, simulatorStateSchema);
    if (previous && previous.seed !== config.simulator.seed) {
      throw new StateFileError(
        stateFile,
        `holds the world of SIM_SEED=${previous.seed}, but SIM_SEED is ${config.simulator.seed}`,
      );
    }
    demoKeys = await readDemoKeys(config.dataDir);
  } catch (error) {
    if (!(error instanceof StateFileError)) throw error;
    log.error({ file: error.file, reason: error.message }, 'unusable state file; not starting');
    process.stderr.write(`cannot start: ${error.message}\n`);
    return 1;
  }

  const signal = shutdownSignal(log, config.shutdown.graceMs);
  const startedAt = Date.now();
  warnIfThreadPoolShort(config, log);
  const store = await openMigratedStore(config, log);
  const eventLog = openEventLog(config, log);
  const memoryLog = eventLog instanceof MemoryLog ? eventLog : undefined;
  const topics = new TopicNames(config.kafka.topicPrefix);
  const groupId = config.kafka.groupId;
  const worker = await startIngestWorker({ config, eventLog, store, log });
  const producer = await eventLog.producer();
  const publisher = new EventPublisher(producer, topics);

  // The world: resumed from the state file, or new (its state written before its first event).
  const startNow = nowSeconds();
  let stopTs = config.simulator.stopTs;
  let world: WorldState;
  if (previous) {
    const resumeFromTs = previous.resumeFromTs;
    const backfillUntilTs = previous.backfillUntilTs ?? resumeFromTs;
    world = {
      seed: previous.seed,
      genesisTs: previous.genesisTs,
      resumeFromTs,
      backfillUntilTs,
      sessionsUntilTs: previous.sessionsUntilTs ?? hourOf(backfillUntilTs),
    };
  } else {
    const backfillUntilTs = Math.min(startNow, stopTs ?? startNow);
    const genesisTs =
      config.simulator.genesisTs ?? Math.floor(backfillUntilTs - config.simulator.backfillDays * SECONDS_PER_DAY);
    // The sessions end with the demo backfill's hour; from the configuration alone, so that two worlds
    // of one seed and genesis (an interrupted one and its reference) record the same sessions.
    const sessionsUntilTs = hourOf(genesisTs + Math.round(config.simulator.backfillDays * SECONDS_PER_DAY));
    world = {
      seed: config.simulator.seed,
      genesisTs,
      resumeFromTs: genesisTs,
      backfillUntilTs: Math.max(genesisTs, backfillUntilTs),
      sessionsUntilTs,
    };
  }
  // SIM_LIVE=false: the world ends with its backfill, on this start and every later one. A restart finishes
  // a backfill a kill interrupted, but never simulates the time the process was down (SIM_LIVE=true does).
  if (!config.simulator.live) {
    const worldEndTs = Math.max(world.resumeFromTs, world.backfillUntilTs);
    stopTs = stopTs === undefined ? worldEndTs : Math.min(stopTs, worldEndTs);
  }
  let saving = Promise.resolve();
  let savedResumeFromTs: number | undefined;
  const saveState = (): Promise<void> => {
    // Serialized: two renames of one temporary file must not interleave.
    saving = saving.then(async () => {
      if (savedResumeFromTs === world.resumeFromTs) return;
      const resumeFromTs = world.resumeFromTs;
      await writeFileAtomic(stateFile, `${JSON.stringify({ ...world, resumeFromTs })}\n`);
      savedResumeFromTs = resumeFromTs;
    });
    return saving;
  };
  const saveThrottled = throttled(
    STATE_SAVE_INTERVAL_MS,
    () => void saveState().catch((error: unknown) => log.error({ err: error }, 'saving the simulator state failed')),
  );
  await saveState();

  // A resumed world's tail: what its views derive from the landing rows, derived again (a SIGKILL between a
  // landing insert and its views' inserts leaves the row without them, and skip-landed will not publish it
  // again); the staging the derivation makes is refreshed like any write's (projections/rederive.ts).
  if (previous && memoryLog) {
    const token = `rederive:${world.resumeFromTs}:${startedAt}`;
    const views = await rederiveViewsSince(store, world.resumeFromTs, token);
    for (const batch of rederivedBatches(token)) worker.rollups.enqueue(batch);
    // Written around the worker: answers about any trader kept meanwhile are stale.
    changeFeedOf(store.database).changed(EVERYTHING_CHANGED);
    log.info({ fromTs: world.resumeFromTs, views: views.length }, 'derived the views of the resumed tail again');
  }
  // What the store holds of a resumed world, before anything is published again (see skip-landed.ts).
  const landedWorld =
    previous && memoryLog ? await snapshotSimulatedSince(store, world.resumeFromTs) : new Map<string, number>();
  const landedSessions = await snapshotAccountSessions(store, DEMO_ACCOUNT_IDS);

  /** Resolves once everything published so far is in the store (in-process log) or on Kafka. */
  const landed = (): Promise<void> =>
    memoryLog ? memoryLog.committedThroughNow(groupId, topics.all()) : Promise.resolve();

  const demo = await ensureDemoAccounts(publisher, store, config.dataDir, nowSeconds(), demoKeys);
  if (demo.published.length > 0 && !demo.created)
    log.warn({ published: demo.published }, 'the store lacked demo accounts or keys; published them again');
  // The demo accounts' recorded sessions (Pro and Max record; Basic's library stays empty): deterministic
  // from the world, and published again only where the store lacks them.
  const sessionsSink = new SkipLandedSink(publisher, landedSessions);
  for (const [plan, count] of [
    ['pro', 3],
    ['max', 5],
  ] as const) {
    await publishSessions(
      sessionsSink,
      recordSessions(config.simulator.seed, `demo-${plan}`, count, world.sessionsUntilTs),
    );
  }
  let demoInStore = false;
  const demoLanded = landed().then(() => {
    demoInStore = true;
  });

  const backfillDays = Math.max(0, (Math.min(startNow, stopTs ?? startNow) - world.resumeFromTs) / SECONDS_PER_DAY);
  let phase: 'backfill' | 'catching_up' | 'live' | 'stopped' =
    world.resumeFromTs >= world.backfillUntilTs ? 'catching_up' : 'backfill';
  let ready = false;
  let rollupsSettled = false;
  // With POLYGON_RPC_URL the archive is the source, and its progress is the readiness.
  let archiveReadiness: Readiness | undefined;
  const readiness = async (): Promise<Readiness> => {
    if (archiveReadiness) return archiveReadiness;
    const waitingFor: string[] = [];
    if (!demoInStore) waitingFor.push('demo accounts and keys to reach the store');
    if (world.resumeFromTs < world.backfillUntilTs) {
      waitingFor.push(
        `demo backfill: the store holds the world until ${iso(world.resumeFromTs)} of ${iso(world.backfillUntilTs)}`,
      );
    } else if (!rollupsSettled) {
      waitingFor.push('rollups (careers, trader markets) to catch up with the stored events');
    }
    const rowsStored = await readStoredRowCount(store).catch(() => null);
    return {
      ready,
      detail: {
        phase,
        ...(ready ? {} : { waiting_for: waitingFor }),
        rows_stored: rowsStored,
        store_until: iso(world.resumeFromTs),
        lag_seconds: phase === 'stopped' ? 0 : Math.max(0, nowSeconds() - world.resumeFromTs),
      },
    };
  };
  const app = await buildRoleServer({ log, store, readiness, config, plane: { eventLog, topics, publisher } });
  const address = await app.listen({ host: config.http.host, port: config.http.port });
  const publicAddress = address.replace('0.0.0.0', 'localhost').replace('[::]', 'localhost');
  log.info({ address: publicAddress, store: store.kind, log: eventLog.kind, demoKeysFile: demo.file }, 'listening');
  // For the human who ran `npm start`: where to go and which keys to use. These are demo keys only.
  process.stdout.write(
    [
      '',
      `Trader Analytics is listening on ${publicAddress}`,
      `  readiness: ${publicAddress}/readyz   (503 until the demo backfill is in; the body says what it waits for)`,
      `  read API:  ${publicAddress}${config.api.prefix}   (e.g. curl -H "Authorization: Bearer <key>" ${publicAddress}${config.api.prefix}/me)`,
      `  store: ${store.kind === 'embedded' ? `embedded ClickHouse at ${config.clickhouse.embeddedPath}` : 'ClickHouse server'}; log: ${eventLog.kind === 'memory' ? 'in process' : 'Kafka'}`,
      `  demo keys (${demo.file}):`,
      `    basic ${demo.keys.basic}`,
      `    pro   ${demo.keys.pro}`,
      `    max   ${demo.keys.max}`,
      '',
    ].join('\n'),
  );
  // Once the demo is in: one plain line for the human who ran `npm start` (the rest of the console is JSON).
  let saidReady = false;
  const sayReady = () => {
    if (saidReady) return;
    saidReady = true;
    const { prefix } = config.api;
    process.stdout.write(
      `ready: ${publicAddress}/  (REST ${prefix}, MCP ${config.mcp.path}, OpenAPI ${prefix}/openapi.json; demo keys above)\n`,
    );
  };

  if (config.archive) {
    // With POLYGON_RPC_URL the chain is the source: the archive runs instead of the simulator.
    const { archiveSink, runArchiveSource } = await import('../ingest/sources/archive/index.ts');
    const { EXIT_REORG, runUntilReorg } = await import('./archive.ts');
    const archiveConfig = config.archive;
    const durable =
      eventLog instanceof MemoryLog
        ? () => eventLog.committedThroughNow(config.kafka.groupId, topics.all())
        : async () => {};
    archiveReadiness = { ready: false, detail: { phase: 'archive backfill' } };
    const outcome = await runUntilReorg(() =>
      runArchiveSource({
        config: archiveConfig,
        log: log.child({ name: 'archive' }),
        store,
        signal,
        sink: archiveSink({ publisher, producer, topics, store, durable }),
        onCaughtUp: (progress) => {
          archiveReadiness = {
            ready: true,
            detail: { phase: 'live', block: progress.nextBlock - 1, events_ingested: worker.pipeline.stats.events },
          };
          sayReady();
        },
      }),
    );
    // A reorg deeper than the confirmations stops the process as it stops the `archive` role (same log line,
    // metric and exit code), after what was published before it landed; otherwise it serves until asked to stop.
    if (outcome === 'reorg') {
      await durable();
    } else if (!signal.aborted)
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await app.close();
    await worker.stop();
    await producer.close();
    await eventLog.close();
    await store.close();
    return outcome === 'reorg' ? EXIT_REORG : 0;
  }

  // Ready once the demo accounts and the demo backfill are in the store and the rollups caught up with
  // them: on a restart whose store already holds the backfill, as soon as the store is open and swept.
  let backfillInStore: () => void = () => {};
  const backfillLanded = new Promise<void>((resolve) => {
    backfillInStore = resolve;
    if (world.resumeFromTs >= world.backfillUntilTs) resolve();
  });
  void Promise.all([demoLanded, backfillLanded])
    .then(() => worker.rollups.caughtUp())
    .then(async () => {
      rollupsSettled = true;
      ready = true;
      const rowsStored = await readStoredRowCount(store).catch(() => null);
      log.info(
        {
          seconds: Math.round((Date.now() - startedAt) / 1000),
          readyAfterMs: Date.now() - startedAt,
          rowsStored,
          storeUntil: iso(world.resumeFromTs),
        },
        'demo data ready',
      );
      sayReady();
    });

  // A restart resumes the same world: same genesis, from where the store stopped.
  const simulator = createSimulator({
    seed: world.seed,
    traders: config.simulator.traders,
    genesisTs: world.genesisTs,
  });
  if (previous) {
    log.info(
      { genesisTs: world.genesisTs, fromTs: world.resumeFromTs, storedRowsAfter: landedWorld.size },
      'resuming the simulated world',
    );
  } else {
    log.info(
      { genesisTs: world.genesisTs, backfillDays, backfillUntilTs: world.backfillUntilTs },
      'starting a new simulated world',
    );
  }
  const worldSink = landedWorld.size > 0 ? new SkipLandedSink(publisher, landedWorld) : publisher;
  let publishedUntil = world.resumeFromTs;
  const reportBackfill = throttled(2000, () =>
    log.info(
      {
        doneTs: publishedUntil,
        storeUntilTs: world.resumeFromTs,
        published: publisher.count,
        ingested: worker.pipeline.stats.events,
      },
      'backfilling demo data',
    ),
  );

  /** A round of the world is published up to `doneTs`: once it is in the store, the resume point moves there. */
  const roundPublished = (doneTs: number) => {
    publishedUntil = doneTs;
    void landed().then(() => {
      if (doneTs <= world.resumeFromTs) return;
      world.resumeFromTs = doneTs;
      if (doneTs >= world.backfillUntilTs) backfillInStore();
      saveThrottled();
    });
  };

  const counts = await runSimulator(simulator, worldSink, {
    backfillDays,
    fromTs: world.resumeFromTs,
    ...(stopTs !== undefined ? { stopTs } : {}),
    live: config.simulator.live,
    signal,
    onProgress: (info) => {
      roundPublished(info.doneTs);
      if (info.phase === 'live' && phase !== 'live') {
        phase = 'live';
        log.info({ storeUntilTs: world.resumeFromTs }, 'simulating live');
      }
      if (info.phase === 'backfill') reportBackfill();
    },
  });
  if (worldSink instanceof SkipLandedSink && worldSink.skipped > 0)
    log.info({ skipped: worldSink.skipped }, 'events the store already held were not published again');
  log.info({ counts }, 'simulator stopped');
  if (!signal.aborted) {
    // The simulator finished (--no-live, SIM_STOP_TS): keep serving until asked to stop.
    await landed();
    // Everything published is in the store: the world is stored up to where the simulator stopped.
    world.resumeFromTs = Math.max(world.resumeFromTs, publishedUntil);
    await saveState();
    backfillInStore();
    phase = 'stopped';
    log.info({ storeUntilTs: world.resumeFromTs }, 'the simulated world is complete in the store');
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  // Shutdown order: stop producing, close HTTP, drain the consumer's batch, then the store. The resume
  // point is saved last, when the rounds the worker finished have moved it.
  await app.close();
  await worker.stop();
  await new Promise((resolve) => setImmediate(resolve));
  await saveState();
  await producer.close();
  await eventLog.close();
  await store.close();
  return 0;
}
