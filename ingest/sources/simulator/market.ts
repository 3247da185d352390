/**
 * One market while it lives: second by second it prints anonymous trades, carries out the named
 * traders' plans (each fill is also a print), ticks its book, resolves, and pays out redemptions.
 *
 * Anonymous flow uses counter-based draws keyed by (market, second), and named traders act on plans
 * drawn when the market opened, so a market's events never depend on how time was chunked.
 */
import type { TokenSide } from '../../contract/primitives.ts';
import {
  applyBuy,
  applyMerge,
  applyRedeem,
  applyResolution,
  applySell,
  applySplit,
  heldCenti,
  openPosition,
  type MarketMark,
  type Position,
  type TraderLedger,
} from './accounting.ts';
import { logPositionOf } from './ids.ts';
import type { EventOutput } from './output.ts';
import { planMarket, type PlannedAction } from './plans.ts';
import { buildPricePath, upCentsAt, type PricePath } from './price-path.ts';
import { SecondDraws, keyOf, mix32, unitOf } from './random.ts';
import type { MarketKind, MarketSpec } from './schedule.ts';
import type { SimulatedTrader, TraderHabit } from './traders.ts';

/** What a market needs to know about the world it lives in. */
export interface WorldContext {
  seed: number;
  intensity: number;
  traders: readonly SimulatedTrader[];
  ledgers: readonly TraderLedger[];
  /** Start of the simulated period: nothing of a named trader happens before it. */
  genesisTs: number;
  /** Fills and legs before this instant belong to the old exchange contract ('v1'). */
  v1UntilTs: number;
  /** The upstream poller misses fills while the provider is unreachable. */
  upstreamOffline: (ts: number) => boolean;
}

/** Anonymous prints per second at intensity 1, before the end-of-window rush. */
const ANONYMOUS_RATE: Readonly<Record<MarketKind, number>> = {
  crypto5: 0.25,
  crypto15: 0.2,
  crypto60: 0.15,
  politics: 0.012,
  sports: 0.08,
};

/** Seconds between book ticks (a tick is skipped when the top of book did not move, up to a heartbeat). */
const BOOK_INTERVAL: Readonly<Record<MarketKind, number>> = {
  crypto5: 5,
  crypto15: 5,
  crypto60: 5,
  politics: 60,
  sports: 30,
};
const BOOK_HEARTBEAT_TICKS = 12;

/** Seconds from resolution to redemption, by habit: market makers sweep at once, casuals forget for hours. */
const REDEEM_DELAY: Readonly<Record<TraderHabit, readonly [number, number]>> = {
  market_maker: [60, 600],
  late_piler: [60, 1_800],
  whale: [300, 7_200],
  split_seller: [120, 3_600],
  steady_loser: [600, 14_400],
  casual: [1_800, 21_600],
};

/** Log counters per market second: prints take 0..999, position legs 1000..1023. */
const COUNTERS_PER_SECOND = 1_024;
const FIRST_LEG_COUNTER = 1_000;
const MAX_PRINTS_PER_SECOND = 999;
const MAX_ANONYMOUS_PER_SECOND = 200;

/** A share of a third of named fills is also seen by the upstream poller. */
const UPSTREAM_SHARE_DENOMINATOR = 3;

interface Redemption {
  ts: number;
  position: Position;
}

function clampCents(cents: number): number {
  return cents < 1 ? 1 : cents > 99 ? 99 : cents;
}

function tokenCents(upCents: number, side: TokenSide): number {
  return side === 1 ? upCents : 100 - upCents;
}

function upCentsOf(tokenPriceCents: number, side: TokenSide): number {
  return side === 1 ? tokenPriceCents : 100 - tokenPriceCents;
}

/** Top of book in UP space around the current price, always bid < ask within [0.01, 0.99]. */
function bookAround(upCents: number): { bid: number; ask: number } {
  const bid = Math.min(98, Math.max(1, upCents - 1));
  const ask = Math.min(99, Math.max(bid + 1, upCents + 1));
  return { bid, ask };
}

export class MarketRuntime implements MarketMark {
  readonly spec: MarketSpec;
  readonly path: PricePath;
  lastUpCents: number | null = null;
  winner: 0 | TokenSide = 0;
  /** The next second this market has anything to do; Infinity once it is finished. */
  wakeTs: number;

