/**
 * `npm run bench:overload` — load shedding (operations/gates/in-flight.ts: the adaptive limit, the fair
 * queue and its bounds, api.inFlight): at 5× the sustainable rate, the service keeps serving about its
 * capacity (goodput), the calls it serves are about as fast as at the sustainable rate, and the rest are
 * refused at once (503 overloaded).
 *
 * Builds (embedded ClickHouse, a fresh data directory, the in-process log) a simulated world of --days
 * days, mints --accounts Max accounts whose plan never binds (the gates' own refusals are not under
 * test) and one more for the probe, picks (trader, market) pairs and serves the app on 127.0.0.1 with
 * the configured limits (defaults, or API_MAX_IN_FLIGHT, CLICKHOUSE_QUERY_TIMEOUT_S and
 * CLICKHOUSE_READ_POOL_SIZE from the environment). The answers about traders are read every time
 * (--trader-cache off, the default: the store's capacity is under test, not the memory's; `on` keeps
 * them). The load is a mix of five reads (card, markets list, summary, chart, fills), the accounts
 * taken in turn, from a load generator in a child process. Each of --repeat runs:
 *   1. capacity: a closed loop of --workers workers for --duration s (answers per second);
 *   2. the sustainable rate, --sustainable × capacity (default 0.7), as an evenly paced open loop for
 *      --duration s: the normal p50/p99;
 *   3. five times that rate, same pacing and duration: goodput (served per second), served p50/p99,
 *      refusals (count, p99 latency), the longest queue wait of a served call, errors; meanwhile a
 *      second, independent client (its own process and account) sends --probe-rate calls per second and
 *      reports what it saw.
 * The machine's load average (1 min) is printed beside each run's figures: the machine is shared, and
 * a run beside another process's load is not a run on a quiet machine. Figures are medians over the runs.
 *
 * Options: --days N (1), --traders N (120), --pairs N (200), --duration S (8), --repeat N (2),
 * --sustainable F (0.7), --factor F (5), --accounts N (16), --workers N (four times the limit's start),
 * --probe-rate N (10), --trader-cache on|off (off), --profile FILE (a CPU profile of the server's main
 * thread during the last run's 5× phase, for Chrome DevTools or speedscope).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import { monitorEventLoopDelay, performance as hooks } from 'node:perf_hooks';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { InFlightStats } from '../../operations/gates/in-flight.ts';
import { LoadDriver, type LoadResult } from './load.ts';
import { median, percentile, runBenchmark, probeFilesystem } from './support.ts';

const { values } = parseArgs({
  options: {
    days: { type: 'string', default: '1' },
    traders: { type: 'string', default: '120' },
    pairs: { type: 'string', default: '200' },
    duration: { type: 'string', default: '8' },
    repeat: { type: 'string', default: '2' },
    sustainable: { type: 'string', default: '0.7' },
    factor: { type: 'string', default: '5' },
    accounts: { type: 'string', default: '16' },
    workers: { type: 'string' },
    'probe-rate': { type: 'string', default: '10' },
    'trader-cache': { type: 'string', default: 'off' },
    profile: { type: 'string' },
    reads: { type: 'string', default: 'card' },
  },
});
const DAYS = Number(values.days);
const TRADERS = Number(values.traders);
const PAIRS = Number(values.pairs);
const DURATION = Number(values.duration);
const REPEAT = Number(values.repeat);
const SUSTAINABLE = Number(values.sustainable);
const FACTOR = Number(values.factor);
const ACCOUNTS = Number(values.accounts);
const PROBE_RATE = Number(values['probe-rate']);
const TRADER_CACHE = values['trader-cache'] === 'on';
const PROFILE = values.profile;
const READS = values.reads;
if (READS !== 'card' && READS !== 'mix') throw new Error(`--reads card|mix (got ${READS})`);
/** The aims of issue 37: goodput at 5× ≥ 0.9 × capacity, served p99 ≤ 2 × normal, refusals p99 ≤ 50 ms. */
const GOODPUT_AIM = 0.9;
const SERVED_P99_AIM = 2;
const REFUSAL_AIM_MS = 50;

