/**
 * `npm run bench:api-role` — the `api` role as its own process at a fixed rate of immutable answers
 * (issue 46): p99 in every second of the run, the first included, and how often the store was asked for
 * names and keys while it ran.
 *
 * 1. A child process builds the simulated world (--days days, --traders named traders, the embedded store
 *    in a fresh data directory, the in-process log), publishes --accounts Max accounts with one key each
 *    (the run's callers) and one more for the warm-up, picks up to three resolved markets of every wallet
 *    (their summaries and charts are immutable: kept until evicted), and exits.
 * 2. `node --import tsx main.ts api` serves that directory (no Redis: the gates in its memory).
 * 3. Warm-up: every path once with the warm-up key, so that every answer is kept; then the bench waits
 *    past a name's lifetime without a feed (operations/reads.ts), so that the run starts with every
 *    trader name expired and every run key never looked up: what an instance that has served these
 *    answers before meets when a new minute's callers arrive.
 * 4. The run: --rate requests/s for --duration s, an open loop from a second process (test/bench/load.ts),
 *    the paths and keys taken round-robin. Per second of sending: answers, non-200s, p50, p99, max.
 * 5. The same requests again at once (names and keys now kept: the run's own floor), and `/healthz` at
 *    the same rate (no store, no gates: the floor of the HTTP path on this machine), in the same run.
 * 6. The store statements the api process ran during each run, by read (its
 *    trader_analytics_store_query_duration_seconds counts), and its trader-name lookups (hits, misses).
 *
 * Options: --days N (1), --traders N (120), --accounts N (60: within Max's 20 rps each at 750/s),
 * --rate N (750), --duration S (10), --markets-per-wallet N (3).
 */
import { fork, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LoadDriver, type LoadResult } from './load.ts';
import { freePort, median, percentile, runBenchmark } from './support.ts';

const { values } = parseArgs({
  options: {
    days: { type: 'string', default: '1' },
    traders: { type: 'string', default: '120' },
    accounts: { type: 'string', default: '60' },
    rate: { type: 'string', default: '750' },
    duration: { type: 'string', default: '10' },
    'markets-per-wallet': { type: 'string', default: '3' },
    // Internal: this file, forked, builds the world into this directory.
    build: { type: 'string' },
  },
});
const DAYS = Number(values.days);
const TRADERS = Number(values.traders);
const ACCOUNTS = Number(values.accounts);
const RATE = Number(values.rate);
const DURATION = Number(values.duration);
const MARKETS_PER_WALLET = Number(values['markets-per-wallet']);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PREFIX = '/api/agent/v1';
const DATABASE = 'bench_api_role';
/** A trader name's lifetime without a feed (operations/reads.ts, NAME_SECONDS), and a margin past it. */
const NAME_LIFETIME_MS = 10_000;
const NAME_MARGIN_MS = 1_000;
const READY_TIMEOUT_MS = 120_000;
const TARGET_P99_MS = 20;

/** What the build leaves for the bench: the keys, and the (wallet, resolved market) pairs. */
interface Prepared {
  runKeys: string[];
  warmKey: string;
  pairs: { wallet: string; conditionId: string }[];
  fills: number;
  buildSeconds: number;
}

const environment = (dataDir: string): NodeJS.ProcessEnv => ({
  ...process.env,
  DATA_DIR: dataDir,
  CLICKHOUSE_DATABASE: DATABASE,
  LOG_LEVEL: 'warn',
  SIM_BACKFILL_DAYS: String(DAYS),
  SIM_TRADERS: String(TRADERS),
  SIM_LIVE: 'false',
});

