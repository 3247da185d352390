/**
 * `npm start` on a fresh data directory: the embedded default (no KAFKA_BROKERS, no CLICKHOUSE_URL)
 * serves with demo data within two minutes, and writes three demo keys. A restart keeps the keys and
 * resumes the simulated world instead of backfilling it again.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { API_KEY_PATTERN, sha256Hex } from '../ingest/sources/accounts.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { startRole, type LogLine, type RoleProcess } from './harness/child.ts';

const TWO_MINUTES_MS = 120_000;

const isThreadPoolWarning = (line: LogLine): boolean => line.threadPoolSize !== undefined;

async function startAll(dataDir: string): Promise<{ process: RoleProcess; address: string; readyAfterMs: number }> {
  const started = Date.now();
  // Only what a newcomer has: a data directory and a free port.
  const process = startRole('all', [], { DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' });
  const listening = await process.waitFor((line) => line.msg === 'listening');
  await process.waitFor((line) => line.msg === 'demo data ready');
  await process.waitFor(isReadyLine);
  return { process, address: String(listening.address), readyAfterMs: Date.now() - started };
}

/** The one plain line that says the demo is in and where to look (the console is JSON otherwise). */
const isReadyLine = (line: LogLine): boolean => typeof line.text === 'string' && line.text.startsWith('ready: ');

/** The ready line comes once, after the demo keys, and names the address the process listens on. */
function expectReadyLine(lines: LogLine[], address: string): void {
  const texts = lines.map((line) => (typeof line.text === 'string' ? line.text : null));
  const readyAt = texts.findIndex((text) => text?.startsWith('ready: '));
  expect(lines.filter(isReadyLine)).toHaveLength(1);
  expect(texts[readyAt]).toBe(
    `ready: ${address}/  (REST /api/agent/v1, MCP /mcp, OpenAPI /api/agent/v1/openapi.json; demo keys above)`,
  );
  expect(address).toMatch(/^http:\/\/(localhost|127\.0\.0\.1):[1-9]\d*$/);
  const keysAt = texts.findIndex((text) => /^\s+max\s+\S+$/.test(text ?? ''));
  expect(keysAt).toBeGreaterThan(-1);
  // (The process's JSON log is written asynchronously: its lines may land on either side of this one.)
  expect(readyAt).toBeGreaterThan(keysAt);
}

