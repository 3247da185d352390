/**
 * `npm run bench:ingest` — ingest throughput end to end, against a bare insert measured in the same run.
 *
 * The worker is the real program (`main.ts ingest`) in its own process, so its memory and CPU are its
 * own. This process plays the producer: it streams ROUNDS × ROUND_FILLS archive fills of the demo world
 * (the simulator at its default scale, in time order: market makers, whales and the rest) to Kafka
 * through librdkafka's producer (kcat; --producer kafkajs for the service's own publisher, which takes
 * ~0.8 of a core from the worker here), never more than MAX_BACKLOG ahead of the worker (the librdkafka
 * mock keeps only ~5 MB per partition and a few wallets hold most fills: more would be dropped unread),
 * and times each round of the stream from the worker's commits (the rollup refresher runs all along;
 * the last round also waits until trader_markets and careers caught up: the projections are visible).
 *
 * The baseline, in this process: the same rows inserted into the same `fills` table (same DDL, views
 * included) by plain batched inserts of BARE_BATCH rows, ROUNDS rounds before the streams and ROUNDS
 * after (the machine's speed drifts within a run). The figure is the ratio of medians.
 * Beside the rates, CPU: the worker process's CPU time per fill in each round (all its threads, from
 * /proc) and this process's per bare row; on a shared machine they move less than wall time.
 * The worker's peak resident memory is read after every round: it must plateau, not grow.
 * Unless --skip-all, it also starts the `all` role on a fresh data directory and reports the time to
 * demo data and that process's peak memory.
 *
 * Then, unless --reads 0, the same stream again into the `all` role (worker and read API in one process
 * on one embedded store, simulator off) while this process reads cards and fills pages of the stream's
 * traders at --reads requests/s (default 15, one Max user below its 20/s) with the demo Max key: the issue's
 * figure is ingest with reads running alongside.
 *
 * Options: --rounds N (default 5), --fills N per round (default 100000), --skip-all, --reads N,
 * --producer kcat|kafkajs. Environment: INGEST_LINGER_MS passes through to the worker; BENCH_WORKER_NODE_ARGS and
 * BENCH_ALL_NODE_ARGS add Node flags to the ingest role and the `all` role (e.g. --cpu-prof);
 * BENCH_WORKER_LOG=<file> keeps the worker's log, BENCH_ALL_METRICS=<file> the `all` role's /metrics.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ENVIRONMENT_VARIABLES, parseConfig } from '../../config.ts';
import { median, percentile, runBenchmark, probeFilesystem } from './support.ts';
import { readDemoKeys } from '../../ingest/sources/accounts.ts';
import { createLogger } from '../../log.ts';
import { KafkaLog } from '../../ingest/bus/kafka.ts';
import type { OutgoingMessage } from '../../ingest/bus/types.ts';
import { TOPICS, TopicNames, type EventInputOf } from '../../ingest/contract/topics.ts';
import { encodeEvent, EventPublisher, type EventSink } from '../../ingest/publisher.ts';
import { openMigratedStore } from '../../roles/runtime.ts';
import { createSimulator } from '../../ingest/sources/simulator/index.ts';
import { startRole, type LogLine, type RoleProcess } from '../harness/child.ts';
import { startMockKafka } from '../harness/kafka-mock.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    fills: { type: 'string', default: '100000' },
    'skip-all': { type: 'boolean', default: false },
    reads: { type: 'string', default: '15' },
    producer: { type: 'string', default: 'kcat' },
  },
});
const ROUNDS = Number(values.rounds);
const ROUND_FILLS = Number(values.fills);
/** Reads per second alongside the second stream (0: no second stream). */
const READS_RATE = Number(values.reads);
/** Fills per produce request, and how far the producer may run ahead of the worker. */
const PRODUCE_CHUNK = 5_000;
const MAX_BACKLOG = 20_000;
/**
 * The worker committing nothing for this long while the bench waits for fills means a broken stream: the
 * mock dropped fills before they were read (a larger backlog once did), and the bench would wait forever.
 */
const STALL_MS = 60_000;
/** Rows per bare insert: the size of a worker's write under load. */
const BARE_BATCH = 20_000;
const SIMULATION_START = 1_767_225_600; // 2026-01-01T00:00:00Z
const SIMULATION_STEP = 3_600;