const isServed = (status: number) => status >= 200 && status < 300;
const isRefused = (status: number) => status === 503 || status === 429;

interface Phase {
  rate: number;
  served: number;
  /** Served answers per second of the phase. */
  goodput: number;
  servedP50: number;
  servedP99: number;
  refused: number;
  refusedP99: number;
  /** Refusals slower than REFUSAL_AIM_MS. */
  slowRefusals: number;
  /** The limiter's refusals after a wait in its queue (the rest were refused on arrival). */
  refusedAfterWaiting: number;
  /** Times the limiter went from burst to overload. */
  overloads: number;
  /** Served calls that queued first, and of the waiters those past their refusal window (never refused then). */
  startedAfterQueueing: number;
  committed: number;
  other: number;
  errors: number;
  maxQueueWaitMs: number;
  /** The mean time a call held its slot (its work, without the queue), ms. */
  meanHoldMs: number;
  /** The adaptive limit at the end of the phase, and its uncontended hold (ms). */
  limit: number;
  baselineMs: number;
  /** The server's event-loop delay p99 during the phase, ms (a refusal cannot be faster than the loop). */
  loopDelayP99: number;
  /** The server process's CPU time per second of the phase (1.0 = one core busy). */
  cpuCores: number;
  /** The share of the phase the server's event loop was busy (its main thread: HTTP, JSON, the folds). */
  loopBusy: number;
  /** The machine's 1-minute load average at the end of the phase. */
  load: number;
  /** The load generator's own event-loop delay p99, ms, and its CPU in cores. */
  generatorLoopDelayP99: number;
  generatorCpuCores: number;
}

/** Runs one phase, watching the server process's event loop and CPU. */
async function measured(
  run: () => Promise<LoadResult>,
  profileTo?: string,
): Promise<{ result: LoadResult; loopDelayP99: number; cpuCores: number; loopBusy: number }> {
  const session = profileTo === undefined ? null : new Session();
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const utilization = hooks.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const result = await run();
  const used = process.cpuUsage(cpu);
  loop.disable();
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(profileTo!, JSON.stringify(profile));
    session.disconnect();
    console.log(`CPU profile of the server's main thread during the phase: ${profileTo}`);
  }
  return {
    result,
    loopDelayP99: loop.percentile(99) / 1e6,
    cpuCores: (used.user + used.system) / 1000 / (performance.now() - wall),
    loopBusy: hooks.eventLoopUtilization(utilization).utilization,
  };
}

function answersOf(result: LoadResult) {
  const served = result.answers.filter((answer) => isServed(answer.status)).map((answer) => answer.ms);
  const refused = result.answers.filter((answer) => isRefused(answer.status)).map((answer) => answer.ms);
  return { served, refused, other: result.answers.length - served.length - refused.length };
}

function phaseOf(
  rate: number,
  { result, loopDelayP99, cpuCores, loopBusy }: Awaited<ReturnType<typeof measured>>,
  {
    maxQueueWaitMs,
    released,
    heldMs,
    limit,
    baselineMs,
    refusedAfterWaiting,
    overloads,
    committed,
    startedAfterQueueing,
  }: InFlightStats,
): Phase {
  const { served, refused, other } = answersOf(result);
  return {
    rate,
    served: served.length,
    goodput: served.length / result.seconds,
    servedP50: percentile(served, 0.5),
    servedP99: percentile(served, 0.99),
    refused: refused.length,
    refusedP99: percentile(refused, 0.99),
    slowRefusals: refused.filter((ms) => ms > REFUSAL_AIM_MS).length,
    refusedAfterWaiting,
    overloads,
    startedAfterQueueing,
    committed,
    other,
    errors: result.errors,
    maxQueueWaitMs,
    meanHoldMs: released ? heldMs / released : Number.NaN,
    limit,
    baselineMs,
    loopDelayP99,
    cpuCores,
    loopBusy,
    load: os.loadavg()[0]!,
    generatorLoopDelayP99: result.generatorLoopDelayP99,
    generatorCpuCores: result.generatorCpuCores,
  };
}

