/**
 * `npm run bench:world` — not in CI. The embedded default (`main.ts all`: embedded ClickHouse, the
 * in-process log, the live plane's feed, the simulator) as one child process on a fresh data directory,
 * running its world until it has published `--events` events (10 M by default), with memory sampled as it
 * goes. The in-process log's bound must keep memory flat however much goes through it: before, the live
 * feed's group kept topics it does not read from ever being trimmed, and the process stopped for good at
 * about 5 M events (test/embedded-log-bound.integration.test.ts shows the rule at a smaller size).
 *
 * The world is backfilled at full speed, so `--days` of it must hold the events (about 0.85 M a day at
 * 120 traders; by default enough days for `--events`, at most the 60 the configuration allows). Every
 * `--sample` seconds it prints events published and ingested, the rate, the server's RSS (/proc) and V8
 * heap (its /metrics), and the messages the live feed skipped. Then one summary line: RSS and heap of the
 * first settled samples (after a tenth of the events) against the last three, and the largest; then the
 * process is stopped with SIGTERM and its shutdown timed against its grace (SHUTDOWN_GRACE_MS).
 * A stall (nothing published for a minute while the backfill is not done) ends the run with exit 1.
 *
 * Options: --events N (10000000), --days D (derived from --events), --traders N (120), --sample S (15).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort, median, rssOf, runBenchmark } from './support.ts';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '10000000' },
    days: { type: 'string' },
    traders: { type: 'string', default: '120' },
    sample: { type: 'string', default: '15' },
  },
});
const TARGET = Number(values.events);
/** About 0.85 M events a simulated day at 120 traders (test/bench/RESULTS.md): a day more than that, for margin. */
const DAYS = values.days ?? String(Math.min(60, Math.ceil(TARGET / 800_000) + 1));
const SAMPLE_MS = Number(values.sample) * 1000;
const STALL_MS = 60_000;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The sum of a metric's samples over its labels, from a Prometheus exposition. */
function metricSum(exposition: string, name: string): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== ' ' && line[name.length] !== '{')) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const millions = (count: number) => `${(count / 1e6).toFixed(2)} M`;

