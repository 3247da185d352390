/**
 * The archive with its decode workers publishes exactly what it publishes decoding on the main thread: the
 * same events in the same order on every topic, the same dead letters with the same reasons, the same
 * counters and checkpoint, over a generated chain, the recorded real logs of ../shared/data/polymarket/onchain/
 * and logs that fail to decode. An error that is not a log's own decode failure, and a decode worker that
 * dies, stop the archive with an error (the `archive` role's exit 1) as before.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toHex } from 'viem';
import type { EventInputOf, TopicId } from '../ingest/contract/topics.ts';
import { Archive } from '../ingest/sources/archive/archive.ts';
import type { ArchiveDeadLetter } from '../ingest/sources/archive/fact-publisher.ts';
import type { RawLog } from '../ingest/sources/archive/decode.ts';
import { WorkerDecoder, type LogDecoder } from '../ingest/sources/archive/decode-pool.ts';
import { PolygonRpc } from '../ingest/sources/archive/rpc.ts';
import { createLogger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { inProcessConfig } from './harness/api.ts';
import { archiveEnvironment, archiveOverrides, serveWorld } from './harness/archive.ts';
import { generateWorld } from './harness/chain-world.ts';
import { LocalPolygonNode } from './harness/polygon-node.ts';

const ONCHAIN = path.resolve(import.meta.dirname, '../../shared/data/polymarket/onchain');
const log = createLogger('silent');

interface Captured {
  published: Array<{ topicId: TopicId; events: readonly EventInputOf<TopicId>[] }>;
  deadLetters: ArchiveDeadLetter[];
}

describe('archive: decode workers publish exactly what the main thread publishes', () => {
  const node = new LocalPolygonNode();
  const world = generateWorld({ seed: 23, markets: 30, wallets: 40, matches: 1_200 });
  let store: Store;
  let firstBlock = 0;
  let lastBlock = 0;

  beforeAll(async () => {
    await node.start();
    serveWorld(node, world);
    // Logs that fail to decode, in the world's last block: a cut data field, a bad transaction hash.
    const blockLogs = world.blocks.get(world.lastBlock) ?? [];
    const fill = [...world.blocks.values()].flat().find((raw) => raw.data.length > 300)!;
    node.setBlock(world.lastBlock, world.timestampOf(world.lastBlock), [
      ...blockLogs,
      {
        ...fill,
        blockNumber: toHex(world.lastBlock),
        data: fill.data.slice(0, 130),
        logIndex: toHex(blockLogs.length + 1),
      },
      {
        ...fill,
        blockNumber: toHex(world.lastBlock),
        transactionHash: '0xdead',
        logIndex: toHex(blockLogs.length + 2),
      },
    ]);
    // The recorded real logs, in their own blocks after the world's.
    const byBlock = new Map<number, RawLog[]>();
    for (const folder of ['vike-trader', 'polyprinter']) {
      for (const file of readdirSync(path.join(ONCHAIN, folder))
        .filter((name) => name.endsWith('.json'))
        .sort()) {
        const raw = JSON.parse(readFileSync(path.join(ONCHAIN, folder, file), 'utf8')) as RawLog;
        const block = Number(BigInt(raw.blockNumber));
        byBlock.set(block, [
          ...(byBlock.get(block) ?? []),
          { ...raw, logIndex: raw.logIndex ?? toHex(900 + (byBlock.get(block)?.length ?? 0)) },
        ]);
      }
    }
    for (const [block, logs] of byBlock)
      node.setBlock(block, logs[0]!.blockTimestamp ? Number(BigInt(logs[0]!.blockTimestamp)) : 1_780_000_000, logs);
    expect(Math.min(...byBlock.keys())).toBeGreaterThan(world.lastBlock);
    firstBlock = world.firstBlock;
    lastBlock = Math.max(...byBlock.keys());
    store = await openMigratedStore(config('archive-workers-store'), log);
  });

  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
    await node.stop();
  });

  function config(label: string, decodeWorkers?: number) {
    return inProcessConfig(
      label,
      archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(firstBlock),
        ARCHIVE_END_BLOCK: String(lastBlock),
        // Quiet ranges double up to the gap between the world's blocks and the recorded ones (millions of blocks).
        ARCHIVE_RANGE_MAX: '100000000',
      }),
      archiveOverrides({
        range: { initial: 64 },
        unknownTokenWaitSeconds: 0,
        ...(decodeWorkers === undefined ? {} : { decodeWorkers }),
      }),
    );
  }

  async function run(
    source: string,
    workers: string,
    decoder?: LogDecoder,
  ): Promise<Captured & { checkpoint: number | null; counters: Archive['progress']['counters'] }> {
    const archiveConfig = { ...config(source, Number(workers)).archive!, source };
    const captured: Captured = { published: [], deadLetters: [] };
    const controller = new AbortController();
    const archive = new Archive({
      config: archiveConfig,
      rpc: new PolygonRpc(
        {
          urls: archiveConfig.rpcUrls,
          requestsPerSecond: 5_000,
          retries: 2,
          retryBaseMs: 5,
          retryMaxMs: 50,
          timeoutMs: 10_000,
          signal: controller.signal,
        },
        log,
      ),
      sink: {
        publish: async (topicId, events) => {
          captured.published.push({ topicId, events: structuredClone(events) });
        },
        deadLetter: async (letters) => {
          captured.deadLetters.push(...letters);
        },
        durable: async () => {},
      },
      store,
      log,
      signal: controller.signal,
      checkpointIntervalMs: 0,
      ...(decoder ? { decoder } : {}),
    });
    const checkpoint = await archive.run();
    return { ...captured, checkpoint, counters: archive.progress.counters };
  }

  it('the same events in the same order, the same dead letters, counters and checkpoint', async () => {
    const inline = await run(`inline-${process.pid}`, '0');
    const pooled = await run(`workers-${process.pid}`, '2');
    const fills = inline.published.filter((batch) => batch.topicId === 'fillsArchive').flatMap((batch) => batch.events);
    expect(fills.length).toBeGreaterThan(world.fills.length / 2);
    expect(inline.counters.skipped.decode_error).toBe(2);
    expect(inline.deadLetters.length).toBeGreaterThanOrEqual(2);
    expect(pooled.published).toEqual(inline.published);
    expect(pooled.deadLetters).toEqual(inline.deadLetters);
    expect(pooled.counters).toEqual(inline.counters);
    expect(pooled.checkpoint).toBe(inline.checkpoint);
    expect(pooled.checkpoint).toBe(lastBlock);
  });

  it('a decode worker that dies stops the archive with its error, as any error of the archive does', async () => {
    const dying = new WorkerDecoder(
      1,
      log,
      `require('node:worker_threads').parentPort.once('message', () => process.exit(9));`,
    );
    try {
      await expect(run(`dying-${process.pid}`, '1', dying)).rejects.toThrow('archive decode worker 0 exited (code 9)');
    } finally {
      await dying.close();
    }
  });
});
