/**
 * The upstream role with no network: a local server replays Polymarket's recorded answers (and
 * variations derived from them), the poller polls it on a virtual clock, and what it publishes goes
 * through the in-process log, or Kafka (the suite's mock brokers), and the ingest pipeline into the
 * store, where the read API answers.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisWalletRequestLog } from '../operations/wallet-requests.ts';
import { parseConfig, type Config, type ConfigOverrides } from '../config.ts';
import { KafkaLog } from '../ingest/bus/kafka.ts';
import type { LogProducer } from '../ingest/bus/types.ts';
import { TopicNames, type EventInputOf, type TopicId } from '../ingest/contract/topics.ts';
import { EventPublisher, type EventSink } from '../ingest/publisher.ts';
import { startIngestWorker, type IngestWorker } from '../ingest/worker.ts';
import type { Store } from '../projections/store.ts';
import { openMigratedStore, withPublisher } from '../roles/runtime.ts';
import { RecordingSink } from './harness/polymarket.ts';
import { createUpstreamClient } from '../ingest/sources/upstream/index.ts';
import { UpstreamPoller, type RejectionReport } from '../ingest/sources/upstream/poller.ts';
import { MemoryRequestedWallets, RedisRequestedWallets } from '../ingest/sources/upstream/requests.ts';
import { MemoryStateStore } from '../ingest/sources/upstream/state.ts';
import { VirtualClock } from '../ingest/sources/upstream/test-support.ts';
import { createLogger } from '../log.ts';
import {
  bodyOf,
  gatesNeverBind,
  inProcessConfig,
  publishPlanKeys,
  publishPlanKeysTo,
  slotsWatching,
  startTestApi,
  type TestApi,
} from './harness/api.ts';
import { landEvents } from './harness/land.ts';
import { deleteKeysWithPrefix } from './harness/redis.ts';
import { startRole } from './harness/child.ts';
import { PROCESS_DATA_DIR, testConfig, testEnvironment, testOverrides, uniqueId } from './harness/context.ts';
import { envelopePages, loadFixture, PolymarketReplay, type Json } from './harness/polymarket-replay.ts';

const SWISSTONY = '0x204f72f35326db932158cba6adff0b9a1da95e14';
const V2_WALLET = '0x1111111111111111111111111111111111111111';
const NOW = 1_786_200_000;
const DAY = 86_400;

const activitySample = loadFixture<Json[]>('data-api/polyprinter_activity_sample.json');
const v2Envelope = loadFixture<{ data: Json[] }>('data-api/nautilus_data_api_trades_v2_envelope_SANITIZED.json');
const positions = loadFixture<Json[]>('data-api/polyprinter_positions_sample.json');
const value = loadFixture<Json[]>('data-api/polyprinter_apinotes_value.json');
const weekBoard = loadFixture<Json[]>('data-api/polyprinter_apinotes_leaderboard_week_vol_limit2.json');
const gammaEvent = loadFixture<Json[]>('gamma/nautilus_gamma_event.json');
const gammaFiles = [
  'gamma/nautilus_gamma_market_btc_updown_5m.json',
  'gamma/nautilus_gamma_market_closed_binary.json',
  'gamma/nautilus_gamma_market_closed_nonbinary_legacy.json',
  'gamma/nautilus_gamma_market_sports_moneyline.json',
];
const SEINAJOEN = (activitySample[0]!.conditionId as string).toLowerCase();

/** A Gamma market for the market swisstony traded first (derived from a recorded one): Gamma's names must win over the activity's. */
function derivedGammaMarket(): Json {
  const base = loadFixture<Json>('gamma/nautilus_gamma_market_sports_moneyline.json');
  return {
    ...base,
    conditionId: SEINAJOEN,
    question: 'Seinajoen JK vs. IF Gnistan: Over/Under 5.5 goals',
    slug: 'fin1-sei-gni-2026-08-07-total-5pt5',
    outcomes: '["Over", "Under"]',
    outcomePrices: '["0.41", "0.59"]',
    closed: false,
    updatedAt: '2026-08-07T10:00:00.000000Z',
  };
}

/** swisstony's pnl curve as the provider states it (derived: 30 daily points ending an hour before NOW). */
const pnlSeries = Array.from({ length: 30 }, (_, index) => ({
  t: NOW - 3600 - (29 - index) * DAY,
  p: Math.round((1000 + 400 * Math.sin(index / 3) - 15 * index) * 100) / 100,
}));
const swisstonyBoardRow = {
  rank: '7',
  proxyWallet: SWISSTONY,
  userName: 'swisstony',
  xUsername: '',
  verifiedBadge: false,
  vol: 1_234_567.8,
  pnl: 98_765.43,
  profileImage: '',
};

function world(replay: PolymarketReplay): void {
  replay.markets = [
    ...gammaFiles.map((file) => loadFixture<Json>(file)),
    ...(gammaEvent[0]!.markets as Json[]),
    derivedGammaMarket(),
  ];
  replay.gammaPageSize = 3;
  replay.leaderboard = weekBoard;
  replay.wallets.set(SWISSTONY, {
    leaderboardRow: swisstonyBoardRow,
    value,
    positions,
    pnl: pnlSeries,
    activity: [activitySample],
  });
  replay.wallets.set(V2_WALLET, { activity: envelopePages(v2Envelope.data, 1) });
}

