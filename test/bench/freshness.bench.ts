/**
 * `npm run bench:freshness` — how fresh the live plane is with the chain as its source (issue 45). A local
 * node serves JSON-RPC over HTTP and a WebSocket (newHeads): a block every --block-ms (2,000) carrying fills
 * of the watched traders (a generated world's matches), finality --finality blocks behind the head (2), and
 * every --reorg-every blocks (7) a reorg at the head of one or two blocks (alternately) that empties them.
 * The archive (final and head stages), ingest and the plane run in this process on the embedded default;
 * --clients connections (4) follow every trader of the world, and one more reads REST. From the moment the
 * node serves a block (or reports it finalized) it measures:
 *   - provisional: a provisional fill → a watcher, after the node served its block;
 *   - final: its final mark → a watcher, after the node reported its block finalized;
 *   - rest: the fill in REST (the trader's fills page), after its block was finalized;
 *   - floor: a bare viem subscriber (newHeads over viem's WebSocket transport, eth_getLogs of the block,
 *     viem's decodeEventLog) decoding the same OrderFilled logs, after the node served the block.
 * Then it mines --finality + 1 empty blocks, waits for every provisional event to end, and counts those
 * left open (`unresolved`) and the retracted fills found in the store (`stored retracted`). Last line:
 *   freshness: provisional p99 <ms> ms, final p99 <ms> ms, rest p99 <ms> ms, unresolved <n>, stored retracted <n>
 * Targets (a quiet machine): provisional p99 ≤ 500 ms, final p99 ≤ 500 ms, rest p99 ≤ 2,000 ms, 0 unresolved,
 * 0 stored retracted. Options: --blocks N (60), --block-ms MS (2000), --finality N (2), --reorg-every N (7),
 * --clients N (4), --wallets N (6).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createPublicClient, decodeEventLog, webSocket, type Hex } from 'viem';
import WebSocket from 'ws';
import { parseConfig } from '../../config.ts';
import { TopicNames } from '../../ingest/contract/topics.ts';
import { EventPublisher } from '../../ingest/publisher.ts';
import { exchangeV2Abi } from '../../ingest/sources/archive/abi.ts';
import { archiveSink, runArchiveSource } from '../../ingest/sources/archive/index.ts';
import { startIngestWorker } from '../../ingest/worker.ts';
import { createLogger } from '../../log.ts';
import { withPublisher } from '../../roles/runtime.ts';
import { publishTestAccounts } from '../harness/api.ts';
import { publishMetadata } from '../harness/archive.ts';
import { generateWorld } from '../harness/chain-world.ts';
import { startLiveServer } from '../harness/live.ts';
import { LocalPolygonNode } from '../harness/polygon-node.ts';
import { percentile, runBenchmark } from './support.ts';

const { values } = parseArgs({
  options: {
    blocks: { type: 'string', default: '60' },
    'block-ms': { type: 'string', default: '2000' },
    finality: { type: 'string', default: '2' },
    'reorg-every': { type: 'string', default: '7' },
    clients: { type: 'string', default: '4' },
    wallets: { type: 'string', default: '6' },
  },
});
const BLOCKS = Number(values.blocks);
const BLOCK_MS = Number(values['block-ms']);
const FINALITY = Number(values.finality);
const REORG_EVERY = Number(values['reorg-every']);
const CLIENTS = Number(values.clients);
const WALLETS = Number(values.wallets);

const log = createLogger('silent');
const API = '/api/agent/v1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ms = (value: number) => (Number.isNaN(value) ? 'n/a' : value.toFixed(0));

runBenchmark(async () => {
  const world = generateWorld({ seed: 2045, markets: 4, wallets: WALLETS, matches: BLOCKS });
  const blockOfTs = (ts: number) => world.firstBlock + (ts - world.timestampOf(world.firstBlock)) / 2;
  const fillBlocks = [...new Set(world.fills.map((fill) => blockOfTs(fill.ts)))].sort((a, b) => a - b);
  const registeredThrough = fillBlocks[0]! - 1;
  const lastBlock = fillBlocks.at(-1)!;

  const node = new LocalPolygonNode();
  await node.start(0, { websocket: true });
  node.finalityDepth = FINALITY;
  for (let block = world.firstBlock; block <= registeredThrough; block++)
    node.setBlock(block, world.timestampOf(block), world.blocks.get(block) ?? []);

  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-freshness-'));
  const config = parseConfig(
    {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      POLYGON_RPC_URL: `${node.url},${node.wsUrl}`,
      ARCHIVE_RPS: '2000',
      ARCHIVE_START_BLOCK: String(world.firstBlock),
      ARCHIVE_CONFIRMATIONS: String(FINALITY),
      INGEST_LINGER_MS: '20',
      READ_CACHE_MB: '0',
    },
    // The production constants (polls, retries), one decode thread less to share the machine with.
    { archive: { decodeWorkers: 0 } },
  );
  const wallets = [...new Set(world.fills.map((fill) => fill.wallet))];
  const key = await withPublisher(config, log, async ({ publisher }) => {
    await publisher.publish(
      'markets',
      world.markets.map((market) => ({
        type: 'tokens' as const,
        condition_id: market.conditionId,
        token1_id: market.token1.toString(),
        token2_id: market.token2.toString(),
      })),
    );
    return (
      await publishTestAccounts(
        publisher,
        [{ accountId: 'bench-max', plan: 'max', keys: ['max'] }],
        Math.floor(Date.now() / 1000) - 60,
      )
    ).max;
  });
  await publishMetadata(config, world);

  const abort = new AbortController();
  let archiveRun: Promise<unknown> = Promise.resolve();
  const server = await startLiveServer(config, log, {
    beside: async ({ eventLog, store }) => {
      const worker = await startIngestWorker({ config, eventLog, store, log, groupId: config.kafka.groupId });
      const producer = await eventLog.producer();
      const topics = new TopicNames(config.kafka.topicPrefix);
      archiveRun = runArchiveSource({
        config: config.archive!,
        log,
        store,
        signal: abort.signal,
        sink: archiveSink({
          publisher: new EventPublisher(producer, topics),
          producer,
          topics,
          store,
          durable: () => eventLog.committedThroughNow(config.kafka.groupId, topics.all()),
        }),
      });
      archiveRun.catch((error: unknown) => console.error('archive failed', error));
      return {
        stop: async () => {
          abort.abort();
          await archiveRun.catch(() => {});
          await worker.stop();
        },
      };
    },
  });

  // ——— the watchers: each follows every trader ———
  const provisional: number[] = [];
  const final: number[] = [];
  /** Every provisional ref a watcher was sent, with its block; how each ended. */
  const sent = new Map<string, { block: number; wallet: string; usd: number; ts: number }>();
  const ended = new Map<string, Set<number>>();
  const sentTo = new Map<string, Set<number>>();
  const retractedFills: { wallet: string; usd: number; ts: number }[] = [];
  const sockets: WebSocket[] = [];
  for (let client = 0; client < CLIENTS; client++) {
    const socket = new WebSocket(server.url, [config.live.protocol], { headers: { authorization: `Bearer ${key}` } });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.on('message', (data) => {
        const at = performance.now();
        const message = JSON.parse(data.toString()) as {
          type: string;
          wallet?: string;
          event?: { type: string; ref?: string; provisional?: boolean; usd?: number; ts?: number };
        };
        if (message.type === 'ready') {
          for (const wallet of wallets) socket.send(JSON.stringify({ type: 'follow', trader: wallet }));
          resolve();
        }
        const event = message.event;
        if (message.type !== 'event' || !event?.ref) return;
        const block = Number(event.ref.split(':')[0]);
        if (event.provisional) {
          provisional.push(at - (node.minedAt.get(block) ?? at));
          sent.set(event.ref, { block, wallet: message.wallet!, usd: event.usd ?? 0, ts: event.ts ?? 0 });
          (sentTo.get(event.ref) ?? sentTo.set(event.ref, new Set()).get(event.ref)!).add(client);
        } else if (event.type === 'final' || event.type === 'retracted') {
          (ended.get(event.ref) ?? ended.set(event.ref, new Set()).get(event.ref)!).add(client);
          if (event.type === 'final') final.push(at - (node.minedAt.get(block + FINALITY) ?? at));
          else if (client === 0) {
            const fill = sent.get(event.ref);
            if (fill) retractedFills.push(fill);
          }
        }
      });
    });
    sockets.push(socket);
  }
  // Let every follow be acknowledged before the first block.
  await sleep(200);

  // ——— the floor: a bare viem subscriber decoding the same logs ———
  const floor: number[] = [];
  const bare = createPublicClient({ transport: webSocket(node.wsUrl) });
  const bareSubscription = await bare.transport.subscribe({
    params: ['newHeads'],
    onData: (data: unknown) => {
      const header = (data as { result?: { number: string } }).result;
      if (!header) return;
      const block = Number(BigInt(header.number));
      void bare
        .request({
          method: 'eth_getLogs',
          params: [{ fromBlock: header.number as Hex, toBlock: header.number as Hex }],
        })
        .then((logs) => {
          let decoded = 0;
          for (const raw of logs as { topics: Hex[]; data: Hex }[]) {
            try {
              const event = decodeEventLog({ abi: exchangeV2Abi, topics: raw.topics as [Hex], data: raw.data });
              if (event.eventName === 'OrderFilled') decoded++;
            } catch {
              // Not an exchange log.
            }
          }
          if (decoded > 0) floor.push(performance.now() - (node.minedAt.get(block) ?? performance.now()));
        });
    },
  });

  // ——— a REST reader: each final fill of a watched trader, in the fills page ———
  const rest: number[] = [];
  const restPending = new Map<string, { wallet: string; usd: number; ts: number; block: number }>();
  const restDone = new Set<string>();
  let reading = true;
  let stoppedAt = 0;
  const restReader = (async () => {
    while (reading || restPending.size > 0) {
      // One fills page per wallet and round, the wallets at once: the reader must not be what is measured.
      const byWallet = new Map<string, [string, { usd: number; ts: number; block: number }][]>();
      for (const [ref, fill] of restPending) {
        if (node.minedAt.get(fill.block + FINALITY) === undefined) continue;
        const list = byWallet.get(fill.wallet) ?? [];
        list.push([ref, fill]);
        byWallet.set(fill.wallet, list);
      }
      await Promise.all(
        [...byWallet].map(async ([wallet, pending]) => {
          const response = await fetch(`${server.origin}${API}/traders/${wallet}/fills?since=0&limit=2000`, {
            headers: { authorization: `Bearer ${key}` },
          });
          const rows = ((await response.json()) as { fills?: { usd: number; ts: number }[] }).fills ?? [];
          const at = performance.now();
          for (const [ref, fill] of pending)
            if (rows.some((row) => row.usd === fill.usd && row.ts === fill.ts)) {
              rest.push(at - node.minedAt.get(fill.block + FINALITY)!);
              restPending.delete(ref);
              restDone.add(ref);
            }
        }),
      );
      await sleep(20);
      if (!reading && restPending.size > 0 && performance.now() - stoppedAt > 30_000) break;
    }
  })();

  // ——— the chain: a block every BLOCK_MS, reorgs at the head ———
  const replaced = new Set<number>();
  let reorgs = 0;
  let fillBlocksMined = 0;
  for (let block = registeredThrough + 1; block <= lastBlock; block++) {
    const minedAt = performance.now();
    node.mine(world.blocks.get(block) ?? [], block, world.timestampOf(block));
    // The fills of the block that just became final (the node finalizes it now), for the REST reader.
    for (const [ref, fill] of sent)
      if (fill.block === block - FINALITY && !replaced.has(fill.block) && !restPending.has(ref) && !restDone.has(ref))
        restPending.set(ref, fill);
    const carriesFills = fillBlocks.includes(block);
    if (carriesFills) fillBlocksMined++;
    if (REORG_EVERY > 0 && carriesFills && fillBlocksMined % REORG_EVERY === 0) {
      // Once the watchers hold the block's provisional events, the newest block(s) are replaced by empty ones.
      while (![...sent.values()].some((fill) => fill.block === block) && performance.now() - minedAt < BLOCK_MS)
        await sleep(5);
      const depth = (reorgs++ % 2) + 1;
      const from = block - depth + 1;
      node.reorg(from, new Map(Array.from({ length: depth }, (_, index) => [from + index, []])));
      for (let index = 0; index < depth; index++) replaced.add(from + index);
      node.announce();
    }
    await sleep(Math.max(0, BLOCK_MS - (performance.now() - minedAt)));
  }
  // Finality passes the last block; every provisional event must end.
  for (let index = 0; index <= FINALITY; index++) {
    node.mine([], node.head + 1);
    await sleep(Math.min(BLOCK_MS, 500));
  }
  for (const [ref, fill] of sent)
    if (!replaced.has(fill.block) && !restPending.has(ref) && !restDone.has(ref)) restPending.set(ref, fill);
  const deadline = performance.now() + 20_000;
  const open = () =>
    [...sentTo].filter(([ref, clients]) => [...clients].some((client) => !ended.get(ref)?.has(client))).length;
  while (open() > 0 && performance.now() < deadline) await sleep(50);
  reading = false;
  stoppedAt = performance.now();
  await restReader;

  // Retracted fills in the store (the fills table, every copy): there must be none.
  const storedRows = await server.store.query<{ wallet: string; ts: number; usd: number }>(
    'SELECT wallet, ts, usd FROM {db:Identifier}.fills WHERE ts IN {ts:Array(UInt32)}',
    { ts: [...new Set(retractedFills.map((fill) => fill.ts))] },
  );
  const storedRetracted = retractedFills.filter((fill) =>
    storedRows.some((row) => row.wallet === fill.wallet && Number(row.ts) === fill.ts && row.usd === fill.usd),
  ).length;

  console.log(
    `chain: ${lastBlock - registeredThrough} blocks every ${BLOCK_MS} ms, finality ${FINALITY} behind, ${reorgs} reorgs (${replaced.size} blocks replaced); ${CLIENTS} watchers of ${wallets.length} traders; load ${os
      .loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `provisional → watcher: ${provisional.length} deliveries, p50 ${ms(percentile(provisional, 0.5))} ms, p99 ${ms(percentile(provisional, 0.99))} ms (after the node served the block)`,
  );
  console.log(
    `final mark → watcher: ${final.length} deliveries, p50 ${ms(percentile(final, 0.5))} ms, p99 ${ms(percentile(final, 0.99))} ms (after the node reported the block finalized)`,
  );
  console.log(
    `rest: ${rest.length} fills (${restPending.size} never seen), p50 ${ms(percentile(rest, 0.5))} ms, p99 ${ms(percentile(rest, 0.99))} ms (after finalization)`,
  );
  console.log(
    `floor (bare viem subscriber): ${floor.length} blocks, p50 ${ms(percentile(floor, 0.5))} ms, p99 ${ms(percentile(floor, 0.99))} ms; provisional refs ${sent.size}, retracted fills ${retractedFills.length}`,
  );

  await bareSubscription.unsubscribe().catch(() => {});
  await (await bare.transport.getRpcClient()).close();
  for (const socket of sockets) socket.close();
  await server.close();
  await node.stop();
  await rm(dataDir, { recursive: true, force: true });
  console.log(
    `freshness: provisional p99 ${ms(percentile(provisional, 0.99))} ms, final p99 ${ms(percentile(final, 0.99))} ms, rest p99 ${ms(percentile(rest, 0.99))} ms, unresolved ${open()}, stored retracted ${storedRetracted}`,
  );
});