interface Sample {
  seconds: number;
  published: number;
  ingested: number;
  rss: number;
  heap: number;
  skipped: number;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-world-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const graceMs = Number(process.env.SHUTDOWN_GRACE_MS ?? 20_000);
  console.log(
    `${os.cpus().length} CPUs; load average at start ${os
      .loadavg()
      .map((value) => value.toFixed(1))
      .join(' ')}; target ${millions(TARGET)} events, a world of ${DAYS} day(s), ${values.traders} traders`,
  );
  // One process (node with tsx's loader, not the tsx CLI, which would put a parent between): its RSS is the service's.
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts', 'all'], {
    cwd: ROOT,
    env: {
      ...process.env,
      UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16',
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SIM_BACKFILL_DAYS: DAYS,
      SIM_TRADERS: values.traders,
      SIM_LIVE: 'true',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  /** Warnings and errors of the service, by message (the live feed's skips among them). */
  const warnings = new Map<string, number>();
  let backfillDone = false;
  let shutdownLine = '';
  createInterface({ input: child.stdout! }).on('line', (text) => {
    let line: { level?: number; msg?: string };
    try {
      line = JSON.parse(text) as typeof line;
    } catch {
      return;
    }
    if (line.msg === 'simulating live' || line.msg === 'demo data ready') backfillDone = true;
    if (line.msg?.startsWith('shutdown')) shutdownLine = line.msg;
    if ((line.level ?? 0) >= 40 && line.msg) warnings.set(line.msg, (warnings.get(line.msg) ?? 0) + 1);
  });

  const startedAt = performance.now();
  const samples: Sample[] = [];
  let outcome = 'target reached';
  let stalled = false;
  try {
    let lastProgressAt = performance.now();
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
      if (child.exitCode !== null) throw new Error(`main.ts all exited (${child.exitCode}) during the run`);
      const exposition = await fetch(`${base}/metrics`).then(
        (response) => response.text(),
        () => '',
      );
      if (!exposition) continue;
      const sample: Sample = {
        seconds: (performance.now() - startedAt) / 1000,
        published: metricSum(exposition, 'trader_analytics_source_events_published_total'),
        ingested: metricSum(exposition, 'trader_analytics_ingest_events_total'),
        rss: await rssOf(child.pid!),
        heap: metricSum(exposition, 'nodejs_heap_size_used_bytes'),
        skipped: metricSum(exposition, 'trader_analytics_log_skipped_messages_total'),
      };
      const previous = samples.at(-1);
      samples.push(sample);
      const rate = previous ? (sample.published - previous.published) / (sample.seconds - previous.seconds) : 0;
      console.log(
        `${sample.seconds.toFixed(0).padStart(5)} s: published ${millions(sample.published)}, ingested ${millions(sample.ingested)} (${Math.round(rate).toLocaleString('en')}/s); RSS ${mb(sample.rss)}, heap ${mb(sample.heap)}; live feed skipped ${sample.skipped}; load ${os.loadavg()[0]!.toFixed(1)}`,
      );
      if (!previous || sample.published > previous.published) lastProgressAt = performance.now();
      if (sample.published >= TARGET) break;
      if (backfillDone) {
        outcome = `the world's backfill ended before the target (raise --days)`;
        break;
      }
      if (performance.now() - lastProgressAt > STALL_MS) {
        outcome = `STALLED: nothing published for ${STALL_MS / 1000} s while the backfill is not done`;
        stalled = true;
        break;
      }
    }
  } finally {
    const stopAt = performance.now();
    if (child.exitCode === null) child.kill('SIGTERM');
    const code = await Promise.race([
      exited,
      new Promise<'no exit'>((resolve) => setTimeout(() => resolve('no exit'), graceMs + 10_000)),
    ]);
    if (code === 'no exit') child.kill('SIGKILL');
    const shutdownS = (performance.now() - stopAt) / 1000;
    const last = samples.at(-1);
    if (last) {
      // Settled: from a tenth of the events on (the start holds the store's opening and the first batches' garbage).
      const settled = samples.filter((sample) => sample.published >= last.published / 10);
      const start = settled.slice(0, 3);
      const end = settled.slice(-3);
      const rssStart = median(start.map((sample) => sample.rss));
      const rssEnd = median(end.map((sample) => sample.rss));
      const heapStart = median(start.map((sample) => sample.heap));
      const heapEnd = median(end.map((sample) => sample.heap));
      const growth = (from: number, to: number) => `${(((to - from) / from) * 100).toFixed(1)}%`;
      console.log(
        `\nwarnings and errors of the service: ${warnings.size === 0 ? 'none' : JSON.stringify(Object.fromEntries(warnings))}`,
      );
      console.log(
        `world: ${outcome}; ${millions(last.published)} published, ${millions(last.ingested)} ingested in ${last.seconds.toFixed(0)} s (${Math.round(last.published / last.seconds).toLocaleString('en')}/s); RSS ${mb(rssStart)} → ${mb(rssEnd)} (${growth(rssStart, rssEnd)}, max ${mb(Math.max(...samples.map((sample) => sample.rss)))}), heap ${mb(heapStart)} → ${mb(heapEnd)} (${growth(heapStart, heapEnd)}, max ${mb(Math.max(...samples.map((sample) => sample.heap)))}) from ${millions(start[0]!.published)} to ${millions(last.published)} events; live feed skipped ${last.skipped}; SIGTERM → exit ${String(code)} in ${shutdownS.toFixed(1)} s (grace ${graceMs / 1000} s${shutdownLine ? `; "${shutdownLine}"` : ''})`,
      );
    }
    await rm(dataDir, { recursive: true, force: true });
  }
  if (stalled) throw new Error(outcome);
}

runBenchmark(main);
