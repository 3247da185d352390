import { beforeAll, describe, expect, it } from 'vitest';
import type {
  FillEvent,
  MarketMetadataEvent,
  PositionLegEvent,
  TradeEvent,
  UpstreamProfileEvent,
} from '../../contract/events.ts';
import type { SimulatedTrader, TraderHabit } from './index.ts';
import { TEST_GENESIS, recordWindow } from './test-support.ts';

/** Whale flow's defaults (decisions.md): bursts of at least $10k, pauses of more than 900 s. */
const WHALE_MIN_USD = 10_000;
const BURST_GAP_S = 900;

const FROM = TEST_GENESIS;
const TO = TEST_GENESIS + 6 * 3_600;

let traders: readonly SimulatedTrader[];
let fills: FillEvent[];
let trades: TradeEvent[];
let legs: PositionLegEvent[];
let lastProfile: Map<string, UpstreamProfileEvent>;
let marketTitle: Map<string, MarketMetadataEvent>;

beforeAll(async () => {
  const { simulator, sink } = await recordWindow({ seed: 9, traders: 40, intensity: 1 }, FROM, TO);
  traders = simulator.traders;
  fills = sink.events('fillsArchive') as FillEvent[];
  trades = sink.events('trades') as TradeEvent[];
  legs = sink.events('positions') as PositionLegEvent[];
  lastProfile = new Map(
    (sink.events('upstreamProfiles') as UpstreamProfileEvent[]).map((profile) => [profile.wallet, profile]),
  );
  marketTitle = new Map(
    (sink.events('markets') as MarketMetadataEvent[])
      .filter((event) => event.type === 'metadata')
      .map((event) => [event.condition_id, event]),
  );
});

function ofHabit(habit: TraderHabit): SimulatedTrader[] {
  const found = traders.filter((trader) => trader.habit === habit);
  expect(found.length, habit).toBeGreaterThan(0);
  return found;
}

function fillsOf(trader: SimulatedTrader): FillEvent[] {
  return fills.filter((fill) => fill.wallet === trader.wallet);
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const list = groups.get(key(item)) ?? [];
    list.push(item);
    groups.set(key(item), list);
  }
  return groups;
}

/** pnl over the simulated period: the upstream's headline less the career before it. */
function periodPnl(trader: SimulatedTrader): number {
  return lastProfile.get(trader.wallet)!.pnl - trader.historicalPnlUsd;
}

describe('trader habits are visible in the data', () => {
  it('market makers fill hundreds of times in a market, on both sides, merge pairs, and stay near flat', () => {
    for (const maker of ofHabit('market_maker')) {
      const own = fillsOf(maker);
      const perMarket = groupBy(own, (fill) => fill.condition_id);
      expect(Math.max(...[...perMarket.values()].map((list) => list.length))).toBeGreaterThan(100);
      const kinds = new Set(own.map((fill) => `${fill.side}:${fill.token_side}`));
      expect(kinds).toEqual(new Set(['BUY:1', 'BUY:2', 'SELL:1', 'SELL:2']));
      expect(legs.some((leg) => leg.wallet === maker.wallet && leg.kind === 'MERGE')).toBe(true);
      const volume = own.reduce((sum, fill) => sum + fill.usd, 0);
      expect(Math.abs(periodPnl(maker))).toBeLessThan(0.05 * volume);
    }
  });

  it('late pilers put most of their USD in the last 10% of windows, at extreme prices', () => {
    // The market's traded window, from its first to its last print.
    const windowOf = new Map<string, { first: number; last: number }>();
    for (const trade of trades) {
      const window = windowOf.get(trade.condition_id);
      if (window) window.last = trade.ts;
      else windowOf.set(trade.condition_id, { first: trade.ts, last: trade.ts });
    }
    for (const piler of ofHabit('late_piler')) {
      let lateUsd = 0;
      let totalUsd = 0;
      const latePrices: number[] = [];
      for (const fill of fillsOf(piler)) {
        const window = windowOf.get(fill.condition_id)!;
        totalUsd += fill.usd;
        if (fill.ts >= window.last - 0.1 * (window.last - window.first)) {
          lateUsd += fill.usd;
          latePrices.push(fill.price);
        }
      }
      expect(totalUsd).toBeGreaterThan(0);
      expect(lateUsd / totalUsd).toBeGreaterThan(0.8);
      latePrices.sort((left, right) => left - right);
      expect(latePrices[Math.floor(latePrices.length / 2)]).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('whales buy in bursts of $10k+ separated by pauses longer than the whale-flow gap', () => {
    let burstsAboveThreshold = 0;
    let repeatedAccumulations = 0;
    for (const whale of ofHabit('whale')) {
      const own = fillsOf(whale);
      expect(own.every((fill) => fill.side === 'BUY' && fill.usd >= 1_900 && fill.usd <= 50_500)).toBe(true);
      for (const accumulation of groupBy(own, (fill) => `${fill.condition_id}:${fill.token_side}`).values()) {
        const bursts = splitIntoBursts(accumulation);
        for (const burst of bursts) {
          expect(burst[burst.length - 1]!.ts - burst[0]!.ts).toBeLessThanOrEqual(5 * 60);
          if (burst.reduce((sum, fill) => sum + fill.usd, 0) >= WHALE_MIN_USD) burstsAboveThreshold++;
        }
        if (bursts.length > 1) repeatedAccumulations++;
      }
      // One side per market.
      for (const inMarket of groupBy(own, (fill) => fill.condition_id).values()) {
        expect(new Set(inMarket.map((fill) => fill.token_side)).size).toBe(1);
      }
    }
    expect(burstsAboveThreshold).toBeGreaterThan(3);
    expect(repeatedAccumulations).toBeGreaterThan(0);
  });

  it('split-sellers split, then sell more than they buy', () => {
    for (const seller of ofHabit('split_seller')) {
      expect(legs.some((leg) => leg.wallet === seller.wallet && leg.kind === 'SPLIT')).toBe(true);
      const own = fillsOf(seller);
      const sold = own.filter((fill) => fill.side === 'SELL').reduce((sum, fill) => sum + fill.usd, 0);
      const bought = own.filter((fill) => fill.side === 'BUY').reduce((sum, fill) => sum + fill.usd, 0);
      expect(sold).toBeGreaterThan(bought);
    }
  });

  it('steady losers lose money over the period', () => {
    for (const loser of ofHabit('steady_loser')) expect(periodPnl(loser)).toBeLessThan(0);
  });

  it('casual traders fill only now and then', () => {
    for (const casual of ofHabit('casual')) expect(fillsOf(casual).length).toBeLessThan(40);
  });

  it('spreads activity across crypto, politics and sports markets', () => {
    const categories = new Set(fills.map((fill) => marketTitle.get(fill.condition_id)!.category));
    expect(categories).toEqual(new Set(['crypto', 'politics', 'sports']));
  });
});

function splitIntoBursts(accumulation: readonly FillEvent[]): FillEvent[][] {
  const bursts: FillEvent[][] = [];
  for (const fill of accumulation) {
    const current = bursts[bursts.length - 1];
    if (current && fill.ts - current[current.length - 1]!.ts <= BURST_GAP_S) current.push(fill);
    else bursts.push([fill]);
  }
  return bursts;
}