/** Fewer, faster retries than production's, so that failures show within a test. */
function pollerConfig(
  replay: PolymarketReplay,
  retries: { maxRetries: number; breakerFailures: number } = { maxRetries: 2, breakerFailures: 3 },
): Config {
  return parseConfig(
    { LOG_LEVEL: 'silent', ...replay.environment() },
    { upstream: { maxRetries: retries.maxRetries, breaker: { failures: retries.breakerFailures }, timeoutMs: 400 } },
  );
}

/** A sink whose target changes per phase (each phase publishes through its own in-process log). */
class ForwardSink implements EventSink {
  target: EventSink = new RecordingSink();
  publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void> {
    return this.target.publish(topicId, events);
  }
}

function makePoller(
  config: Config,
  options: {
    clock: VirtualClock;
    sink: EventSink;
    state?: MemoryStateStore;
    requested?: MemoryRequestedWallets | RedisRequestedWallets;
    rejections?: RejectionReport[];
  },
) {
  const log = createLogger('silent');
  const requested = options.requested ?? new MemoryRequestedWallets();
  return new UpstreamPoller({
    http: createUpstreamClient(config, log, options.clock),
    sink: options.sink,
    state: options.state ?? new MemoryStateStore(),
    config: config.upstream,
    clock: options.clock,
    log,
    requested,
    reject: async (report) => {
      options.rejections?.push(report);
    },
  });
}

