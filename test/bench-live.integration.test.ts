/**
 * `npm run bench:live` at a size CI can afford: it runs to its end, and on each side (the plane, the plane
 * recording every watch, the bare fan-out) every event reaches every watcher. Its timing targets are the
 * benchmark's to judge on a quiet machine (docs/performance.md), never this test's.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { REPO_ROOT } from './harness/child.ts';

const run = promisify(execFile);

it('runs to its end at a small size: every event reaches every watcher, on every side', async () => {
  // 20 connections on 4 markets: 5 watchers a market. Paced, 20 events: 100 deliveries; a burst of 40: 200.
  const { stdout } = await run(
    process.execPath,
    [
      ...['--expose-gc', '--import', 'tsx', 'test/bench/live.bench.ts'],
      ...['--connections', '20', '--markets', '4', '--rate', '20', '--seconds', '1', '--burst', '40', '--repeat', '1'],
    ],
    { cwd: REPO_ROOT, env: { ...process.env, UV_THREADPOOL_SIZE: '16' }, maxBuffer: 16 * 1024 * 1024 },
  );
  for (const side of ['plane', 'recorded', 'bare'])
    expect(stdout).toMatch(
      new RegExp(`^${side} run 1 .*paced 20/s → 100/100 delivered, .*burst of 40 → 200/200 delivered`, 'm'),
    );
  expect(stdout).toContain('ok   every event reached every watcher');
  expect(stdout).toMatch(/recording: paced p99 [0-9.]+ ms against [0-9.]+; burst throughput [0-9.]+ × the plane's/);
});
