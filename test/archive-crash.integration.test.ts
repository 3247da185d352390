/**
 * `main.ts archive` as operators run it (a child process, embedded store, in-process ingest), SIGKILLed in
 * the middle of a backfill and started again: it resumes from its durable checkpoint, publishes again what
 * came after it (same ids: ingest keeps one of each), and ends with exactly the reference projections.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bodyOf, gatesNeverBind, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import {
  archiveEnvironment,
  archiveOverrides,
  expectProjectionsEqualReference,
  publishMetadata,
  serveWorld,
} from './harness/archive.ts';
import { generateWorld } from './harness/chain-world.ts';
import { startRole } from './harness/child.ts';
import { testConfig, testEnvironment, testOverrides, uniqueId } from './harness/context.ts';
import { LocalPolygonNode } from './harness/polygon-node.ts';

describe('archive crash and restart', () => {
  const node = new LocalPolygonNode();
  let api: TestApi | undefined;
  let dataDir = '';
  afterAll(async () => {
    await api?.close();
    await node.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('SIGKILL mid-backfill, restart: nothing missing, nothing twice', async () => {
    const world = generateWorld({ seed: 16, markets: 8, wallets: 8, matches: 90 });
    await node.start();
    serveWorld(node, world);
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-archive-crash-'));
    const environment: Record<string, string> = testEnvironment(uniqueId('archive_crash'), dataDir, {
      ...archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(world.firstBlock),
        ARCHIVE_END_BLOCK: String(world.lastBlock),
        // Slow enough to be killed in the middle: a few blocks per request, few requests per second.
        ARCHIVE_RPS: '10',
        ARCHIVE_RANGE_MAX: '4',
      }),
      LOG_LEVEL: 'info',
      // Each process its own metrics port (any free one).
      METRICS_PORT: '0',
    });
    delete environment.KAFKA_BROKERS;

    const overrides = testOverrides(archiveOverrides({ range: { initial: 4 } }));
    const first = startRole('archive', [], environment, { overrides });
    const checkpointed = await first.waitFor(
      (line) => line.msg === 'archive progress' && typeof line.block === 'number' && line.block > world.firstBlock + 40,
    );
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect(checkpointed.block as number).toBeLessThan(world.lastBlock);

    // Only the first run had to be slow (to be killed in the middle): the restart, from the same data
    // directory and node, reads the rest at the pace the local node answers.
    const second = startRole('archive', [], { ...environment, ARCHIVE_RPS: '200' }, { overrides });
    const resumed = await second.waitFor((line) => line.msg === 'archive starting');
    expect(resumed.checkpoint as number).toBeGreaterThanOrEqual(world.firstBlock);
    expect(resumed.checkpoint as number).toBeLessThan(world.lastBlock);
    expect(await second.exited, second.stderr()).toBe(0);
    const stopped = second.lines.find((line) => line.msg === 'archive stopped');
    expect(stopped?.checkpoint).toBe(world.lastBlock);

    const config = testConfig(environment, overrides);
    await publishMetadata(config, world);
    const keys = await publishPlanKeys(config, Math.floor(Date.now() / 1000) - 86_400);
    api = await startTestApi(config, {
      now: () => Math.floor(Date.now() / 1000),
      keys,
      gatesClockMs: gatesNeverBind(),
    });
    await expectProjectionsEqualReference(api, world);
    // Shown: the ranges after the checkpoint were published twice (raw rows), ingest keeps one of each id.
    const [counts] = await api.store.query<{ raw: string; distinct_ids: string }>(
      'SELECT count() AS raw, uniqExact(wallet, fill_id) AS distinct_ids FROM {db:Identifier}.fills',
      {},
    );
    expect(Number(counts!.distinct_ids)).toBe(world.fills.length);
    expect(Number(counts!.raw)).toBeGreaterThanOrEqual(world.fills.length);
    const fills = bodyOf(await api.get(`traders/${world.fills[0]!.wallet}/fills?since=0&limit=2000`)) as {
      fills: unknown[];
    };
    expect(fills.fills.length).toBe(world.fills.filter((fill) => fill.wallet === world.fills[0]!.wallet).length);
  });
});
