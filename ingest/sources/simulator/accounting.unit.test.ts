/**
 * The upstream profile and equity figures against an independent recomputation from the emitted
 * fills, legs, trades and resolutions — written here from the event contract alone, not with the
 * simulator's own accounting.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type {
  FillEvent,
  MarketResolutionEvent,
  PositionLegEvent,
  TradeEvent,
  UpstreamEquityPointEvent,
  UpstreamProfileEvent,
} from '../../contract/events.ts';
import { upNormalizedPrice } from '../../contract/primitives.ts';
import type { SimulatedTrader } from './index.ts';
import { TEST_GENESIS, recordWindow } from './test-support.ts';

const FROM = TEST_GENESIS;
const TO = TEST_GENESIS + 4 * 3_600;

let traders: readonly SimulatedTrader[];
let fills: FillEvent[];
let legs: PositionLegEvent[];
let trades: TradeEvent[];
let resolutions: MarketResolutionEvent[];
let profiles: UpstreamProfileEvent[];
let equity: UpstreamEquityPointEvent[];

beforeAll(async () => {
  const { simulator, sink } = await recordWindow({ seed: 3, traders: 24, intensity: 1 }, FROM, TO);
  traders = simulator.traders;
  fills = sink.events('fillsArchive') as FillEvent[];
  legs = sink.events('positions') as PositionLegEvent[];
  trades = sink.events('trades') as TradeEvent[];
  resolutions = (sink.events('markets') as MarketResolutionEvent[]).filter((event) => event.type === 'resolution');
  profiles = sink.events('upstreamProfiles') as UpstreamProfileEvent[];
  equity = sink.events('upstreamEquity') as UpstreamEquityPointEvent[];
});

function sideIndex(tokenSide: 1 | 2): 0 | 1 {
  return tokenSide === 1 ? 0 : 1;
}

/** Books rebuilt by replaying events in time order; `pnlAt` asks for the state before an instant. */
class Replay {
  private readonly cash = new Map<string, number>();
  /** wallet → market → [token-1 tokens, token-2 tokens] */
  private readonly holdings = new Map<string, Map<string, [number, number]>>();
  private readonly lastUp = new Map<string, number>();
  private readonly winner = new Map<string, 1 | 2>();
  private cursors = { fills: 0, legs: 0, trades: 0, resolutions: 0 };

  advanceTo(ts: number): void {
    while (this.cursors.trades < trades.length && trades[this.cursors.trades]!.ts < ts) {
      const trade = trades[this.cursors.trades++]!;
      this.lastUp.set(trade.condition_id, upNormalizedPrice(trade.token_side, trade.price));
    }
    while (this.cursors.resolutions < resolutions.length && resolutions[this.cursors.resolutions]!.ts < ts) {
      const resolution = resolutions[this.cursors.resolutions++]!;
      // The simulator always names a winner (it never resolves a market with a split payout).
      this.winner.set(resolution.condition_id, resolution.winner_token_side!);
    }
    while (this.cursors.fills < fills.length && fills[this.cursors.fills]!.ts < ts) {
      const fill = fills[this.cursors.fills++]!;
      const sign = fill.side === 'BUY' ? 1 : -1;
      this.addCash(fill.wallet, -sign * fill.usd);
      this.held(fill.wallet, fill.condition_id)[sideIndex(fill.token_side)] += sign * fill.size_tokens;
    }
    while (this.cursors.legs < legs.length && legs[this.cursors.legs]!.ts < ts) {
      const leg = legs[this.cursors.legs++]!;
      const held = this.held(leg.wallet, leg.condition_id);
      if (leg.kind === 'SPLIT') {
        this.addCash(leg.wallet, -leg.usd);
        held[0] += leg.tokens;
        held[1] += leg.tokens;
      } else if (leg.kind === 'MERGE') {
        this.addCash(leg.wallet, leg.usd);
        held[0] -= leg.tokens;
        held[1] -= leg.tokens;
      } else {
        this.addCash(leg.wallet, leg.usd);
        held[sideIndex(this.winner.get(leg.condition_id)!)] -= leg.tokens;
      }
    }
  }

  /** pnl over the period (without the career before it), and the value of what is held. */
  standing(wallet: string): { pnl: number; value: number } {
    let value = 0;
    for (const [market, [up, down]] of this.holdings.get(wallet) ?? new Map<string, [number, number]>()) {
      const winner = this.winner.get(market);
      if (winner !== undefined) value += winner === 1 ? up : down;
      else {
        const mark = this.lastUp.get(market)!;
        value += up * mark + down * (1 - mark);
      }
    }
    return { pnl: (this.cash.get(wallet) ?? 0) + value, value };
  }

  private addCash(wallet: string, usd: number): void {
    this.cash.set(wallet, (this.cash.get(wallet) ?? 0) + usd);
  }

  private held(wallet: string, market: string): [number, number] {
    let markets = this.holdings.get(wallet);
    if (!markets) this.holdings.set(wallet, (markets = new Map()));
    let entry = markets.get(market);
    if (!entry) markets.set(market, (entry = [0, 0]));
    return entry;
  }
}

describe('upstream figures agree with the fills and legs', () => {
  it('states every profile pnl as career-before plus cash flows plus holdings at the last trade', () => {
    const historical = new Map(traders.map((trader) => [trader.wallet, trader.historicalPnlUsd]));
    const replay = new Replay();
    let checked = 0;
    let moved = 0;
    for (const profile of profiles) {
      replay.advanceTo(profile.as_of);
      const expected = replay.standing(profile.wallet);
      expect(profile.pnl).toBeCloseTo(historical.get(profile.wallet)! + expected.pnl, 2);
      expect(profile.portfolio_value).toBeCloseTo(expected.value, 2);
      expect(profile.pnl_realized + profile.pnl_unrealized).toBeCloseTo(profile.pnl, 4);
      checked++;
      if (Math.abs(expected.pnl) > 1) moved++;
    }
    // On the hour from genesis (itself on the hour) to the end: 12:00, 13:00, 14:00, 15:00.
    expect(checked).toBe(traders.length * 4);
    expect(moved).toBeGreaterThan(traders.length);
  });

  it('draws the equity curve from the same books, every 15 minutes', () => {
    const historical = new Map(traders.map((trader) => [trader.wallet, trader.historicalPnlUsd]));
    const replay = new Replay();
    for (const point of equity) {
      expect(point.ts % 900 === 0 || point.ts === FROM).toBe(true);
      replay.advanceTo(point.ts);
      expect(point.pnl_usd).toBeCloseTo(historical.get(point.wallet)! + replay.standing(point.wallet).pnl, 2);
    }
    expect(equity).toHaveLength(traders.length * (4 * 4));
    // Equity curves move: peaks and lows differ for the active traders.
    const spread = new Map<string, number[]>();
    for (const point of equity) spread.set(point.wallet, [...(spread.get(point.wallet) ?? []), point.pnl_usd]);
    const moving = [...spread.values()].filter((points) => Math.max(...points) - Math.min(...points) > 10);
    expect(moving.length).toBeGreaterThan(traders.length / 4);
  });

  it('repeats each profile on the hour for every trader, with names and images', () => {
    const names = new Map(traders.map((trader) => [trader.wallet, trader.name]));
    for (const profile of profiles) {
      expect(profile.as_of % 3_600 === 0 || profile.as_of === FROM).toBe(true);
      expect(profile.name).toBe(names.get(profile.wallet));
    }
    expect(profiles.some((profile) => (profile.profile_image ?? '').startsWith('https://'))).toBe(true);
  });
});
