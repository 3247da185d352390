/**
 * bench:restart — how long `npm start` (role all) takes to be ready again on a populated DATA_DIR: from
 * spawning the process to `/readyz` answering 200. The baseline, measured in the same run on the same
 * DATA_DIR, is the `api` role's start to its first 200 on `/readyz` (the process, chDB opening the
 * store, the migrations check, the HTTP listener): what any start costs before it can serve at all. The
 * ratio says what the restart adds to that (its demo-key check, the rollup sweep, the store figures).
 * Aim: ready within seconds on the demo data set, a small multiple of the baseline.
 *
 * The data set is built on first use by one `npm start` (RESTART_BENCH_DAYS of simulated backfill,
 * default 2: the demo data set), or reused from RESTART_BENCH_DATA_DIR. RESTART_BENCH_ROUNDS (default 3)
 * alternates the two measurements; figures are medians.
 */
import { mkdtemp, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startRole, type RoleProcess } from '../harness/child.ts';
import { median, runBenchmark } from './support.ts';

const ROUNDS = Number(process.env.RESTART_BENCH_ROUNDS ?? 3);
const DAYS = process.env.RESTART_BENCH_DAYS ?? '2';

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

/** Spawns a role and returns the milliseconds until its /readyz answers 200 (after the log says it listens). */
async function timeToReady(
  role: 'all' | 'api',
  environment: Record<string, string>,
): Promise<{ ms: number; process: RoleProcess; readyz: Record<string, unknown> }> {
  const started = performance.now();
  const child = startRole(role, [], environment);
  const listening = await child.waitFor((line) => line.msg === 'listening');
  const address = String(listening.address);
  if (role === 'all') await child.waitFor((line) => line.msg === 'demo data ready');
  const response = await fetch(`${address}/readyz`);
  const ms = performance.now() - started;
  if (response.status !== 200)
    throw new Error(`${role}: /readyz answered ${response.status} after the ready log line: ${await response.text()}`);
  return { ms, process: child, readyz: (await response.json()) as Record<string, unknown> };
}

async function stop(child: RoleProcess): Promise<void> {
  child.child.kill('SIGTERM');
  const code = await child.exited;
  if (code !== 0) throw new Error(`exited with ${code}: ${child.stderr().slice(-2000)}`);
}

async function main(): Promise<void> {
  const dataDir = process.env.RESTART_BENCH_DATA_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'ta-bench-restart-')));
  const environment = { DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', SIM_BACKFILL_DAYS: DAYS };
  if (!(await exists(path.join(dataDir, 'simulator-state.json')))) {
    console.log(`building the data set in ${dataDir} (${DAYS} simulated days)…`);
    const first = await timeToReady('all', environment);
    console.log(
      `first start (backfill): ready after ${(first.ms / 1000).toFixed(1)} s, ${String(first.readyz.rows_stored)} rows stored`,
    );
    await stop(first.process);
  }

  const restarts: number[] = [];
  const baselines: number[] = [];
  let stored: unknown;
  for (let round = 0; round < ROUNDS; round++) {
    const baseline = await timeToReady('api', environment);
    baselines.push(baseline.ms);
    await stop(baseline.process);
    const restart = await timeToReady('all', environment);
    restarts.push(restart.ms);
    stored = restart.readyz.rows_stored;
    await stop(restart.process);
    console.log(
      `round ${round + 1}: restart ready after ${restart.ms.toFixed(0)} ms; api role ready after ${baseline.ms.toFixed(0)} ms`,
    );
  }
  const restartMedian = median(restarts);
  const baselineMedian = median(baselines);
  console.log(
    [
      '',
      `restart of role all on a populated DATA_DIR (${String(stored)} events stored), ${ROUNDS} rounds:`,
      `  time to /readyz 200: median ${(restartMedian / 1000).toFixed(2)} s`,
      `  baseline (role api, same DATA_DIR): median ${(baselineMedian / 1000).toFixed(2)} s`,
      `  ratio: ${(restartMedian / baselineMedian).toFixed(2)}× the baseline`,
      '  (figures are noisy on a shared machine; the ratio is measured in the same run)',
    ].join('\n'),
  );
}

runBenchmark(main);
