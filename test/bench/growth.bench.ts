/**
 * `npm run bench:growth` — how the store behaves as it grows (issue 46): worlds of growing size on the
 * embedded store, each built from nothing through the ingest pipeline, then read cold.
 *
 * A size is a multiple of the demo world in fills: the simulator's world (the demo's seed and its --days)
 * with `--traders-per-x` × size named traders (fills grow with the traders; the demo is 120 traders over
 * 2 days, about 350 thousand fills). The events go through the ingest pipeline as the worker runs it
 * (decode, the landing inserts and their views, the staging of rollup keys, the rollup refresher behind
 * it), fed by the simulator directly instead of through a log: one write of up to 20,000 events in
 * flight while the next is generated and decoded. Per size, in its own database of one engine:
 *   - the ingest rate of each tenth of the simulated period (fills/s, wall time of its writes), and how
 *     long the rollups took to catch up after the last write;
 *   - the store's size on disk (bytes per fill), its active parts and merges running after the build;
 *   - the rollup refreshes: count, median and worst, and the median of the first and of the last tenth;
 *   - cold reads in process, one at a time, over --wallets distinct wallets (a fresh read cache per
 *     endpoint, so nothing one endpoint read is at hand for the next): card, markets list, summary, chart,
 *     fills and whale flow, p50/p99, beside the floor (all the wallet's rows by primary key; one trader's
 *     market row for the summary and chart) measured in the same pass;
 *   - the statements of the periodic jobs beside ingest (the orphan sweep, the upstream poller's active
 *     wallets, the skill prior's population), median of 3: what grows with the tables;
 *   - with --check: every answer read, read again after the rollups were recomputed from scratch (the
 *     rollup tables emptied, every landing row derived again, one refresh of everything), must be equal;
 *   - the shutdown: with a write in flight and rollups queued, drain the write, finish the refresher and
 *     close the store; printed beside the service's shutdown grace.
 * The last line compares the largest size with the first.
 *
 * Options: --sizes 1,10,30 (multiples of the demo in fills), --days 2, --traders-per-x 120,
 * --wallets 40, --check.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { parseConfig, type Config } from '../../config.ts';
import { createLogger } from '../../log.ts';
import { openMigratedStore } from '../../roles/runtime.ts';
import { createSimulator } from '../../ingest/sources/simulator/index.ts';
import { IngestPipeline } from '../../ingest/pipeline.ts';
import { RollupRefresher } from '../../ingest/rollup-refresher.ts';
import { encodeEvent, type EventSink } from '../../ingest/publisher.ts';
import { TopicNames, type EventInputOf, type TopicId } from '../../ingest/contract/topics.ts';
import { rangeOf, type LogMessage, type PartitionSlice } from '../../ingest/bus/types.ts';
import type { DecodedBatch } from '../../ingest/decode.ts';
import {
  orphanRollupBatches,
  readNewestRefreshFills,
  refreshRollups,
  type RefreshFillsRead,
  type RefreshTimings,
} from '../../projections/rollups.ts';
import { readRecentArchiveWallets } from '../../projections/upstream.ts';
import { readSkillPopulation } from '../../projections/skill.ts';
import { rederivedBatches, rederiveViewsSince } from '../../projections/rederive.ts';
import type { Store } from '../../projections/store.ts';
import { readTraderCard } from '../../projections/cards.ts';
import { cardSettingsOf } from '../../operations/traders.ts';
import { resolveTrader } from '../../operations/context.ts';
import { Reader, readCacheOf } from '../../operations/reads.ts';
import { median, percentile, probeFilesystem, runBenchmark } from './support.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1,10,30' },
    days: { type: 'string', default: '2' },
    'traders-per-x': { type: 'string', default: '120' },
    wallets: { type: 'string', default: '40' },
    check: { type: 'boolean', default: false },
  },
});
const SIZES = values.sizes.split(',').map(Number);
const DAYS = Number(values.days);
const TRADERS_PER_X = Number(values['traders-per-x']);
const WALLETS = Number(values.wallets);
const CHECK = values.check;
if (SIZES.some((size) => !(size > 0)) || !(DAYS > 0) || !(WALLETS > 0))
  throw new Error('--sizes, --days and --wallets must be positive');

/** Events per write, as the worker gathers them (ingest.maxBatchMessages). */
const WRITE_EVENTS = 20_000;
const TENTHS = 10;
const READS = ['card', 'markets', 'summary', 'chart', 'fills', 'whales'] as const;
type ReadName = (typeof READS)[number];
const FLOORS = ['wallet rows', 'market row'] as const;

