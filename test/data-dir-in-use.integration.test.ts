/**
 * A command that opens DATA_DIR while another process holds it (`keys` while `npm start` runs) says so in
 * one line and exits 1: no lock errors from the engine, no stack trace. The holder here is the `api` role
 * on an embedded store (it holds the directory as `npm start` does, without a demo backfill). A holder
 * killed outright leaves its status file behind but not its lock: the next command opens the directory.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startRole, type RoleProcess } from './harness/child.ts';

interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** `node main.ts <argv>` on `dataDir`, as a person runs it (`npx tsx main.ts …`), to its end. */
function main(argv: string[], dataDir: string): Promise<Run> {
  return new Promise((resolve) => {
    const environment = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
    };
    execFile(
      process.execPath,
      ['--import', 'tsx', 'main.ts', ...argv],
      { cwd: REPO_ROOT, env: environment, timeout: 120_000 },
      (error, stdout, stderr) => {
        const failure = error as (Error & { code?: number | string; signal?: string | null }) | null;
        resolve({
          code: failure ? (failure.signal ?? failure.code ?? 'unknown') : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        });
      },
    );
  });
}

let dataDir: string;
let holder: RoleProcess;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-in-use-'));
  holder = startRole('api', [], { DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' });
  await holder.waitFor((line) => line.msg === 'listening');
});

afterAll(async () => {
  holder?.child.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('a command on a DATA_DIR another process holds', () => {
  it('says so in one line naming DATA_DIR and the holder, and exits 1 (keys, migrate, import)', async () => {
    const expected = `stop \`npm start\` first: DATA_DIR is in use by another process (pid ${holder.child.pid}, ${dataDir})\n`;
    for (const argv of [
      ['keys', 'list', '--user', 'demo-pro'],
      ['migrate'],
      ['import', path.join(REPO_ROOT, 'test', 'fixtures')],
    ]) {
      const run = await main(argv, dataDir);
      expect(run.stderr, argv.join(' ')).toBe(expected);
      expect(run.stdout, argv.join(' ')).toBe('');
      expect(run.code, argv.join(' ')).toBe(1);
    }
  });

  it('opens it once its holder is gone, even killed outright', async () => {
    holder.child.kill('SIGKILL');
    expect(await holder.exited).toBe('SIGKILL');
    // The engine's status file outlives a killed holder; its lock does not.
    expect(existsSync(path.join(dataDir, 'clickhouse', 'status'))).toBe(true);
    const run = await main(['migrate'], dataDir);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });
});