describe('npm start (role all, embedded)', () => {
  it('serves demo data within two minutes and writes three demo keys; a restart resumes', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-start-'));
    let firstStored = 0;
    const first = await startAll(dataDir);
    try {
      expect(first.readyAfterMs).toBeLessThan(TWO_MINUTES_MS);
      const ready = await fetch(`${first.address}/readyz`);
      expect(ready.status).toBe(200);
      const readiness = (await ready.json()) as { status: string; rows_stored: number };
      expect(readiness.status).toBe('ready');
      expect(readiness.rows_stored).toBeGreaterThan(100_000);
      firstStored = readiness.rows_stored;
      expect((await fetch(`${first.address}/healthz`)).status).toBe(200);
      expectReadyLine(first.process.lines, first.address);
      // The address the ready line names answers an index (no key).
      const index = await fetch(`${first.address}/`);
      expect(index.status).toBe(200);
      expect(((await index.json()) as { links: Record<string, string> }).links).toMatchObject({
        openapi: '/api/agent/v1/openapi.json',
        mcp: '/mcp',
      });
    } finally {
      first.process.child.kill('SIGTERM');
    }
    expect(await first.process.exited).toBe(0);
    // Started as npm start starts it (UV_THREADPOOL_SIZE set): no warning about libuv's thread pool.
    expect(first.process.lines.filter(isThreadPoolWarning)).toEqual([]);

    const keys = JSON.parse(await readFile(path.join(dataDir, 'demo-keys.json'), 'utf8')) as Record<string, string>;
    expect(Object.keys(keys).sort()).toEqual(['basic', 'max', 'pro']);
    for (const key of Object.values(keys)) expect(key).toMatch(API_KEY_PATTERN);
    expect(new Set(Object.values(keys)).size).toBe(3);

    // The second start keeps the keys and resumes the world where it stopped (no second backfill). It is
    // ready as soon as the store is open and swept (the store holds the backfill), and says so with the
    // store's figures, not this process's.
    const second = await startAll(dataDir);
    try {
      const ready = await fetch(`${second.address}/readyz`);
      expect(ready.status).toBe(200);
      const readiness = (await ready.json()) as { rows_stored: number; store_until: string; phase: string };
      // The rows of the landing tables' active parts, read from their metadata: merges may since have
      // collapsed duplicates that are duplicates by design (the world's upstream copies of its archive
      // fills share the fill's id, and the archive's copy wins), so the count may fall by those (at most
      // a few per cent of the rows), never to a wiped or re-backfilled store. That nothing is lost or
      // counted twice across restarts is test/embedded-crash's exact check.
      expect(readiness.rows_stored).toBeGreaterThanOrEqual(Math.floor(firstStored * 0.98));
      expect(readiness.rows_stored).toBeLessThanOrEqual(firstStored * 1.02 + 50_000);
      expect(Date.parse(readiness.store_until)).toBeGreaterThan(Date.now() - TWO_MINUTES_MS);
      // The time to ready on a populated DATA_DIR (bench:restart reports it with a baseline).
      console.log(
        `restart on a populated DATA_DIR: ready after ${second.readyAfterMs} ms (first start: ${first.readyAfterMs} ms)`,
      );
      expect(second.readyAfterMs).toBeLessThan(first.readyAfterMs);
      expectReadyLine(second.process.lines, second.address);
      const readyLine = second.process.lines.find((line) => line.msg === 'demo data ready');
      expect(Number(readyLine?.readyAfterMs)).toBeLessThan(30_000);
    } finally {
      second.process.child.kill('SIGTERM');
    }
    expect(await second.process.exited).toBe(0);
    expect(JSON.parse(await readFile(path.join(dataDir, 'demo-keys.json'), 'utf8'))).toEqual(keys);
    const created = first.process.lines.find((line) => line.msg === 'starting a new simulated world');
    const resumed = second.process.lines.find((line) => line.msg === 'resuming the simulated world');
    expect(created?.genesisTs).toEqual(expect.any(Number));
    expect(resumed?.genesisTs).toBe(created?.genesisTs);
    expect(Number(resumed?.fromTs)).toBeGreaterThan(Number(created?.genesisTs));

    // What the service holds: the demo accounts and keys (hashes only), and a realistic data set.
    const config = parseConfig({ DATA_DIR: dataDir });
    const store = await openMigratedStore(config, createLogger('error'));
    try {
      const storedKeys = await store.query<{ key_sha256: string; account_id: string; last4: string }>(
        'SELECT key_sha256, account_id, last4 FROM {db:Identifier}.api_keys FINAL ORDER BY account_id',
      );
      expect(storedKeys.map((row) => row.account_id)).toEqual(['demo-basic', 'demo-max', 'demo-pro']);
      for (const row of storedKeys) {
        const plan = row.account_id.replace('demo-', '');
        expect(row.key_sha256).toBe(sha256Hex(keys[plan]!));
        expect(row.last4).toBe(keys[plan]!.slice(-4));
      }
      const plans = await store.query<{ account_id: string; plan: string }>(
        'SELECT account_id, plan FROM {db:Identifier}.accounts FINAL ORDER BY account_id',
      );
      expect(plans).toEqual([
        { account_id: 'demo-basic', plan: 'basic' },
        { account_id: 'demo-max', plan: 'max' },
        { account_id: 'demo-pro', plan: 'pro' },
      ]);
      const [counts] = await store.query<{ careers: number; resolved: number; trades: number; profiles: number }>(
        `SELECT
           (SELECT uniqExact(wallet) FROM {db:Identifier}.trader_markets_v2) AS careers,
           (SELECT count() FROM {db:Identifier}.market_resolutions FINAL) AS resolved,
           (SELECT count() FROM {db:Identifier}.trades) AS trades,
           (SELECT count() FROM {db:Identifier}.upstream_profiles FINAL) AS profiles`,
      );
      expect(counts?.careers).toBeGreaterThanOrEqual(100);
      expect(counts?.resolved).toBeGreaterThan(1000);
      expect(counts?.trades).toBeGreaterThan(100_000);
      expect(counts?.profiles).toBeGreaterThanOrEqual(100);
    } finally {
      await store.close();
    }
  });

  it("warns when a read-serving process starts with libuv's default thread pool, too few threads for the embedded store", async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-threads-'));
    // UV_THREADPOOL_SIZE as a shell without the launcher's variable would start it: libuv's 4 threads.
    const api = startRole('api', [], {
      DATA_DIR: dataDir,
      PORT: '0',
      LOG_LEVEL: 'info',
      UV_THREADPOOL_SIZE: '4',
      CLICKHOUSE_READ_POOL_SIZE: '3',
    });
    try {
      await api.waitFor((line) => line.msg === 'listening');
    } finally {
      api.child.kill('SIGTERM');
    }
    expect(await api.exited).toBe(0);
    const warnings = api.lines.filter(isThreadPoolWarning);
    expect(warnings).toHaveLength(1);
    // 3 read sessions, the ingest and command lanes, and 4 threads for Node's own work.
    expect(warnings[0]).toMatchObject({ level: 40, threadPoolSize: 4, needed: 9, suggested: 16 });
    expect(String(warnings[0]!.msg)).toContain('UV_THREADPOOL_SIZE=16');
    // A one-shot role serves no reads beside its writes: no warning.
    const migrate = startRole('migrate', [], { DATA_DIR: dataDir, LOG_LEVEL: 'info', UV_THREADPOOL_SIZE: '4' });
    expect(await migrate.exited).toBe(0);
    expect(migrate.lines.filter(isThreadPoolWarning)).toEqual([]);
    expect(migrate.lines.length).toBeGreaterThan(0);
  });
});