const loadAverage = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');

/**
 * The simulator's events through the pipeline as the worker writes them: encoded and decoded, gathered
 * into writes of up to WRITE_EVENTS events (one slice per topic), one write in flight while the next is
 * generated.
 */
class PipelineFeed implements EventSink {
  private readonly pending = new Map<string, LogMessage[]>();
  private pendingCount = 0;
  private readonly offsets = new Map<string, number>();
  private inFlight: Promise<void> = Promise.resolve();
  fills = 0;

  constructor(
    private readonly pipeline: IngestPipeline,
    private readonly topics: TopicNames,
  ) {}

  async publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void> {
    const topic = this.topics.of(topicId);
    if (topicId === 'fillsArchive') this.fills += events.length;
    let messages = this.pending.get(topic);
    if (!messages) this.pending.set(topic, (messages = []));
    for (const event of events) {
      const encoded = encodeEvent(topicId, event);
      const offset = this.offsets.get(topic) ?? 0;
      this.offsets.set(topic, offset + 1);
      messages.push({
        offset: String(offset),
        key: encoded.key === null ? null : Buffer.from(encoded.key),
        value: Buffer.from(encoded.value),
        headers: {},
      });
      if (++this.pendingCount >= WRITE_EVENTS) await this.flush();
    }
  }

  /** Starts a write of what is gathered once the previous one is done (returns when it started). */
  async flush(): Promise<void> {
    if (this.pendingCount === 0) return;
    const slices: PartitionSlice[] = [];
    for (const [topic, messages] of this.pending)
      if (messages.length > 0) slices.push({ topic, partition: 0, messages });
    this.pending.clear();
    this.pendingCount = 0;
    const prepared: DecodedBatch[] = slices.map((slice) => this.pipeline.prepare(slice));
    const ranges = slices.map(rangeOf);
    for (const batch of prepared)
      if (batch.deadLetters.length > 0)
        throw new Error(`dead letters in a generated batch: ${batch.deadLetters[0]!.reason}`);
    await this.inFlight;
    this.inFlight = this.pipeline.write(prepared, ranges).then(() => this.pipeline.committed(prepared, ranges));
  }

  /** Everything generated so far is written. */
  async drain(): Promise<void> {
    await this.flush();
    await this.inFlight;
  }
}

interface Tenth {
  fills: number;
  seconds: number;
  parts: number;
  merges: number;
  pendingBatches: number;
  /** The newest refresh's read of fills at the tenth's end (rows the indexes select, not wall time). */
  refreshRead: RefreshFillsRead | null;
}

interface Refresh extends RefreshTimings {
  totalMs: number;
  tenth: number;
}

interface SizeFigures {
  size: number;
  traders: number;
  fills: number;
  wallets: number;
  markets: number;
  tenths: Tenth[];
  catchUpSeconds: number;
  bytesOnDisk: number;
  tableBytes: [string, number][];
  parts: number;
  merges: number;
  refreshes: Refresh[];
  reads: Record<ReadName, number[]>;
  floors: Record<(typeof FLOORS)[number], number[]>;
  checked: number | null;
  /** The statements of the periodic jobs beside ingest, median ms of 3: what grows with the tables. */
  jobs: Record<string, number>;
  shutdownSeconds: number;
  loadAverage: string;
}

async function storeShape(store: Store): Promise<{ bytes: number; parts: number; merges: number }> {
  const [row] = await store.query<{ bytes: number; parts: number; merges: number }>(
    `SELECT (SELECT sum(bytes_on_disk) FROM system.parts WHERE database = {database:String} AND active) AS bytes,
            (SELECT count() FROM system.parts WHERE database = {database:String} AND active) AS parts,
            (SELECT count() FROM system.merges WHERE database = {database:String}) AS merges`,
    { database: store.database },
  );
  return { bytes: Number(row!.bytes), parts: Number(row!.parts), merges: Number(row!.merges) };
}