/** The forked child: the world, the accounts and the pairs, written to `<dir>/prepared.json`. */
async function build(dataDir: string): Promise<void> {
  const started = performance.now();
  const [{ parseConfig }, { createLogger }, { withPublisher, openMigratedStore }, simulator, accounts] =
    await Promise.all([
      import('../../config.ts'),
      import('../../log.ts'),
      import('../../roles/runtime.ts'),
      import('../../ingest/sources/simulator/index.ts'),
      import('../../ingest/sources/accounts.ts'),
    ]);
  const config = parseConfig(environment(dataDir));
  const log = createLogger('error');
  const nowSeconds = Math.floor(Date.now() / 1000);
  const keys = await withPublisher(config, log, async ({ publisher }) => {
    const world = simulator.createSimulator({ seed: config.simulator.seed, traders: config.simulator.traders });
    await simulator.runSimulator(world, publisher, { backfillDays: DAYS, live: false });
    const minted: string[] = [];
    for (let index = 0; index <= ACCOUNTS; index++) {
      const accountId = `bench-role-${index}`;
      await accounts.publishAccount(publisher, { accountId, plan: 'max', displayName: accountId, version: nowSeconds });
      minted.push((await accounts.publishNewKey(publisher, accountId, 'bench', nowSeconds)).plaintext);
    }
    return minted;
  });
  const store = await openMigratedStore(config, log);
  try {
    // Resolved in the trader's row and by the market's resolution: the summary and the chart are then immutable.
    const candidates = await store.query<{ wallet: string; condition_id: string }>(
      `SELECT wallet, condition_id FROM {db:Identifier}.trader_markets_v2 FINAL
       WHERE resolved AND condition_id IN (SELECT condition_id FROM {db:Identifier}.market_resolutions_v2)
       ORDER BY cityHash64(wallet, condition_id)`,
    );
    const perWallet = new Map<string, number>();
    const pairs: Prepared['pairs'] = [];
    for (const row of candidates) {
      const taken = perWallet.get(row.wallet) ?? 0;
      if (taken >= MARKETS_PER_WALLET) continue;
      perWallet.set(row.wallet, taken + 1);
      pairs.push({ wallet: row.wallet, conditionId: row.condition_id });
    }
    const [counted] = await store.query<{ fills: number }>('SELECT count() AS fills FROM {db:Identifier}.fills_v2');
    const prepared: Prepared = {
      runKeys: keys.slice(1).map((key) => `Bearer ${key}`),
      warmKey: `Bearer ${keys[0]}`,
      pairs,
      fills: Number(counted?.fills ?? 0),
      buildSeconds: (performance.now() - started) / 1000,
    };
    await writeFile(path.join(dataDir, 'prepared.json'), JSON.stringify(prepared));
  } finally {
    await store.close();
  }
}

const loadAverage = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
const ms = (value: number) => (Number.isNaN(value) ? '-' : value.toFixed(1));

/** Counts of a Prometheus exposition's samples of one metric, by the value of one label. */
function countsBy(exposition: string, metric: string, label: string, where: Record<string, string> = {}) {
  const counts = new Map<string, number>();
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((match): [string, string] => [match[1]!, match[2]!]),
    );
    if (Object.entries(where).some(([name, value]) => labels[name] !== value)) continue;
    const key = labels[label] ?? '';
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** What the api process did between two scrapes: store statements by read, trader-name lookups. */
function storeWork(before: string, after: string) {
  const statements = (text: string) =>
    countsBy(text, 'trader_analytics_store_query_duration_seconds_count', 'read', { outcome: 'ok' });
  const names = (text: string) =>
    countsBy(text, 'trader_analytics_read_cache_lookups_total', 'outcome', { cache: 'trader_name' });
  const diff = (a: Map<string, number>, b: Map<string, number>) =>
    new Map([...b].map(([key, value]): [string, number] => [key, value - (a.get(key) ?? 0)]).filter(([, v]) => v > 0));
  return { statements: diff(statements(before), statements(after)), names: diff(names(before), names(after)) };
}

