/**
 * `npm run bench:growth` at a size CI can afford: two small worlds built through the ingest pipeline, and
 * at each size every answer it reads (card, markets list, summary, chart, fills, whale flow over its
 * wallets) equal to the same answer after the rollups were recomputed from scratch (`--check`). Its
 * timing targets are the benchmark's to judge on a quiet machine (docs/performance.md), never this test's.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { REPO_ROOT } from './harness/child.ts';

const run = promisify(execFile);

it('builds two sizes and every answer equals its recomputation from scratch', async () => {
  // 6 and 12 named traders over three simulated hours: a few thousand fills each; up to 6 wallets × 6 answers.
  const { stdout } = await run(
    process.execPath,
    [
      ...['--import', 'tsx', 'test/bench/growth.bench.ts'],
      ...['--sizes', '0.05,0.1', '--days', '0.125', '--wallets', '6', '--check'],
    ],
    { cwd: REPO_ROOT, env: { ...process.env, UV_THREADPOOL_SIZE: '16' }, maxBuffer: 16 * 1024 * 1024 },
  );
  for (const size of ['0.05', '0.1']) {
    const at = stdout.search(new RegExp(`^${size.replace('.', '\\.')}x: [0-9]+ fills`, 'm'));
    expect(at).toBeGreaterThan(0);
    const section = stdout.slice(at);
    const [, fills, wallets] = /^[0-9.]+x: ([0-9]+) fills, ([0-9]+) wallets, [1-9][0-9]* markets/.exec(section) ?? [];
    expect(Number(fills)).toBeGreaterThan(1000);
    expect(Number(wallets)).toBeGreaterThan(1);
    expect(section).toMatch(
      /periodic jobs' statements \(median ms\): orphan sweep [0-9.]+, active wallets \(7 d\) [0-9.]+, skill population [0-9.]+/,
    );
    expect(section).toMatch(/ingest per tenth \(fills\/s\): ([0-9]+, ){9}[0-9]+;/);
    // Six answers (card, markets, summary, chart, fills, whale flow) for each wallet read.
    expect(section).toContain(
      `check: every answer (${6 * Math.min(6, Number(wallets))}) equal to its recomputation from scratch`,
    );
  }
  const lines = stdout.trimEnd().split('\n');
  expect(lines.at(-1)).toMatch(
    /^growth: ingest last\/first tenth [0-9.]+ at 0\.1x, cold card [0-9.]+x, cold summary [0-9.]+x, shutdown [0-9.]+ s$/,
  );
});
