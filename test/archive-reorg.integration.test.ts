/**
 * Reorgs deeper than ARCHIVE_CONFIRMATIONS: the local node replaces blocks the archive already published
 * (new hashes from a block on, and different logs). The archive notices, at the next range's parent hash
 * or at a restart's checkpoint hash, logs both hashes and the common ancestor it can find, counts it in
 * trader_analytics_archive_reorgs_detected_total, publishes nothing of the new chain and stops (the role
 * exits 3); its checkpoint stays on the chain it published. Without a reorg the same checks never fire.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import type { EventInputOf, TopicId } from '../ingest/contract/topics.ts';
import { ArchiveReorgError, readCheckpoint, runArchiveSource } from '../ingest/sources/archive/index.ts';
import { UNSETTLED_READS } from '../ingest/sources/archive/reorg.ts';
import { archiveReorgs } from '../metrics/registry.ts';
import type { Store } from '../projections/store.ts';
import { EXIT_REORG, runArchive } from '../roles/archive.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { inProcessConfig } from './harness/api.ts';
import { archiveEnvironment, archiveOverrides, serveWorld } from './harness/archive.ts';
import { startRole, type LogLine } from './harness/child.ts';
import { testEnvironment, testOverrides, uniqueId } from './harness/context.ts';
import { generateWorld } from './harness/chain-world.ts';
import { LocalPolygonNode } from './harness/polygon-node.ts';

async function reorgsCounted(): Promise<number> {
  return (await archiveReorgs.get()).values[0]?.value ?? 0;
}

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger('info', {
    write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { log, lines };
}

describe('archive: reorgs below the checkpoint', () => {
  const nodes: LocalPolygonNode[] = [];
  const stores: Store[] = [];
  const dataDirs: string[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
    for (const dataDir of dataDirs) await rm(dataDir, { recursive: true, force: true });
    for (const node of nodes) await node.stop();
  });

  async function startNode(seed: number) {
    const world = generateWorld({ seed, markets: 4, wallets: 6, matches: 60 });
    const node = new LocalPolygonNode();
    await node.start();
    nodes.push(node);
    serveWorld(node, world);
    return { world, node };
  }

  it('mid-backfill: published blocks replaced → detected at the next range, both hashes logged, nothing of the new chain published, stopped', async () => {
    const { world, node } = await startNode(51);
    const config = inProcessConfig(
      'archive-reorg-run',
      archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(world.firstBlock),
        ARCHIVE_END_BLOCK: String(world.lastBlock),
        ARCHIVE_RANGE_MAX: '8',
      }),
      archiveOverrides(),
    );
    const store = await openMigratedStore(config, createLogger('error'));
    stores.push(store);
    const published: Array<{ topicId: TopicId; ts: number }> = [];
    const { log, lines } = capturingLogger();
    const before = await reorgsCounted();
    let reorgFrom: number | null = null;
    const run = runArchiveSource({
      config: config.archive!,
      log,
      store,
      signal: new AbortController().signal,
      checkpointIntervalMs: 0,
      sink: {
        publish: async <T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]) => {
          for (const event of events) published.push({ topicId, ts: (event as { ts?: number }).ts ?? 0 });
        },
        deadLetter: async () => {},
        durable: async () => {},
      },
      onCheckpoint: (block) => {
        if (reorgFrom !== null || block < world.firstBlock + 40) return;
        // Five blocks the archive published are replaced (the first of them now empty), and all after them.
        reorgFrom = block - 5;
        node.reorg(reorgFrom, new Map([[reorgFrom, []]]));
      },
    });
    const error = await run.then(
      () => null,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(ArchiveReorgError);
    const reorg = error as ArchiveReorgError;
    expect(reorgFrom).not.toBeNull();
    // The block it found replaced is one it published, at or after the reorg's first block.
    expect(reorg.block).toBeGreaterThanOrEqual(reorgFrom!);
    expect(reorg.block).toBeLessThan(world.lastBlock);
    expect(reorg.publishedHash).not.toBe(reorg.nodeHash);
    expect(reorg.nodeHash).toBe(node.hashOf(reorg.block));
    // The newest range end both chains share lies before the reorg.
    expect(reorg.commonAncestor).not.toBeNull();
    expect(reorg.commonAncestor!).toBeLessThan(reorgFrom!);
    expect(reorg.commonAncestor!).toBeGreaterThanOrEqual(reorgFrom! - 16);
    // Logged loudly with both hashes; counted.
    const line = lines.find(
      (candidate) =>
        typeof candidate.msg === 'string' && candidate.msg.startsWith('REORG DEEPER THAN THE CONFIRMATIONS'),
    );
    expect(line).toMatchObject({
      level: 50,
      block: reorg.block,
      publishedHash: reorg.publishedHash,
      nodeHash: reorg.nodeHash,
      commonAncestor: reorg.commonAncestor,
    });
    expect(await reorgsCounted()).toBe(before + 1);
    // Nothing after the replaced block was published, and the checkpoint stays on the published chain.
    expect(Math.max(...published.map((event) => event.ts))).toBeLessThanOrEqual(world.timestampOf(reorg.block));
    const checkpoint = await readCheckpoint(store, config.archive!.source);
    expect(checkpoint!.block).toBeLessThanOrEqual(reorg.block);
    expect(checkpoint!.hash).not.toBe(node.hashOf(checkpoint!.block));
  });

  it('while the archive is away: a restart compares its checkpoint hash, exits 3, and keeps its checkpoint; without a reorg it exits 0', async () => {
    const { world, node } = await startNode(52);
    const config = inProcessConfig(
      'archive-reorg-restart',
      archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(world.firstBlock),
        ARCHIVE_END_BLOCK: String(world.lastBlock),
      }),
      archiveOverrides({ range: { initial: 16 } }),
    );
    // A whole run on one chain: every range's parent checked, no false alarm.
    expect(await runArchive(config, createLogger('error'))).toBe(0);
    const store = await openMigratedStore(config, createLogger('error'));
    stores.push(store);
    const first = await readCheckpoint(store, config.archive!.source);
    // With where the source started and its block's time: what it has indexed (the card's coverage).
    expect(first).toMatchObject({
      block: world.lastBlock,
      hash: node.hashOf(world.lastBlock),
      startBlock: world.firstBlock,
      blockTs: world.timestampOf(world.lastBlock),
    });
    expect(first!.recent.length).toBeGreaterThan(1);
    // A restart on the same chain changes nothing.
    expect(await runArchive(config, createLogger('error'))).toBe(0);

    const before = await reorgsCounted();
    node.reorg(world.lastBlock - 3);
    const { log, lines } = capturingLogger();
    expect(await runArchive(config, log)).toBe(EXIT_REORG);
    expect(await reorgsCounted()).toBe(before + 1);
    const line = lines.find(
      (candidate) =>
        typeof candidate.msg === 'string' && candidate.msg.startsWith('REORG DEEPER THAN THE CONFIRMATIONS'),
    );
    expect(line).toMatchObject({
      block: world.lastBlock,
      publishedHash: first!.hash,
      nodeHash: node.hashOf(world.lastBlock),
    });
    expect(line!.commonAncestor as number).toBeLessThan(world.lastBlock - 3);
    expect(await readCheckpoint(store, config.archive!.source)).toEqual(first);
  });

  it('`main.ts all` with POLYGON_RPC_URL stops on a deep reorg the way the archive role does: the same log line, exit 3', async () => {
    const { world, node } = await startNode(53);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-archive-all-reorg-'));
    dataDirs.push(dataDir);
    const environment: Record<string, string> = testEnvironment(uniqueId('archive_all_reorg'), dataDir, {
      // No end block: `all` follows the chain live once it caught up.
      ...archiveEnvironment(node, { ARCHIVE_START_BLOCK: String(world.firstBlock) }),
      LOG_LEVEL: 'info',
      PORT: '0',
      METRICS_PORT: '0',
    });
    delete environment.KAFKA_BROKERS;
    const isReorgLine = (line: LogLine) =>
      typeof line.msg === 'string' && line.msg.startsWith('REORG DEEPER THAN THE CONFIRMATIONS');

    const overrides = testOverrides(archiveOverrides({ range: { initial: 16 } }));
    const all = startRole('all', [], environment, { overrides });
    await all.waitFor((line) => line.msg === 'archive progress' && line.block === world.lastBlock);
    // Published blocks are replaced, and the chain grows past them: the next range names a new parent.
    node.reorg(world.lastBlock - 3);
    node.head = world.lastBlock + 5;
    expect(await all.exited, all.stderr()).toBe(EXIT_REORG);
    const line = all.lines.find(isReorgLine);
    expect(line).toMatchObject({ level: 50, block: world.lastBlock, nodeHash: node.hashOf(world.lastBlock) });
    expect(line!.commonAncestor as number).toBeLessThan(world.lastBlock - 3);
    expect(all.stderr()).toContain(
      `archive stopped (exit ${EXIT_REORG}): reorg deeper than the confirmations: block ${world.lastBlock}`,
    );
    expect(all.stderr()).not.toContain('fatal');

    // The `archive` role on the same store stops on the same block with the same words and code.
    const archive = startRole('archive', [], environment, { overrides });
    expect(await archive.exited, archive.stderr()).toBe(EXIT_REORG);
    expect(archive.lines.find(isReorgLine)).toMatchObject({
      level: 50,
      block: world.lastBlock,
      publishedHash: line!.publishedHash,
      nodeHash: line!.nodeHash,
    });
    expect(archive.stderr()).toContain(
      `archive stopped (exit ${EXIT_REORG}): reorg deeper than the confirmations: block ${world.lastBlock}`,
    );
  });

  /** Runs the archive over the whole world, one block per range, into a list; returns the outcome and the list. */
  async function runCollecting(label: string, world: ReturnType<typeof generateWorld>, node: LocalPolygonNode) {
    const config = inProcessConfig(
      label,
      archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(world.firstBlock),
        ARCHIVE_END_BLOCK: String(world.lastBlock),
        // One block per range: every block is a range's end, whose header the logs are compared with.
        ARCHIVE_RANGE_MAX: '1',
      }),
      archiveOverrides(),
    );
    const store = await openMigratedStore(config, createLogger('error'));
    stores.push(store);
    const published: Array<{ topicId: TopicId; event: string; ts: number }> = [];
    const { log, lines } = capturingLogger();
    const outcome = await runArchiveSource({
      config: config.archive!,
      log,
      store,
      signal: new AbortController().signal,
      checkpointIntervalMs: 0,
      sink: {
        publish: async <T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]) => {
          for (const event of events)
            published.push({ topicId, event: JSON.stringify(event), ts: (event as { ts?: number }).ts ?? 0 });
        },
        deadLetter: async () => {},
        durable: async () => {},
      },
    }).then(
      (checkpoint) => ({ checkpoint, error: null }),
      (error: unknown) => ({ checkpoint: null, error }),
    );
    return { outcome, published, lines, checkpoint: await readCheckpoint(store, config.archive!.source) };
  }

  /** A block in the middle of the world that has logs the archive publishes. */
  function busyBlock(world: ReturnType<typeof generateWorld>): number {
    const block = [...world.blocks.keys()]
      .sort((a, b) => a - b)
      .find((number) => number > world.firstBlock + 20 && (world.blocks.get(number)?.length ?? 0) > 0);
    expect(block).toBeDefined();
    return block!;
  }

  const STALE_HASH = `0x${'de'.repeat(32)}`;

  it('logs naming another block hash than the header: the range is read again, and once they agree it is published once, as on a quiet node', async () => {
    const { world, node } = await startNode(54);
    const clean = await runCollecting('archive-unsettled-clean', world, node);
    expect(clean.outcome.error).toBeNull();

    const block = busyBlock(world);
    let staleReads = 0;
    // The node's logs name the current hashes, except twice for one block (read during a reorg that came back).
    node.logBlockHash = (number) =>
      number === block && staleReads < 2 ? (staleReads++, STALE_HASH) : node.hashOf(number);
    const before = await reorgsCounted();
    const run = await runCollecting('archive-unsettled-transient', world, node);
    expect(run.outcome.error).toBeNull();
    expect(run.outcome.checkpoint).toBe(world.lastBlock);
    expect(staleReads).toBe(2);
    const warnings = run.lines.filter(
      (line) => line.msg === 'logs and headers of a range name different block hashes: reading it again',
    );
    expect(warnings).toEqual([
      expect.objectContaining({ level: 40, block, logsHash: STALE_HASH, headerHash: node.hashOf(block), read: 1 }),
      expect.objectContaining({ level: 40, block, logsHash: STALE_HASH, headerHash: node.hashOf(block), read: 2 }),
    ]);
    // Nothing published twice, nothing missing: exactly what the run on a quiet node published.
    expect(run.published.length).toBeGreaterThan(0);
    expect(run.published.map(({ topicId, event }) => `${topicId} ${event}`)).toEqual(
      clean.published.map(({ topicId, event }) => `${topicId} ${event}`),
    );
    expect(await reorgsCounted()).toBe(before);
  });

  it('logs and header that keep disagreeing below the safe head: read a bounded number of times, then stopped as a reorg (logged, counted), nothing of the block published', async () => {
    const { world, node } = await startNode(55);
    const block = busyBlock(world);
    let staleReads = 0;
    node.logBlockHash = (number) => (number === block ? (staleReads++, STALE_HASH) : node.hashOf(number));
    const before = await reorgsCounted();
    const run = await runCollecting('archive-unsettled-stuck', world, node);
    expect(run.outcome.error).toBeInstanceOf(ArchiveReorgError);
    const reorg = run.outcome.error as ArchiveReorgError;
    expect(reorg).toMatchObject({
      kind: 'unsettled',
      block,
      publishedHash: STALE_HASH,
      nodeHash: node.hashOf(block),
      commonAncestor: block - 1,
    });
    expect(staleReads).toBe(UNSETTLED_READS);
    expect(await reorgsCounted()).toBe(before + 1);
    const line = run.lines.find(
      (candidate) =>
        typeof candidate.msg === 'string' && candidate.msg.startsWith('REORG DEEPER THAN THE CONFIRMATIONS'),
    );
    expect(line).toMatchObject({
      level: 50,
      kind: 'unsettled',
      block,
      publishedHash: STALE_HASH,
      nodeHash: node.hashOf(block),
      commonAncestor: block - 1,
    });
    expect(line!.msg).toContain(`over ${UNSETTLED_READS} reads`);
    // Everything before the block was published, nothing of it or after it; the checkpoint stays before it.
    expect(run.published.length).toBeGreaterThan(0);
    expect(Math.max(...run.published.map((event) => event.ts))).toBeLessThan(world.timestampOf(block));
    expect(run.checkpoint!.block).toBe(block - 1);
    expect(run.checkpoint!.hash).toBe(node.hashOf(block - 1));
  });
});