/** Per second of sending: answers, non-200s, p50, p99, max. */
function perSecond(result: LoadResult) {
  const seconds: { second: number; answers: number; non200: number; p50: number; p99: number; max: number }[] = [];
  for (let second = 0; second < Math.ceil(result.seconds); second++) {
    const inSecond = result.answers.filter((answer) => Math.floor(answer.sentAtMs / 1000) === second);
    if (inSecond.length === 0) continue;
    const latencies = inSecond.map((answer) => answer.ms);
    seconds.push({
      second,
      answers: inSecond.length,
      non200: inSecond.filter((answer) => answer.status !== 200).length,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      max: Math.max(...latencies),
    });
  }
  return seconds;
}

function printRun(
  title: string,
  result: LoadResult,
): { worstP99: number; firstP99: number; medianP99: number; non200: number } {
  const seconds = perSecond(result);
  const all = result.answers.map((answer) => answer.ms);
  const non200 = result.answers.filter((answer) => answer.status !== 200).length;
  const statuses = new Map<number, number>();
  for (const answer of result.answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
  const byStatus = [...statuses].map(([status, count]) => `${status} × ${count}`).join(', ');
  console.log(
    `\n${title}: ${result.answers.length} answers (${byStatus}) in ${result.seconds.toFixed(1)} s, errors and timeouts ${result.errors}; ` +
      `p50 ${ms(percentile(all, 0.5))} ms, p99 ${ms(percentile(all, 0.99))} ms; generator loop delay p99 ${ms(result.generatorLoopDelayP99)} ms, ` +
      `${result.generatorCpuCores.toFixed(2)} cores; load average ${loadAverage()}`,
  );
  console.log('  second  answers  non-200  p50 ms  p99 ms  max ms');
  for (const row of seconds)
    console.log(
      `  ${String(row.second).padStart(6)}  ${String(row.answers).padStart(7)}  ${String(row.non200).padStart(7)}  ` +
        `${ms(row.p50).padStart(6)}  ${ms(row.p99).padStart(6)}  ${ms(row.max).padStart(6)}`,
    );
  return {
    worstP99: Math.max(...seconds.map((row) => row.p99)),
    firstP99: seconds[0]?.p99 ?? Number.NaN,
    medianP99: median(seconds.map((row) => row.p99)),
    non200,
  };
}

function printStoreWork(title: string, work: ReturnType<typeof storeWork>): void {
  const statements = [...work.statements].sort((a, b) => b[1] - a[1]);
  console.log(
    `  ${title}: store statements by read: ${statements.map(([read, count]) => `${read} ${count}`).join(', ') || 'none'}; ` +
      `trader-name lookups: hit ${work.names.get('hit') ?? 0}, miss ${work.names.get('miss') ?? 0}`,
  );
}

async function main(): Promise<void> {
  console.log(`${os.cpus().length} CPUs; load average at start ${loadAverage()}`);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-api-role-'));
  let server: ReturnType<typeof spawn> | undefined;
  const driver = new LoadDriver();
  try {
    // 1. The world, built by a child that exits (the embedded store binds its directory to one process).
    const builder = fork(fileURLToPath(import.meta.url), ['--build', dataDir, ...process.argv.slice(2)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: environment(dataDir),
    });
    const code = await new Promise<number | null>((resolve) => builder.once('exit', resolve));
    if (code !== 0) throw new Error(`the build exited with ${code}`);
    const prepared = JSON.parse(await readFile(path.join(dataDir, 'prepared.json'), 'utf8')) as Prepared;
    const wallets = new Set(prepared.pairs.map((pair) => pair.wallet)).size;
    console.log(
      `built ${DAYS} day(s), ${TRADERS} named traders, ${prepared.fills} fills in ${prepared.buildSeconds.toFixed(0)} s; ` +
        `${prepared.pairs.length} resolved (wallet, market) pairs over ${wallets} wallets; ${prepared.runKeys.length} Max keys`,
    );

    // 2. The api role over that directory.
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, ['--import', 'tsx', 'main.ts', 'api'], {
      cwd: ROOT,
      env: { ...environment(dataDir), PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const serverExit = new Promise<number | null>((resolve) => server!.once('exit', resolve));
    const startedAt = performance.now();
    for (;;) {
      if (server.exitCode !== null) throw new Error(`main.ts api exited (${server.exitCode}) before it was ready`);
      if (performance.now() - startedAt > READY_TIMEOUT_MS) throw new Error('main.ts api was not ready in time');
      const ready = await fetch(`${base}/readyz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ready) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    console.log(`main.ts api ready after ${((performance.now() - startedAt) / 1000).toFixed(1)} s (pid ${server.pid})`);

    // 3. Every answer kept, then every name past its lifetime.
    const paths = prepared.pairs.flatMap(({ wallet, conditionId }) => [
      `${PREFIX}/traders/${wallet}/markets/${conditionId}/summary`,
      `${PREFIX}/traders/${wallet}/markets/${conditionId}`,
    ]);
    const warm = await driver.run({
      url: base,
      authorization: prepared.warmKey,
      paths,
      durationS: 600,
      mode: { kind: 'closed', concurrency: 2 },
      maxRequests: paths.length,
    });
    const warmFailed = warm.answers.filter((answer) => answer.status !== 200);
    if (warmFailed.length > 0 || warm.answers.length !== paths.length)
      throw new Error(
        `warm-up: ${warm.answers.length} of ${paths.length} answered, ${warmFailed.length} not 200 (first: ${warmFailed[0]?.status} ${paths[warmFailed[0]?.path ?? 0]})`,
      );
    console.log(
      `warm-up: ${paths.length} paths (summary and chart of each pair) read once in ${warm.seconds.toFixed(1)} s, ` +
        `p50 ${ms(
          percentile(
            warm.answers.map((answer) => answer.ms),
            0.5,
          ),
        )} ms; waiting past the names' lifetime`,
    );
    await new Promise((resolve) => setTimeout(resolve, NAME_LIFETIME_MS + NAME_MARGIN_MS));

    const scrape = async () => (await fetch(`${base}/metrics`)).text();
    // The paths in a hash order of the pairs, so that consecutive requests name different traders.
    const job = (requestPaths: string[], authorization: string | string[]) => ({
      url: base,
      authorization,
      paths: requestPaths,
      durationS: DURATION,
      mode: { kind: 'open' as const, rate: RATE },
    });
    console.log(
      `\nthe run: ${RATE} requests/s for ${DURATION} s over ${paths.length} paths (${wallets} wallets), ` +
        `${prepared.runKeys.length} keys never looked up before, every name expired; target p99 ≤ ${TARGET_P99_MS} ms in every second`,
    );
    // 4. The run.
    const beforeCold = await scrape();
    const cold = printRun('cold start (names expired, keys new)', await driver.run(job(paths, prepared.runKeys)));
    const afterCold = await scrape();
    printStoreWork('cold start', storeWork(beforeCold, afterCold));
    // 5. The same again, names and keys kept; then the HTTP floor.
    const warmRun = printRun('again at once (names and keys kept)', await driver.run(job(paths, prepared.runKeys)));
    printStoreWork('again', storeWork(afterCold, await scrape()));
    const floor = printRun('/healthz at the same rate (no store, no gates)', await driver.run(job(['/healthz'], '')));

    console.log(
      `\napi-role: ${RATE}/s over ${wallets} wallets: worst second p99 ${ms(cold.worstP99)} ms (first second ${ms(cold.firstP99)}), ` +
        `again ${ms(warmRun.worstP99)} ms, /healthz ${ms(floor.worstP99)} ms; non-200 ${cold.non200 + warmRun.non200}; ` +
        `median second's p99 ${ms(cold.medianP99)} ms; target ≤ ${TARGET_P99_MS} ms in every second: ${cold.worstP99 <= TARGET_P99_MS ? 'met' : 'missed'}`,
    );
    server.kill('SIGTERM');
    await serverExit;
  } finally {
    driver.close();
    if (server && server.exitCode === null) server.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (values.build !== undefined) runBenchmark(() => build(values.build!));
else runBenchmark(main);
