/**
 * bench:archive — logs decoded and published per second, end to end into the topics: a local JSON-RPC node
 * serves a generated chain (viem-encoded matches, registrations, splits, resolutions, redemptions), the
 * archive reads it over HTTP in adaptive ranges (the next range requested while the current one is
 * processed), decodes, maps and publishes every event to the in-process log (checkpoints in embedded
 * ClickHouse). Beside it, in the same run, bare decode loops of the same logs (viem's decodeEventLog alone,
 * and our decodeLog, both on this one thread). Medians of several rounds.
 *
 * The archive decodes on ARCHIVE_DECODE_WORKERS worker threads (default: the machine's cores; `--workers N`
 * overrides it, 0 decodes on the main thread). The pool is started once, before the rounds, as a process
 * starts it once (its start-up, about a second of loading viem through tsx in each worker, is printed apart);
 * each round's archive uses it.
 *
 * The node runs in a child process by default (`--node child`), as a real node is another machine: its JSON
 * encoding and HTTP serving are then not counted against the archive's thread (it still shares the CPU).
 * `--node inprocess` serves it from the benchmark's own thread, as the first version of this benchmark did.
 *
 *   npm run bench:archive [-- --matches N --rounds N --node child|inprocess --workers N]
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { decodeEventLog, type Hex } from 'viem';
import { parseConfig } from '../../config.ts';
import { MemoryLog } from '../../ingest/bus/memory.ts';
import { TopicNames } from '../../ingest/contract/topics.ts';
import { EventPublisher } from '../../ingest/publisher.ts';
import { openMigratedStore } from '../../roles/runtime.ts';
import { EVENTS_BY_TOPIC0, INDEXED_TOPIC0S } from '../../ingest/sources/archive/abi.ts';
import { Archive } from '../../ingest/sources/archive/archive.ts';
import { encodeArchiveEvents } from '../../ingest/sources/archive/encode.ts';
import { decodeLog, type RawLog } from '../../ingest/sources/archive/decode.ts';
import { createLogDecoder } from '../../ingest/sources/archive/decode-pool.ts';
import { PolygonRpc } from '../../ingest/sources/archive/rpc.ts';
import { createLogger } from '../../log.ts';
import { generateWorld } from '../harness/chain-world.ts';
import { LocalPolygonNode } from '../harness/polygon-node.ts';
import { median, runBenchmark } from './support.ts';

const { values } = parseArgs({
  options: {
    matches: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    node: { type: 'string', default: 'child' },
    workers: { type: 'string' },
    'serve-node': { type: 'boolean', default: false },
  },
});

const worldOf = (matches: number) => generateWorld({ seed: 7, markets: 300, wallets: 2_000, matches });

async function serve(world: ReturnType<typeof generateWorld>): Promise<LocalPolygonNode> {
  const node = new LocalPolygonNode();
  await node.start();
  for (let block = world.firstBlock; block <= world.lastBlock; block++) node.setBlock(block, world.timestampOf(block), world.blocks.get(block) ?? []);
  return node;
}

/** The node as a child process (the same deterministic world): answers its URL, serves until disconnected. */
async function serveInChild(matches: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve-node', '--matches', String(matches)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the node process exited (${code})`)));
    child.once('message', (message) => resolve((message as { url: string }).url));
  });
  return {
    url,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    },
  };
}

