/**
 * `npm run bench:ingest` — ingest throughput, end to end, against a bare insert measured in the same run.
 *
 * Each round produces ROUND_FILLS fills to a fresh topic (the librdkafka mock keeps only ~5 MB per
 * partition, so rounds stay small), starts one worker, and times from the moment it has joined its
 * group to the moment every fill is visible in the projections (fills landed and trader_markets and
 * careers recomputed). The baseline inserts the same rows into the same `fills` table with plain
 * batched inserts. The figure is the ratio of medians. It also prints the process's peak resident
 * memory after each round (it must plateau, not grow with the backlog) and, unless --skip-all, the peak
 * memory of the `all` role serving the demo data set.
 *
 * Options: --rounds N (default 5), --fills N per round (default 40000), --skip-all.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { parseConfig } from '../../config.ts';
import { createLogger } from '../../log.ts';
import { KafkaLog } from '../../ingest/bus/kafka.ts';
import { TOPICS, TopicNames, type EventInputOf } from '../../ingest/contract/topics.ts';
import { EventPublisher } from '../../ingest/publisher.ts';
import { openMigratedStore } from '../../ingest/runtime.ts';
import { startIngestWorker } from '../../ingest/worker.ts';
import { startMockKafka } from '../harness/kafka-mock.ts';
import { waitForIngested } from '../harness/wait.ts';
import { startRole } from '../harness/child.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    fills: { type: 'string', default: '40000' },
    'skip-all': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(values.rounds);
const ROUND_FILLS = Number(values.fills);

function median(numbers: number[]): number {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function hex(value: number, length: number): string {
  return value.toString(16).padStart(length, '0').slice(-length);
}

/** A realistic spread: 2,000 wallets over 500 markets, both sides, both tokens. */
function makeRoundFills(round: number, count: number): EventInputOf<'fillsArchive'>[] {
  return Array.from({ length: count }, (_, index) => {
    const serial = round * count + index;
    const price = ((serial * 7919) % 98) / 100 + 0.01;
    const size = ((serial * 104729) % 500) + 1;
    return {
      tx_hash: `0x${hex(serial, 64)}`,
      log_index: serial % 1000,
      wallet: `0x${hex((serial * 31) % 2000, 40)}`,
      condition_id: `0x${hex((serial * 17) % 500, 64)}`,
      side: serial % 3 === 0 ? 'SELL' : 'BUY',
      token_side: serial % 2 === 0 ? 1 : 2,
      price: Math.round(price * 100) / 100,
      size_tokens: size,
      usd: Math.round(price * size * 100) / 100,
      role: serial % 2 === 0 ? 'maker' : 'taker',
      era: 'v2',
      ts: 1_767_556_800 + (serial % 86_400),
    };
  });
}

function peakRssMb(pid: number | 'self' = 'self'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

async function main(): Promise<void> {
  const log = createLogger('error');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-'));
  const mock = parseConfig(process.env).kafka.brokers ? undefined : await startMockKafka();
  const brokers = parseConfig(process.env).kafka.brokers ?? mock!.brokers;
  const baseEnvironment = { DATA_DIR: dataDir, KAFKA_BROKERS: brokers.join(','), LOG_LEVEL: 'error', KAFKA_SESSION_TIMEOUT_MS: '6000', KAFKA_HEARTBEAT_INTERVAL_MS: '500' };

  const endToEnd: number[] = [];
  const bare: number[] = [];
  const rssAfterRound: number[] = [];
  console.log(`ingest bench: ${ROUNDS} rounds × ${ROUND_FILLS} fills, one worker, embedded ClickHouse, Kafka at ${brokers.join(',')}`);

  for (let round = 0; round < ROUNDS; round++) {
    const config = parseConfig({ ...baseEnvironment, CLICKHOUSE_DATABASE: `bench_${round}`, KAFKA_TOPIC_PREFIX: `bench${Date.now()}-${round}.`, KAFKA_GROUP_ID: `bench-${round}-${Date.now()}` });
    const store = await openMigratedStore(config, log);
    const kafka = new KafkaLog({ brokers, clientId: 'bench', log });
    const topics = new TopicNames(config.kafka.topicPrefix);
    const publisher = new EventPublisher(await kafka.producer(), topics);
    const fills = makeRoundFills(round, ROUND_FILLS);
    await publisher.publish('fillsArchive', fills);

    const worker = await startIngestWorker({ config, eventLog: kafka, store, log });
    const started = performance.now();
    await waitForIngested([worker.pipeline], fills.length);
    const seconds = (performance.now() - started) / 1000;
    endToEnd.push(fills.length / seconds);
    console.log("batches", worker.pipeline.stats.batches);
    await worker.stop();
    await kafka.close();

    // Baseline: the same rows, plain batched inserts into the same table (a fresh database, same DDL).
    const baselineConfig = parseConfig({ ...baseEnvironment, CLICKHOUSE_DATABASE: `bench_bare_${round}` });
    const baselineStore = await openMigratedStore(baselineConfig, log);
    const rows = fills.map((fill) => TOPICS.fillsArchive.land(TOPICS.fillsArchive.schema.parse(fill)).row);
    const batchSize = Math.ceil(rows.length / 4);
    const bareStarted = performance.now();
    for (let start = 0; start < rows.length; start += batchSize) {
      await baselineStore.insert('fills', rows.slice(start, start + batchSize), `bare-${round}-${start}`);
    }
    bare.push(rows.length / ((performance.now() - bareStarted) / 1000));
    await baselineStore.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await baselineStore.close();
    await store.close();
    rssAfterRound.push(peakRssMb());
    console.log(
      `  round ${round + 1}: end to end ${Math.round(endToEnd[round]!)} fills/s, bare insert ${Math.round(bare[round]!)} rows/s, peak RSS ${Math.round(rssAfterRound[round]!)} MB`,
    );
  }

  const endToEndMedian = median(endToEnd);
  const bareMedian = median(bare);
  console.log(`median end to end: ${Math.round(endToEndMedian)} fills/s (one worker)`);
  console.log(`median bare insert: ${Math.round(bareMedian)} rows/s`);
  console.log(`ratio end-to-end / bare insert: ${(endToEndMedian / bareMedian).toFixed(2)}`);
  console.log(`worker process peak RSS: ${Math.round(Math.max(...rssAfterRound))} MB (after each round: ${rssAfterRound.map(Math.round).join(', ')} MB)`);

  if (!values['skip-all']) {
    const allDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-all-'));
    const started = performance.now();
    const all = startRole('all', [], { DATA_DIR: allDir, PORT: '0', LOG_LEVEL: 'info', SIM_LIVE: 'false' });
    await all.waitFor((line) => line.msg === 'demo data ready');
    const readySeconds = (performance.now() - started) / 1000;
    const rss = peakRssMb(all.child.pid!);
    all.child.kill('SIGTERM');
    await all.exited;
    console.log(`all role: demo data ready in ${readySeconds.toFixed(1)} s, peak RSS ${Math.round(rss)} MB`);
    await rm(allDir, { recursive: true, force: true });
  }

  await mock?.stop();
  await rm(dataDir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
