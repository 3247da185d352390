/**
 * `npm run bench:api:ab -- --before DIR` — bench:api on two checkouts, alternated in one run, so that a
 * change is judged against the same machine at the same time (a slow hour slows both sides alike).
 *
 * DIR is another checkout of the project with its own `node_modules` (e.g. `git worktree add /tmp/base
 * <commit>` and a symlink to this checkout's node_modules when the lock files agree). Each round runs
 * `npm run bench:api` once in each checkout, the side that goes first alternating (ABBA), with the
 * options after `--` passed to both (default `--repeat 1`). It reads each run's "targets" lines: the
 * single-request p50 of each endpoint and the mix's served rate. It prints every run's figures, the
 * medians, the before side's run-to-run spread (min–max), and whether the after median lies within it
 * or is better.
 *
 * Options: --before DIR (required), --after DIR (default: this checkout), --rounds N (3).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, runBenchmark } from './support.ts';

const { values, positionals } = parseArgs({
  options: {
    before: { type: 'string' },
    after: { type: 'string', default: path.resolve(import.meta.dirname, '../..') },
    rounds: { type: 'string', default: '3' },
  },
  allowPositionals: true,
});
if (!values.before) throw new Error('--before DIR is required: a checkout of the commit to compare against');
const SIDES = { before: path.resolve(values.before), after: path.resolve(values.after) } as const;
const ROUNDS = Number(values.rounds);
const BENCH_ARGS = positionals.length > 0 ? positionals : ['--repeat', '1'];

type Side = keyof typeof SIDES;
/** One run's figures: each endpoint's single-request p50 (ms) and the mix's served req/s. */
interface RunFigures {
  singleP50: Map<string, number>;
  mixServed: number;
}

/** The "targets" lines bench:api prints last: `  card     one at a time p50 <ms> p99 …` and `  mix      <n> req/s served …`. */
function parseTargets(output: string): RunFigures {
  const singleP50 = new Map<string, number>();
  for (const match of output.matchAll(/^\s+(\w+)\s+one at a time p50\s+([\d.]+)/gm))
    singleP50.set(match[1]!, Number(match[2]));
  const mix = /^\s+mix\s+(\d+) req\/s served/m.exec(output);
  if (singleP50.size === 0 || !mix) throw new Error(`bench:api printed no targets lines:\n${output.slice(-2000)}`);
  return { singleP50, mixServed: Number(mix[1]) };
}

function runBench(side: Side): Promise<RunFigures> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'bench:api', '--', ...BENCH_ARGS], {
      cwd: SIDES[side],
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`bench:api in ${SIDES[side]} exited ${code}:\n${output.slice(-2000)}`));
      else resolve(parseTargets(output));
    });
  });
}

runBenchmark(async () => {
  const runs: Record<Side, RunFigures[]> = { before: [], after: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order: Side[] = round % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
    for (const side of order) {
      const figures = await runBench(side);
      runs[side].push(figures);
      console.log(
        `round ${round + 1} ${side.padEnd(6)}: ${[...figures.singleP50].map(([endpoint, p50]) => `${endpoint} ${p50}`).join(', ')}; mix ${figures.mixServed} req/s`,
      );
    }
  }

  const endpoints = [...runs.before[0]!.singleP50.keys()];
  const row = (name: string, pick: (run: RunFigures) => number, higherIsBetter: boolean) => {
    const before = runs.before.map(pick);
    const after = runs.after.map(pick);
    const [low, high] = [Math.min(...before), Math.max(...before)];
    const afterMedian = median(after);
    const within = higherIsBetter ? afterMedian >= low : afterMedian <= high;
    console.log(
      `${name.padEnd(12)} before ${before.join(' / ').padEnd(22)} median ${median(before).toFixed(1).padStart(6)} (spread ${low}–${high})   ` +
        `after ${after.join(' / ').padEnd(22)} median ${afterMedian.toFixed(1).padStart(6)}   ${within ? 'within spread or better' : 'OUTSIDE the spread'}`,
    );
  };
  console.log('');
  console.log(
    `bench:api ${BENCH_ARGS.join(' ')}, ${ROUNDS} rounds alternated; before ${SIDES.before}, after ${SIDES.after}`,
  );
  for (const endpoint of [
    'card',
    'summary',
    'chart',
    'fills',
    ...endpoints.filter((name) => !['card', 'summary', 'chart', 'fills'].includes(name)),
  ]) {
    if (!endpoints.includes(endpoint)) continue;
    row(`${endpoint} p50 ms`, (run) => run.singleP50.get(endpoint) ?? Number.NaN, false);
  }
  row('mix req/s', (run) => run.mixServed, true);
});
