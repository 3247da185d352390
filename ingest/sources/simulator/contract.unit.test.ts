import { beforeAll, describe, expect, it } from 'vitest';
import type {
  FillEvent,
  MarketMetadataEvent,
  MarketResolutionEvent,
  PositionLegEvent,
  TradeEvent,
} from '../../contract/events.ts';
import { upNormalizedPrice } from '../../contract/primitives.ts';
import { parseTitleWindow } from '../../contract/title-time.ts';
import { TOPICS, type TopicId } from '../../contract/topics.ts';
import type { Simulator } from './index.ts';
import { type RecordingSink, TEST_GENESIS, recordWindow } from './test-support.ts';

const FROM = TEST_GENESIS;
const TO = TEST_GENESIS + 3 * 3_600;

let simulator: Simulator;
let sink: RecordingSink;
let metadata: MarketMetadataEvent[];
let resolutions: MarketResolutionEvent[];
let fills: FillEvent[];
let upstreamFills: FillEvent[];
let trades: TradeEvent[];
let legs: PositionLegEvent[];

beforeAll(async () => {
  ({ simulator, sink } = await recordWindow({ seed: 5, traders: 30, intensity: 1 }, FROM, TO));
  const markets = sink.events('markets') as (MarketMetadataEvent | MarketResolutionEvent)[];
  metadata = markets.filter((event): event is MarketMetadataEvent => event.type === 'metadata');
  resolutions = markets.filter((event): event is MarketResolutionEvent => event.type === 'resolution');
  fills = sink.events('fillsArchive') as FillEvent[];
  upstreamFills = sink.events('fillsUpstream') as FillEvent[];
  trades = sink.events('trades') as TradeEvent[];
  legs = sink.events('positions') as PositionLegEvent[];
});

const isTick = (price: number) =>
  Math.abs(price * 100 - Math.round(price * 100)) < 1e-9 && price >= 0.01 && price <= 0.99;