type Fill = EventInputOf<'fillsArchive'>;

/** What streams the rounds into the log: sends a chunk (resolves once handed over), then closes (all delivered). */
interface StreamProducer {
  send(messages: readonly OutgoingMessage[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * librdkafka's producer (kcat -P) fed through its stdin, one `key<TAB>value` line per message, keys
 * partitioned like the JVM and kafkajs clients (murmur2). The producer shares this machine's two cores
 * with the worker (in production it runs elsewhere): kafkajs would take most of a core here to produce
 * the stream, librdkafka a small fraction of that, so the figure is the worker's, not the harness's.
 */
function kcatProducer(brokers: readonly string[], topic: string): StreamProducer {
  const child = spawn(
    'kcat',
    [
      '-P',
      '-b',
      brokers.join(','),
      '-t',
      topic,
      '-K',
      '\t',
      '-X',
      'partitioner=murmur2_random',
      '-X',
      'acks=all',
      '-X',
      'linger.ms=5',
    ],
    {
      stdio: ['pipe', 'ignore', 'pipe'],
    },
  );
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    errors = (errors + chunk.toString('utf8')).slice(-4_000);
  });
  const exited = once(child, 'exit');
  return {
    async send(messages) {
      // JSON values and wallet keys hold no raw tab or newline (JSON.stringify escapes them).
      const lines = messages.map((message) => `${message.key ?? ''}\t${message.value.toString()}\n`).join('');
      if (!child.stdin!.write(lines)) await once(child.stdin!, 'drain');
    },
    async close() {
      child.stdin!.end();
      const [code] = await exited;
      if (code !== 0) throw new Error(`kcat producer exited with ${code}: ${errors}`);
    },
  };
}

/** kafkajs through the service's own publisher (what the source roles use), for comparison (--producer kafkajs). */
function kafkajsProducer(publisher: EventPublisher): StreamProducer {
  return {
    send: (messages) => publisher.publishEncoded('fillsArchive', messages),
    close: async () => {},
  };
}

/** CPU time a process used so far (all its threads, user + system), seconds: less noisy than wall time on a shared machine. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime (fields 14 and 15 of proc(5)), in clock ticks of 1/100 s on Linux.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Node flags for a role process from a variable (BENCH_WORKER_NODE_ARGS, BENCH_ALL_NODE_ARGS), space-separated. */
function nodeArgsFrom(variable: string): string[] {
  return process.env[variable]?.split(' ').filter(Boolean) ?? [];
}

function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** The demo world's archive fills, round by round, deterministically (the baseline regenerates them). */
async function* simulatedRounds(): AsyncGenerator<Fill[]> {
  const simulator = createSimulator({ seed: 20261121, traders: 120 });
  let carry: Fill[] = [];
  const sink: EventSink = {
    async publish(topicId, events) {
      // The topic id narrows the events at run time; TypeScript cannot follow it through the generic.
      if (topicId === 'fillsArchive') carry.push(...(events as unknown as readonly Fill[]));
    },
  };
  for (let hour = 0, round = 0; round < ROUNDS; hour++) {
    await simulator.emit(
      SIMULATION_START + hour * SIMULATION_STEP,
      SIMULATION_START + (hour + 1) * SIMULATION_STEP,
      sink,
    );
    while (carry.length >= ROUND_FILLS && round < ROUNDS) {
      yield carry.slice(0, ROUND_FILLS);
      carry = carry.slice(ROUND_FILLS);
      round += 1;
    }
  }
}

/** Ingested counts and the rollup refresher's activity, from the worker's debug log. */
function follow(worker: RoleProcess) {
  let ingested = 0;
  let deadLetters = 0;
  let read = 0;
  let lastCommitAt = performance.now();
  const take = () => {
    for (; read < worker.lines.length; read++) {
      const line: LogLine = worker.lines[read]!;
      if (line.msg === 'batch ingested') {
        ingested += Number(line.valid);
        deadLetters += Number(line.deadLetters);
        lastCommitAt = performance.now();
      }
    }
    // A fill dead-lettered is a broken stream (the figures would be wrong): stop at once.
    if (deadLetters > 0) throw new Error(`the worker dead-lettered ${deadLetters} fills of the stream`);
    return ingested;
  };
  return {
    ingested: take,
    /** Waits until the worker reported at least `count` fills ingested; fails if it commits nothing for STALL_MS meanwhile. */
    async until(count: number) {
      if (take() >= count) return;
      let timer: NodeJS.Timeout | undefined;
      const stalled = new Promise<never>((_resolve, reject) => {
        const check = () => {
          take();
          if (performance.now() - lastCommitAt < STALL_MS) timer = setTimeout(check, 1_000);
          else
            reject(
              new Error(
                `the worker committed nothing for ${STALL_MS / 1000} s at ${ingested} of ${count} fills: the stream is broken (did the mock broker drop fills before they were read?)`,
              ),
            );
        };
        timer = setTimeout(check, 1_000);
      });
      try {
        await Promise.race([worker.waitFor(() => take() >= count), stalled]);
      } finally {
        clearTimeout(timer);
      }
    },
    /**
     * Waits until the rollups cover every write so far: a refresh that left nothing pending, logged
     * after the last 'write done' (a write queues its batch just before it logs that line, so no
     * refresh covering it can have started earlier).
     */
    async rollupsCaughtUp() {
      let lastWrite = -1;
      worker.lines.forEach((line, index) => {
        if (line.msg === 'write done') lastWrite = index;
      });
      await worker.waitFor(
        (line) => line.msg === 'rollups refreshed' && line.pending === 0 && worker.lines.indexOf(line) > lastWrite,
      );
    },
  };
}

interface StreamFigures {
  endToEnd: number[];
  /** The worker process's CPU per fill in each round, µs (all its threads: decoding, inserts, refreshes, merges). */
  cpuPerFill: number[];
  rss: number[];
  overall: number;
}

/**
 * Streams the rounds to `worker` (a started role process), never more than MAX_BACKLOG ahead of it, and
 * times each round from the worker's commits; stops the worker at the end.
 */
async function streamTo(
  worker: RoleProcess,
  producer: StreamProducer,
  rounds: OutgoingMessage[][],
  label: string,
  beforeStop: () => Promise<void> = async () => {},
): Promise<StreamFigures> {
  const progress = follow(worker);
  // One continuous stream; round k is timed from the moment the worker had committed everything before
  // it (round 1: from the first produce) to the moment it committed round k. The rollup refresher runs
  // all along, so its work is in every round; the last round also waits until the rollups caught up.
  const endToEnd: number[] = [];
  const cpuPerFill: number[] = [];
  const rss: number[] = [];
  const roundDone: number[] = [];
  const streamStarted = performance.now();
  let cpuBefore = cpuSeconds(worker.child.pid!);
  const producing = (async () => {
    let produced = 0;
    for (const encoded of rounds) {
      for (let start = 0; start < encoded.length; start += PRODUCE_CHUNK) {
        const ahead = produced + start - MAX_BACKLOG;
        if (ahead > 0) await progress.until(ahead);
        await producer.send(encoded.slice(start, start + PRODUCE_CHUNK));
      }
      produced += encoded.length;
    }
    await producer.close();
  })();
  for (let round = 0; round < rounds.length; round++) {
    await progress.until((round + 1) * ROUND_FILLS);
    if (round === rounds.length - 1) await progress.rollupsCaughtUp();
    roundDone.push(performance.now());
    const seconds = (roundDone[round]! - (round === 0 ? streamStarted : roundDone[round - 1]!)) / 1000;
    endToEnd.push(ROUND_FILLS / seconds);
    const cpuNow = cpuSeconds(worker.child.pid!);
    cpuPerFill.push(((cpuNow - cpuBefore) * 1e6) / ROUND_FILLS);
    cpuBefore = cpuNow;
    rss.push(peakRssMb(worker.child.pid!));
    console.log(
      `  ${label} round ${round + 1}: end to end ${Math.round(endToEnd[round]!)} fills/s, worker CPU ${cpuPerFill[round]!.toFixed(1)} µs a fill, peak RSS ${Math.round(rss[round]!)} MB`,
    );
  }
  await producing;
  const overall = (rounds.length * ROUND_FILLS) / ((roundDone.at(-1)! - streamStarted) / 1000);
  await beforeStop();
  worker.child.kill('SIGTERM');
  await worker.exited;
  return { endToEnd, cpuPerFill, rss, overall };
}

/**
 * Reads alongside: `rate` requests per second, evenly spaced (an open loop), alternating a trader's card
 * and fills page over `wallets`, with the demo Max key, until `signal` aborts. Answers by status and
 * latencies.
 */
async function readAlongside(
  address: string,
  authorization: string,
  wallets: readonly string[],
  rate: number,
  signal: AbortSignal,
) {
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  const pending: Promise<void>[] = [];
  const started = performance.now();
  for (let index = 0; !signal.aborted; index++) {
    const due = started + (index * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (signal.aborted) break;
    const wallet = wallets[Math.floor(index / 2) % wallets.length]!;
    const url = `${address}/api/agent/v1/traders/${wallet}${index % 2 === 0 ? '' : '/fills?limit=100'}`;
    const sent = performance.now();
    pending.push(
      fetch(url, { headers: { authorization } })
        .then(async (response) => {
          await response.arrayBuffer();
          statuses[response.status] = (statuses[response.status] ?? 0) + 1;
          latencies.push(performance.now() - sent);
        })
        .catch(() => {
          statuses.error = (statuses.error ?? 0) + 1;
        }),
    );
  }
  await Promise.all(pending);
  return { statuses, latencies };
}

/** The wallets with the most fills in the stream (at most 50). */
function activeWallets(fillsByWallet: ReadonlyMap<string, number>): string[] {
  return [...fillsByWallet]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 50)
    .map(([wallet]) => wallet);
}

async function main(): Promise<void> {
  const log = createLogger('error');
  probeFilesystem(os.tmpdir());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-'));
  const environment = parseConfig(process.env);
  const mock = environment.kafka.brokers ? undefined : await startMockKafka();
  const brokers = environment.kafka.brokers ?? mock!.brokers;
  const workerEnvironment = {
    DATA_DIR: dataDir,
    KAFKA_BROKERS: brokers.join(','),
    KAFKA_TOPIC_PREFIX: `bench${Date.now()}.`,
    KAFKA_GROUP_ID: `bench-${Date.now()}`,
    CLICKHOUSE_DATABASE: 'bench_worker',
    LOG_LEVEL: 'debug',
    // The ingest variables (INGEST_LINGER_MS) pass through, to compare settings on the same data; so does
    // libuv's pool (npm run sets it for this process; the harness's default otherwise).
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([name, value]) =>
          (name.startsWith('INGEST_') || name === 'UV_THREADPOOL_SIZE') &&
          ENVIRONMENT_VARIABLES.includes(name) &&
          value !== undefined,
      ),
    ),
  };
  const config = parseConfig(workerEnvironment);
  const topics = new TopicNames(config.kafka.topicPrefix);
  const kafka = new KafkaLog({ brokers, clientId: 'bench-producer', log });
  /** A producer of the fills topic under `names` (kcat by default; --producer kafkajs for the service's own). */
  const producerFor = async (names: TopicNames): Promise<StreamProducer> =>
    values.producer === 'kafkajs'
      ? kafkajsProducer(new EventPublisher(await kafka.producer(), names))
      : kcatProducer(brokers, names.of('fillsArchive'));
  console.log(
    `ingest bench: ${ROUNDS} rounds × ${ROUND_FILLS} fills of the demo world, one worker process, embedded ClickHouse, produced by ${values.producer}, Kafka at ${brokers.join(',')}`,
  );

  // The whole stream is encoded before the clock starts: the figure is about the log and the worker,
  // not the producer's validation.
  const rounds: OutgoingMessage[][] = [];
  const fillsByWallet = new Map<string, number>();
  for await (const fills of simulatedRounds()) {
    rounds.push(fills.map((fill) => encodeEvent('fillsArchive', fill)));
    for (const fill of fills) fillsByWallet.set(fill.wallet, (fillsByWallet.get(fill.wallet) ?? 0) + 1);
  }

  /**
   * The baseline: the same rows inserted into the same table definition (views included) by plain batched
   * inserts, a fresh database each round, in a data directory of this process's own. Half of it runs
   * before the streams and half after, so that it spans the same stretch of the machine's day as the
   * figures it is the baseline of: on a shared machine the bare insert alone swings widely within one
   * run, and measured only at the end it met another machine than the streams did.
   */
  const bareDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-bare-'));
  let bareRound = 0;
  const bareRounds = async (when: string) => {
    const rates: number[] = [];
    const cpuPerRow: number[] = [];
    for await (const fills of simulatedRounds()) {
      const store = await openMigratedStore(
        parseConfig({ ...workerEnvironment, DATA_DIR: bareDir, CLICKHOUSE_DATABASE: `bench_bare_${bareRound}` }),
        log,
      );
      const rows = fills.map((fill) => TOPICS.fillsArchive.land(TOPICS.fillsArchive.schema.parse(fill)).row);
      const lines = rows.map((row) => JSON.stringify(row));
      const started = performance.now();
      const cpuStarted = process.cpuUsage();
      for (let start = 0; start < lines.length; start += BARE_BATCH) {
        await store.insertJsonLines('fills', lines.slice(start, start + BARE_BATCH), `bare-${bareRound}-${start}`);
      }
      rates.push(rows.length / ((performance.now() - started) / 1000));
      const cpuUsed = process.cpuUsage(cpuStarted);
      cpuPerRow.push((cpuUsed.user + cpuUsed.system) / rows.length);
      await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
      await store.close();
      bareRound += 1;
      console.log(
        `  bare insert ${when}, round ${rates.length}: ${Math.round(rates.at(-1)!)} rows/s, CPU ${cpuPerRow.at(-1)!.toFixed(1)} µs a row`,
      );
    }
    return { rates, cpuPerRow };
  };
  const bareBefore = await bareRounds('before the streams');

  // BENCH_WORKER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the worker.
  const worker = startRole('ingest', [], workerEnvironment, { nodeArgs: nodeArgsFrom('BENCH_WORKER_NODE_ARGS') });
  await worker.waitFor((line) => line.msg === 'ingest worker started');
  const { endToEnd, cpuPerFill, rss, overall } = await streamTo(
    worker,
    await producerFor(topics),
    rounds,
    'ingest role,',
  );
  if (process.env.BENCH_WORKER_LOG)
    writeFileSync(process.env.BENCH_WORKER_LOG, worker.lines.map((line) => JSON.stringify(line)).join('\n'));

  // Again with reads alongside: the same stream into the `all` role (worker and read API in one process
  // on one embedded store, the simulator off), while this process reads cards and fills pages of the
  // stream's traders at READS_RATE requests/s with the demo Max key.
  let withReads: (StreamFigures & { statuses: Record<string, number>; latencies: number[] }) | undefined;
  if (READS_RATE > 0) {
    const readsDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-reads-'));
    const readsEnvironment = {
      ...workerEnvironment,
      DATA_DIR: readsDir,
      KAFKA_TOPIC_PREFIX: `benchreads${Date.now()}.`,
      KAFKA_GROUP_ID: `bench-reads-${Date.now()}`,
      PORT: '0',
      SIM_BACKFILL_DAYS: '0',
      SIM_LIVE: 'false',
      // The bench polls /me until the demo key is ingested: those 401s must not block its address.
      AUTH_FAILURE_LIMIT: '1000000',
    };
    const readsTopics = new TopicNames(parseConfig(readsEnvironment).kafka.topicPrefix);
    const all = startRole('all', [], readsEnvironment, { nodeArgs: nodeArgsFrom('BENCH_ALL_NODE_ARGS') });
    const listening = await all.waitFor((line) => line.msg === 'listening');
    const address = String(listening.address);
    const authorization = `Bearer ${(await readDemoKeys(readsDir))!.max}`;
    // The demo accounts go through the log too: read once the key is known to the API.
    while ((await fetch(`${address}/api/agent/v1/me`, { headers: { authorization } })).status !== 200)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const stop = new AbortController();
    // The stream's most active traders, as an agent watching them would ask.
    const reading = readAlongside(address, authorization, activeWallets(fillsByWallet), READS_RATE, stop.signal);
    let reads: Awaited<typeof reading> | undefined;
    const figures = await streamTo(
      all,
      await producerFor(readsTopics),
      rounds,
      `all role + ${READS_RATE} reads/s,`,
      async () => {
        stop.abort();
        reads = await reading;
        // BENCH_ALL_METRICS=<file> keeps the all role's /metrics (store statement times by read function).
        if (process.env.BENCH_ALL_METRICS)
          writeFileSync(process.env.BENCH_ALL_METRICS, await (await fetch(`${address}/metrics`)).text());
      },
    );
    withReads = { ...figures, ...reads! };
    await rm(readsDir, { recursive: true, force: true });
  }
  await kafka.close();

  // The baseline's second half, now that the streams are done (its first half ran before them).
  const bareAfter = await bareRounds('after the streams');
  const bare = [...bareBefore.rates, ...bareAfter.rates];
  const bareCpuPerRow = [...bareBefore.cpuPerRow, ...bareAfter.cpuPerRow];

  const endToEndMedian = median(endToEnd);
  const bareMedian = median(bare);
  console.log(
    `median end to end: ${Math.round(endToEndMedian)} fills/s (one worker; whole stream including start and the final rollups: ${Math.round(overall)} fills/s)`,
  );
  console.log(
    `median bare insert: ${Math.round(bareMedian)} rows/s (batches of ${BARE_BATCH}; ${bare.length} rounds, half before the streams, half after: ` +
      `medians ${Math.round(median(bareBefore.rates))} and ${Math.round(median(bareAfter.rates))})`,
  );
  console.log(`ratio end-to-end / bare insert: ${(endToEndMedian / bareMedian).toFixed(2)}`);
  console.log(
    `worker peak RSS: ${Math.round(Math.max(...rss))} MB (after each round: ${rss.map(Math.round).join(', ')} MB)`,
  );
  // CPU, unlike wall time, hardly depends on what else the machine runs: the steadier figure to compare changes by.
  console.log(
    `CPU a fill (medians): worker ${median(cpuPerFill).toFixed(1)} µs (decoding, inserts, rollup refreshes, merges), bare insert ${median(bareCpuPerRow).toFixed(1)} µs: ` +
      `${(median(cpuPerFill) / median(bareCpuPerRow)).toFixed(2)}× the bare insert's CPU`,
  );
  if (withReads) {
    const readsMedian = median(withReads.endToEnd);
    const answered = Object.values(withReads.statuses).reduce((sum, count) => sum + count, 0);
    console.log(
      `with reads alongside (all role, ${READS_RATE} card and fills reads/s of the stream's traders): median end to end ${Math.round(readsMedian)} fills/s ` +
        `(whole stream ${Math.round(withReads.overall)}), ${(readsMedian / bareMedian).toFixed(2)} of the bare insert, process CPU ${median(withReads.cpuPerFill).toFixed(1)} µs a fill (reads included); ` +
        `reads: ${answered} answered, by status ${JSON.stringify(withReads.statuses)}, p50 ${percentile(withReads.latencies, 0.5).toFixed(1)} ms, p99 ${percentile(withReads.latencies, 0.99).toFixed(1)} ms`,
    );
  }
  const headline = withReads ? median(withReads.endToEnd) : endToEndMedian;
  console.log(
    `targets (issue 17): ≥ 50,000 fills/s and ≥ 0.5× the bare insert${withReads ? ', with reads alongside' : ' (no reads alongside: --reads 0)'}: ` +
      `${Math.round(headline)} fills/s ${headline >= 50_000 ? 'met' : 'MISSED'}, ${(headline / bareMedian).toFixed(2)}× ${headline / bareMedian >= 0.5 ? 'met' : 'MISSED'}`,
  );

  if (!values['skip-all']) {
    const allDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-all-'));
    const started = performance.now();
    const all = startRole('all', [], { DATA_DIR: allDir, PORT: '0', LOG_LEVEL: 'info', SIM_LIVE: 'false' });
    const ready = await all.waitFor((line) => line.msg === 'demo data ready');
    const readySeconds = (performance.now() - started) / 1000;
    const allRss = peakRssMb(all.child.pid!);
    all.child.kill('SIGTERM');
    await all.exited;
    console.log(
      `all role: demo data (${ready.rowsStored} rows) ready in ${readySeconds.toFixed(1)} s, peak RSS ${Math.round(allRss)} MB`,
    );
    await rm(allDir, { recursive: true, force: true });
  }

  await mock?.stop();
  await rm(dataDir, { recursive: true, force: true });
  await rm(bareDir, { recursive: true, force: true });
}

runBenchmark(main);
