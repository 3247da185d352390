/**
 * `npm start` is one process tree that a supervisor can stop: SIGTERM sent to npm's own process reaches the
 * service, which drains and exits, leaving nothing behind; Ctrl-C (SIGINT to the whole group, which npm
 * forwards once more) is one request to stop, not an impatient second one.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './harness/child.ts';

interface NpmStart {
  npmPid: number;
  servicePid: number;
  lines: Record<string, unknown>[];
  exited: Promise<number | string>;
}

const dataDirs: string[] = [];
const groups: number[] = [];

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `npm start` in a process group of its own, as a person's shell or a supervisor starts it, until it listens. */
async function npmStart(): Promise<NpmStart> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-npm-start-'));
  dataDirs.push(dataDir);
  const npm = spawn('npm', ['start'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SIM_BACKFILL_DAYS: '0.02',
      SIM_TRADERS: '10',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  groups.push(npm.pid!);
  const lines: Record<string, unknown>[] = [];
  const exited = new Promise<number | string>((resolve) =>
    npm.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  let pending = '';
  let onLine: (() => void) | undefined;
  npm.stdout!.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const complete = pending.split('\n');
    pending = complete.pop() ?? '';
    for (const text of complete) {
      if (!text.startsWith('{')) continue;
      lines.push(JSON.parse(text) as Record<string, unknown>);
      onLine?.();
    }
  });
  const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
    onLine = () => {
      const line = lines.find((candidate) => candidate.msg === 'listening');
      if (line) resolve(line);
    };
    void exited.then((code) => reject(new Error(`npm start exited (${code}) before it listened`)));
  });
  return { npmPid: npm.pid!, servicePid: Number(listening.pid), lines, exited };
}

afterAll(async () => {
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // The group ended by itself.
    }
  }
  await Promise.all(dataDirs.map((directory) => rm(directory, { recursive: true, force: true })));
});

describe('npm start', () => {
  it('ends the service when SIGTERM is sent to npm alone: it drains, and nothing is left running', async () => {
    const started = await npmStart();
    expect(started.servicePid).not.toBe(started.npmPid);
    process.kill(started.npmPid, 'SIGTERM');
    expect(await started.exited).toBe(0);
    const shutdowns = started.lines.filter((line) => line.msg === 'shutting down: draining the batch in flight');
    expect(shutdowns.map((line) => line.signal)).toEqual(['SIGTERM']);
    expect(alive(started.servicePid)).toBe(false);
  }, 120_000);

  it('takes Ctrl-C (SIGINT to the group, forwarded again by npm) as one request to stop', async () => {
    const started = await npmStart();
    process.kill(-started.npmPid, 'SIGINT');
    expect(await started.exited).toBe(0);
    expect(started.lines.filter((line) => line.msg === 'shutting down: draining the batch in flight')).toHaveLength(1);
    expect(started.lines.some((line) => line.msg === 'second signal: exiting at once')).toBe(false);
    expect(alive(started.servicePid)).toBe(false);
  }, 120_000);
});
