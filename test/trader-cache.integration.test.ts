/**
 * The answers about a trader (card, markets list, top-markets, fills) are kept by the API of a process
 * whose ingest worker writes the embedded store, and dropped the moment that worker reports that the
 * trader's data changed: a new fill of the trader shows on the very next call, another trader's write
 * leaves the kept answers alone, a resolution drops the answers of the market's holders (and only theirs).
 *
 * The API and the worker share one embedded database and the in-process log, as the `all` role runs
 * them. Whether an answer came from the cache is read from the cache's own counter
 * (trader_analytics_read_cache_lookups_total); what it says is checked against sums of the fills this
 * file published.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { TopicNames, type TopicId } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { openEventLog, startIngestWorker, type IngestWorker } from '../ingest/worker.ts';
import type { LogProducer } from '../ingest/bus/types.ts';
import { createLogger } from '../log.ts';
import { readCacheLookups } from '../metrics/registry.ts';
import { readCacheOf, Reader } from '../operations/reads.ts';
import { cardSettingsOf } from '../operations/traders.ts';
import { asOfSources } from '../projections/as-of.ts';
import { readTraderCard } from '../projections/cards.ts';
import { readCareer } from '../projections/careers.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { NO_MARKET_NAMES } from '../projections/market-names.ts';
import type { MarketListPosition } from '../projections/market-schemas.ts';
import { readMarketSummary } from '../projections/market-summary.ts';
import type { ReadSources } from '../projections/sources.ts';
import type { Store } from '../projections/store.ts';
import { readUpstreamProfile } from '../projections/upstream.ts';
import { readEquitySeries, type EquityWindow } from '../projections/equity.ts';
import { readTraderFills } from '../projections/fills.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import {
  bodyOf,
  gatesNeverBind,
  inProcessConfig,
  publishPlanKeysTo,
  startTestApi,
  type TestApi,
} from './harness/api.ts';
import { recordingQueries } from './harness/recorded-store.ts';
import { waitForIngested } from './harness/wait.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Fill = EventInputOf<'fillsArchive'>;

const config = inProcessConfig(
  'trader-cache',
  { INGEST_LINGER_MS: '10' },
  { ingest: { rollupIntervalMs: 20 }, api: { readCache: { traderAnswerSeconds: 5 } } },
);
const log = createLogger('silent');
const NOW = BASE_TS + 86_400;
const A = makeWallet('cache-a');
const B = makeWallet('cache-b');
const C = makeWallet('cache-c');
/** Trades another market only: not a holder of MARKET. */
const D = makeWallet('cache-d');
const MARKET = makeConditionId('cache-market');
const OTHER_MARKET = makeConditionId('cache-other-market');

let store: Store;
let worker: IngestWorker;
let producer: LogProducer;
let publisher: EventPublisher;
let api: TestApi;
let eventLog: ReturnType<typeof openEventLog>;

const fill = (wallet: string, usd: number, offset: number, market = MARKET): Fill =>
  makeFill({
    wallet,
    condition_id: market,
    side: 'BUY',
    token_side: 1,
    price: 0.5,
    size_tokens: usd * 2,
    usd,
    ts: BASE_TS + offset,
  });

/** Publishes fills (and market events), and resolves once the worker ingested them and refreshed the rollups. */
/** The provider's profile of `wallet` reporting `pnl`, as of `offset` seconds after BASE_TS. */
function upstreamProfile(wallet: string, pnl: number, offset: number): EventInputOf<'upstreamProfiles'> {
  return {
    wallet,
    name: '',
    pnl,
    pnl_realized: pnl,
    pnl_unrealized: 0,
    portfolio_value: 100,
    as_of: BASE_TS + offset,
  };
}

/** A wallet the provider reports on (a profile of pnl 5 at +500, equity 2 at +400 and 5 at +500), with a fill in `market` at +510. */
async function publishProviderHistory(wallet: string, market: string): Promise<void> {
  await publishOnAndWait('upstreamProfiles', [upstreamProfile(wallet, 5, 500)]);
  await publishOnAndWait('upstreamEquity', [
    { wallet, ts: BASE_TS + 400, pnl_usd: 2 },
    { wallet, ts: BASE_TS + 500, pnl_usd: 5 },
  ]);
  await publishAndWait(
    [fill(wallet, 4, 510, market)],
    [makeMarket({ condition_id: market, title: `market of ${wallet}`, end_ts: BASE_TS + 86_400 * 10 })],
  );
}