describe('the poller against the replayed provider', () => {
  const replay = new PolymarketReplay();
  beforeAll(async () => {
    await replay.start();
    world(replay);
  });
  afterAll(() => replay.stop());

  it('publishes every market page by keyset cursor, the leaderboard, and the tracked wallets’ profiles, equity and fills', async () => {
    const clock = new VirtualClock(NOW * 1000);
    const sink = new RecordingSink();
    const requested = new MemoryRequestedWallets();
    requested.note(SWISSTONY, NOW - 60);
    requested.note(V2_WALLET, NOW - 60);
    const poller = makePoller(pollerConfig(replay), { clock, sink, requested });
    const report = await poller.tick();
    expect(report.errors).toEqual([]);
    expect(report.heartbeat).toBe('online');
    expect(report.marketPages).toBe(Math.ceil(replay.markets.length / 3));

    const metadata = sink.events('markets').filter((event) => event.type === 'metadata');
    expect(new Set(metadata.map((event) => event.condition_id))).toEqual(
      new Set([
        ...replay.markets.map((market) => (market.conditionId as string).toLowerCase()),
        ...activitySample.map((row) => (row.conditionId as string).toLowerCase()),
        v2Envelope.data[0]!.condition_id as string,
      ]),
    );
    const tokens = sink.events('markets').filter((event) => event.type === 'tokens');
    expect(tokens).toHaveLength(replay.markets.length);
    // Resolutions: the closed binary and the sports moneyline (prices 1/0); the legacy scalar states no payout.
    expect(
      sink
        .events('markets')
        .filter((event) => event.type === 'resolution')
        .map((event) => event.condition_id)
        .sort(),
    ).toEqual(
      [loadFixture<Json>(gammaFiles[1]!), loadFixture<Json>(gammaFiles[3]!)]
        .map((market) => (market.conditionId as string).toLowerCase())
        .sort(),
    );

    expect(sink.events('upstreamLeaderboard').map((row) => [row.rank, row.wallet])).toEqual(
      weekBoard.map((row) => [Number(row.rank), row.proxyWallet]),
    );
    const profiles = new Map(sink.events('upstreamProfiles').map((profile) => [profile.wallet, profile]));
    expect([...profiles.keys()].sort()).toEqual(
      [SWISSTONY, V2_WALLET, ...weekBoard.map((row) => row.proxyWallet as string)].sort(),
    );
    expect(profiles.get(SWISSTONY)).toMatchObject({
      pnl: 98_765.43,
      portfolio_value: value[0]!.value,
      name: 'swisstony',
      as_of: NOW,
    });
    expect(sink.events('upstreamEquity')).toEqual(
      pnlSeries.map((point) => ({ wallet: SWISSTONY, ts: point.t, pnl_usd: point.p })),
    );
    // 19 trades of the v1 sample and the 3 rows of the v2 envelope, paged one row per cursor.
    expect(sink.events('fillsUpstream')).toHaveLength(19 + 3);
    expect(
      replay.requests.filter((line) => line.startsWith('GET /data/activity') && line.includes('cursor=')).length,
    ).toBe(2);
  });

  it('resumes a sweep from its saved cursor after a restart, and later sweeps publish only new and changed markets', async () => {
    const clock = new VirtualClock(NOW * 1000);
    const state = new MemoryStateStore();
    const config = pollerConfig(replay, { maxRetries: 0, breakerFailures: 10 });
    const first = new RecordingSink();
    // The provider fails on the third page: the first poller stops there.
    const originalMarkets = replay.markets;
    replay.faults.set('/gamma/markets/keyset', []);
    const pages = Math.ceil(originalMarkets.length / 3);
    replay.fault(
      '/gamma/markets/keyset',
      { kind: 'slow', ms: 0 },
      { kind: 'slow', ms: 0 },
      { kind: 'status', status: 500 },
    );
    const report = await makePoller(config, { clock, sink: first, state }).tick();
    const served = first.events('markets').filter((event) => event.type === 'metadata').length;
    expect(served).toBe(6);
    expect(report.errors.some((error) => error.startsWith('markets'))).toBe(true);
    expect((await state.load()).markets.cursor).toBe('6');

    // A new process with the same state goes on from the cursor.
    replay.requests.length = 0;
    clock.advance(31_000);
    const second = new RecordingSink();
    await makePoller(config, { clock, sink: second, state }).tick();
    expect(replay.requests.filter((line) => line.startsWith('GET /gamma/markets/keyset'))[0]).toContain('cursor=6');
    expect(second.events('markets').filter((event) => event.type === 'metadata')).toHaveLength(
      originalMarkets.length - 6,
    );
    expect((await state.load()).markets.cursor).toBeNull();
    expect(replay.requests.filter((line) => line.startsWith('GET /gamma/markets/keyset'))).toHaveLength(pages - 2);

    // One market changes; the next sweep publishes it alone (a new version), from the first page.
    const changed = {
      ...originalMarkets[0]!,
      question: 'Bitcoin Up or Down (renamed)',
      updatedAt: '2026-09-01T00:00:00Z',
    };
    replay.markets = [changed, ...originalMarkets.slice(1)];
    clock.advance(config.upstream.marketsEverySeconds * 1000);
    const third = new RecordingSink();
    await makePoller(config, { clock, sink: third, state }).tick();
    expect(third.events('markets').filter((event) => event.type === 'metadata')).toEqual([
      expect.objectContaining({
        title: 'Bitcoin Up or Down (renamed)',
        version: Date.parse('2026-09-01T00:00:00Z') / 1000,
      }),
    ]);
    replay.markets = originalMarkets;
  });

  it('honours a 429 with Retry-After, retries a slow answer past its timeout, and survives schema drift', async () => {
    const clock = new VirtualClock(NOW * 1000);
    const sink = new RecordingSink();
    const requested = new MemoryRequestedWallets();
    requested.note(SWISSTONY, NOW);
    replay.requests.length = 0;
    replay.fault('/data/value', { kind: 'status', status: 429, headers: { 'retry-after': '4' } });
    replay.fault('/pnl/user-pnl', { kind: 'slow', ms: 1500 });
    const drifted = activitySample.map((row, index) =>
      index === 0 ? { ...row, brandNewField: [1, 2], icon: undefined } : row,
    );
    const wallet = replay.wallets.get(SWISSTONY)!;
    replay.wallets.set(SWISSTONY, { ...wallet, activity: [drifted] });
    const report = await makePoller(pollerConfig(replay), { clock, sink, requested }).tick();
    replay.wallets.set(SWISSTONY, wallet);
    expect(report.errors).toEqual([]);
    expect(clock.sleeps.some((ms) => ms >= 4000)).toBe(true);
    // One /value per tracked wallet (the board's two and swisstony), plus the one retried after the 429.
    expect(replay.requests.filter((line) => line.startsWith('GET /data/value'))).toHaveLength(weekBoard.length + 1 + 1);
    expect(sink.events('upstreamEquity')).toHaveLength(pnlSeries.length);
    expect(sink.events('fillsUpstream').filter((fill) => fill.wallet === SWISSTONY)).toHaveLength(19);
  });

  it('dead-letters bad rows with their reason and uses the rest of the page; a truncated body is retried', async () => {
    const clock = new VirtualClock(NOW * 1000);
    const sink = new RecordingSink();
    const rejections: RejectionReport[] = [];
    const requested = new MemoryRequestedWallets();
    requested.note(SWISSTONY, NOW);
    const bad = [
      { ...activitySample[0], price: 2 },
      { ...activitySample[1], size: -5 },
      { ...activitySample[2], proxyWallet: 'not-a-wallet' },
      ...activitySample.slice(3),
    ];
    const wallet = replay.wallets.get(SWISSTONY)!;
    replay.wallets.set(SWISSTONY, { ...wallet, activity: [bad] });
    replay.fault('/data/activity', { kind: 'truncated' });
    await makePoller(pollerConfig(replay), { clock, sink, requested, rejections }).tick();
    replay.wallets.set(SWISSTONY, wallet);
    expect(rejections.map((rejection) => rejection.what)).toEqual([
      'activity row 1',
      'activity row 2',
      'activity row 3',
    ]);
    expect(rejections.map((rejection) => rejection.reason)).toEqual([
      expect.stringMatching(/price/),
      expect.stringMatching(/size/),
      expect.stringMatching(/wallet/),
    ]);
    expect(rejections.every((rejection) => rejection.origin.includes('/data/activity'))).toBe(true);
    expect(sink.events('fillsUpstream')).toHaveLength(19 - 3);
  });

  it('reports a body that stays truncated with its reason, and goes on with the other wallets (the breaker stays closed)', async () => {
    const clock = new VirtualClock(NOW * 1000);
    const sink = new RecordingSink();
    const requested = new MemoryRequestedWallets();
    requested.note(SWISSTONY, NOW);
    const config = pollerConfig(replay);
    // Every attempt of the first wallet's /positions (the leaderboard's first) is cut in half.
    replay.faults.set('/data/positions', []);
    replay.fault(
      '/data/positions',
      ...Array.from({ length: config.upstream.maxRetries + 1 }, () => ({ kind: 'truncated' as const })),
    );
    const poller = makePoller(config, { clock, sink, requested });
    const report = await poller.tick();
    const first = (weekBoard[0]!.proxyWallet as string).toLowerCase();
    expect(report.errors).toEqual([expect.stringMatching(new RegExp(`^wallet ${first}: body: unreadable JSON`))]);
    expect(report.walletsRefreshed).toBe(2);
    expect(
      sink
        .events('upstreamProfiles')
        .map((profile) => profile.wallet)
        .sort(),
    ).toEqual([SWISSTONY, (weekBoard[1]!.proxyWallet as string).toLowerCase()].sort());
    expect(report.heartbeat).toBe('online');
  });
});