  private readonly context: WorldContext;
  private readonly plans: PlannedAction[];
  private planCursor = 0;
  private readonly positions = new Map<number, Position>();
  private redemptions: Redemption[] = [];
  private redemptionCursor = 0;
  private readonly draws = new SecondDraws();
  private readonly anonymousKey: number;
  private readonly anonymousBaseRate: number;
  private printsThisSecond = 0;
  private legsThisSecond = 0;

  constructor(spec: MarketSpec, context: WorldContext, createdAt: number) {
    this.spec = spec;
    this.context = context;
    this.path = buildPricePath(context.seed, spec);
    this.plans = planMarket(
      context.seed,
      spec,
      this.path,
      context.traders,
      context.intensity,
      Math.max(createdAt, context.genesisTs),
    );
    this.anonymousKey = keyOf(context.seed, 'flow', spec.key);
    this.anonymousBaseRate = ANONYMOUS_RATE[spec.kind] * context.intensity;
    this.wakeTs = createdAt;
  }

  get finished(): boolean {
    return this.wakeTs === Number.POSITIVE_INFINITY;
  }

  step(ts: number, out: EventOutput): void {
    const { spec } = this;
    this.printsThisSecond = 0;
    this.legsThisSecond = 0;
    if (ts >= spec.openTs && ts < spec.endTs) this.trade(ts, out);
    if (ts === spec.resolveTs) this.resolve(ts, out);
    while (this.redemptionCursor < this.redemptions.length && this.redemptions[this.redemptionCursor]!.ts === ts) {
      this.redeem(this.redemptions[this.redemptionCursor]!.position, ts, out);
      this.redemptionCursor++;
    }
    this.wakeTs = this.nextWake(ts);
  }

  private nextWake(ts: number): number {
    if (ts + 1 < this.spec.endTs) return Math.max(ts + 1, this.spec.openTs);
    if (ts < this.spec.resolveTs) return this.spec.resolveTs;
    const next = this.redemptions[this.redemptionCursor];
    return next ? next.ts : Number.POSITIVE_INFINITY;
  }

  private trade(ts: number, out: EventOutput): void {
    const { spec } = this;
    const up = upCentsAt(this.path, ts);
    this.draws.reset(this.anonymousKey, ts);
    const progress = (ts - spec.openTs) / (spec.endTs - spec.openTs);
    const count = Math.min(MAX_ANONYMOUS_PER_SECOND, this.draws.poisson(this.anonymousRate(ts, progress)));
    for (let index = 0; index < count; index++) this.anonymousPrint(ts, up, out);
    while (this.planCursor < this.plans.length && this.plans[this.planCursor]!.ts === ts) {
      this.execute(this.plans[this.planCursor]!, ts, up, out);
      this.planCursor++;
    }
    // The last second always prints at the final level, so the tape ends where the market resolves.
    if (ts === spec.endTs - 1) this.anonymousPrint(ts, up, out, true);
    this.bookTick(ts, up, out);
  }

  private anonymousRate(ts: number, progress: number): number {
    const { spec } = this;
    const base = this.anonymousBaseRate;
    if (spec.kind === 'sports') return ts < (spec.gameStartTs ?? spec.openTs) ? base / 8 : base;
    if (spec.kind === 'politics') return base;
    // Crypto windows get busy towards their end.
    const cubed = progress * progress * progress;
    return base * (0.5 + 4.5 * cubed * cubed);
  }

  private anonymousPrint(ts: number, up: number, out: EventOutput, closing = false): void {
    const draws = this.draws;
    const side: TokenSide = draws.next() < 0.5 ? 1 : 2;
    const takerBuys = draws.next() < 0.5;
    const jitter = draws.next();
    const printUp = closing ? up : clampCents(up + (jitter < 0.2 ? -1 : jitter < 0.4 ? 1 : 0));
    const priceCents = tokenCents(printUp, side);
    const usd = draws.logUniform(1, 600);
    const centi = Math.max(1, Math.round((usd * 10_000) / priceCents));
    this.print(ts, side, priceCents, centi, takerBuys ? 'BUY' : 'SELL', out);
  }