describe('simulated events against the contract', () => {
  it('publishes every topic of the read API, and every event passes its schema', () => {
    const expected: TopicId[] = [
      'markets',
      'fillsArchive',
      'fillsUpstream',
      'positions',
      'trades',
      'book',
      'upstreamProfiles',
      'upstreamEquity',
      'upstreamStatus',
      'upstreamLeaderboard',
    ];
    expect(new Set(sink.topics())).toEqual(new Set(expected));
    for (const topicId of expected) {
      const events = sink.events(topicId);
      expect(events.length, topicId).toBeGreaterThan(0);
      for (const event of events) {
        const parsed = TOPICS[topicId].schema.safeParse(event);
        if (!parsed.success) throw new Error(`${topicId}: ${parsed.error.message} in ${JSON.stringify(event)}`);
      }
    }
  });

  it('emits only events of the window, in time order per topic', () => {
    const outOfOrder: string[] = [];
    for (const topicId of sink.topics()) {
      let previous = FROM;
      for (const event of sink.events(topicId)) {
        const record = event as Record<string, unknown>;
        const ts = (record.ts ?? record.as_of ?? record.version) as number;
        if (ts < previous || ts >= TO) outOfOrder.push(`${topicId}: ${JSON.stringify(event)}`);
        previous = ts;
      }
    }
    expect(outOfOrder).toEqual([]);
  });

  it('makes every archive fill a trade print with the same log position, price and size', () => {
    const tradeById = new Map(trades.map((trade) => [`${trade.tx_hash}:${trade.log_index}`, trade]));
    expect(tradeById.size).toBe(trades.length);
    expect(fills.length).toBeGreaterThan(1_000);
    for (const fill of fills) {
      const trade = tradeById.get(`${fill.tx_hash}:${fill.log_index}`);
      expect(trade, JSON.stringify(fill)).toBeDefined();
      expect(trade).toMatchObject({
        condition_id: fill.condition_id,
        token_side: fill.token_side,
        price: fill.price,
        size_tokens: fill.size_tokens,
        usd: fill.usd,
        ts: fill.ts,
      });
      const takerSide = fill.role === 'taker' ? fill.side : fill.side === 'BUY' ? 'SELL' : 'BUY';
      expect(trade!.taker_side).toBe(takerSide);
    }
  });

  it('publishes about a third of the named fills upstream too, as exact copies with the name', () => {
    const archived = new Map(fills.map((fill) => [`${fill.wallet}:${fill.tx_hash}:${fill.log_index}`, fill]));
    const nameOf = new Map(simulator.traders.map((trader) => [trader.wallet, trader.name]));
    for (const copy of upstreamFills) {
      const { name, ...fill } = copy;
      expect(archived.get(`${fill.wallet}:${fill.tx_hash}:${fill.log_index}`)).toEqual(fill);
      expect(name).toBe(nameOf.get(fill.wallet));
    }
    const share = upstreamFills.length / fills.length;
    expect(share).toBeGreaterThan(0.25);
    expect(share).toBeLessThan(0.4);
  });

  it('prints on a 0.01 tick in the token frame, usd = price × size, on both token sides', () => {
    const sides = new Set<number>();
    const wrong = [...trades, ...fills].filter(
      (print) => !isTick(print.price) || Math.abs(print.usd - print.price * print.size_tokens) > 1e-9,
    );
    for (const trade of trades) sides.add(trade.token_side);
    expect(wrong).toEqual([]);
    expect(sides).toEqual(new Set([1, 2]));
  });

  it('keeps seq strictly increasing within each market', () => {
    const lastSeq = new Map<string, number>();
    const backwards: TradeEvent[] = [];
    for (const trade of trades) {
      if (trade.seq <= (lastSeq.get(trade.condition_id) ?? -1)) backwards.push(trade);
      lastSeq.set(trade.condition_id, trade.seq);
    }
    expect(backwards).toEqual([]);
  });

  it('keeps the token-2 prints consistent with the Up price of the moment', () => {
    // Within a second of one market, every print (either token) sits within a tick or two in UP space.
    const bySecond = new Map<string, number[]>();
    for (const trade of trades) {
      const key = `${trade.condition_id}:${trade.ts}`;
      const list = bySecond.get(key) ?? [];
      list.push(upNormalizedPrice(trade.token_side, trade.price));
      bySecond.set(key, list);
    }
    const spreadOut = [...bySecond.entries()].filter(([, ups]) => Math.max(...ups) - Math.min(...ups) > 0.0200001);
    expect(spreadOut).toEqual([]);
  });

  it('publishes each market before anything else about it', () => {
    const firstCall = new Map<string, number>();
    sink.calls.forEach((call, index) => {
      if (call.topicId !== 'markets') return;
      for (const event of call.events as MarketMetadataEvent[]) {
        if (event.type === 'metadata' && !firstCall.has(event.condition_id)) firstCall.set(event.condition_id, index);
      }
    });
    const early: string[] = [];
    sink.calls.forEach((call, index) => {
      if (call.topicId === 'markets') return;
      for (const event of call.events as { condition_id?: string }[]) {
        if (event.condition_id === undefined) continue;
        const listedAt = firstCall.get(event.condition_id);
        if (listedAt === undefined || listedAt > index) early.push(`${call.topicId} ${event.condition_id}`);
      }
    });
    expect(early).toEqual([]);
  });

  it('lists crypto, politics and sports markets with their names, windows and outcomes', () => {
    const crypto = metadata.filter((market) => market.category === 'crypto');
    for (const market of crypto) {
      expect([market.outcome1, market.outcome2]).toEqual(['Up', 'Down']);
      const window = parseTitleWindow(market.title, market.version);
      expect(window).toEqual({ startTs: market.title_start_ts, endTs: market.end_ts });
      if (market.version > FROM) expect(market.version).toBeLessThan(market.title_start_ts!);
    }
    const slugs = crypto.map((market) => market.slug);
    for (const pattern of [
      /^btc-updown-5m-\d+$/,
      /^eth-updown-15m-\d+$/,
      /^solana-up-or-down-[a-z]+-\d+-\d+(am|pm)-et$/,
      /^xrp-updown-5m-\d+$/,
    ]) {
      expect(
        slugs.some((slug) => pattern.test(slug)),
        String(pattern),
      ).toBe(true);
    }
    const politics = metadata.filter((market) => market.category === 'politics');
    expect(politics.length).toBeGreaterThan(2);
    for (const market of politics)
      expect(market).toMatchObject({ outcome1: 'Yes', outcome2: 'No', title_start_ts: null });
    expect(metadata.some((market) => market.category === 'sports' && market.title.includes(' vs. '))).toBe(true);
  });

  it('resolves crypto windows at their end, for the side the final prints favour', () => {
    const endOf = new Map(metadata.map((market) => [market.condition_id, market.end_ts!]));
    const lastTrade = new Map<string, TradeEvent>();
    for (const trade of trades) lastTrade.set(trade.condition_id, trade);
    let checked = 0;
    for (const resolution of resolutions) {
      expect(resolution.ts).toBeGreaterThanOrEqual(endOf.get(resolution.condition_id)!);
      const last = lastTrade.get(resolution.condition_id);
      if (!last) continue;
      expect(last.ts).toBeLessThan(endOf.get(resolution.condition_id)!);
      const up = upNormalizedPrice(last.token_side, last.price);
      expect(up >= 0.5 ? 1 : 2, resolution.condition_id).toBe(resolution.winner_token_side);
      checked++;
    }
    expect(checked).toBeGreaterThan(100);
    const winners = new Set(resolutions.map((resolution) => resolution.winner_token_side));
    expect(winners).toEqual(new Set([1, 2]));
  });

  it('ticks the book with bid < ask around the Up price', () => {
    const ticks = sink.events('book');
    const crossed = ticks.filter(
      (tick) =>
        tick.bid == null || tick.ask == null || !(tick.bid < tick.ask) || !isTick(tick.bid) || !isTick(tick.ask),
    );
    expect(crossed).toEqual([]);
    expect(new Set(ticks.map((tick) => `${tick.condition_id}:${tick.seq}`)).size).toBe(ticks.length);
  });

  it('never sells more than is held, and redeems exactly the winning tokens held', () => {
    const holdings = new Map<string, [number, number]>();
    const winner = new Map(resolutions.map((resolution) => [resolution.condition_id, resolution]));
    const held = (wallet: string, market: string) => {
      const key = `${wallet}:${market}`;
      let entry = holdings.get(key);
      if (!entry) holdings.set(key, (entry = [0, 0]));
      return entry;
    };
    const timeline = [
      ...fills.map((fill) => ({ ts: fill.ts, fill, leg: undefined })),
      ...legs.map((leg) => ({ ts: leg.ts, fill: undefined, leg })),
    ].sort((left, right) => left.ts - right.ts);
    let redeems = 0;
    for (const { fill, leg } of timeline) {
      if (fill) {
        const entry = held(fill.wallet, fill.condition_id);
        const index = fill.token_side - 1;
        entry[index] = round2(entry[index]! + (fill.side === 'BUY' ? fill.size_tokens : -fill.size_tokens));
        expect(entry[index]).toBeGreaterThanOrEqual(0);
      } else if (leg) {
        const entry = held(leg.wallet, leg.condition_id);
        expect(leg.tokens).toBe(leg.usd);
        if (leg.kind === 'SPLIT') {
          entry[0] = round2(entry[0] + leg.tokens);
          entry[1] = round2(entry[1] + leg.tokens);
        } else if (leg.kind === 'MERGE') {
          entry[0] = round2(entry[0] - leg.tokens);
          entry[1] = round2(entry[1] - leg.tokens);
          expect(Math.min(...entry)).toBeGreaterThanOrEqual(0);
        } else {
          const resolution = winner.get(leg.condition_id);
          expect(resolution, 'redeem before resolution').toBeDefined();
          expect(leg.ts).toBeGreaterThan(resolution!.ts);
          const index = resolution!.winner_token_side! - 1;
          expect(leg.tokens).toBe(entry[index]);
          entry[index] = 0;
          redeems++;
        }
      }
    }
    expect(redeems).toBeGreaterThan(10);
    expect(new Set(legs.map((leg) => leg.kind))).toEqual(new Set(['SPLIT', 'MERGE', 'REDEEM']));
  });

  it('puts the oldest hour of activity on the v1 exchange and the rest on v2', () => {
    const v1 = fills.filter((fill) => fill.era === 'v1');
    expect(v1.length).toBeGreaterThan(0);
    expect(v1.length / fills.length).toBeLessThan(0.5);
    expect(fills.filter((fill) => fill.era !== (fill.ts < FROM + 3_600 ? 'v1' : 'v2'))).toEqual([]);
  });

  it('gives traders unique lower-case wallets and unique Polymarket-like names', () => {
    const wallets = simulator.traders.map((trader) => trader.wallet);
    for (const wallet of wallets) expect(wallet).toMatch(/^0x[0-9a-f]{40}$/);
    expect(new Set(wallets).size).toBe(wallets.length);
    const names = simulator.traders.map((trader) => trader.name.toLowerCase());
    expect(new Set(names).size).toBe(names.length);
    expect(simulator.traders.some((trader) => /[A-Z]/.test(trader.name))).toBe(true);
    expect(simulator.traders.some((trader) => /\d/.test(trader.name))).toBe(true);
    for (const trader of simulator.traders) expect(trader.name.startsWith('0x')).toBe(false);
  });

  it('publishes a leaderboard of the famous ten, ranked by profit, and no watcher counts', () => {
    const rows = sink.events('upstreamLeaderboard');
    const famous = new Set(simulator.traders.filter((trader) => trader.onBoard).map((trader) => trader.wallet));
    expect(famous.size).toBe(10);
    const boards = new Map<number, typeof rows>();
    for (const row of rows) boards.set(row.as_of, [...(boards.get(row.as_of) ?? []), row]);
    expect(boards.size).toBeGreaterThan(1);
    for (const board of boards.values()) {
      expect(new Set(board.map((row) => row.wallet))).toEqual(famous);
      expect(board.map((row) => row.rank)).toEqual(board.map((_, index) => index + 1));
      const pnls = board.map((row) => row.pnl);
      expect(pnls).toEqual([...pnls].sort((left, right) => right - left));
    }
    // Live watchers are the live plane's sessions: the simulated provider invents none.
    expect(sink.events('watchers')).toEqual([]);
  });
});

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