describe('an answer past the size bound', () => {
  const replay = new PolymarketReplay();
  beforeAll(async () => {
    await replay.start();
    world(replay);
  });
  afterAll(async () => replay.stop());

  it('a 50 MB leaderboard is abandoned as too large, once, and the tick goes on to the wallets', async () => {
    const clock = new VirtualClock(NOW * 1000);
    const sink = new RecordingSink();
    const requested = new MemoryRequestedWallets();
    requested.note(SWISSTONY, NOW);
    replay.fault('/data/v1/leaderboard', { kind: 'huge', bytes: 50 * 1024 * 1024 });
    replay.requests.length = 0;
    const report = await makePoller(pollerConfig(replay), { clock, sink, requested }).tick();
    expect(report.errors).toEqual([
      expect.stringMatching(/^leaderboard: too_large: answer of \d+ bytes, above the bound/),
    ]);
    expect(
      replay.requests.filter((request) => request.startsWith('GET /data/v1/leaderboard?timePeriod=WEEK')),
    ).toHaveLength(1);
    expect(report.walletsRefreshed).toBe(1);
    expect(sink.events('upstreamProfiles').map((profile) => profile.wallet)).toEqual([SWISSTONY]);
  });
});

describe('the Gamma events sweep against the replayed provider', () => {
  const replay = new PolymarketReplay();
  const searchEvents = loadFixture<{ events: Json[] }>('gamma/nautilus_gamma_public_search.json').events;
  const recorded = [...gammaEvent, ...searchEvents];
  const iso = (value: unknown) => Math.floor(Date.parse(value as string) / 1000);
  beforeAll(async () => {
    await replay.start();
    // Events only (no markets listing, no wallets): what is published comes from /events/keyset.
    replay.events = recorded;
    replay.gammaPageSize = 1;
  });
  afterAll(() => replay.stop());

  const metadataOf = (sink: RecordingSink) => sink.events('markets').filter((event) => event.type === 'metadata');
  const eventRequests = () => replay.requests.filter((line) => line.startsWith('GET /gamma/events/keyset'));

  it("publishes every event's markets page by page, with the event's category, negRisk and version; later sweeps only changed events", async () => {
    const clock = new VirtualClock(NOW * 1000);
    const state = new MemoryStateStore();
    const config = pollerConfig(replay);
    const first = new RecordingSink();
    const report = await makePoller(config, { clock, sink: first, state }).tick();
    expect(report.errors).toEqual([]);
    expect(report.eventPages).toBe(recorded.length);
    // Each nested market once, named as Gamma names it, categorized by its event's tags, versioned by the event's updatedAt.
    const expected = recorded.flatMap((event) =>
      (event.markets as Json[]).map((market) => ({
        condition_id: (market.conditionId as string).toLowerCase(),
        title: market.question,
        outcome1: JSON.parse(market.outcomes as string)[0],
        category: event === gammaEvent[0] ? 'politics' : 'crypto',
        version: Math.max(iso(event.updatedAt), iso(market.updatedAt)),
      })),
    );
    expect(
      metadataOf(first).map((event) => ({
        condition_id: event.condition_id,
        title: event.title,
        outcome1: event.outcome1,
        category: event.category,
        version: event.version,
      })),
    ).toEqual(expected);
    const tokens = first.events('markets').filter((event) => event.type === 'tokens');
    expect(tokens.map((event) => [event.condition_id, event.token1_id, event.neg_risk])).toEqual(
      recorded.flatMap((event) =>
        (event.markets as Json[]).map((market) => [
          (market.conditionId as string).toLowerCase(),
          JSON.parse(market.clobTokenIds as string)[0],
          event.negRisk === true,
        ]),
      ),
    );
    expect(eventRequests()[1]).toContain('cursor=1');
    expect((await state.load()).events).toMatchObject({
      cursor: null,
      highWater: Math.max(...recorded.map((event) => iso(event.updatedAt))),
    });

    // Nothing changed: the next sweep reads one page and publishes nothing.
    replay.requests.length = 0;
    clock.advance(config.upstream.marketsEverySeconds * 1000);
    const second = new RecordingSink();
    expect((await makePoller(config, { clock, sink: second, state }).tick()).eventPages).toBe(1);
    expect(eventRequests()).toHaveLength(1);
    expect(second.events('markets')).toEqual([]);

    // The search event's market is renamed (the event updated): only its market is published again, a new version.
    const renamedMarket: Json = {
      ...(searchEvents[0]!.markets as Json[])[0]!,
      question: 'Bitcoin above 100k this week? (renamed)',
    };
    replay.events = [
      gammaEvent[0]!,
      { ...searchEvents[0]!, updatedAt: '2026-03-12T00:00:00Z', markets: [renamedMarket] },
    ];
    clock.advance(config.upstream.marketsEverySeconds * 1000);
    const third = new RecordingSink();
    await makePoller(config, { clock, sink: third, state }).tick();
    expect(metadataOf(third)).toEqual([
      expect.objectContaining({
        condition_id: (renamedMarket.conditionId as string).toLowerCase(),
        title: renamedMarket.question,
        category: 'crypto',
        version: iso('2026-03-12T00:00:00Z'),
      }),
    ]);
    replay.events = recorded;
  });

  it('resumes an events sweep from its saved cursor after a failed page', async () => {
    const clock = new VirtualClock(NOW * 1000);
    const state = new MemoryStateStore();
    const config = pollerConfig(replay, { maxRetries: 0, breakerFailures: 10 });
    replay.faults.set('/gamma/events/keyset', []);
    replay.fault('/gamma/events/keyset', { kind: 'slow', ms: 0 }, { kind: 'status', status: 500 });
    const first = new RecordingSink();
    const report = await makePoller(config, { clock, sink: first, state }).tick();
    expect(report.errors.some((error) => error.startsWith('events'))).toBe(true);
    expect(metadataOf(first).map((event) => event.condition_id)).toEqual(
      (gammaEvent[0]!.markets as Json[]).map((market) => (market.conditionId as string).toLowerCase()),
    );
    expect((await state.load()).events.cursor).toBe('1');

    replay.requests.length = 0;
    clock.advance(31_000);
    const second = new RecordingSink();
    await makePoller(config, { clock, sink: second, state }).tick();
    expect(eventRequests()[0]).toContain('cursor=1');
    expect(metadataOf(second).map((event) => event.condition_id)).toEqual(
      (searchEvents[0]!.markets as Json[]).map((market) => (market.conditionId as string).toLowerCase()),
    );
    expect((await state.load()).events.cursor).toBeNull();
  });
});

