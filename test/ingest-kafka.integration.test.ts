/**
 * The ingest pipeline against a Kafka-protocol cluster and embedded ClickHouse: what is produced is what
 * the projections hold, exactly once, whatever is duplicated or corrupt.
 */
import { describe, expect, it, type OnTestFinishedHandler } from 'vitest';
import type { ConfigOverrides } from '../config.ts';
import { consumerLag, type LogMessage, type PartitionSlice } from '../ingest/bus/types.ts';
import { readCareer } from '../projections/careers.ts';
import type { Store } from '../projections/store.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { startIngestWorker, type IngestWorker } from '../ingest/worker.ts';
import {
  BASE_TS,
  makeConditionId,
  makeFill,
  makeLeg,
  makeMarket,
  makeResolution,
  makeWallet,
  mulberry32,
} from './factories.ts';
import { createTestContext, kafkaLogFor, type TestContext } from './harness/context.ts';
import { waitForIngested } from './harness/wait.ts';

type Fill = EventInputOf<'fillsArchive'>;
type Leg = EventInputOf<'positions'>;

function randomFills(seed: number, count: number, wallets: string[], markets: string[]): Fill[] {
  const random = mulberry32(seed);
  const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
  return Array.from({ length: count }, (_, index) => {
    const price = Math.round((0.01 + random() * 0.98) * 100) / 100;
    const size = Math.round((1 + random() * 500) * 100) / 100;
    return makeFill({
      wallet: pick(wallets),
      condition_id: pick(markets),
      side: random() < 0.7 ? 'BUY' : 'SELL',
      token_side: random() < 0.5 ? 1 : 2,
      price,
      size_tokens: size,
      usd: Math.round(price * size * 1e6) / 1e6,
      ts: BASE_TS + index,
    });
  });
}

interface Expected {
  fills: number;
  buyUsd: number;
  sellUsd: number;
  net1: number;
  net2: number;
  cash: number;
}

/** The test's own arithmetic over what it produced (not the service's). */
function expectedByTraderMarket(fills: readonly Fill[], legs: readonly Leg[] = []): Map<string, Expected> {
  const out = new Map<string, Expected>();
  const entry = (wallet: string, market: string) => {
    const key = `${wallet}|${market}`;
    let value = out.get(key);
    if (!value) out.set(key, (value = { fills: 0, buyUsd: 0, sellUsd: 0, net1: 0, net2: 0, cash: 0 }));
    return value;
  };
  for (const fill of fills) {
    const value = entry(fill.wallet, fill.condition_id);
    const sign = fill.side === 'BUY' ? 1 : -1;
    value.fills += 1;
    if (fill.side === 'BUY') value.buyUsd += fill.usd;
    else value.sellUsd += fill.usd;
    value.cash -= sign * fill.usd;
    if (fill.token_side === 1) value.net1 += sign * fill.size_tokens;
    else value.net2 += sign * fill.size_tokens;
  }
  for (const leg of legs) {
    const value = entry(leg.wallet, leg.condition_id);
    const sign = leg.kind === 'SPLIT' ? 1 : -1;
    value.net1 += sign * leg.tokens;
    value.net2 += sign * leg.tokens;
    value.cash -= sign * leg.usd;
  }
  return out;
}

interface TraderMarketRow {
  wallet: string;
  condition_id: string;
  fills_count: number;
  buy_usd: number;
  sell_usd: number;
  net_tokens1: number;
  net_tokens2: number;
  cash_flow_usd: number;
  pnl_usd: number;
  resolved: boolean;
}

async function traderMarkets(context: TestContext): Promise<Map<string, TraderMarketRow>> {
  const rows = await context.store.query<TraderMarketRow>(
    `SELECT wallet, condition_id, fills_count, buy_usd, sell_usd, net_tokens1, net_tokens2, cash_flow_usd, pnl_usd, resolved
     FROM {db:Identifier}.trader_markets_v2 FINAL`,
  );
  return new Map(rows.map((row) => [`${row.wallet}|${row.condition_id}`, row]));
}