if (values['serve-node']) {
  void serve(worldOf(Number(values.matches))).then((node) => {
    process.send!({ url: node.url });
    process.once('disconnect', () => void node.stop().then(() => process.exit(0)));
  });
} else runBenchmark(async () => {
  const matches = Number(values.matches);
  const rounds = Number(values.rounds);
  const generatedAt = Date.now();
  const world = worldOf(matches);
  const node = values.node === 'inprocess' ? await serve(world) : await serveInChild(matches);
  const indexed = new Set<string>([...INDEXED_TOPIC0S.exchange, ...INDEXED_TOPIC0S.conditionalTokens, ...INDEXED_TOPIC0S.negRiskAdapter]);
  const served: RawLog[] = [...world.blocks.values()].flat().filter((log) => indexed.has(log.topics[0]!));
  console.log(`node: ${values.node === 'inprocess' ? 'in this process' : 'a child process'}`);
  console.log(`world: ${world.logCount} logs in ${world.lastBlock - world.firstBlock + 1} blocks (${served.length} of them indexed), generated in ${Date.now() - generatedAt} ms`);

  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-archive-'));
  const config = parseConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    POLYGON_RPC_URL: node.url,
    ARCHIVE_START_BLOCK: String(world.firstBlock),
    ARCHIVE_END_BLOCK: String(world.lastBlock),
    ARCHIVE_CONFIRMATIONS: '0',
    ARCHIVE_RANGE_INITIAL: '2000',
    ARCHIVE_RANGE_MAX: '20000',
    ARCHIVE_RPS: '1000',
    ARCHIVE_TIMEOUT_MS: '120000',
    ...(values.workers === undefined ? {} : { ARCHIVE_DECODE_WORKERS: values.workers }),
  });
  const log = createLogger('warn');
  const store = await openMigratedStore(config, log);
  const poolStarted = process.hrtime.bigint();
  const decoder = createLogDecoder(config.archive!.decodeWorkers, log);
  await decoder.decode(served.slice(0, 1));
  console.log(`decode workers: ${decoder.workers}${decoder.workers === 0 ? ' (decoding on the main thread)' : `, started in ${Math.round(Number(process.hrtime.bigint() - poolStarted) / 1e6)} ms (not counted)`}`);

  const endToEnd: number[] = [];
  const bareViem: number[] = [];
  const bareOurs: number[] = [];
  /** Per round, over the end-to-end window: main thread busy, decode workers busy, this process's CPU (all threads), wall; ms. */
  const stages: Array<{ main: number; workers: number; cpu: number; wall: number }> = [];
  let published = 0;
  try {
    for (let round = 0; round < rounds; round++) {
      // End to end: node → archive → topics (a fresh checkpoint each round).
      const eventLog = new MemoryLog({ partitions: 4, maxRetainedBytes: 1 << 30, log });
      const producer = await eventLog.producer();
      const publisher = new EventPublisher(producer, new TopicNames(''));
      const archiveConfig = { ...config.archive!, source: `bench-${process.pid}-${round}` };
      const controller = new AbortController();
      const elu = performance.eventLoopUtilization();
      const workersBusy = decoder.busyMs();
      const cpu = process.cpuUsage();
      const started = process.hrtime.bigint();
      const archive = new Archive({
        config: archiveConfig,
        rpc: new PolygonRpc({ urls: archiveConfig.rpcUrls, requestsPerSecond: 1000, retries: 2, retryBaseMs: 10, retryMaxMs: 100, timeoutMs: 120_000, signal: controller.signal }, log),
        // As archiveSink publishes: the archive's own events encoded once, one send per topic and range.
        sink: { publish: (topicId, events) => publisher.publishEncoded(topicId, encodeArchiveEvents(topicId, events)), deadLetter: async () => {}, durable: async () => {} },
        store,
        log,
        signal: controller.signal,
        decoder,
      });
      await archive.run();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const used = process.cpuUsage(cpu);
      stages.push({
        main: performance.eventLoopUtilization(elu).active,
        workers: decoder.busyMs() - workersBusy,
        cpu: (used.user + used.system) / 1000,
        wall: seconds * 1000,
      });
      endToEnd.push(served.length / seconds);
      published = publisher.count;
      await producer.close();
      await eventLog.close();

      // Bare decode of the same logs: viem alone, then our decoder (viem + the domain's rules).
      let t = process.hrtime.bigint();
      for (const raw of served) decodeEventLog({ abi: [EVENTS_BY_TOPIC0.get(raw.topics[0]!)!.event], topics: raw.topics as [Hex, ...Hex[]], data: raw.data as Hex, strict: true });
      bareViem.push(served.length / (Number(process.hrtime.bigint() - t) / 1e9));
      t = process.hrtime.bigint();
      for (const raw of served) decodeLog(raw);
      bareOurs.push(served.length / (Number(process.hrtime.bigint() - t) / 1e9));
      const stage = stages.at(-1)!;
      console.log(
        `round ${round + 1}: end to end ${Math.round(endToEnd.at(-1)!)} logs/s (${published} events published), bare viem decode ${Math.round(bareViem.at(-1)!)} logs/s, bare decodeLog ${Math.round(bareOurs.at(-1)!)} logs/s;` +
          ` over ${Math.round(stage.wall)} ms: main thread busy ${Math.round(stage.main)} ms, decode workers busy ${Math.round(stage.workers)} ms, this process's CPU ${Math.round(stage.cpu)} ms`,
      );
    }
  } finally {
    await decoder.close();
    await store.close();
    await node.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  const e2e = median(endToEnd);
  const viem = median(bareViem);
  console.log('');
  console.log(`archive, end to end into the topics: ${Math.round(e2e)} logs/s (median of ${rounds}; ${decoder.workers} decode workers; target >= 50,000)`);
  console.log(`bare decode on one thread, same logs: viem decodeEventLog ${Math.round(viem)} logs/s; decodeLog ${Math.round(median(bareOurs))} logs/s`);
  console.log(`ratio end to end / bare viem decode: ${(e2e / viem).toFixed(2)} (target >= 0.5); / bare decodeLog: ${(e2e / median(bareOurs)).toFixed(2)}`);
  const ms = (pick: (stage: (typeof stages)[number]) => number) => Math.round(median(stages.map(pick)));
  console.log(
    `end-to-end window (medians): ${ms((stage) => stage.wall)} ms wall; main thread busy ${ms((stage) => stage.main)} ms; decode workers busy ${ms((stage) => stage.workers)} ms;` +
      ` this process's CPU ${ms((stage) => stage.cpu)} ms (the node's process not counted; ${os.availableParallelism()} cores)`,
  );
});