/** How the poller's events reach the store in an end-to-end run. */
interface Transport {
  label: string;
  /** The run's config: its own database (over Kafka, also its own topics and consumer group). */
  configure(environment: Record<string, string>, overrides: ConfigOverrides): Config;
  /** Runs `work` against a publisher; returns once everything it published is ingested and rolled up. */
  ingested<T>(config: Config, work: (publisher: EventSink) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The in-process log: each round trip starts an ingest worker on the test's database and drains it. */
const inProcessTransport: Transport = {
  label: 'the in-process log',
  configure: (environment, overrides) => inProcessConfig('upstream_e2e', environment, overrides),
  ingested: (config, work) => withPublisher(config, createLogger('silent'), ({ publisher }) => work(publisher)),
  close: async () => {},
};

/** Counts what it forwards (the Kafka round trip waits for that many events to be ingested). */
class CountingSink implements EventSink {
  published = 0;
  constructor(private readonly target: EventSink) {}
  async publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void> {
    this.published += events.length;
    await this.target.publish(topicId, events);
  }
}

/**
 * Kafka, as deployments run it (librdkafka mock brokers via kcat, the suite's cluster): the poller's
 * events are produced to the test's topics and one ingest worker consumes them into the test's database.
 * A round trip returns once the worker has ingested as many events as were produced, and rolled them up.
 */
function kafkaTransport(): Transport {
  const log = createLogger('silent');
  let running:
    | { kafka: KafkaLog; store: Store; worker: IngestWorker; producer: LogProducer; sink: CountingSink }
    | undefined;
  let ingested = 0;
  let waiting: { until: number; resolve: () => void } | undefined;
  const settle = () => {
    if (waiting && ingested >= waiting.until) {
      waiting.resolve();
      waiting = undefined;
    }
  };
  return {
    label: 'Kafka',
    configure: (environment, overrides) =>
      testConfig(
        testEnvironment(uniqueId('upstream_kafka'), PROCESS_DATA_DIR, { INGEST_LINGER_MS: '20', ...environment }),
        testOverrides({ ingest: { rollupIntervalMs: 50 }, ...overrides }),
      ),
    async ingested(config, work) {
      if (running === undefined) {
        const kafka = new KafkaLog({ brokers: config.kafka.brokers!, clientId: config.kafka.clientId, log });
        const store = await openMigratedStore(config, log);
        const worker = await startIngestWorker({ config, eventLog: kafka, store, log });
        worker.pipeline.events.on('batch', (batch) => {
          ingested += batch.valid + batch.deadLetters;
          settle();
        });
        const producer = await kafka.producer();
        running = {
          kafka,
          store,
          worker,
          producer,
          sink: new CountingSink(new EventPublisher(producer, new TopicNames(config.kafka.topicPrefix))),
        };
      }
      const { sink, worker } = running;
      const result = await work(sink);
      await new Promise<void>((resolve) => {
        waiting = { until: sink.published, resolve };
        settle();
      });
      await worker.rollups.settled();
      return result;
    },
    async close() {
      if (running === undefined) return;
      await running.worker.stop();
      await running.producer.close();
      await running.kafka.close();
      await running.store.close();
    },
  };
}

for (const transport of [inProcessTransport, kafkaTransport()])
  describe(`end to end: replayed provider → upstream → ${transport.label} → ingest → read API`, () => {
    const replay = new PolymarketReplay();
    let config: Config;
    let api: TestApi;
    const clock = new VirtualClock(NOW * 1000);
    const sink = new ForwardSink();
    let poller: UpstreamPoller;
    const requested = new MemoryRequestedWallets();

    /** One tick of a poller whose events are ingested before it returns. */
    async function tickIngested(which: UpstreamPoller = poller) {
      return transport.ingested(config, async (publisher) => {
        sink.target = publisher;
        return which.tick();
      });
    }

    beforeAll(async () => {
      await replay.start();
      world(replay);
      // The provider's state is read at the instant each report is ingested: the API's 1 s cache of it is off here.
      config = transport.configure(replay.environment(), {
        upstream: { maxRetries: 1, breaker: { failures: 2, openMs: 30_000 }, timeoutMs: 400 },
        api: { readCache: { upstreamStateSeconds: 0 } },
      });
      const keys = await transport.ingested(config, (publisher) => publishPlanKeysTo(publisher, NOW - 10));
      requested.note(SWISSTONY, NOW - 60);
      poller = makePoller(config, { clock, sink, requested });
      const report = await tickIngested();
      expect(report.errors).toEqual([]);
      api = await startTestApi(config, {
        now: () => Math.floor(clock.now() / 1000),
        keys,
        gatesClockMs: gatesNeverBind(),
      });
    });
    afterAll(async () => {
      await transport.close();
      await api?.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
      await api?.close();
      await replay.stop();
    });

    const unrealized = positions.reduce((sum, position) => sum + (position.cashPnl as number), 0);
    function drawdown(points: number[]) {
      let runningMax = Number.NEGATIVE_INFINITY;
      let worst = 0;
      for (const point of points) {
        runningMax = Math.max(runningMax, point);
        worst = Math.max(worst, runningMax - point);
      }
      return { peak: Math.max(...points), low: Math.min(...points), max_drawdown: worst };
    }

    /** The reconciliation of the online card, compared with the offline card's own figure below. */
    let onlineReconciliation: unknown;

    it("serves the provider's profile in the card's upstream block and its curve as the pnl-series", async () => {
      const card = bodyOf(await api.get(`traders/${SWISSTONY}`)) as {
        upstream: Record<string, number | string>;
        reconciliation?: unknown;
      };
      onlineReconciliation = card.reconciliation;
      const stats = drawdown(pnlSeries.map((point) => point.p));
      expect(card.upstream).toMatchObject({
        pnl: 98_765.43,
        portfolio_value: value[0]!.value,
        profile_image: '',
        as_of: NOW,
        peak: stats.peak,
        low: stats.low,
      });
      expect(card.upstream.pnl_unrealized as number).toBeCloseTo(unrealized, 6);
      expect(card.upstream.pnl_realized as number).toBeCloseTo(98_765.43 - unrealized, 6);
      expect(card.upstream.max_drawdown as number).toBeCloseTo(stats.max_drawdown, 6);

      const series = await api.get(`traders/${SWISSTONY}/pnl-series?window=all`);
      expect(series.statusCode).toBe(200);
      expect((bodyOf(series) as { series: [number, number][] }).series).toEqual(
        pnlSeries.map((point) => [point.t, point.p]),
      );
    });

    it("names the markets in the trader's list by Gamma's metadata where Gamma has the market, else by the activity's", async () => {
      const response = await api.get(`traders/${SWISSTONY}/markets?limit=100`);
      const rows = (bodyOf(response) as { markets: { condition_id: string; title: string; outcome: string }[] })
        .markets;
      const expected = new Map<string, { title: string; outcome: string }>();
      for (const row of activitySample) {
        const id = (row.conditionId as string).toLowerCase();
        if (!expected.has(id)) expected.set(id, { title: row.title as string, outcome: '' });
      }
      expected.set(SEINAJOEN, { title: 'Seinajoen JK vs. IF Gnistan: Over/Under 5.5 goals', outcome: 'Over' });
      expect(new Set(rows.map((row) => row.condition_id))).toEqual(new Set(expected.keys()));
      for (const row of rows) expect(row.title, row.condition_id).toBe(expected.get(row.condition_id)!.title);
      expect(rows.find((row) => row.condition_id === SEINAJOEN)!.outcome).toBe('Over');
    });

    it('puts the leaderboard on the popular shelf with the live watcher counts, most watched first, then rank', async () => {
      const second = (weekBoard[1]!.proxyWallet as string).toLowerCase();
      const first = (weekBoard[0]!.proxyWallet as string).toLowerCase();
      type Shelf = { traders: { wallet: string; name: string; watching: number }[]; count: number };
      // Nobody watching: the board in its order, every count 0 (none is invented).
      expect((bodyOf(await api.get('popular')) as Shelf).traders).toEqual([
        { wallet: first, name: weekBoard[0]!.userName, watching: 0 },
        { wallet: second, name: weekBoard[1]!.userName, watching: 0 },
      ]);
      // Live sessions watch the board's second: it leads the shelf.
      const slots = await slotsWatching({ [second]: 5 });
      const watched = await startTestApi(config, {
        now: () => Math.floor(clock.now() / 1000),
        keys: api.keys,
        gatesClockMs: gatesNeverBind(),
        slots,
      });
      try {
        expect((bodyOf(await watched.get('popular')) as Shelf).traders).toEqual([
          { wallet: second, name: weekBoard[1]!.userName, watching: 5 },
          { wallet: first, name: weekBoard[0]!.userName, watching: 0 },
        ]);
      } finally {
        await watched.close();
        await slots.close();
      }
    });

    it('republishing the same observations (a restart without its state) changes nothing in the store', async () => {
      const count = async (table: string) =>
        (await api.store.query<{ n: number }>(`SELECT toUInt32(count()) AS n FROM {db:Identifier}.${table} FINAL`))[0]!
          .n;
      const tables = [
        'fills',
        'markets_meta',
        'market_tokens',
        'market_resolutions',
        'upstream_profiles',
        'upstream_equity',
        'upstream_leaderboard',
        'trades',
        'position_legs',
      ];
      const before = await Promise.all(tables.map(count));
      const fillsBefore = bodyOf(await api.get(`traders/${SWISSTONY}/fills?limit=100`));
      const report = await tickIngested(makePoller(config, { clock, sink, requested }));
      expect(report.walletsRefreshed).toBeGreaterThan(0);
      expect(await Promise.all(tables.map(count))).toEqual(before);
      expect(bodyOf(await api.get(`traders/${SWISSTONY}/fills?limit=100`))).toEqual(fillsBefore);
      expect((fillsBefore as { fills: unknown[] }).fills).toHaveLength(19);
    });

    it('turns the card to its fallback and pnl-series to 503 when the provider goes silent, and back when it returns', async () => {
      replay.silent = true;
      clock.advance(config.upstream.heartbeatSeconds * 1000);
      const silentReport = await tickIngested();
      expect(silentReport.heartbeat).toBe('offline');
      const card = bodyOf(await api.get(`traders/${SWISSTONY}`)) as {
        upstream: unknown;
        card: Record<string, unknown>;
      };
      expect(card.upstream).toEqual({ status: 'upstream_offline' });
      expect(card.card).toHaveProperty('career_pnl_usd');
      expect(card).not.toHaveProperty('reconciliation');
      // The reconciliation the online card served compares the provider's pnl with this very figure.
      const ours = card.card.pnl_marked_usd as number;
      expect(onlineReconciliation).toEqual({
        provider_pnl_usd: 98_765.43,
        pnl_usd: ours,
        gap_usd: expect.closeTo(98_765.43 - ours, 9),
        gap_ratio: expect.closeTo(Math.abs(98_765.43 - ours) / 98_765.43, 12),
        compared_eras: ['v2'],
        // Every row is of the V2 era and after the provider's curve begins (30 days before NOW, past the
        // cut-over); the provider's figures are of NOW, after the last row. The markets swisstony bought in
        // are open and marked by its own last trade there; the market of its REDEEM row has no trade and no
        // stored resolution: open and unmarked.
        explained: ['open_positions_marked', 'unmarked_positions'],
      });
      expect(card.card).toMatchObject({ unmarked_markets: 1 });
      expect(card.card.open_markets as number).toBeGreaterThan(1);
      const series = await api.get(`traders/${SWISSTONY}/pnl-series`);
      expect(series.statusCode).toBe(503);
      expect(bodyOf(series)).toMatchObject({ error: 'upstream_offline', status: 'upstream_offline' });

      // Provider back: after the breaker's cool-down the probe succeeds and the status is online again.
      replay.silent = false;
      clock.advance(config.upstream.breaker.openMs);
      const backReport = await tickIngested();
      expect(backReport.heartbeat).toBe('online');
      expect(
        (bodyOf(await api.get(`traders/${SWISSTONY}`)) as { upstream: Record<string, unknown> }).upstream,
      ).toMatchObject({ pnl: 98_765.43 });
      expect((await api.get(`traders/${SWISSTONY}/pnl-series`)).statusCode).toBe(200);
    });

    it('tracks wallets with recent archive fills (not the upstream copies), most recent first', async () => {
      const { readRecentArchiveWallets } = await import('../projections/upstream.ts');
      const fill = (wallet: string, ts: number, tx: string) => ({
        tx_hash: `0x${tx.repeat(64)}`,
        log_index: 1,
        wallet,
        condition_id: SEINAJOEN,
        side: 'BUY' as const,
        token_side: 1 as const,
        price: 0.5,
        size_tokens: 2,
        usd: 1,
        role: 'taker' as const,
        era: 'v2' as const,
        ts,
      });
      const older = '0x' + 'a1'.repeat(20);
      const newer = '0x' + 'b2'.repeat(20);
      const stale = '0x' + 'c3'.repeat(20);
      await landEvents(api.store, 'fillsArchive', [
        fill(older, NOW - 3 * DAY, 'a'),
        fill(newer, NOW - DAY, 'b'),
        fill(stale, NOW - 30 * DAY, 'c'),
      ]);
      expect(await readRecentArchiveWallets(api.store, NOW - 7 * DAY, 10)).toEqual([newer, older]);
      // swisstony's fills came from the upstream: they do not make it an archive-active wallet.
      expect(await readRecentArchiveWallets(api.store, 0, 10)).not.toContain(SWISSTONY);
    });

    it('goes offline by itself when the poller stops: its last heartbeat ages past the stale window', async () => {
      clock.advance((config.upstream.staleAfterSeconds + 1) * 1000);
      expect((bodyOf(await api.get(`traders/${SWISSTONY}`)) as { upstream: unknown }).upstream).toEqual({
        status: 'upstream_offline',
      });
      expect((await api.get(`traders/${SWISSTONY}/pnl-series`)).statusCode).toBe(503);
    });
  });

describe('a wallet a client asks about reaches the poller through Redis, not through the store', () => {
  const replay = new PolymarketReplay();
  const prefix = `${uniqueId('i16')}:`;
  const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: false, maxRetriesPerRequest: 1 });
  let config: Config;
  let api: TestApi;
  const clock = new VirtualClock(NOW * 1000);
  const sink = new ForwardSink();
  const log = createLogger('silent');

  beforeAll(async () => {
    await replay.start();
    world(replay);
    config = inProcessConfig('upstream_requests', { ...replay.environment(), REDIS_KEY_PREFIX: prefix });
    const keys = await publishPlanKeys(config, NOW - 10);
    api = await startTestApi(config, {
      now: () => Math.floor(clock.now() / 1000),
      keys,
      gatesClockMs: gatesNeverBind(),
      walletRequests: new RedisWalletRequestLog(redis, config.upstream.requestedWalletsKey, log),
    });
  });
  afterAll(async () => {
    await deleteKeysWithPrefix(redis, prefix);
    redis.disconnect();
    await api?.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api?.close();
    await replay.stop();
  });

  it('a card request for a never-seen wallet is noted; the next tick polls it; the card and fills then have its data', async () => {
    const before = await api.get(`traders/${V2_WALLET}/fills`);
    expect((bodyOf(before) as { fills: unknown[] }).fills).toEqual([]);
    expect(await redis.zscore(config.upstream.requestedWalletsKey, V2_WALLET)).toBe(String(NOW));

    const poller = makePoller(config, {
      clock,
      sink,
      requested: new RedisRequestedWallets(redis, config.upstream.requestedWalletsKey),
    });
    const report = await withPublisher(config, log, async ({ publisher }) => {
      sink.target = publisher;
      return poller.tick();
    });
    expect(report.errors).toEqual([]);
    const fills = (
      bodyOf(await api.get(`traders/${V2_WALLET}/fills`)) as { fills: { tx_hash?: string; usd: number }[] }
    ).fills;
    expect(fills).toHaveLength(v2Envelope.data.length);
    const card = bodyOf(await api.get(`traders/${V2_WALLET}`)) as { upstream: Record<string, unknown> };
    expect(card.upstream).toMatchObject({ pnl: 0, portfolio_value: 0, as_of: NOW });
    // A request older than upstream.requestTtlSeconds is forgotten by the next read of the set.
    const requested = new RedisRequestedWallets(redis, config.upstream.requestedWalletsKey);
    expect(await requested.recent(NOW - 10, 10)).toEqual([V2_WALLET]);
    expect(await requested.recent(NOW + 1, 10)).toEqual([]);
    expect(await redis.zcard(config.upstream.requestedWalletsKey)).toBe(0);
  });
});

