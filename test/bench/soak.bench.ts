/**
 * `npm run bench:soak` — not in CI. The embedded default (`main.ts all`: embedded ClickHouse, the
 * in-process log, the simulator live) as a child process on a fresh data directory, under a steady
 * mix of reads for SOAK_SECONDS (default 600), at SOAK_RATE requests/s (default 5: within the demo Max
 * key's 20 rps, so the gates never refuse) while live ingest goes on. Prints, minute by minute, the
 * answers by status, the served p50/p99 and the server's RSS; then the checks: no 5xx at all, RSS
 * growth first → last minute (aim < 10%), and the p99 of the last minute against the first.
 *
 * Environment: SOAK_SECONDS (600), SOAK_RATE (5), SOAK_BACKFILL_DAYS (0.25: the demo world before the
 * soak starts; the default 2 days takes long to backfill on a small machine), SOAK_TRADERS (120).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLoad } from './load.ts';
import { freePort, median, percentile, rssOf, runBenchmark } from './support.ts';

const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const SOAK_RATE = Number(process.env.SOAK_RATE ?? 5);
const BACKFILL_DAYS = process.env.SOAK_BACKFILL_DAYS ?? '0.25';
const TRADERS = process.env.SOAK_TRADERS ?? '120';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PREFIX = '/api/agent/v1';
const RSS_SAMPLE_MS = 2000;
const READY_TIMEOUT_MS = 30 * 60_000;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const ms = (value: number) => (Number.isNaN(value) ? '—' : `${value.toFixed(1)} ms`);

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-soak-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // One process (node with tsx's loader, not the tsx CLI, which would put a parent between): its RSS is the service's.
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts', 'all'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      SIM_BACKFILL_DAYS: BACKFILL_DAYS,
      SIM_TRADERS: TRADERS,
      SIM_LIVE: 'true',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    console.log(
      `${os.cpus().length} CPUs; load average at start ${os
        .loadavg()
        .map((value) => value.toFixed(1))
        .join(' ')}`,
    );
    const startedAt = performance.now();
    const keysFile = path.join(dataDir, 'demo-keys.json');
    let authorization = '';
    const get = async <T>(pathname: string): Promise<T> => {
      const response = await fetch(`${base}${PREFIX}${pathname}`, { headers: { authorization } });
      if (!response.ok) throw new Error(`${pathname}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    };
    /** The mix: wallets the service itself lists (whales, popular), two of their markets, six reads per pair. */
    const discover = async (): Promise<{ paths: string[]; wallets: number }> => {
      const whales = await get<{ rows: { wallet: string }[] }>('/flow/whales?min_usd=1000&by=window');
      const popular = await get<{ traders: { wallet: string }[] }>('/popular');
      const wallets = [
        ...new Set([...whales.rows.map((row) => row.wallet), ...popular.traders.map((trader) => trader.wallet)]),
      ].slice(0, 30);
      const paths: string[] = [];
      for (const wallet of wallets) {
        const { markets } = await get<{ markets: { condition_id: string }[] }>(`/traders/${wallet}/markets?limit=3`);
        for (const { condition_id: market } of markets.slice(0, 2)) {
          paths.push(
            `${PREFIX}/traders/${wallet}`,
            `${PREFIX}/traders/${wallet}/markets?limit=50`,
            `${PREFIX}/traders/${wallet}/markets/${market}/summary`,
            `${PREFIX}/traders/${wallet}/markets/${market}`,
            `${PREFIX}/traders/${wallet}/fills?limit=100`,
            `${PREFIX}/flow/whales`,
          );
        }
      }
      return { paths, wallets: wallets.length };
    };
    /** The simulator's saved position (roles/all.ts: every event before resumeFromTs is in the store) is past the backfill: the world is live. */
    const backfillPublished = async () => {
      const state = await readFile(path.join(dataDir, 'simulator-state.json'), 'utf8').then(
        (text) => JSON.parse(text) as { resumeFromTs?: number; backfillUntilTs?: number },
        () => null,
      );
      return (
        state?.resumeFromTs !== undefined &&
        state.backfillUntilTs !== undefined &&
        state.resumeFromTs >= state.backfillUntilTs
      );
    };
    // Another process: asked over HTTP until /readyz says ready, or — once the backfill is published
    // and the demo world is live — until the reads serve the demo world (a restart's readiness can lag
    // the store; the soak is about the reads under live ingest).
    let mix: { paths: string[]; wallets: number } = { paths: [], wallets: 0 };
    let startedBy = '';
    for (let attempt = 0; ; attempt++) {
      if (child.exitCode !== null) throw new Error(`main.ts all exited (${child.exitCode}) before it was ready`);
      if (performance.now() - startedAt > READY_TIMEOUT_MS) throw new Error('main.ts all was not ready in time');
      const ready = await fetch(`${base}/readyz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (!authorization)
        authorization = await readFile(keysFile, 'utf8').then(
          (text) => `Bearer ${(JSON.parse(text) as { max: string }).max}`,
          () => '',
        );
      if (authorization && (ready || (attempt % 20 === 19 && (await backfillPublished())))) {
        mix = await discover().catch(() => ({ paths: [], wallets: 0 }));
        if (mix.paths.length > 0) {
          startedBy = ready ? '/readyz ready' : '/readyz not ready yet, but the reads serve the demo world';
          break;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const { paths } = mix;
    console.log(
      `main.ts all serving after ${((performance.now() - startedAt) / 1000).toFixed(1)} s (${startedBy}; backfill ${BACKFILL_DAYS} day(s), ${TRADERS} traders; live ingest on)`,
    );
    console.log(`mix: ${paths.length} paths over ${mix.wallets} wallets; ${SOAK_RATE} req/s for ${SOAK_SECONDS} s\n`);

    const minutes: {
      minute: number;
      answers: number;
      statuses: Record<number, number>;
      p50: number;
      p99: number;
      rss: number;
      errors: number;
    }[] = [];
    for (let minute = 1, left = SOAK_SECONDS; left > 0; minute++, left -= 60) {
      const rss: number[] = [];
      const sampler = setInterval(
        () =>
          void rssOf(child.pid!).then(
            (bytes) => rss.push(bytes),
            () => undefined,
          ),
        RSS_SAMPLE_MS,
      );
      rss.push(await rssOf(child.pid!));
      const result = await runLoad({
        url: base,
        authorization,
        paths,
        durationS: Math.min(60, left),
        mode: { kind: 'open', rate: SOAK_RATE },
        timeoutMs: 30_000,
      });
      clearInterval(sampler);
      rss.push(await rssOf(child.pid!));
      const statuses: Record<number, number> = {};
      for (const answer of result.answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      const served = result.answers
        .filter((answer) => answer.status >= 200 && answer.status < 400)
        .map((answer) => answer.ms);
      const row = {
        minute,
        answers: result.answers.length,
        statuses,
        p50: percentile(served, 0.5),
        p99: percentile(served, 0.99),
        rss: median(rss),
        errors: result.errors,
      };
      minutes.push(row);
      console.log(
        `minute ${String(minute).padStart(2)}: ${row.answers} answers ${JSON.stringify(statuses)}, errors ${row.errors}; served p50 ${ms(row.p50)} p99 ${ms(row.p99)}; RSS ${mb(row.rss)}`,
      );
    }

    const first = minutes[0]!;
    const last = minutes.at(-1)!;
    const fiveXX = minutes.reduce(
      (sum, row) =>
        sum +
        Object.entries(row.statuses)
          .filter(([status]) => Number(status) >= 500)
          .reduce((acc, [, count]) => acc + count, 0),
      0,
    );
    const errors = minutes.reduce((sum, row) => sum + row.errors, 0);
    // The first minute still holds the backfill's garbage (the collector gives it back during minute 2),
    // so growth is measured from the settled start: the median RSS of minutes 2–4 against that of the last
    // three minutes (medians, so that one collection's dip or spike does not decide). Raw figures printed too.
    const settled = minutes.length >= 5 ? minutes.slice(1) : minutes;
    const rssStart = median(settled.slice(0, 3).map((row) => row.rss));
    const rssEnd = median(settled.slice(-3).map((row) => row.rss));
    const rssGrowth = (rssEnd - rssStart) / rssStart;
    const p99Ratio = last.p99 / first.p99;
    console.log(
      `\nsoak: ${SOAK_SECONDS} s at ${SOAK_RATE} req/s, ${minutes.reduce((sum, row) => sum + row.answers, 0)} answers (shared machine: figures are noisy)`,
    );
    console.log(`  5xx answers                 ${fiveXX}   connection errors/timeouts ${errors}`);
    console.log(`  RSS first → last minute     ${mb(first.rss)} → ${mb(last.rss)}`);
    console.log(
      `  RSS settled start → end     ${mb(rssStart)} → ${mb(rssEnd)} (${(rssGrowth * 100).toFixed(1)}%, aim < 10%; medians of minutes ${settled[0]!.minute}–${settled[Math.min(2, settled.length - 1)]!.minute} and the last three)`,
    );
    console.log(`  p99 first → last minute     ${ms(first.p99)} → ${ms(last.p99)} (${p99Ratio.toFixed(2)} ×)`);
    const checks = [
      ['zero 5xx', fiveXX === 0],
      ['no connection error or timeout', errors === 0],
      ['RSS growth under 10%', rssGrowth < 0.1],
      ['p99 stable (last minute ≤ 1.5 × the first)', p99Ratio <= 1.5],
    ] as const;
    for (const [label, ok] of checks) console.log(`  ${ok ? 'ok  ' : 'MISS'} ${label}`);
  } finally {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      const code = await Promise.race([
        exited,
        new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 30_000)),
      ]);
      if (code === 'timeout') child.kill('SIGKILL');
    }
    await rm(dataDir, { recursive: true, force: true });
  }
}

runBenchmark(main);