  /** A trade print; a named fill carries the same transaction hash, log index and notional. */
  private print(
    ts: number,
    side: TokenSide,
    priceCents: number,
    centi: number,
    takerSide: 'BUY' | 'SELL',
    out: EventOutput,
  ) {
    const index = this.printsThisSecond++;
    if (index > MAX_PRINTS_PER_SECOND) throw new RangeError(`more than ${MAX_PRINTS_PER_SECOND} prints in one second`);
    const position = logPositionOf(this.spec.idWords, (ts - this.spec.openTs) * COUNTERS_PER_SECOND + index);
    const trade = {
      tx_hash: position.txHash,
      log_index: position.logIndex,
      condition_id: this.spec.conditionId,
      token_side: side,
      price: priceCents / 100,
      size_tokens: centi / 100,
      usd: (priceCents * centi) / 10_000,
      taker_side: takerSide,
      ts,
      seq: ts * 1_000 + index,
    };
    out.trade(trade);
    this.lastUpCents = upCentsOf(priceCents, side);
    return trade;
  }

  private bookTick(ts: number, up: number, out: EventOutput): void {
    const interval = BOOK_INTERVAL[this.spec.kind];
    const sinceOpen = ts - this.spec.openTs;
    if (sinceOpen % interval !== 0) return;
    const book = bookAround(up);
    const tick = sinceOpen / interval;
    if (tick > 0 && tick % BOOK_HEARTBEAT_TICKS !== 0) {
      const previous = bookAround(upCentsAt(this.path, ts - interval));
      if (previous.bid === book.bid && previous.ask === book.ask) return;
    }
    out.book({ condition_id: this.spec.conditionId, ts, seq: ts, bid: book.bid / 100, ask: book.ask / 100 });
  }

  private positionOf(trader: number): Position {
    let position = this.positions.get(trader);
    if (!position) {
      position = openPosition(this.context.ledgers[trader]!, trader, this);
      this.positions.set(trader, position);
    }
    return position;
  }

  private execute(action: PlannedAction, ts: number, up: number, out: EventOutput): void {
    switch (action.kind) {
      case 'buy':
        return this.fill(action.trader, 'BUY', action.tokenSide, action.usd, action.role, ts, up, out);
      case 'sell':
        return this.sell(action, ts, up, out);
      case 'split':
        return this.split(action.trader, action.usd, ts, out);
      case 'merge':
        return this.mergePairs(action.trader, ts, out);
      case 'quote':
        return this.quote(action, ts, up, out);
    }
  }

  private sell(action: PlannedAction, ts: number, up: number, out: EventOutput): void {
    const held = this.positions.get(action.trader);
    if (!held) return;
    const holding = heldCenti(held, action.tokenSide);
    const wanted = action.fraction > 0 ? Math.round(holding * action.fraction) : undefined;
    this.fill(action.trader, 'SELL', action.tokenSide, action.usd, action.role, ts, up, out, wanted);
  }

  /**
   * A market maker's quote: keep the two sides balanced, sell inventory back, merge pairs into cash.
   * Buying both sides near the mid and merging them is how such books stay near flat.
   */
  private quote(action: PlannedAction, ts: number, up: number, out: EventOutput): void {
    const position = this.positionOf(action.trader);
    const imbalance = position.centi1 - position.centi2;
    const decision = action.decision;
    if (decision < 0.05 && Math.min(position.centi1, position.centi2) >= 500)
      return this.mergePairs(action.trader, ts, out);
    if (Math.abs(imbalance) > 6_000) {
      return this.fill(action.trader, 'BUY', imbalance > 0 ? 2 : 1, action.usd, action.role, ts, up, out);
    }
    if (decision < 0.4 && position.centi1 + position.centi2 > 0) {
      const side: TokenSide = position.centi1 >= position.centi2 ? 1 : 2;
      return this.fill(action.trader, 'SELL', side, action.usd, action.role, ts, up, out);
    }
    this.fill(action.trader, 'BUY', decision < 0.7 ? 1 : 2, action.usd, action.role, ts, up, out);
  }