describe('main.ts upstream, as operators run it', () => {
  const replay = new PolymarketReplay();
  let dataDir: string;
  beforeAll(async () => {
    await replay.start();
    world(replay);
    replay.gammaPageSize = 100;
    dataDir = await mkdtemp(path.join(tmpdir(), 'upstream-role-'));
  });
  afterAll(async () => {
    await replay.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('polls, keeps its cursors and schedules across a restart, and stops cleanly on SIGTERM', async () => {
    const environment = { DATA_DIR: dataDir, LOG_LEVEL: 'info', ...replay.environment() };
    const first = startRole('upstream', [], environment);
    const tick = await first.waitFor((line) => line.msg === 'upstream tick' && (line.walletsRefreshed as number) > 0);
    expect(tick).toMatchObject({
      heartbeat: 'online',
      marketPages: 1,
      leaderboard: true,
      walletsRefreshed: weekBoard.length,
      errors: [],
    });
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const state = JSON.parse(await readFile(path.join(dataDir, 'upstream-state.json'), 'utf8')) as {
      markets: { highWater: number; cursor: string | null };
      leaderboard: { wallets: string[] };
    };
    expect(state.markets).toMatchObject({
      cursor: null,
      highWater: Math.max(...replay.markets.map((market) => Math.floor(Date.parse(market.updatedAt as string) / 1000))),
    });
    expect(state.leaderboard.wallets).toEqual(weekBoard.map((row) => (row.proxyWallet as string).toLowerCase()));

    // Restarted: nothing is due but the heartbeat, so neither the markets nor the leaderboard nor the wallets are fetched again.
    replay.requests.length = 0;
    const second = startRole('upstream', [], environment);
    await second.waitFor((line) => line.msg === 'upstream tick' && line.heartbeat === 'online');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(replay.requests).toEqual(['GET /data/ok']);
  });
});