async function publishAndWait(fills: Fill[], markets: EventInputOf<'markets'>[] = []): Promise<void> {
  const done = waitForIngested([worker], fills.length + markets.length);
  await publisher.publish('fillsArchive', fills);
  await publisher.publish('markets', markets);
  await done;
}

/** Publishes events of one topic (market trades, the upstream's reports), and resolves once the worker ingested them. */
async function publishOnAndWait<T extends TopicId>(topic: T, events: EventInputOf<T>[]): Promise<void> {
  const done = waitForIngested([worker], events.length);
  await publisher.publish(topic, events);
  await done;
}

/** The cache's own counter of trader-answer lookups (trader_analytics_read_cache_lookups_total). */
async function lookups(cache: string, outcome: 'hit' | 'miss'): Promise<number> {
  return (await readCacheLookups.get()).values
    .filter((sample) => sample.labels.cache === cache && sample.labels.outcome === outcome)
    .reduce((sum, sample) => sum + sample.value, 0);
}

/** The API's cached reads over `on` (the worker of this process reports the store's changes to its cache). */
function readerOf(on: Store, clock?: { now(): number }): Reader {
  return new Reader(on, readCacheOf(config, on, clock ? { clock } : {}), config.api.readCache);
}

async function get(path: string): Promise<Json> {
  const response = await api.get(path);
  expect(response.statusCode, response.body).toBe(200);
  return bodyOf(response) as Json;
}

beforeAll(async () => {
  store = await openMigratedStore(config, log);
  eventLog = openEventLog(config, log);
  worker = await startIngestWorker({ config, eventLog, store, log });
  producer = await eventLog.producer();
  publisher = new EventPublisher(producer, new TopicNames(config.kafka.topicPrefix));
  // Three accounts and three keys, then the two markets.
  const accounts = waitForIngested([worker], 8);
  const keys = await publishPlanKeysTo(publisher, NOW - 10);
  await publisher.publish('markets', [
    makeMarket({ condition_id: MARKET, title: 'Cache market', end_ts: BASE_TS + 86_400 * 10 }),
  ]);
  await publisher.publish('markets', [
    makeMarket({ condition_id: OTHER_MARKET, title: 'Other market', end_ts: BASE_TS + 86_400 * 10 }),
  ]);
  await accounts;
  await publishAndWait([fill(A, 10, 0), fill(A, 20, 60), fill(B, 40, 120), fill(D, 9, 130, OTHER_MARKET)]);
  api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind() });
});

afterAll(async () => {
  await api?.close();
  await worker?.stop();
  await producer?.close();
  await eventLog?.close();
  await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
  await store?.close();
});

