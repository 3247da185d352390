/**
 * `npm run bench:freshness` at a size CI can afford: a dozen short blocks with reorgs at the head. It
 * runs to its end, every provisional event a watcher was sent ended (final or retracted), fills were
 * retracted and none of them is stored, and its last line has the promised shape. Its timing targets are
 * the benchmark's to judge on a quiet machine (docs/performance.md), never this test's.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { REPO_ROOT } from './harness/child.ts';

const run = promisify(execFile);

it('runs to its end at a small size: every provisional event resolved, nothing retracted stored', async () => {
  const { stdout } = await run(
    process.execPath,
    [
      ...['--import', 'tsx', 'test/bench/freshness.bench.ts'],
      ...['--blocks', '12', '--block-ms', '400', '--reorg-every', '4', '--clients', '2'],
    ],
    { cwd: REPO_ROOT, env: { ...process.env, UV_THREADPOOL_SIZE: '16' }, maxBuffer: 16 * 1024 * 1024 },
  );
  const lines = stdout.trim().split('\n');
  expect(lines.at(-1)).toMatch(
    /^freshness: provisional p99 \d+ ms, final p99 \d+ ms, rest p99 \d+ ms, unresolved 0, stored retracted 0$/,
  );
  // The reorgs retracted fills the watchers had been sent provisionally, and REST saw every final one.
  const floor = /provisional refs (\d+), retracted fills (\d+)/.exec(stdout);
  expect(Number(floor?.[1])).toBeGreaterThan(0);
  expect(Number(floor?.[2])).toBeGreaterThan(0);
  expect(stdout).toMatch(/^rest: [1-9]\d* fills \(0 never seen\)/m);
});