  /**
   * A named trader's fill and the trade print it is. Sells never exceed the holding; `tokensCenti`
   * overrides the size derived from `usd`.
   */
  private fill(
    trader: number,
    side: 'BUY' | 'SELL',
    tokenSide: TokenSide,
    usd: number,
    role: 'maker' | 'taker',
    ts: number,
    up: number,
    out: EventOutput,
    tokensCenti?: number,
  ): void {
    const position = this.positionOf(trader);
    // A taker crosses the spread by a tick half of the time; makers trade at the level.
    const crossing =
      role === 'taker' && unitOf(mix32(this.spec.key ^ ts, trader)) < 0.5 ? (side === 'BUY' ? 1 : -1) : 0;
    const priceCents = clampCents(tokenCents(up, tokenSide) + crossing);
    let centi = tokensCenti ?? Math.max(1, Math.round((usd * 10_000) / priceCents));
    if (side === 'SELL') centi = Math.min(centi, heldCenti(position, tokenSide));
    if (centi <= 0) return;

    const takerSide = role === 'taker' ? side : side === 'BUY' ? 'SELL' : 'BUY';
    const printed = this.print(ts, tokenSide, priceCents, centi, takerSide, out);
    const ledger = this.context.ledgers[trader]!;
    if (side === 'BUY') applyBuy(ledger, position, tokenSide, centi, printed.usd);
    else applySell(ledger, position, tokenSide, centi, printed.usd);

    const named = this.context.traders[trader]!;
    const fill = {
      tx_hash: printed.tx_hash,
      log_index: printed.log_index,
      wallet: named.wallet,
      condition_id: this.spec.conditionId,
      side,
      token_side: tokenSide,
      price: priceCents / 100,
      size_tokens: centi / 100,
      usd: printed.usd,
      role,
      era: this.eraAt(ts),
      ts,
    } as const;
    out.archiveFill(fill);
    const seenUpstream =
      mix32(named.key, printed.log_index ^ mix32(this.spec.key, ts)) % UPSTREAM_SHARE_DENOMINATOR === 0;
    if (seenUpstream && !this.context.upstreamOffline(ts)) out.upstreamFill({ ...fill, name: named.name });
  }

  private eraAt(ts: number): 'v1' | 'v2' {
    return ts < this.context.v1UntilTs ? 'v1' : 'v2';
  }

  private leg(trader: number, kind: 'SPLIT' | 'MERGE' | 'REDEEM', centi: number, ts: number, out: EventOutput): void {
    const index = this.legsThisSecond++;
    const counter = (ts - this.spec.openTs) * COUNTERS_PER_SECOND + FIRST_LEG_COUNTER + index;
    const position = logPositionOf(this.spec.idWords, counter);
    const amount = centi / 100;
    out.leg({
      tx_hash: position.txHash,
      log_index: position.logIndex,
      wallet: this.context.traders[trader]!.wallet,
      condition_id: this.spec.conditionId,
      kind,
      tokens: amount,
      usd: amount,
      era: this.eraAt(ts),
      ts,
    });
  }

  private split(trader: number, usd: number, ts: number, out: EventOutput): void {
    const centi = Math.max(1, Math.round(usd * 100));
    applySplit(this.context.ledgers[trader]!, this.positionOf(trader), centi, centi / 100);
    this.leg(trader, 'SPLIT', centi, ts, out);
  }

  private mergePairs(trader: number, ts: number, out: EventOutput): void {
    const position = this.positions.get(trader);
    if (!position) return;
    const centi = Math.min(position.centi1, position.centi2);
    if (centi <= 0) return;
    applyMerge(this.context.ledgers[trader]!, position, centi, centi / 100);
    this.leg(trader, 'MERGE', centi, ts, out);
  }

  private resolve(ts: number, out: EventOutput): void {
    const winner = this.path.winner;
    this.winner = winner;
    out.market({
      type: 'resolution',
      condition_id: this.spec.conditionId,
      winner_token_side: winner,
      ts,
      source: 'simulator',
    });
    const redemptions: Redemption[] = [];
    for (const [trader, position] of this.positions) {
      const settled = applyResolution(this.context.ledgers[trader]!, position, winner);
      if (settled) continue;
      const [low, high] = REDEEM_DELAY[this.context.traders[trader]!.habit];
      const delay = low + (mix32(this.spec.key, this.context.traders[trader]!.key) % (high - low + 1));
      redemptions.push({ ts: ts + delay, position });
    }
    // By time, then trader, so that two redemptions of one second come out in one order.
    this.redemptions = redemptions.sort(
      (left, right) => left.ts - right.ts || left.position.trader - right.position.trader,
    );
    this.redemptionCursor = 0;
  }

  private redeem(position: Position, ts: number, out: EventOutput): void {
    const winner = this.path.winner;
    const centi = heldCenti(position, winner);
    if (centi <= 0) return;
    applyRedeem(this.context.ledgers[position.trader]!, position, winner, centi, centi / 100);
    this.leg(position.trader, 'REDEEM', centi, ts, out);
  }
}