describe('answers about a trader kept until the worker reports a change', () => {
  it("serves a quiet trader's card, markets, top-markets and fills from the cache, and a new fill of the trader on the very next call", async () => {
    const first = {
      card: await get(`traders/${A}`),
      fills: await get(`traders/${A}/fills`),
      markets: await get(`traders/${A}/markets`),
      top: await get(`traders/${A}/top-markets`),
    };
    expect(first.card.card.volume_usd).toBeCloseTo(30, 6);
    expect(first.fills.fills.map((row: Json) => row.usd)).toEqual([10, 20]);
    expect(first.markets.markets.map((row: Json) => [row.condition_id, row.volume_usd])).toEqual([[MARKET, 30]]);

    // The card, the markets list and top-markets all fold the wallet's markets (read once, kept); the
    // list's page itself is kept too.
    const hitsBefore = {
      walletMarkets: (await lookups('wallet_markets', 'hit')) + (await lookups('markets', 'hit')),
      fills: await lookups('fills', 'hit'),
    };
    const missesBefore = await lookups('wallet_markets', 'miss');
    const again = {
      card: await get(`traders/${A}`),
      fills: await get(`traders/${A}/fills`),
      markets: await get(`traders/${A}/markets`),
      top: await get(`traders/${A}/top-markets`),
    };
    expect(again).toEqual(first);
    expect((await lookups('wallet_markets', 'hit')) + (await lookups('markets', 'hit'))).toBe(
      hitsBefore.walletMarkets + 3,
    );
    expect(await lookups('wallet_markets', 'miss')).toBe(missesBefore);
    expect(await lookups('fills', 'hit')).toBe(hitsBefore.fills + 1);

    // B's card is read once and kept.
    expect((await get(`traders/${B}`)).card.volume_usd).toBeCloseTo(40, 6);

    // A trades again, and C (a stranger to both) too.
    await publishAndWait([fill(A, 5, 180), fill(C, 7, 200)]);
    const careerMisses = await lookups('wallet_markets', 'miss');
    const after = {
      card: await get(`traders/${A}`),
      fills: await get(`traders/${A}/fills`),
      markets: await get(`traders/${A}/markets`),
    };
    expect(after.card.card.volume_usd).toBeCloseTo(35, 6);
    expect(after.fills.fills.map((row: Json) => row.usd)).toEqual([10, 20, 5]);
    expect(after.markets.markets[0].volume_usd).toBeCloseTo(35, 6);
    expect(await lookups('wallet_markets', 'miss')).toBe(careerMisses + 1);

    // B's kept card survived the others' writes.
    const bHits = await lookups('wallet_markets', 'hit');
    expect((await get(`traders/${B}`)).card.volume_usd).toBeCloseTo(40, 6);
    expect(await lookups('wallet_markets', 'hit')).toBe(bHits + 1);
  });

  it("drops the kept answers of a resolved market's holders, and only theirs", async () => {
    const before = await get(`traders/${B}`);
    expect(before.card.resolved_total).toBe(0);
    const stranger = await get(`traders/${D}`);
    expect(stranger.card.volume_usd).toBeCloseTo(9, 6);
    await publishAndWait([], [makeResolution(MARKET, 1, BASE_TS + 3_600)]);
    const misses = await lookups('wallet_markets', 'miss');
    const after = await get(`traders/${B}`);
    expect(await lookups('wallet_markets', 'miss')).toBe(misses + 1);
    expect(after.card.resolved_total).toBe(1);
    // Bought at 0.5 on token 1, which won.
    expect(after.card.winrate).toBe(1);
    // D holds nothing in MARKET: its card is still the kept one.
    const hits = await lookups('wallet_markets', 'hit');
    expect(await get(`traders/${D}`)).toEqual(stranger);
    expect(await lookups('wallet_markets', 'hit')).toBe(hits + 1);
  });

  it('pages the markets list from the kept markets of the wallet exactly as the store pages it', async () => {
    const E = makeWallet('cache-e');
    const markets = Array.from({ length: 7 }, (_, index) => makeConditionId(`cache-e-${index}`));
    await publishAndWait(
      [],
      markets.map((conditionId, index) =>
        makeMarket({ condition_id: conditionId, title: `E market ${index}`, end_ts: BASE_TS + 86_400 * 10 }),
      ),
    );
    // Markets two by two share their last trade's second: the condition_id breaks the tie.
    const lastTs = (index: number) => BASE_TS + 1_000 + Math.floor(index / 2) * 10;
    await publishAndWait(markets.map((conditionId, index) => fill(E, 1 + index, lastTs(index) - BASE_TS, conditionId)));
    const listOrder = markets
      .map((conditionId, index) => ({ conditionId, ts: lastTs(index) }))
      .sort((a, b) => b.ts - a.ts || (a.conditionId < b.conditionId ? 1 : -1))
      .map((market) => market.conditionId);

    const cached = readerOf(store);
    const walk = async (sources: ReadSources | undefined, limit: number, historyDepth: number | undefined) => {
      const pages: Awaited<ReturnType<typeof readTraderMarkets>>[] = [];
      let after: MarketListPosition | undefined;
      do {
        const page = await readTraderMarkets(store, E, { after, limit, historyDepth }, sources);
        pages.push(page);
        after = page.next ?? undefined;
      } while (after && pages.length < 20);
      return pages;
    };
    for (const historyDepth of [undefined, 0, 3, 7, 9]) {
      for (const limit of [1, 2, 5, 10]) {
        // The store's own pages (no caches), then the same walk over the wallet's kept markets.
        const fromStore = await walk(undefined, limit, historyDepth);
        await cached.walletMarkets(E);
        expect(cached.sources.walletMarketsAtHand(E)).toBeDefined();
        expect(await walk(cached.sources, limit, historyDepth)).toEqual(fromStore);
        const listed = fromStore.flatMap((page) => page.markets.map((row) => row.condition_id));
        expect(listed).toEqual(listOrder.slice(0, historyDepth ?? listOrder.length));
      }
    }
  });

  it("a summary after the card takes the trader's row from the wallet's kept markets (no statement part for it), the same answer; after a fill, its own again", async () => {
    const F = makeWallet('cache-f');
    const M = makeConditionId('cache-f-market');
    await publishAndWait(
      [
        fill(F, 12, 300, M),
        makeFill({
          wallet: F,
          condition_id: M,
          side: 'SELL',
          token_side: 2,
          price: 0.3,
          size_tokens: 10,
          usd: 7,
          ts: BASE_TS + 320,
        }),
      ],
      [makeMarket({ condition_id: M, title: 'F market', end_ts: BASE_TS + 86_400 * 10 })],
    );
    const sent: string[] = [];
    const time = { ms: 1_000_000 };
    const cached = readerOf(recordingQueries(store, sent), { now: () => time.ms });
    const expected = await readMarketSummary(store, F, M);
    expect(expected?.summary).toMatchObject({ fills_count: 2, buy_count: 1, sell_count: 1, buy_usd: 12, sell_usd: 7 });
    // The card's read of the wallet's markets, kept.
    await cached.walletMarkets(F);
    sent.length = 0;
    expect(await cached.marketSummary(F, M)).toEqual(expected);
    expect(sent).toHaveLength(1);
    expect(sent[0]).not.toContain('trader_markets_v2');
    // F trades again: the kept markets are dropped, and the next summary (past the open market's
    // short cache) reads the trader's row with the rest.
    await publishAndWait([fill(F, 3, 400, M)]);
    expect(cached.sources.walletMarketsAtHand(F)).toBeUndefined();
    time.ms += config.api.readCache.openMarketSeconds * 1000 + 1;
    sent.length = 0;
    const after = await cached.marketSummary(F, M);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toContain('trader_markets_v2');
    expect(after?.summary).toMatchObject({ fills_count: 3, buy_count: 2, buy_usd: 15 });
    expect(after).toEqual(await readMarketSummary(store, F, M));
  });

  it("keeps the upstream profile through the trader's fills, and reads it again once the provider reports on the wallet", async () => {
    const H = makeWallet('cache-h');
    const M = makeConditionId('cache-h-market');
    const profile = (pnl: number, asOf: number) => upstreamProfile(H, pnl, asOf);
    await publishProviderHistory(H, M);
    const sent: string[] = [];
    const cached = readerOf(recordingQueries(store, sent));
    const profileOf = () => readUpstreamProfile(cached.store, H, cached.sources);
    const first = await profileOf();
    expect(first).toMatchObject({ pnl: 5, peak: 5, low: 2, as_of: BASE_TS + 500 });
    expect(sent.filter((sql) => sql.includes('upstream_profiles'))).toHaveLength(1);

    // H trades: its markets are read again, its upstream profile is not (and equals a read from the store).
    await publishAndWait([fill(H, 6, 520, M)]);
    sent.length = 0;
    expect((await cached.walletMarkets(H)).markets[0]?.buy_usd).toBeCloseTo(10, 6);
    expect(await profileOf()).toEqual(first);
    expect(await readUpstreamProfile(store, H)).toEqual(first);
    expect(sent.some((sql) => sql.includes('trader_markets_v2'))).toBe(true);
    expect(sent.some((sql) => sql.includes('upstream_profiles'))).toBe(false);

    // The provider reports again (a new profile, then a new equity low): each shows on the next read.
    await publishOnAndWait('upstreamProfiles', [profile(9, 600)]);
    expect(await profileOf()).toMatchObject({ pnl: 9, peak: 5, low: 2, as_of: BASE_TS + 600 });
    await publishOnAndWait('upstreamEquity', [{ wallet: H, ts: BASE_TS + 600, pnl_usd: -3 }]);
    expect(await profileOf()).toMatchObject({ pnl: 9, peak: 5, low: -3, max_drawdown: 8 });
    expect(await profileOf()).toEqual(await readUpstreamProfile(store, H));
  });

  it("reads a card as of a past instant once: the same instant again sends no statement, and the answer is the store's", async () => {
    const Q = makeWallet('cache-q');
    const M = makeConditionId('cache-q-market');
    const profile = (pnl: number, asOf: number) => upstreamProfile(Q, pnl, asOf);
    await publishProviderHistory(Q, M);
    // What is known after the instant never shows in its answer.
    await publishOnAndWait('upstreamProfiles', [profile(9, 900)]);
    await publishAndWait([fill(Q, 6, 920, M)]);
    const asOf = BASE_TS + 600;
    const trader = { wallet: Q, name: '' };
    const sent: string[] = [];
    const cached = readerOf(recordingQueries(store, sent));
    const cardOf = (reader: Reader) =>
      readTraderCard(
        reader.store,
        trader,
        cardSettingsOf(config),
        asOf,
        asOfSources(reader.sources, asOf, {
          markets: () => reader.walletMarketsAsOf(Q, asOf),
          upstreamHistory: () => reader.upstreamHistoryAsOf(Q, asOf),
        }),
      );
    const first = await cardOf(cached);
    expect(first.upstream).toMatchObject({ pnl: 5, peak: 5, low: 2, as_of: BASE_TS + 500 });
    expect(first.card).toMatchObject({ volume_usd: 4, markets_total: 1, last_seen: BASE_TS + 510 });
    expect(sent.some((sql) => sql.includes('upstream_profiles'))).toBe(true);

    sent.length = 0;
    expect(await cardOf(cached)).toEqual(first);
    expect(sent).toEqual([]);
    // A reader with nothing kept reads the same card from the store.
    expect(await cardOf(readerOf(store))).toEqual(first);
  });

  it("keeps the equity history through the trader's fills, shares it with the card, cuts each window from it at the call's clock, and reads it again once the provider reports on the wallet", async () => {
    const P = makeWallet('cache-p');
    const M = makeConditionId('cache-p-market');
    await publishOnAndWait('upstreamProfiles', [
      { wallet: P, name: '', pnl: 2, pnl_realized: 2, pnl_unrealized: 0, portfolio_value: 50, as_of: BASE_TS + 700 },
    ]);
    // The last point is dated after the first call's clock (a provider's clock ahead of ours).
    await publishOnAndWait('upstreamEquity', [
      { wallet: P, ts: BASE_TS + 600, pnl_usd: 1 },
      { wallet: P, ts: BASE_TS + 650, pnl_usd: 4 },
      { wallet: P, ts: BASE_TS + 700, pnl_usd: 2 },
      { wallet: P, ts: NOW + 50, pnl_usd: 7 },
    ]);
    await publishAndWait(
      [fill(P, 4, 710, M)],
      [makeMarket({ condition_id: M, title: 'P market', end_ts: BASE_TS + 86_400 * 10 })],
    );
    const sent: string[] = [];
    const cached = readerOf(recordingQueries(store, sent));
    const staleAfter = { upstreamStaleAfterSeconds: config.upstream.staleAfterSeconds };
    const series = async (on: Store | Reader, window: EquityWindow, nowSeconds: number) => {
      const {
        upstream: _upstream,
        reported: _reported,
        ...body
      } = on instanceof Reader
        ? await readEquitySeries(on.store, P, window, { nowSeconds, ...staleAfter }, on.sources)
        : await readEquitySeries(on, P, window, { nowSeconds, ...staleAfter });
      return body;
    };
    // The statements that read the curve (the upstream's state is a cache of its own).
    const curveReads = () => sent.filter((sql) => sql.includes('upstream_equity')).length;
    const curve = (...points: [number, number][]) => points.map(([offset, pnl]) => [BASE_TS + offset, pnl]);

    expect(await series(cached, 'all', NOW)).toEqual({
      window: 'all',
      model: 'upstream_profile',
      series: curve([600, 1], [650, 4], [700, 2]),
      peak: 4,
      low: 1,
      max_drawdown: 2,
      as_of: NOW + 50,
    });
    expect(curveReads()).toBe(1);
    // The card's upstream block is folded from the same kept read: no statement.
    sent.length = 0;
    const profile = await readUpstreamProfile(cached.store, P, cached.sources);
    expect(sent).toHaveLength(0);
    expect(profile).toMatchObject({ peak: 7, low: 1, as_of: BASE_TS + 700 });
    expect(profile).toEqual(await readUpstreamProfile(store, P));
    // Later, from the kept points: the point dated after the first call is in the window now.
    sent.length = 0;
    const later = await series(cached, 'all', NOW + 60);
    expect(later.series).toEqual(curve([600, 1], [650, 4], [700, 2], [86_450, 7]));
    expect(later).toEqual(await series(store, 'all', NOW + 60));
    expect(curveReads()).toBe(0);

    // A rolling window moves its start with the clock, either way: each call cuts it from the kept history.
    const dayAfter = (offset: number) => BASE_TS + 86_400 + offset;
    expect((await series(cached, '24h', dayAfter(620))).series).toEqual(curve([650, 4], [700, 2], [86_450, 7]));
    sent.length = 0;
    const moved = await series(cached, '24h', dayAfter(680));
    expect(moved).toMatchObject({ series: curve([700, 2], [86_450, 7]), peak: 7, low: 2, max_drawdown: 0 });
    expect(moved).toEqual(await series(store, '24h', dayAfter(680)));
    expect(curveReads()).toBe(0);
    const earlier = await series(cached, '24h', dayAfter(590));
    expect(earlier.series).toEqual(curve([600, 1], [650, 4], [700, 2], [86_450, 7]));
    expect(earlier).toEqual(await series(store, '24h', dayAfter(590)));
    expect(curveReads()).toBe(0);

    // P trades: its curve is not read again.
    await publishAndWait([fill(P, 6, 720, M)]);
    sent.length = 0;
    expect(await series(cached, 'all', NOW + 60)).toEqual(later);
    expect(curveReads()).toBe(0);
    // The provider reports a new point: it shows on the next call.
    await publishOnAndWait('upstreamEquity', [{ wallet: P, ts: NOW + 55, pnl_usd: -1 }]);
    const reported = await series(cached, 'all', NOW + 60);
    expect(reported).toMatchObject({
      series: curve([600, 1], [650, 4], [700, 2], [86_450, 7], [86_455, -1]),
      low: -1,
      max_drawdown: 8,
      as_of: NOW + 55,
    });
    expect(reported).toEqual(await series(store, 'all', NOW + 60));
  });

  it("keeps a fills page through other traders' writes, and reads it again once any row of the trader lands", async () => {
    const J = makeWallet('cache-j');
    const K = makeWallet('cache-k');
    const M = makeConditionId('cache-j-market');
    await publishAndWait(
      [fill(J, 3, 800, M), fill(J, 4, 810, M)],
      [makeMarket({ condition_id: M, title: 'J market', end_ts: BASE_TS + 86_400 * 10 })],
    );
    const sent: string[] = [];
    const cached = readerOf(recordingQueries(store, sent));
    const page = () => cached.fillsPage(J, { limit: 100 });
    // A page's statements read fills_by_time (0014), and fills_v2 for a copy that is not the archive's.
    const readsFills = (sql: string) => sql.includes('fills_by_time') || sql.includes('fills_v2');
    const first = await page();
    expect(first.fills.map((row) => [row.usd, row.title])).toEqual([
      [3, 'J market'],
      [4, 'J market'],
    ]);
    expect(sent.filter(readsFills)).toHaveLength(1);

    // Another trader trades the same market: J's page is kept.
    await publishAndWait([fill(K, 8, 815, M)]);
    sent.length = 0;
    expect(await page()).toEqual(first);
    expect(sent.some(readsFills)).toBe(false);

    // The provider reports on J (a row of the wallet, not a fill): the page is read again, the same.
    await publishOnAndWait('upstreamProfiles', [
      { wallet: J, name: '', pnl: 1, pnl_realized: 1, pnl_unrealized: 0, portfolio_value: 10, as_of: BASE_TS + 820 },
    ]);
    sent.length = 0;
    expect(await page()).toEqual(first);
    expect(sent.filter(readsFills)).toHaveLength(1);

    // J trades: the next page read has the new fill, as the store has it.
    await publishAndWait([fill(J, 5, 830, M)]);
    sent.length = 0;
    const after = await page();
    expect(after.fills.map((row) => row.usd)).toEqual([3, 4, 5]);
    expect(after).toEqual(await readTraderFills(store, J, { limit: 100 }));
    expect(sent.filter(readsFills)).toHaveLength(1);
  });

  it("values open holdings at the market's last trade: a mark is reused an open answer's lifetime, then read anew", async () => {
    const X = makeWallet('mark-x');
    const Y = makeWallet('mark-y');
    const M = makeConditionId('mark-market');
    await publishAndWait([], [makeMarket({ condition_id: M, title: 'Mark market', end_ts: BASE_TS + 86_400 * 10 })]);
    // Both buy token 1 at 0.5: X holds 20 tokens, Y 60.
    await publishAndWait([fill(X, 10, 2_000, M), fill(Y, 30, 2_001, M)]);
    await publishOnAndWait('trades', [
      makeTrade({ condition_id: M, token_side: 1, price: 0.4, ts: BASE_TS + 2_002, seq: 1 }),
    ]);

    const sent: string[] = [];
    const time = { ms: 1_000_000 };
    const cached = readerOf(recordingQueries(store, sent), { now: () => time.ms });
    const openValue = async (wallet: string) => (await readCareer(store, wallet, true, cached.sources)).open_value_usd;
    expect(await openValue(X)).toBeCloseTo(20 * 0.4, 9);
    const marksRead = () => sent.filter((sql) => sql.includes('market_marks_v2')).length;
    expect(marksRead()).toBe(1);

    // The market trades again. Within an open answer's lifetime Y's card reuses the mark X's card read
    // (no statement for it); past the lifetime of Y's kept markets, the next card reads the new one.
    await publishOnAndWait('trades', [
      makeTrade({ condition_id: M, token_side: 1, price: 0.8, ts: BASE_TS + 2_003, seq: 2 }),
    ]);
    expect(await openValue(Y)).toBeCloseTo(60 * 0.4, 9);
    expect(marksRead()).toBe(1);
    time.ms += config.api.readCache.traderAnswerSeconds * 1000 + 1;
    expect(await openValue(Y)).toBeCloseTo(60 * 0.8, 9);
    expect(marksRead()).toBe(2);
  });

  it("keeps a display name through the trader's unnamed fills, and shows a new one on the next call", async () => {
    const before = await get(`traders/${C}`);
    expect(before.trader).toEqual({ wallet: C, name: '' });
    await publishAndWait([fill(C, 3, 400)]);
    expect((await get(`traders/${C}`)).trader.name).toBe('');
    // A fill that names its wallet (trader_names takes the newest).
    await publishAndWait([{ ...fill(C, 4, 500), name: 'Gamma' }]);
    expect((await get(`traders/${C}`)).trader).toEqual({ wallet: C, name: 'Gamma' });
  });

  it("keeps a market's names until its metadata changes: a retitle shows in the next answer read", async () => {
    const before = await get(`traders/${D}/fills?limit=5`);
    expect(before.fills.map((row: Json) => row.title)).toEqual(['Other market']);
    await publishAndWait(
      [],
      [
        makeMarket({
          condition_id: OTHER_MARKET,
          title: 'Other market, retitled',
          end_ts: BASE_TS + 86_400 * 10,
          version: NOW,
        }),
      ],
    );
    // Another page size: an answer not kept yet, whose names come from the names cache.
    const after = await get(`traders/${D}/fills?limit=6`);
    expect(after.fills.map((row: Json) => row.title)).toEqual(['Other market, retitled']);
  });

  it("keeps a market's missing names, and shows them in the next answer read once its metadata lands", async () => {
    const G = makeWallet('names-g');
    const UNNAMED = makeConditionId('names-unnamed-market');
    await publishAndWait([fill(G, 6, 700, UNNAMED)]);
    const sent: string[] = [];
    const cached = readerOf(recordingQueries(store, sent));
    const first = await cached.marketNames([UNNAMED]);
    expect(first.get(UNNAMED) ?? NO_MARKET_NAMES).toEqual(NO_MARKET_NAMES);
    // Kept: the next answer about this market asks the store nothing about its names.
    sent.length = 0;
    expect((await cached.marketNames([UNNAMED])).get(UNNAMED)).toEqual(NO_MARKET_NAMES);
    expect(sent).toEqual([]);
    await publishAndWait(
      [],
      [makeMarket({ condition_id: UNNAMED, title: 'Named at last', end_ts: BASE_TS + 86_400 * 10 })],
    );
    expect((await cached.marketNames([UNNAMED])).get(UNNAMED)?.title).toBe('Named at last');
    expect(sent).toHaveLength(1);
    expect((await get(`traders/${G}/fills?limit=5`)).fills.map((row: Json) => row.title)).toEqual(['Named at last']);
  });
});