/** The rollups, emptied and recomputed from every landing row in one refresh: what incremental refreshes must equal. */
const ROLLUP_TABLES = [
  'trader_markets_v2',
  'trader_skill_markets',
  'whale_accumulations_v2',
  'whale_recent',
  'tape_changes',
];

async function recomputeFromScratch(store: Store, config: Config): Promise<void> {
  for (const table of ROLLUP_TABLES)
    await store.command('TRUNCATE TABLE {db:Identifier}.{table:Identifier}', { table });
  const token = 'growth-recompute';
  await rederiveViewsSince(store, 0, token);
  await refreshRollups(store, rederivedBatches(token), {
    burstGapSeconds: config.whales.burstGapSeconds,
    exactAboveUsd: config.whales.exactAboveUsd,
  });
}

async function measure(dataDir: string, size: number, index: number): Promise<SizeFigures> {
  const traders = Math.max(1, Math.round(TRADERS_PER_X * size));
  const config = parseConfig({
    DATA_DIR: dataDir,
    CLICKHOUSE_DATABASE: `bench_growth_${index}`,
    LOG_LEVEL: 'error',
    SIM_LIVE: 'false',
  });
  const log = createLogger('error');
  const store = await openMigratedStore(config, log);
  const topics = new TopicNames(config.kafka.topicPrefix);
  const settings = { burstGapSeconds: config.whales.burstGapSeconds, exactAboveUsd: config.whales.exactAboveUsd };
  const rollups = new RollupRefresher({
    store,
    log,
    intervalMs: config.ingest.rollupIntervalMs,
    orphanAfterSeconds: config.ingest.rollupOrphanAfterSeconds,
    settings,
  });
  let tenth = 0;
  const refreshes: Refresh[] = [];
  rollups.events.on('refreshed', (_batches, timings) => refreshes.push({ ...timings, tenth }));
  rollups.start();
  const pipeline = new IngestPipeline({
    store,
    topics,
    deadLetterProducer: {
      send: async () => {
        throw new Error('a generated event was dead-lettered');
      },
      close: async () => {},
    },
    log,
    writeRetries: config.ingest.writeRetries,
    retryBaseMs: config.ingest.retryBaseMs,
    rollups,
  });
  const feed = new PipelineFeed(pipeline, topics);

  // The world ends now, as the demo's backfill does: its open markets and whale windows are current.
  const periodSeconds = Math.round(DAYS * 86_400);
  const end = Math.floor(Date.now() / 1000 / 600) * 600;
  const genesis = end - periodSeconds;
  const simulator = createSimulator({ seed: config.simulator.seed, traders, genesisTs: genesis });
  console.log(
    `${size}x: ${traders} named traders over ${DAYS} day(s), database ${store.database}; load average ${loadAverage()}`,
  );
  const tenths: Tenth[] = [];
  for (; tenth < TENTHS; tenth++) {
    const from = genesis + Math.round((periodSeconds * tenth) / TENTHS);
    const to = genesis + Math.round((periodSeconds * (tenth + 1)) / TENTHS);
    const fillsBefore = feed.fills;
    const started = performance.now();
    await simulator.emit(from, to, feed);
    await feed.drain();
    const seconds = (performance.now() - started) / 1000;
    const shape = await storeShape(store);
    const figures = {
      fills: feed.fills - fillsBefore,
      seconds,
      parts: shape.parts,
      merges: shape.merges,
      pendingBatches: refreshes.length,
      refreshRead: await readNewestRefreshFills(store),
    };
    tenths.push(figures);
    console.log(
      `  tenth ${tenth + 1}: ${figures.fills} fills in ${seconds.toFixed(1)} s (${(figures.fills / seconds).toFixed(0)} fills/s), ` +
        `${shape.parts} active parts, ${shape.merges} merges running, ${refreshes.length} refreshes so far; load ${loadAverage()}`,
    );
  }
  const catchUpStarted = performance.now();
  await rollups.settled();
  const catchUpSeconds = (performance.now() - catchUpStarted) / 1000;
  const shape = await storeShape(store);
  const tableBytes = (
    await store.query<{ table: string; bytes: number }>(
      `SELECT table, sum(bytes_on_disk) AS bytes FROM system.parts WHERE database = {database:String} AND active
       GROUP BY table ORDER BY bytes DESC LIMIT 8`,
      { database: store.database },
    )
  ).map((row): [string, number] => [row.table, Number(row.bytes)]);
  const [counts] = await store.query<{ wallets: number; markets: number }>(
    'SELECT uniqExact(wallet) AS wallets, uniqExact(condition_id) AS markets FROM {db:Identifier}.trader_markets_v2',
  );

  // Cold reads: distinct wallets in a hash order, each with its market of the most fills.
  const picked = await store.query<{ wallet: string; condition_id: string }>(
    `SELECT wallet, argMax(condition_id, fills_count) AS condition_id FROM {db:Identifier}.trader_markets_v2
     GROUP BY wallet ORDER BY cityHash64(wallet) LIMIT {limit:UInt32}`,
    { limit: WALLETS },
  );
  const nowSeconds = Math.floor(Date.now() / 1000);
  const freshReader = () => new Reader(store, readCacheOf(config, store), config.api.readCache);
  const answers = async (
    reader: Reader,
    name: ReadName,
    wallet: string,
    conditionId: string,
    index: number,
  ): Promise<unknown> => {
    switch (name) {
      case 'card':
        // As the route reads it: the name beside the card's reads (operations/context.ts, admitCall).
        return readTraderCard(
          store,
          { wallet, name: reader.traderName(wallet) },
          cardSettingsOf(config),
          nowSeconds,
          reader.sources,
        );
      case 'markets':
        return reader.marketsPage(wallet, { limit: 50 });
      case 'summary':
        return reader.marketSummary(wallet, conditionId);
      case 'chart': {
        const market = await reader.traderMarket(wallet, conditionId);
        if (!market) throw new Error(`no market ${conditionId} for ${wallet}`);
        return reader.sampledChart(wallet, market, {}, config.charts, nowSeconds);
      }
      case 'fills':
        return reader.fillsPage(wallet, { limit: 100 });
      case 'whales':
        // A shape per call (a fresh reader each time too): every ranking computed, none served kept.
        return reader.whaleFlow(
          {
            minUsd: config.whales.defaultMinUsd,
            by: index % 2 === 0 ? 'burst' : 'window',
            windowHours: 1 + (index % 24),
            limit: config.whales.defaultLimit,
            nowSeconds,
          },
          { exactAboveUsd: config.whales.exactAboveUsd, burstGapSeconds: config.whales.burstGapSeconds },
        );
    }
  };
  const reads = Object.fromEntries(READS.map((name) => [name, [] as number[]])) as Record<ReadName, number[]>;
  const floors = Object.fromEntries(FLOORS.map((name) => [name, [] as number[]])) as SizeFigures['floors'];
  const seen = new Map<string, unknown>();
  for (const name of READS) {
    const reader = freshReader();
    for (const [index, { wallet, condition_id: conditionId }] of picked.entries()) {
      // The trader lookup a route makes first: not timed (the card's name is read with its reads, timed).
      if (name !== 'card' && name !== 'whales') await resolveTrader(reader, wallet);
      const started = performance.now();
      const answer = await answers(name === 'whales' ? freshReader() : reader, name, wallet, conditionId, index);
      reads[name].push(performance.now() - started);
      seen.set(`${name}|${wallet}|${index}`, JSON.parse(JSON.stringify(answer)));
      // The floor, in the same pass: the wallet's rows, and one trader's market row, by primary key.
      const floorStarted = performance.now();
      await store.query('SELECT wallet_row FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String}', {
        wallet,
      });
      const between = performance.now();
      await store.query(
        `SELECT wallet_row FROM {db:Identifier}.trader_markets_v2
         WHERE wallet = {wallet:String} AND condition_id = {condition_id:String} ORDER BY version DESC LIMIT 1`,
        { wallet, condition_id: conditionId },
      );
      floors['wallet rows'].push(between - floorStarted);
      floors['market row'].push(performance.now() - between);
    }
  }

  // The periodic jobs' statements (the ingest worker's orphan sweep, the upstream poller's active wallets,
  // the skill prior's population, the popular shelf's leaderboard read by the API), each timed 3 times.
  const jobs: Record<string, number> = {};
  const jobStatements: Record<string, () => Promise<unknown>> = {
    'orphan sweep': () => orphanRollupBatches(store, config.ingest.rollupOrphanAfterSeconds),
    'active wallets (7 d)': () => readRecentArchiveWallets(store, nowSeconds - 7 * 86_400, 1000),
    'skill population': () => readSkillPopulation(store),
  };
  for (const [name, job] of Object.entries(jobStatements)) {
    const times: number[] = [];
    for (let round = 0; round < 3; round++) {
      const started = performance.now();
      await job();
      times.push(performance.now() - started);
    }
    jobs[name] = median(times);
  }

  let checked: number | null = null;
  if (CHECK) {
    await recomputeFromScratch(store, config);
    checked = 0;
    for (const name of READS) {
      const reader = freshReader();
      for (const [index, { wallet, condition_id: conditionId }] of picked.entries()) {
        const again = JSON.parse(
          JSON.stringify(await answers(name === 'whales' ? freshReader() : reader, name, wallet, conditionId, index)),
        );
        const before = seen.get(`${name}|${wallet}|${index}`);
        if (!sameAnswer(again, before))
          throw new Error(
            `${size}x: the ${name} of ${wallet} differs from its recomputation:\n${JSON.stringify(before).slice(0, 2000)}\n${JSON.stringify(again).slice(0, 2000)}`,
          );
        checked += 1;
      }
    }
  }

  // The shutdown, with work in hand: the next ten simulated minutes generated, a write in flight, the
  // rest gathered, the refreshes of both queued; as the worker stops: drain, finish the refresher, close.
  await simulator.emit(end, end + 600, feed);
  const shutdownStarted = performance.now();
  await feed.drain();
  await rollups.stop();
  await store.close();
  const shutdownSeconds = (performance.now() - shutdownStarted) / 1000;
  return {
    size,
    traders,
    fills: feed.fills,
    wallets: Number(counts!.wallets),
    markets: Number(counts!.markets),
    tenths,
    catchUpSeconds,
    bytesOnDisk: shape.bytes,
    tableBytes,
    parts: shape.parts,
    merges: shape.merges,
    refreshes,
    reads,
    floors,
    checked,
    jobs,
    shutdownSeconds,
    loadAverage: loadAverage(),
  };
}

