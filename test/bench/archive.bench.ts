/**
 * bench:archive — logs decoded and published per second, end to end into the topics: a local JSON-RPC node
 * serves a generated chain (viem-encoded matches, registrations, splits, resolutions, redemptions), the
 * archive reads it over HTTP in adaptive ranges (the next range requested while the current one is
 * processed), decodes, maps and publishes every event to the in-process log (checkpoints in embedded
 * ClickHouse). Beside it, in the same run, bare decode loops of the same logs (viem's decodeEventLog alone,
 * and our decodeLog, both on this one thread). Medians of several rounds.
 *
 * The archive decodes on `archive.decodeWorkers` worker threads (default: the machine's cores; `--workers N`
 * overrides it, 0 decodes on the main thread; `--workers 0,2` compares counts in one run, round by round). The pool is started once, before the rounds, as a process
 * starts it once (its start-up, about a second of loading viem through tsx in each worker, is printed apart),
 * and warmed by one decode pass over the logs (a backfill's decoders are warm; also printed apart); each
 * round's archive uses it. Each round prints the main thread's and the workers' busy time and this process's
 * CPU over its end-to-end window: where the time went, thread by thread.
 *
 * The node runs in a child process by default (`--node child`), as a real node is another machine: its JSON
 * encoding and HTTP serving are then not counted against the archive's thread (it still shares the CPU).
 * `--node inprocess` serves it from the benchmark's own thread, as the first version of this benchmark did.
 *
 *   npm run bench:archive [-- --matches N --rounds N --node child|inprocess --workers N[,N…]]
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
import { createLogDecoder, type LogDecoder } from '../../ingest/sources/archive/decode-pool.ts';
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

const worldOf = (matches: number) => generateWorld({ seed: 7, markets: 300, wallets: 2_000, matches, v2Every: 3 });

async function serve(world: ReturnType<typeof generateWorld>): Promise<LocalPolygonNode> {
  const node = new LocalPolygonNode();
  await node.start();
  for (let block = world.firstBlock; block <= world.lastBlock; block++)
    node.setBlock(block, world.timestampOf(block), world.blocks.get(block) ?? []);
  return node;
}

/** The node as a child process (the same deterministic world): answers its URL, serves until disconnected. */
async function serveInChild(matches: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve-node', '--matches', String(matches)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
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
} else
  runBenchmark(async () => {
    const matches = Number(values.matches);
    const rounds = Number(values.rounds);
    const generatedAt = Date.now();
    const world = worldOf(matches);
    const node = values.node === 'inprocess' ? await serve(world) : await serveInChild(matches);
    const indexed = new Set<string>([
      ...INDEXED_TOPIC0S.exchange,
      ...INDEXED_TOPIC0S.conditionalTokens,
      ...INDEXED_TOPIC0S.negRiskAdapter,
    ]);
    const served: RawLog[] = [...world.blocks.values()].flat().filter((log) => indexed.has(log.topics[0]!));
    console.log(`node: ${values.node === 'inprocess' ? 'in this process' : 'a child process'}`);
    // The archive role's deployments run with --max-semi-space-size=64 (docs/archive.md, "Decode workers"); `npm run bench:archive` sets it too.
    const semiSpace = /--max-semi-space-size=(\d+)/.exec(process.env.NODE_OPTIONS ?? '')?.[1];
    console.log(
      `young generation: ${semiSpace ? `--max-semi-space-size=${semiSpace} (NODE_OPTIONS)` : "Node's default semi-space"}`,
    );
    console.log(
      `world: ${world.logCount} logs in ${world.lastBlock - world.firstBlock + 1} blocks (${served.length} of them indexed), generated in ${Date.now() - generatedAt} ms`,
    );

    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-archive-'));
    const config = parseConfig(
      {
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        POLYGON_RPC_URL: node.url,
        ARCHIVE_START_BLOCK: String(world.firstBlock),
        ARCHIVE_END_BLOCK: String(world.lastBlock),
        ARCHIVE_CONFIRMATIONS: '0',
        ARCHIVE_FINALIZED: 'false',
        ARCHIVE_RANGE_MAX: '20000',
        ARCHIVE_RPS: '1000',
      },
      { archive: { range: { initial: 2000 }, timeoutMs: 120_000 } },
    );
    const log = createLogger('warn');
    const store = await openMigratedStore(config, log);
    // The worker counts to compare (archive.decodeWorkers: by default the machine's cores), one pool each.
    const counts =
      values.workers === undefined
        ? [config.archive!.decodeWorkers]
        : values.workers.split(',').map((count) => Number.parseInt(count.trim(), 10));
    if (counts.some((count) => !Number.isInteger(count) || count < 0 || count > 64))
      throw new Error(`--workers: counts from 0 to 64, not ${values.workers}`);
    const decoders: LogDecoder[] = [];
    try {
      for (const count of counts) {
        const poolStarted = process.hrtime.bigint();
        const decoder = createLogDecoder(count, log);
        decoders.push(decoder);
        await decoder.decode(served.slice(0, 1));
        const startedMs = Math.round(Number(process.hrtime.bigint() - poolStarted) / 1e6);
        // A backfill runs for hours: its decoders are warm (JIT). One pass over the logs warms them, not counted.
        const warmStarted = process.hrtime.bigint();
        await decoder.decode(served);
        const warmMs = Math.round(Number(process.hrtime.bigint() - warmStarted) / 1e6);
        console.log(
          `decode workers: ${count}${count === 0 ? ' (decoding on the main thread)' : `, started in ${startedMs} ms`}; warm-up pass over the logs ${warmMs} ms (neither counted)`,
        );
      }

      const endToEnd = counts.map((): number[] => []);
      /** Per worker count and round, over the end-to-end window: main thread busy, decode workers busy, this process's CPU (all threads), wall; ms. */
      const stages = counts.map((): Array<{ main: number; workers: number; cpu: number; wall: number }> => []);
      const bareViem: number[] = [];
      const bareOurs: number[] = [];
      for (let round = 0; round < rounds; round++) {
        // Several worker counts run round by round, interleaved: each sees the machine as the others do.
        for (const [which, decoder] of decoders.entries()) {
          // End to end: node → archive → topics (a fresh checkpoint each round).
          const eventLog = new MemoryLog({ partitions: 4, maxRetainedBytes: 1 << 30, log });
          const producer = await eventLog.producer();
          const publisher = new EventPublisher(producer, new TopicNames(''));
          const archiveConfig = { ...config.archive!, source: `bench-${process.pid}-${round}-${which}` };
          const controller = new AbortController();
          const elu = performance.eventLoopUtilization();
          const workersBusy = decoder.busyMs();
          const cpu = process.cpuUsage();
          const started = process.hrtime.bigint();
          const archive = new Archive({
            config: archiveConfig,
            rpc: new PolygonRpc(
              {
                urls: archiveConfig.rpcUrls,
                requestsPerSecond: 1000,
                retries: 2,
                retryBaseMs: 10,
                retryMaxMs: 100,
                timeoutMs: 120_000,
                signal: controller.signal,
              },
              log,
            ),
            // As archiveSink publishes: the archive's own events encoded once, one send per topic and range.
            sink: {
              publish: (topicId, events) => publisher.publishEncoded(topicId, encodeArchiveEvents(topicId, events)),
              deadLetter: async () => {},
              durable: async () => {},
            },
            store,
            log,
            signal: controller.signal,
            decoder,
          });
          await archive.run();
          const seconds = Number(process.hrtime.bigint() - started) / 1e9;
          const used = process.cpuUsage(cpu);
          const stage = {
            main: performance.eventLoopUtilization(elu).active,
            workers: decoder.busyMs() - workersBusy,
            cpu: (used.user + used.system) / 1000,
            wall: seconds * 1000,
          };
          stages[which]!.push(stage);
          endToEnd[which]!.push(served.length / seconds);
          const published = publisher.count;
          await producer.close();
          await eventLog.close();
          console.log(
            `round ${round + 1}, ${decoder.workers} decode workers: end to end ${Math.round(served.length / seconds)} logs/s (${published} events published);` +
              ` over ${Math.round(stage.wall)} ms: main thread busy ${Math.round(stage.main)} ms, decode workers busy ${Math.round(stage.workers)} ms, this process's CPU ${Math.round(stage.cpu)} ms`,
          );
        }

        // Bare decode of the same logs on this one thread: viem alone, then our decoder (viem + the domain's rules).
        let t = process.hrtime.bigint();
        for (const raw of served)
          decodeEventLog({
            abi: [EVENTS_BY_TOPIC0.get(raw.topics[0]!)!.event],
            topics: raw.topics as [Hex, ...Hex[]],
            data: raw.data as Hex,
            strict: true,
          });
        bareViem.push(served.length / (Number(process.hrtime.bigint() - t) / 1e9));
        t = process.hrtime.bigint();
        for (const raw of served) decodeLog(raw);
        bareOurs.push(served.length / (Number(process.hrtime.bigint() - t) / 1e9));
        console.log(
          `round ${round + 1}: bare viem decode ${Math.round(bareViem.at(-1)!)} logs/s, bare decodeLog ${Math.round(bareOurs.at(-1)!)} logs/s (one thread)`,
        );
      }

      const viem = median(bareViem);
      const ours = median(bareOurs);
      console.log('');
      console.log(
        `bare decode on one thread, same logs (median of ${rounds}): viem decodeEventLog ${Math.round(viem)} logs/s; decodeLog ${Math.round(ours)} logs/s`,
      );
      for (const [which, decoder] of decoders.entries()) {
        const e2e = median(endToEnd[which]!);
        const ms = (pick: (stage: { main: number; workers: number; cpu: number; wall: number }) => number) =>
          Math.round(median(stages[which]!.map(pick)));
        console.log(
          `archive, end to end into the topics, ${decoder.workers} decode workers: ${Math.round(e2e)} logs/s (median of ${rounds}; target >= 50,000)`,
        );
        console.log(
          `  ratio to the bare viem decode: ${(e2e / viem).toFixed(2)} (target >= 0.5); to the bare decodeLog: ${(e2e / ours).toFixed(2)}`,
        );
        console.log(
          `  end-to-end window (medians): ${ms((stage) => stage.wall)} ms wall; main thread busy ${ms((stage) => stage.main)} ms; decode workers busy ${ms((stage) => stage.workers)} ms;` +
            ` this process's CPU ${ms((stage) => stage.cpu)} ms (the node's process not counted; ${os.availableParallelism()} cores)`,
        );
      }
    } finally {
      for (const decoder of decoders) await decoder.close();
      await store.close();
      await node.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