function expectRollupsToMatch(actual: Map<string, TraderMarketRow>, expected: Map<string, Expected>): void {
  expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [key, want] of expected) {
    const got = actual.get(key)!;
    expect(got.fills_count, key).toBe(want.fills);
    expect(got.buy_usd, key).toBeCloseTo(want.buyUsd, 6);
    expect(got.sell_usd, key).toBeCloseTo(want.sellUsd, 6);
    expect(got.net_tokens1, key).toBeCloseTo(want.net1, 6);
    expect(got.net_tokens2, key).toBeCloseTo(want.net2, 6);
    expect(got.cash_flow_usd, key).toBeCloseTo(want.cash, 6);
  }
}

// The tests run at once: each has its own context (database, topics, consumer group) and cleans up after
// itself, and most of each one's time is spent waiting on the brokers (group joins and rebalances,
// the pause before a consumer restarts), which the others' waits overlap.
describe.concurrent('ingest from Kafka into ClickHouse projections', () => {
  async function setUp(
    label: string,
    onTestFinished: (handler: OnTestFinishedHandler) => void,
    overrides: ConfigOverrides = {},
  ) {
    const context = await createTestContext(label, { overrides });
    const kafka = kafkaLogFor(context);
    const workers: IngestWorker[] = [];
    onTestFinished(async () => {
      await Promise.all(workers.splice(0).map((worker) => worker.stop()));
      await kafka.close();
      await context.cleanup();
    });
    const publisher = new EventPublisher(await kafka.producer(), context.topics);
    return { context, kafka, publisher, workers };
  }

  it('holds what was produced: counts and sums per wallet and per market, resolutions and legs included', async ({
    onTestFinished,
  }) => {
    const { context, kafka, publisher, workers } = await setUp('sums', onTestFinished);
    const wallets = Array.from({ length: 6 }, (_, index) => makeWallet(`sums-w${index}`));
    const markets = Array.from({ length: 5 }, (_, index) => makeConditionId(`sums-m${index}`));
    const fills = randomFills(1, 3000, wallets, markets);
    const legs: Leg[] = [
      makeLeg({ wallet: wallets[0]!, condition_id: markets[0]!, kind: 'SPLIT', tokens: 200, usd: 200 }),
      makeLeg({ wallet: wallets[1]!, condition_id: markets[1]!, kind: 'MERGE', tokens: 30, usd: 30 }),
    ];
    const marketEvents = [
      ...markets.map((conditionId) => makeMarket({ condition_id: conditionId })),
      makeResolution(markets[0]!, 1),
      makeResolution(markets[1]!, 2),
    ];

    const worker = await startIngestWorker({
      config: context.config,
      eventLog: kafka,
      store: context.store,
      log: context.log,
    });
    workers.push(worker);
    const ingested = waitForIngested([worker], fills.length + legs.length + marketEvents.length);
    // Markets after the fills: the rollups must not depend on arrival order.
    await publisher.publish('fillsArchive', fills);
    await publisher.publish('positions', legs);
    await publisher.publish('markets', marketEvents);
    await ingested;

    const expected = expectedByTraderMarket(fills, legs);
    const actual = await traderMarkets(context);
    expectRollupsToMatch(actual, expected);

    // Resolved markets carry a result: cash flow plus the winning side's tokens at 1.00.
    for (const [key, want] of expected) {
      const [, market] = key.split('|');
      const got = actual.get(key)!;
      if (market === markets[0]) expect(got.pnl_usd, key).toBeCloseTo(want.cash + want.net1, 6);
      else if (market === markets[1]) expect(got.pnl_usd, key).toBeCloseTo(want.cash + want.net2, 6);
      else expect(got.pnl_usd, key).toBeCloseTo(want.cash, 6);
      expect(got.resolved).toBe(market === markets[0] || market === markets[1]);
    }

    // Per wallet: the career's count and volume (folded from trader_markets_v2 at read time); per market: the fills table.
    for (const wallet of wallets) {
      const career = await readCareer(context.store, wallet, context.config.card.includeV1);
      const own = fills.filter((fill) => fill.wallet === wallet);
      expect(career.fills_count).toBe(own.length);
      expect(career.volume_usd).toBeCloseTo(
        own.reduce((sum, fill) => sum + fill.usd, 0),
        6,
      );
      expect(career.markets_total).toBe(
        new Set([
          ...own.map((fill) => fill.condition_id),
          ...legs.filter((leg) => leg.wallet === wallet).map((leg) => leg.condition_id),
        ]).size,
      );
    }
    const perMarket = await context.store.query<{ condition_id: string; fills: number; usd: number }>(
      'SELECT condition_id, count() AS fills, sum(usd) AS usd FROM {db:Identifier}.fills FINAL GROUP BY condition_id',
    );
    for (const row of perMarket) {
      const own = fills.filter((fill) => fill.condition_id === row.condition_id);
      expect(row.fills).toBe(own.length);
      expect(row.usd).toBeCloseTo(
        own.reduce((sum, fill) => sum + fill.usd, 0),
        6,
      );
    }
    const marketRows = await context.store.query<{ n: number }>(
      'SELECT count() AS n FROM {db:Identifier}.markets_meta FINAL',
    );
    expect(marketRows[0]!.n).toBe(markets.length);
  });

  it('counts a fill once when it arrives from both sources and is replayed; dead-letters corrupt messages and goes on', async ({
    onTestFinished,
  }) => {
    const { context, kafka, publisher, workers } = await setUp('dedup', onTestFinished);
    const wallets = [makeWallet('dedup-a'), makeWallet('dedup-b')];
    const markets = [makeConditionId('dedup-m')];
    const fills = randomFills(2, 200, wallets, markets);
    const later = randomFills(3, 50, wallets, markets);
    const upstreamCopies = fills.slice(0, 120).map((fill) => ({ ...fill, name: 'copy' }));
    const corrupt = [Buffer.from('this is not json'), Buffer.from(JSON.stringify({ ...fills[0], wallet: '0x1234' }))];

    // Collect the dead-letter topic with our own consumer.
    const deadLetters: LogMessage[] = [];
    let deadLettersSeen: () => void = () => {};
    const allDeadLetters = new Promise<void>((resolve) => (deadLettersSeen = resolve));
    const deadLetterConsumer = kafka.consumer({
      groupId: `${context.id}-dlq`,
      fromBeginning: true,
      maxBytes: 1 << 20,
      maxBytesPerPartition: 1 << 20,
      partitionsConsumedConcurrently: 1,
      maxBatchMessages: 100,
      maxBatchBytes: 1 << 20,
      lingerMs: 10,
    });

    const worker = await startIngestWorker({
      config: context.config,
      eventLog: kafka,
      store: context.store,
      log: context.log,
    });
    workers.push(worker);
    const total = fills.length * 2 + upstreamCopies.length + corrupt.length + later.length;
    const ingested = waitForIngested([worker], total);

    await publisher.publish('fillsArchive', fills);
    await publisher.publish('fillsUpstream', upstreamCopies);
    await publisher.publish('fillsArchive', fills); // a replay of the same fills
    const producer = await kafka.producer();
    await producer.send(
      context.topics.of('fillsArchive'),
      corrupt.map((value) => ({ key: wallets[0]!, value })),
    );
    await publisher.publish('fillsArchive', later); // the stream goes on after the corrupt ones
    await ingested;

    await deadLetterConsumer.start([context.topics.deadLetter()], {
      prepare: (slice: PartitionSlice) => slice.messages,
      write: async (slices: LogMessage[][]) => {
        deadLetters.push(...slices.flat());
        if (deadLetters.length >= corrupt.length) deadLettersSeen();
      },
    });
    await allDeadLetters;
    await deadLetterConsumer.stop();

    expect(deadLetters).toHaveLength(2);
    const byValue = new Map(deadLetters.map((message) => [message.value!.toString(), message]));
    const notJson = byValue.get(corrupt[0]!.toString())!;
    expect(notJson.headers['dlq.reason']).toMatch(/invalid JSON/);
    expect(notJson.headers['dlq.topic']).toBe(context.topics.of('fillsArchive'));
    expect(notJson.headers['dlq.offset']).toMatch(/^\d+$/);
    const badWallet = byValue.get(corrupt[1]!.toString())!;
    expect(badWallet.headers['dlq.reason']).toMatch(/wallet/);

    const recorded = await context.store.query<{ reason: string; original_base64: string }>(
      'SELECT reason, original_base64 FROM {db:Identifier}.dead_letters FINAL ORDER BY offset',
    );
    expect(recorded.map((row) => Buffer.from(row.original_base64, 'base64').toString()).sort()).toEqual(
      corrupt.map(String).sort(),
    );

    const everyFill = [...fills, ...later];
    expectRollupsToMatch(await traderMarkets(context), expectedByTraderMarket(everyFill));
    const [count] = await context.store.query<{ n: number }>('SELECT count() AS n FROM {db:Identifier}.fills FINAL');
    expect(count?.n).toBe(everyFill.length);
    // The archive's copy wins over the upstream's (it ranks higher); names still reach trader_names.
    const names = await context.store.query<{ name: string }>('SELECT name FROM {db:Identifier}.trader_names FINAL');
    expect(names.map((row) => row.name)).toContain('copy');
  });

  it('recovers from failed ClickHouse writes by reading again from the committed offsets', async ({
    onTestFinished,
  }) => {
    const { context, kafka, publisher, workers } = await setUp('recover', onTestFinished, {
      ingest: { writeRetries: 0 },
    });
    const wallets = Array.from({ length: 10 }, (_, index) => makeWallet(`recover-w${index}`));
    const markets = [makeConditionId('recover-m')];
    const fills = randomFills(5, 1500, wallets, markets);

    // A store whose first two fills inserts fail, as if ClickHouse were briefly unreachable.
    let failuresLeft = 2;
    const flaky: Store = {
      ...context.store,
      insertJsonLines: async (table, lines, token) => {
        if (table === 'fills' && failuresLeft > 0) {
          failuresLeft -= 1;
          throw new Error('connect ECONNREFUSED (simulated)');
        }
        return context.store.insertJsonLines(table, lines, token);
      },
    };
    const worker = await startIngestWorker({ config: context.config, eventLog: kafka, store: flaky, log: context.log });
    workers.push(worker);
    const ingested = waitForIngested([worker], fills.length);
    await publisher.publish('fillsArchive', fills);
    await ingested;

    expect(failuresLeft).toBe(0);
    expectRollupsToMatch(await traderMarkets(context), expectedByTraderMarket(fills));
    const lag = await consumerLag(kafka, context.config.kafka.groupId, [context.topics.of('fillsArchive')]);
    expect(lag).toBe(0n);
  });

  it('shares partitions between two workers of one group and ingests every event exactly once', async ({
    onTestFinished,
  }) => {
    const { context, kafka, publisher, workers } = await setUp('group', onTestFinished);
    const wallets = Array.from({ length: 40 }, (_, index) => makeWallet(`group-w${index}`));
    const markets = Array.from({ length: 8 }, (_, index) => makeConditionId(`group-m${index}`));
    const fills = randomFills(4, 4000, wallets, markets);

    const first = await startIngestWorker({
      config: context.config,
      eventLog: kafka,
      store: context.store,
      log: context.log,
    });
    workers.push(first);
    const second = await startIngestWorker({
      config: context.config,
      eventLog: kafka,
      store: context.store,
      log: context.log,
    });
    workers.push(second);
    const perWorker = [0, 0];
    first.pipeline.events.on('batch', (batch) => (perWorker[0] = (perWorker[0] ?? 0) + batch.valid));
    second.pipeline.events.on('batch', (batch) => (perWorker[1] = (perWorker[1] ?? 0) + batch.valid));
    const ingested = waitForIngested([first, second], fills.length);
    await publisher.publish('fillsArchive', fills);
    await ingested;

    expect(perWorker[0] ?? 0).toBeGreaterThan(0);
    expect(perWorker[1] ?? 0).toBeGreaterThan(0);
    expectRollupsToMatch(await traderMarkets(context), expectedByTraderMarket(fills));
    const [count] = await context.store.query<{ n: number }>('SELECT count() AS n FROM {db:Identifier}.fills FINAL');
    expect(count?.n).toBe(fills.length);
  });
});
