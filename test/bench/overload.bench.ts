/**
 * `npm run bench:overload` — load shedding (API_MAX_IN_FLIGHT and the queue's bounds, api.inFlight):
 * under 5× the sustainable rate, every answer is either served about as fast as at the sustainable
 * rate, or refused at once (503 overloaded), and no call waits in the queue longer than the bound.
 *
 * Builds (embedded ClickHouse, a fresh data directory, the in-process log) a simulated world of --days
 * days, mints a key whose plan never binds (the gates' own refusals are not under test), picks (trader,
 * market) pairs and serves the app on 127.0.0.1 with the configured limits (defaults, or
 * API_MAX_IN_FLIGHT, CLICKHOUSE_QUERY_TIMEOUT_S and CLICKHOUSE_READ_POOL_SIZE from the environment; --queue-depth N and
 * --queue-wait-ms N change the queue's bounds). The load is a mix of five reads (card, markets list, summary, chart,
 * fills) from a load generator in a child process. Each of --repeat runs:
 *   1. capacity: a closed loop of API_MAX_IN_FLIGHT workers for --duration s (answers per second);
 *   2. the sustainable rate, --sustainable × capacity (default 0.7), as an evenly paced open loop for
 *      --duration s: the normal p50/p99;
 *   3. five times that rate, same pacing and duration: served p50/p99, refusals (count, p99 latency),
 *      the longest queue wait of a served call (the limiter's own count), errors.
 * Figures are medians over the runs; the machine is shared, so they are noisy, and the ratio to the
 * normal p99 of the same run is the figure to read.
 *
 * Options: --days N (1), --traders N (120), --pairs N (200), --duration S (8), --repeat N (3),
 * --sustainable F (0.7), --factor F (5), --queue-depth N (16), --queue-wait-ms N (30).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
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
    repeat: { type: 'string', default: '3' },
    sustainable: { type: 'string', default: '0.7' },
    factor: { type: 'string', default: '5' },
    'queue-depth': { type: 'string' },
    'queue-wait-ms': { type: 'string' },
  },
});
const DAYS = Number(values.days);
const TRADERS = Number(values.traders);
const PAIRS = Number(values.pairs);
const DURATION = Number(values.duration);
const REPEAT = Number(values.repeat);
const SUSTAINABLE = Number(values.sustainable);
const FACTOR = Number(values.factor);
const REFUSAL_AIM_MS = 50;

const isServed = (status: number) => status >= 200 && status < 300;
const isRefused = (status: number) => status === 503 || status === 429;

interface Phase {
  rate: number;
  served: number;
  servedP50: number;
  servedP99: number;
  refused: number;
  refusedP99: number;
  other: number;
  errors: number;
  maxQueueWaitMs: number;
  /** The mean time a call held its slot (its work, without the queue), ms. */
  meanHoldMs: number;
  /** The server's event-loop delay p99 during the phase, ms (a refusal cannot be faster than the loop). */
  loopDelayP99: number;
  /** The server process's CPU time per second of the phase (1.0 = one core busy). */
  cpuCores: number;
}

/** Runs one phase, watching the server process's event loop and CPU. */
async function measured(
  run: () => Promise<LoadResult>,
): Promise<{ result: LoadResult; loopDelayP99: number; cpuCores: number }> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const result = await run();
  const used = process.cpuUsage(cpu);
  loop.disable();
  return {
    result,
    loopDelayP99: loop.percentile(99) / 1e6,
    cpuCores: (used.user + used.system) / 1000 / (performance.now() - wall),
  };
}