const ms = (value: number) => (Number.isNaN(value) ? '—' : `${value.toFixed(1)} ms`);

async function main(): Promise<void> {
  const [
    { parseConfig },
    { createLogger },
    { buildHttpServer },
    { InFlightLimiter },
    { openMigratedStore, withPublisher },
    { publishAccount, publishNewKey },
    { createSimulator, runSimulator },
  ] = await Promise.all([
    import('../../config.ts'),
    import('../../log.ts'),
    import('../../roles/http-server.ts'),
    import('../../operations/gates/in-flight.ts'),
    import('../../roles/runtime.ts'),
    import('../../ingest/sources/accounts.ts'),
    import('../../ingest/sources/simulator/index.ts'),
  ]);
  const loadNow = () =>
    os
      .loadavg()
      .map((value) => value.toFixed(1))
      .join(' ');
  console.log(`${os.cpus().length} CPUs; load average at start ${loadNow()}`);
  probeFilesystem(os.tmpdir());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-overload-'));
  const driver = new LoadDriver();
  const probe = new LoadDriver();
  try {
    const parsed = parseConfig(
      {
        ...Object.fromEntries(
          Object.entries(process.env).filter(([name]) =>
            /^(API_MAX_IN_FLIGHT|CLICKHOUSE_QUERY_TIMEOUT_S|CLICKHOUSE_READ_POOL_SIZE)$/.test(name),
          ),
        ),
        DATA_DIR: dataDir,
        CLICKHOUSE_DATABASE: 'bench_overload',
        LOG_LEVEL: 'error',
        SIM_BACKFILL_DAYS: String(DAYS),
        SIM_TRADERS: String(TRADERS),
        SIM_LIVE: 'false',
      },
      TRADER_CACHE ? {} : { api: { readCache: { traderAnswerSeconds: 0 } } },
    );
    const unbounded = {
      ...parsed.plans.max,
      rps: 1e6,
      burst: 1e6,
      rpm: 1e9,
      monthlyRequests: 1e12,
      heavyReadsInFlight: 1e6,
    };
    const config = { ...parsed, plans: { ...parsed.plans, max: unbounded } };
    const limits = config.api.inFlight;
    // Enough workers that the slots never wait for a client (whose answers are slowed by the machine's
    // scheduling too): the excess waits in the queue, within the burst horizon.
    const workers = values.workers === undefined ? 4 * limits.initialInFlight : Number(values.workers);
    const log = createLogger('error');
    const store = await openMigratedStore(config, log);
    const nowSeconds = () => Math.floor(Date.now() / 1000);
    const authorizations: string[] = [];
    let probeAuthorization = '';
    const built = performance.now();
    await withPublisher(config, log, async ({ publisher }) => {
      await runSimulator(
        createSimulator({ seed: config.simulator.seed, traders: config.simulator.traders }),
        publisher,
        { backfillDays: DAYS, live: false },
      );
      for (let account = 0; account <= ACCOUNTS; account++) {
        const accountId = `bench-overload-${account}`;
        await publishAccount(publisher, { accountId, plan: 'max', displayName: 'Bench', version: nowSeconds() });
        const authorization = `Bearer ${(await publishNewKey(publisher, accountId, 'bench key', nowSeconds())).plaintext}`;
        if (account === ACCOUNTS) probeAuthorization = authorization;
        else authorizations.push(authorization);
      }
    });
    // The world's parts merge in the background for a while after it is built: a run measured beside them
    // is a run on a busier machine (a first run's capacity a third of the next's).
    const settled = performance.now();
    while (
      (
        await store.query<{ merges: number }>(
          'SELECT count() AS merges FROM system.merges WHERE database = {db:String}',
          { db: config.clickhouse.database },
        )
      ).some(({ merges }) => Number(merges) > 0) &&
      performance.now() - settled < 120_000
    )
      await new Promise((resolve) => setTimeout(resolve, 250));
    console.log(`background merges settled in ${((performance.now() - settled) / 1000).toFixed(1)} s`);
    const pairs = await store.query<{ wallet: string; condition_id: string }>(
      `SELECT wallet, any(condition_id) AS condition_id FROM {db:Identifier}.trader_markets_v2 FINAL GROUP BY wallet ORDER BY cityHash64(wallet) LIMIT {n:UInt32}`,
      { n: PAIRS },
    );
    console.log(
      `world: ${DAYS} day(s), ${TRADERS} named traders, built in ${((performance.now() - built) / 1000).toFixed(1)} s; ${pairs.length} (trader, market) pairs; ${ACCOUNTS} accounts and a probe's; trader cache ${TRADER_CACHE ? 'on' : 'off'}`,
    );
    const prefix = config.api.prefix;
    const paths = pairs.flatMap(({ wallet, condition_id: market }) =>
      READS === 'card'
        ? [`${prefix}/traders/${wallet}`]
        : [
            `${prefix}/traders/${wallet}`,
            `${prefix}/traders/${wallet}/markets?limit=50`,
            `${prefix}/traders/${wallet}/markets/${market}/summary`,
            `${prefix}/traders/${wallet}/markets/${market}`,
            `${prefix}/traders/${wallet}/fills?limit=100`,
          ],
    );
    // The probe asks in another order, so that its calls are not the load's (a cache would tell).
    const probePaths = [...paths].reverse();

    const limiter = new InFlightLimiter(limits);
    const app = await buildHttpServer({
      log: createLogger('silent'),
      storeAlive: async () => true,
      readiness: () => ({ ready: true, detail: {} }),
      api: { config, store, now: nowSeconds, inFlight: limiter },
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    console.log(
      `limits: in flight adaptive from ${limits.initialInFlight} within [${limits.minInFlight}, ${limits.maxInFlight}] (uncontended at ≤ ${limits.baselineInFlight}), queue depth ${limits.queueDepth}, horizons ${limits.maxQueueWaitMs} ms (${limits.burstQueueWaitMs} ms for one account's burst), overload wait ${limits.targetQueueWaitMs} ms; capacity measured by ${workers} workers`,
    );

    // Warm-up: every path once (the read caches keep what they keep of the whole working set, so that the
    // first run's capacity is not a cold cache's), then the limiter's hold average and its baseline.
    await driver.run({
      url,
      authorization: authorizations,
      paths,
      durationS: 120,
      maxRequests: paths.length,
      mode: { kind: 'closed', concurrency: workers },
    });
    await driver.run({
      url,
      authorization: authorizations,
      paths,
      durationS: 2,
      mode: { kind: 'closed', concurrency: workers },
    });

    const runs: { capacity: number; sustainable: Phase; overload: Phase; probe: ReturnType<typeof answersOf> }[] = [];
    for (let run = 1; run <= REPEAT; run++) {
      limiter.resetCounters();
      const closed = await driver.run({
        url,
        authorization: authorizations,
        paths,
        durationS: DURATION,
        mode: { kind: 'closed', concurrency: workers },
      });
      const capacity = closed.answers.filter((answer) => isServed(answer.status)).length / closed.seconds;
      const rate = Math.max(1, Math.round(capacity * SUSTAINABLE));
      limiter.resetCounters();
      const sustainable = phaseOf(
        rate,
        await measured(() =>
          driver.run({ url, authorization: authorizations, paths, durationS: DURATION, mode: { kind: 'open', rate } }),
        ),
        limiter.stats,
      );
      limiter.resetCounters();
      const probing = probe.run({
        url,
        authorization: probeAuthorization,
        paths: probePaths,
        durationS: DURATION,
        mode: { kind: 'open', rate: PROBE_RATE },
      });
      const overload = phaseOf(
        rate * FACTOR,
        await measured(
          () =>
            driver.run({
              url,
              authorization: authorizations,
              paths,
              durationS: DURATION,
              mode: { kind: 'open', rate: rate * FACTOR },
            }),
          run === REPEAT ? PROFILE : undefined,
        ),
        limiter.stats,
      );
      const probed = answersOf(await probing);
      runs.push({ capacity, sustainable, overload, probe: probed });
      console.log(
        `run ${run} (load ${sustainable.load.toFixed(1)} → ${overload.load.toFixed(1)}): capacity ${capacity.toFixed(0)}/s; at ${rate}/s served p50 ${ms(sustainable.servedP50)} p99 ${ms(sustainable.servedP99)} (refused ${sustainable.refused}, ${sustainable.overloads} overloads); ` +
          `at ${rate * FACTOR}/s goodput ${overload.goodput.toFixed(0)}/s (${(overload.goodput / capacity).toFixed(2)} × capacity), served p50 ${ms(overload.servedP50)} p99 ${ms(overload.servedP99)}, refused ${overload.refused} p99 ${ms(overload.refusedP99)} (${overload.slowRefusals} over ${REFUSAL_AIM_MS} ms; ${overload.refusedAfterWaiting} after queueing), ${overload.overloads} overloads, ${overload.startedAfterQueueing} served after queueing (${overload.committed} past their refusal window), ` +
          `max queue wait ${ms(overload.maxQueueWaitMs)}, limit ${sustainable.limit} → ${overload.limit} (uncontended hold ${ms(sustainable.baselineMs)} → ${ms(overload.baselineMs)}), mean hold ${ms(sustainable.meanHoldMs)} → ${ms(overload.meanHoldMs)}, other ${overload.other}, errors ${overload.errors}; ` +
          `probe: served ${probed.served.length} p99 ${ms(percentile(probed.served, 0.99))}, refused ${probed.refused.length} p99 ${ms(percentile(probed.refused, 0.99))} (${probed.refused.filter((value) => value > REFUSAL_AIM_MS).length} over ${REFUSAL_AIM_MS} ms); ` +
          `generator event-loop delay p99 ${ms(sustainable.generatorLoopDelayP99)} → ${ms(overload.generatorLoopDelayP99)}, CPU ${sustainable.generatorCpuCores.toFixed(2)} → ${overload.generatorCpuCores.toFixed(2)} cores; ` +
          `server event-loop delay p99 ${ms(sustainable.loopDelayP99)} → ${ms(overload.loopDelayP99)}, CPU ${sustainable.cpuCores.toFixed(2)} → ${overload.cpuCores.toFixed(2)} cores, event loop busy ${sustainable.loopBusy.toFixed(2)} → ${overload.loopBusy.toFixed(2)}`,
      );
    }
    await app.close();
    await store.close();

    const med = (pick: (run: (typeof runs)[number]) => number) => median(runs.map(pick));
    const capacity = med((run) => run.capacity);
    const goodput = med((run) => run.overload.goodput / run.capacity);
    const normalP99 = med((run) => run.sustainable.servedP99);
    const servedRatio = med((run) => run.overload.servedP99 / run.sustainable.servedP99);
    const refusedP99 = med((run) => run.overload.refusedP99);
    console.log(
      `\nmedians of ${REPEAT} run(s), ${DURATION} s per phase; load average now ${loadNow()} (shared machine: read the ratios)`,
    );
    console.log(`  capacity (closed loop, ${workers} workers)    ${capacity.toFixed(0)} answers/s`);
    console.log(
      `  sustainable rate (${SUSTAINABLE} × capacity)       ${med((run) => run.sustainable.rate).toFixed(0)} req/s: served p50 ${ms(med((run) => run.sustainable.servedP50))}, p99 ${ms(normalP99)}, refused ${med((run) => run.sustainable.refused)}`,
    );
    console.log(
      `  ${FACTOR}× that rate                              ${med((run) => run.overload.rate).toFixed(0)} req/s offered`,
    );
    console.log(
      `    goodput                                ${med((run) => run.overload.goodput).toFixed(0)} answers/s (${goodput.toFixed(2)} × capacity, aim ≥ ${GOODPUT_AIM})`,
    );
    console.log(
      `    served                                 p50 ${ms(med((run) => run.overload.servedP50))}, p99 ${ms(med((run) => run.overload.servedP99))} (${servedRatio.toFixed(2)} × the normal p99, aim ≤ ${SERVED_P99_AIM})`,
    );
    console.log(
      `    refused (503 overloaded)               ${med((run) => run.overload.refused)} answers, p99 ${ms(refusedP99)} (aim ≤ ${REFUSAL_AIM_MS} ms), ${med((run) => run.overload.slowRefusals)} over it`,
    );
    console.log(
      `    probe client (${PROBE_RATE}/s, own process)      served ${med((run) => run.probe.served.length)} p99 ${ms(med((run) => percentile(run.probe.served, 0.99)))}, refused ${med((run) => run.probe.refused.length)} p99 ${ms(med((run) => percentile(run.probe.refused, 0.99)))} (${med((run) => run.probe.refused.filter((value) => value > REFUSAL_AIM_MS).length)} over ${REFUSAL_AIM_MS} ms)`,
    );
    console.log(
      `    longest queue wait of a served call    ${ms(Math.max(...runs.map((run) => run.overload.maxQueueWaitMs)))} (horizons ${limits.maxQueueWaitMs} ms, ${limits.burstQueueWaitMs} ms for one account's burst)`,
    );
    console.log(
      `    adaptive limit                         ${med((run) => run.overload.limit)} (at the sustainable rate ${med((run) => run.sustainable.limit)})`,
    );
    console.log(
      `    mean slot hold (the call's own work)   ${ms(med((run) => run.overload.meanHoldMs))} (at the sustainable rate ${ms(med((run) => run.sustainable.meanHoldMs))})`,
    );
    console.log(
      `    other statuses / errors                ${med((run) => run.overload.other)} / ${med((run) => run.overload.errors)}`,
    );
    console.log(
      `    server event-loop delay p99            ${ms(med((run) => run.overload.loopDelayP99))} (at the sustainable rate ${ms(med((run) => run.sustainable.loopDelayP99))}); CPU ${med((run) => run.overload.cpuCores).toFixed(2)} cores, event loop busy ${med((run) => run.overload.loopBusy).toFixed(2)} (at the sustainable rate ${med((run) => run.sustainable.loopBusy).toFixed(2)})`,
    );
    console.log(
      `    load average (1 min)                   ${med((run) => run.overload.load).toFixed(1)} during the overload phases`,
    );
    const checks = [
      [`goodput at ${FACTOR}× ≥ ${GOODPUT_AIM} × capacity`, goodput >= GOODPUT_AIM],
      [`served p99 at ${FACTOR}× ≤ ${SERVED_P99_AIM} × the normal p99`, servedRatio <= SERVED_P99_AIM],
      [`refusals answered within ${REFUSAL_AIM_MS} ms (p99)`, refusedP99 <= REFUSAL_AIM_MS || Number.isNaN(refusedP99)],
      [
        'no other status, no error',
        runs.every((run) => run.overload.other === 0 && run.overload.errors === 0 && run.sustainable.other === 0),
      ],
    ] as const;
    for (const [label, ok] of checks) console.log(`  ${ok ? 'ok  ' : 'MISS'} ${label}`);
  } finally {
    driver.close();
    probe.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

runBenchmark(main);