/**
 * Equal, numbers within a relative 1e-9: a sum over a wallet's rows is folded in the order the store
 * returns them, which its parts decide, so a recomputed store may differ in the last bits of a float.
 */
function sameAnswer(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number')
    return a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, i) => sameAnswer(item, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = Object.keys(a);
    return (
      isDeepStrictEqual(keys, Object.keys(b)) &&
      keys.every((key) => sameAnswer((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
    );
  }
  return a === b;
}

const ms = (value: number) => value.toFixed(1);
const rateOf = (tenth: Tenth) => tenth.fills / tenth.seconds;

/** A size's figures, printed as soon as it is measured (a long run shows each size as it goes). */
function report(size: SizeFigures, graceMs: number): void {
  const first = size.tenths[0]!;
  const last = size.tenths.at(-1)!;
  console.log(
    `${size.size}x: ${size.fills} fills, ${size.wallets} wallets, ${size.markets} markets (${size.traders} named traders); load average after ${size.loadAverage}`,
  );
  console.log(
    `  ingest per tenth (fills/s): ${size.tenths.map((tenth) => rateOf(tenth).toFixed(0)).join(', ')}; last/first ${(rateOf(last) / rateOf(first)).toFixed(2)}; ` +
      `rollups caught up ${size.catchUpSeconds.toFixed(1)} s after the last write`,
  );
  console.log(
    `  store on disk ${(size.bytesOnDisk / 2 ** 20).toFixed(1)} MiB (${(size.bytesOnDisk / size.fills).toFixed(0)} bytes per fill): ` +
      size.tableBytes.map(([table, bytes]) => `${table} ${(bytes / 2 ** 20).toFixed(1)}`).join(', ') +
      ` MiB; merge backlog ${size.parts} active parts, ${size.merges} merges running`,
  );
  const totals = size.refreshes.map((refresh) => refresh.totalMs);
  const inTenth = (index: number) =>
    size.refreshes.filter((refresh) => refresh.tenth === index).map((refresh) => refresh.totalMs);
  console.log(
    `  rollup refreshes: ${totals.length}, median ${ms(median(totals))} ms, worst ${ms(Math.max(...totals))} ms; ` +
      `median in the first tenth ${ms(median(inTenth(0)))} ms, in the last ${ms(median(inTenth(TENTHS - 1)))} ms; ` +
      `parts (median ms): trader_markets ${ms(median(size.refreshes.map((r) => r.traderMarketsMs)))}, whales ${ms(median(size.refreshes.map((r) => r.whalesMs)))}, tape ${ms(median(size.refreshes.map((r) => r.tapeMs)))}`,
  );
  // The refreshes' cost per thousand fills written, per tenth: flat when a refresh costs what changed.
  const perThousand = size.tenths.map((tenth, index) => {
    const took = size.refreshes.filter((refresh) => refresh.tenth === index).reduce((sum, r) => sum + r.totalMs, 0);
    return took / (tenth.fills / 1000);
  });
  console.log(
    `  refresh ms per thousand fills, per tenth: ${perThousand.map((value) => value.toFixed(0)).join(', ')}; ` +
      `last/first ${(perThousand.at(-1)! / perThousand[0]!).toFixed(2)}`,
  );
  // Independent of the machine's load: what the refreshes' read of fills selects as the store grows.
  console.log(
    `  newest refresh's read of fills at each tenth's end (pairs; their fills; rows selected, from fills_v2 before): ${size.tenths
      .map(({ refreshRead: read }) =>
        read ? `${read.pairs}; ${read.pairFills}; ${read.selectedRows}, ${read.fillsV2Rows}` : 'none',
      )
      .join(' | ')}`,
  );
  const floor = (name: (typeof FLOORS)[number]) => median(size.floors[name]);
  console.log(
    `  cold, one at a time over ${size.reads.card.length} wallets, p50/p99 ms (÷ floor at p50): ` +
      READS.map((name) => {
        const base = name === 'summary' || name === 'chart' ? floor('market row') : floor('wallet rows');
        const p50 = percentile(size.reads[name], 0.5);
        return `${name} ${ms(p50)}/${ms(percentile(size.reads[name], 0.99))} (${(p50 / base).toFixed(1)}×)`;
      }).join(', ') +
      `; floor: wallet rows ${ms(floor('wallet rows'))}, market row ${ms(floor('market row'))}`,
  );
  console.log(
    `  periodic jobs' statements (median ms): ${Object.entries(size.jobs)
      .map(([name, took]) => `${name} ${ms(took)}`)
      .join(', ')}`,
  );
  if (size.checked !== null)
    console.log(`  check: every answer (${size.checked}) equal to its recomputation from scratch`);
  console.log(`  shutdown ${size.shutdownSeconds.toFixed(2)} s (grace ${(graceMs / 1000).toFixed(0)} s)`);
}

/** The last line: the largest size against the first. */
function compare(all: readonly SizeFigures[]): void {
  const first = all[0]!;
  const largest = all.at(-1)!;
  const p50 = (size: SizeFigures, name: ReadName) => percentile(size.reads[name], 0.5);
  const ingestRatio = rateOf(largest.tenths.at(-1)!) / rateOf(largest.tenths[0]!);
  console.log(
    `growth: ingest last/first tenth ${ingestRatio.toFixed(2)} at ${largest.size}x, cold card ${(p50(largest, 'card') / p50(first, 'card')).toFixed(2)}x, ` +
      `cold summary ${(p50(largest, 'summary') / p50(first, 'summary')).toFixed(2)}x, shutdown ${largest.shutdownSeconds.toFixed(2)} s`,
  );
}

async function main(): Promise<void> {
  console.log(`${os.cpus().length} CPUs; load average at start ${loadAverage()}`);
  probeFilesystem(os.tmpdir());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-growth-'));
  try {
    const all: SizeFigures[] = [];
    const graceMs = parseConfig({}).shutdown.graceMs;
    for (const [index, size] of SIZES.entries()) {
      const figures = await measure(dataDir, size, index);
      report(figures, graceMs);
      all.push(figures);
    }
    compare(all);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

runBenchmark(main);