function phaseOf(
  rate: number,
  { result, loopDelayP99, cpuCores }: Awaited<ReturnType<typeof measured>>,
  { maxQueueWaitMs, released, heldMs }: InFlightStats,
): Phase {
  const served = result.answers.filter((answer) => isServed(answer.status)).map((answer) => answer.ms);
  const refused = result.answers.filter((answer) => isRefused(answer.status)).map((answer) => answer.ms);
  return {
    rate,
    served: served.length,
    servedP50: percentile(served, 0.5),
    servedP99: percentile(served, 0.99),
    refused: refused.length,
    refusedP99: percentile(refused, 0.99),
    other: result.answers.length - served.length - refused.length,
    errors: result.errors,
    maxQueueWaitMs,
    meanHoldMs: released ? heldMs / released : Number.NaN,
    loopDelayP99,
    cpuCores,
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
  console.log(
    `${os.cpus().length} CPUs; load average at start ${os
      .loadavg()
      .map((value) => value.toFixed(1))
      .join(' ')}`,
  );
  probeFilesystem(os.tmpdir());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-overload-'));
  const driver = new LoadDriver();
  try {
    const queue = {
      ...(values['queue-depth'] === undefined ? {} : { queueDepth: Number(values['queue-depth']) }),
      ...(values['queue-wait-ms'] === undefined ? {} : { maxQueueWaitMs: Number(values['queue-wait-ms']) }),
    };
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
      { api: { inFlight: queue } },
    );
    const unbounded = {
      ...parsed.plans.pro,
      rps: 1e6,
      burst: 1e6,
      rpm: 1e9,
      monthlyRequests: 1e12,
      heavyReadsInFlight: 1e6,
    };
    const config = { ...parsed, plans: { ...parsed.plans, pro: unbounded } };
    const limits = config.api.inFlight;
    const log = createLogger('error');
    const store = await openMigratedStore(config, log);
    const nowSeconds = () => Math.floor(Date.now() / 1000);
    let authorization = '';
    const built = performance.now();
    await withPublisher(config, log, async ({ publisher }) => {
      await runSimulator(
        createSimulator({ seed: config.simulator.seed, traders: config.simulator.traders }),
        publisher,
        { backfillDays: DAYS, live: false },
      );
      await publishAccount(publisher, {
        accountId: 'bench-overload',
        plan: 'pro',
        displayName: 'Bench',
        version: nowSeconds(),
      });
      authorization = `Bearer ${(await publishNewKey(publisher, 'bench-overload', 'bench key', nowSeconds())).plaintext}`;
    });
    const pairs = await store.query<{ wallet: string; condition_id: string }>(
      `SELECT wallet, any(condition_id) AS condition_id FROM {db:Identifier}.trader_markets_v2 FINAL GROUP BY wallet ORDER BY cityHash64(wallet) LIMIT {n:UInt32}`,
      { n: PAIRS },
    );
    console.log(
      `world: ${DAYS} day(s), ${TRADERS} named traders, built in ${((performance.now() - built) / 1000).toFixed(1)} s; ${pairs.length} (trader, market) pairs`,
    );
    const prefix = config.api.prefix;
    const paths = pairs.flatMap(({ wallet, condition_id: market }) => [
      `${prefix}/traders/${wallet}`,
      `${prefix}/traders/${wallet}/markets?limit=50`,
      `${prefix}/traders/${wallet}/markets/${market}/summary`,
      `${prefix}/traders/${wallet}/markets/${market}`,
      `${prefix}/traders/${wallet}/fills?limit=100`,
    ]);

    const limiter = new InFlightLimiter(limits);
    const app = await buildHttpServer({
      log: createLogger('silent'),
      storeAlive: async () => true,
      readiness: () => ({ ready: true, detail: {} }),
      api: { config, store, now: nowSeconds, inFlight: limiter },
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    console.log(
      `limits: API_MAX_IN_FLIGHT=${limits.maxInFlight} queue depth ${limits.queueDepth}, queue wait ${limits.maxQueueWaitMs} ms`,
    );

    // Warm-up: caches (key, store) and the limiter's hold average.
    await driver.run({
      url,
      authorization,
      paths,
      durationS: 2,
      mode: { kind: 'closed', concurrency: limits.maxInFlight },
    });

    const runs: { capacity: number; sustainable: Phase; overload: Phase }[] = [];
    for (let run = 1; run <= REPEAT; run++) {
      limiter.resetCounters();
      const closed = await driver.run({
        url,
        authorization,
        paths,
        durationS: DURATION,
        mode: { kind: 'closed', concurrency: limits.maxInFlight },
      });
      const capacity = closed.answers.filter((answer) => isServed(answer.status)).length / closed.seconds;
      const rate = Math.max(1, Math.round(capacity * SUSTAINABLE));
      limiter.resetCounters();
      const sustainable = phaseOf(
        rate,
        await measured(() =>
          driver.run({ url, authorization, paths, durationS: DURATION, mode: { kind: 'open', rate } }),
        ),
        limiter.stats,
      );
      limiter.resetCounters();
      const overload = phaseOf(
        rate * FACTOR,
        await measured(() =>
          driver.run({ url, authorization, paths, durationS: DURATION, mode: { kind: 'open', rate: rate * FACTOR } }),
        ),
        limiter.stats,
      );
      runs.push({ capacity, sustainable, overload });
      console.log(
        `run ${run}: capacity ${capacity.toFixed(0)}/s; at ${rate}/s served p50 ${ms(sustainable.servedP50)} p99 ${ms(sustainable.servedP99)} (refused ${sustainable.refused}); ` +
          `at ${rate * FACTOR}/s served ${overload.served} p50 ${ms(overload.servedP50)} p99 ${ms(overload.servedP99)}, refused ${overload.refused} p99 ${ms(overload.refusedP99)}, ` +
          `max queue wait ${ms(overload.maxQueueWaitMs)}, mean hold ${ms(sustainable.meanHoldMs)} → ${ms(overload.meanHoldMs)}, other ${overload.other}, errors ${overload.errors}; ` +
          `server event-loop delay p99 ${ms(sustainable.loopDelayP99)} → ${ms(overload.loopDelayP99)}, CPU ${sustainable.cpuCores.toFixed(2)} → ${overload.cpuCores.toFixed(2)} cores`,
      );
    }
    await app.close();
    await store.close();

    const med = (pick: (run: (typeof runs)[number]) => number) => median(runs.map(pick));
    const normalP99 = med((run) => run.sustainable.servedP99);
    const servedP99 = med((run) => run.overload.servedP99);
    const refusedP99 = med((run) => run.overload.refusedP99);
    const maxWait = Math.max(...runs.map((run) => run.overload.maxQueueWaitMs));
    console.log(`\nmedians of ${REPEAT} run(s), ${DURATION} s per phase (shared machine: read the ratios)`);
    console.log(
      `  capacity (closed loop, ${limits.maxInFlight} workers)   ${med((run) => run.capacity).toFixed(0)} answers/s`,
    );
    console.log(
      `  sustainable rate (${SUSTAINABLE} × capacity)       ${med((run) => run.sustainable.rate).toFixed(0)} req/s: served p50 ${ms(med((run) => run.sustainable.servedP50))}, p99 ${ms(normalP99)}, refused ${med((run) => run.sustainable.refused)}`,
    );
    console.log(
      `  ${FACTOR}× that rate                              ${med((run) => run.overload.rate).toFixed(0)} req/s offered`,
    );
    console.log(
      `    served                                 ${med((run) => run.overload.served)} answers, p50 ${ms(med((run) => run.overload.servedP50))}, p99 ${ms(servedP99)} (${(servedP99 / normalP99).toFixed(2)} × the normal p99)`,
    );
    console.log(
      `    refused (503 overloaded)               ${med((run) => run.overload.refused)} answers, p99 ${ms(refusedP99)} (aim ≤ ${REFUSAL_AIM_MS} ms)`,
    );
    console.log(`    longest queue wait of a served call    ${ms(maxWait)} (bound ${limits.maxQueueWaitMs} ms)`);
    console.log(
      `    mean slot hold (the call's own work)   ${ms(med((run) => run.overload.meanHoldMs))} (at the sustainable rate ${ms(med((run) => run.sustainable.meanHoldMs))})`,
    );
    console.log(
      `    other statuses / errors                ${med((run) => run.overload.other)} / ${med((run) => run.overload.errors)}`,
    );
    console.log(
      `    server event-loop delay p99            ${ms(med((run) => run.overload.loopDelayP99))} (at the sustainable rate ${ms(med((run) => run.sustainable.loopDelayP99))}); CPU ${med((run) => run.overload.cpuCores).toFixed(2)} cores`,
    );
    const checks = [
      [`refusals answered within ${REFUSAL_AIM_MS} ms (p99)`, refusedP99 <= REFUSAL_AIM_MS || Number.isNaN(refusedP99)],
      ['no queue wait above the bound', maxWait <= limits.maxQueueWaitMs],
      ['served p99 at 5× within the normal p99 (ratio ≤ 1)', servedP99 <= normalP99],
      [
        'no other status, no error',
        runs.every((run) => run.overload.other === 0 && run.overload.errors === 0 && run.sustainable.other === 0),
      ],
    ] as const;
    for (const [label, ok] of checks) console.log(`  ${ok ? 'ok  ' : 'MISS'} ${label}`);
  } finally {
    driver.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

runBenchmark(main);
