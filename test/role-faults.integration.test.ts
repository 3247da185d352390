/**
 * A start that cannot succeed ends the process: the `all` role, spawned as operators run it, exits non-zero
 * with the reason as soon as the reason is known (a port in use, an API_TRUST_PROXY that trusts everyone,
 * a state file with an impossible position), instead of printing it and living on deaf to SIGTERM. A role
 * that did start ends on SIGTERM, and its readiness names what it counts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { startRole, type RoleProcess } from './harness/child.ts';
import { PolymarketReplay } from './harness/polymarket-replay.ts';

const SHUTDOWN_GRACE_MS = parseConfig({}).shutdown.graceMs;

/** From the reason on stderr to the process's end. */
const EXIT_AFTER_REASON_MS = 1_000;

const dataDirs: string[] = [];
const children: RoleProcess[] = [];
let occupied: Server | undefined;

async function dataDir(): Promise<string> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'ta-role-faults-'));
  dataDirs.push(directory);
  return directory;
}

function startAll(environment: Record<string, string>): RoleProcess {
  const child = startRole('all', [], {
    PORT: '0',
    LOG_LEVEL: 'info',
    SIM_BACKFILL_DAYS: '0.02',
    SIM_TRADERS: '10',
    ...environment,
  });
  children.push(child);
  return child;
}

/** The exit code, and how long after the reason (matched on stderr) the process ended. */
async function exitAfterReason(child: RoleProcess, reason: RegExp): Promise<{ code: number | string; ms: number }> {
  const saidAt = await child.stderrMatches(reason);
  const code = await child.exited;
  return { code, ms: performance.now() - saidAt };
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.child.exitCode === null) child.child.kill('SIGKILL');
});

afterAll(async () => {
  await new Promise<void>((resolve) => (occupied ? occupied.close(() => resolve()) : resolve()));
  await Promise.all(dataDirs.map((directory) => rm(directory, { recursive: true, force: true })));
});

describe('the all role after a fatal start error', () => {
  it('exits at once with the reason when its port is in use, every time of 20 (never a hang in the engine)', async () => {
    occupied = createServer();
    await new Promise<void>((resolve) => occupied!.listen(0, '127.0.0.1', resolve));
    const port = (occupied.address() as { port: number }).port;
    // The embedded engine's exit handlers once held about one such start in five for good: each start is
    // counted, four at a time.
    const outcomes: { code: number | string; ms: number }[] = [];
    for (let round = 0; round < 5; round += 1) {
      const starts = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const child = startAll({ DATA_DIR: await dataDir(), PORT: String(port), HOST: '127.0.0.1' });
          return exitAfterReason(child, /fatal: .*EADDRINUSE/);
        }),
      );
      outcomes.push(...starts);
    }
    expect(outcomes).toHaveLength(20);
    // A process that mapped the engine leaves by SIGKILL (exitAtOnce): a kill's status, never 0, never a hang.
    expect(outcomes.map(({ code }) => code)).toEqual(Array.from({ length: 20 }, () => 'SIGKILL'));
    // Four starts at once share the machine with this process: a few seconds bound "at once", never a hang.
    for (const { ms } of outcomes) expect(ms).toBeLessThan(4 * EXIT_AFTER_REASON_MS);
  }, 180_000);

  it.each(['0.0.0.0/0', '::/0', '10.0.0.1,::ffff:0:0/96', '0.0.0.0/1,128.0.0.0/1'])(
    'refuses API_TRUST_PROXY=%s (it trusts every address, like true) and exits 2',
    async (value) => {
      const child = startAll({ DATA_DIR: await dataDir(), API_TRUST_PROXY: value });
      const { code, ms } = await exitAfterReason(child, /API_TRUST_PROXY: .*trusts? every/);
      expect(code).toBe(2);
      expect(ms).toBeLessThan(EXIT_AFTER_REASON_MS);
    },
    60_000,
  );

  it('refuses a simulator-state.json whose resumeFromTs is out of range, and exits 1', async () => {
    const directory = await dataDir();
    await writeFile(
      path.join(directory, 'simulator-state.json'),
      `${JSON.stringify({ seed: 20261121, genesisTs: 1_790_000_000, resumeFromTs: -5 })}\n`,
    );
    const child = startAll({ DATA_DIR: directory });
    const { code, ms } = await exitAfterReason(child, /cannot start: .*simulator-state\.json: .*resumeFromTs/);
    expect(code).toBe(1);
    expect(ms).toBeLessThan(EXIT_AFTER_REASON_MS);
  }, 60_000);
});

describe('the all role once started', () => {
  it('readiness reports rows_stored (a size that merges lower), and SIGTERM ends it within the grace', async () => {
    const child = startAll({ DATA_DIR: await dataDir() });
    const listening = await child.waitFor((line) => line.msg === 'listening');
    const readiness = (await (await fetch(`${String(listening.address)}/readyz`)).json()) as Record<string, unknown>;
    expect(readiness).toHaveProperty('rows_stored');
    expect(readiness).not.toHaveProperty('events_stored');
    const askedAt = performance.now();
    child.child.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(performance.now() - askedAt).toBeLessThan(SHUTDOWN_GRACE_MS);
  }, 180_000);
});

describe('a drain that outlasts the grace', () => {
  it('ends at the grace, not when the step it waits on finally answers', async () => {
    const replay = new PolymarketReplay();
    await replay.start();
    const slowMs = 8_000;
    const graceMs = 300;
    // The first tick's market sweep waits on an answer that comes late; the tick runs to its end before the loop
    // sees the signal.
    replay.fault('/gamma/markets/keyset', { kind: 'slow', ms: slowMs });
    try {
      const child = startRole(
        'upstream',
        [],
        { DATA_DIR: await dataDir(), LOG_LEVEL: 'info', METRICS_PORT: '0', ...replay.environment() },
        { overrides: { shutdown: { graceMs } } },
      );
      children.push(child);
      await replay.requested('GET /gamma/markets/keyset');
      const askedAt = performance.now();
      child.child.kill('SIGTERM');
      // The role publishes through an in-process worker on the embedded store: it leaves by SIGKILL
      // (exitAtOnce); with a ClickHouse server the same drain exits 124.
      expect(await child.exited).toBe('SIGKILL');
      expect(performance.now() - askedAt).toBeLessThan(slowMs);
      // The reason on stderr, written before the kill (the log's line may be lost with it).
      expect(child.stderr()).toMatch(
        /shutdown did not finish within its grace: exiting without it \(300 ms after SIGTERM\)/,
      );
    } finally {
      await replay.stop();
    }
  }, 60_000);
});
