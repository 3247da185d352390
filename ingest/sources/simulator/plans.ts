/**
 * What each named trader intends to do in a market, by habit. A plan is drawn once, when the market
 * opens, from the trader's own generator keyed by (seed, market, trader); the market carries it out
 * second by second at the prices of the moment. Plans may look at the whole price path: habits such as
 * "buys the side that ends up losing" are written that way on purpose.
 */
import type { TokenSide } from '../../contract/primitives.ts';
import { upCentsAt, type PricePath } from './price-path.ts';
import { Rng, keyOf, mix32, unitOf } from './random.ts';
import type { MarketKind, MarketSpec } from './schedule.ts';
import type { SimulatedTrader, TraderHabit } from './traders.ts';

type PlanKind = 'buy' | 'sell' | 'split' | 'merge' | 'quote';

export interface PlannedAction {
  ts: number;
  trader: number;
  kind: PlanKind;
  tokenSide: TokenSide;
  /** Notional aimed at (buy, split, quote, and sell when `fraction` is 0). */
  usd: number;
  /** Sell this share of the holding of `tokenSide` (0 = sell `usd` worth). */
  fraction: number;
  role: 'maker' | 'taker';
  /** A uniform draw for what is decided only at execution (a market maker's next quote). */
  decision: number;
}

/** Chance that a trader of a habit takes part in a market of a kind (at intensity 1). */
const PARTICIPATION: Readonly<Record<TraderHabit, Readonly<Record<MarketKind, number>>>> = {
  market_maker: { crypto5: 0.04, crypto15: 0.2, crypto60: 0.3, politics: 0.3, sports: 0.3 },
  late_piler: { crypto5: 0.12, crypto15: 0.35, crypto60: 0.25, politics: 0, sports: 0.2 },
  whale: { crypto5: 0, crypto15: 0.04, crypto60: 0.12, politics: 0.3, sports: 0.3 },
  split_seller: { crypto5: 0, crypto15: 0.2, crypto60: 0.25, politics: 0.2, sports: 0.2 },
  steady_loser: { crypto5: 0.1, crypto15: 0.2, crypto60: 0.2, politics: 0.1, sports: 0.2 },
  casual: { crypto5: 0.008, crypto15: 0.015, crypto60: 0.02, politics: 0.04, sports: 0.04 },
};

/** Mean seconds between a market maker's quotes: hundreds of fills in a crypto window. */
const QUOTE_INTERVAL: Readonly<Record<MarketKind, number>> = {
  crypto5: 4,
  crypto15: 6,
  crypto60: 12,
  politics: 900,
  sports: 45,
};

/** Whale-flow thresholds the bursts are built to cross: $10k per burst, pauses above 900 s. */
const WHALE_BURST_MIN_USD = 10_500;
const WHALE_PAUSE_MIN_SECONDS = 1_000;

interface PlanContext {
  spec: MarketSpec;
  path: PricePath;
  trader: SimulatedTrader;
  rng: Rng;
  actions: PlannedAction[];
}

function favoriteAt(path: PricePath, ts: number): TokenSide {
  return upCentsAt(path, ts) >= 50 ? 1 : 2;
}

function other(side: TokenSide): TokenSide {
  return side === 1 ? 2 : 1;
}

type ActionDraft = Omit<PlannedAction, 'trader' | 'fraction' | 'decision'> &
  Partial<Pick<PlannedAction, 'fraction' | 'decision'>>;

function add(context: PlanContext, draft: ActionDraft): void {
  // Written out rather than spread: market makers plan hundreds of quotes per market.
  context.actions.push({
    ts: draft.ts,
    trader: context.trader.index,
    kind: draft.kind,
    tokenSide: draft.tokenSide,
    usd: draft.usd,
    fraction: draft.fraction ?? 0,
    role: draft.role,
    decision: draft.decision ?? 0,
  });
}

function isCrypto(kind: MarketKind): boolean {
  return kind === 'crypto5' || kind === 'crypto15' || kind === 'crypto60';
}

/** Quotes on both sides all through the window, small sizes, merging pairs back to cash. */
function planMarketMaker(context: PlanContext): void {
  const { spec, rng } = context;
  const crypto = isCrypto(spec.kind);
  const stopTs = spec.endTs - (crypto ? 20 : 300);
  const [low, high] = crypto ? [3, 40] : [10, 150];
  let ts = spec.openTs + rng.exponential(QUOTE_INTERVAL[spec.kind]);
  while (ts < stopTs) {
    add(context, {
      ts: Math.floor(ts),
      kind: 'quote',
      tokenSide: 1,
      usd: rng.logUniform(low, high),
      role: rng.chance(0.85) ? 'maker' : 'taker',
      decision: rng.next(),
    });
    ts += 1 + rng.exponential(QUOTE_INTERVAL[spec.kind]);
  }
  add(context, { ts: spec.endTs - 10, kind: 'merge', tokenSide: 1, usd: 0, role: 'maker' });
}

/** Piles into the favourite in the last 8% of the window, at extreme prices; sometimes an early probe. */
function planLatePiler(context: PlanContext): void {
  const { spec, path, rng } = context;
  const duration = spec.endTs - spec.openTs;
  if (rng.chance(0.3)) {
    add(context, {
      ts: Math.floor(spec.openTs + rng.between(0.05, 0.7) * duration),
      kind: 'buy',
      tokenSide: rng.chance(0.5) ? 1 : 2,
      usd: rng.logUniform(5, 25),
      role: 'taker',
    });
  }
  const count = rng.intBetween(3, 10);
  const windowStart = spec.endTs - Math.floor(0.08 * duration);
  for (let index = 0; index < count; index++) {
    const ts = rng.intBetween(windowStart, spec.endTs - 2);
    add(context, { ts, kind: 'buy', tokenSide: favoriteAt(path, ts), usd: rng.logUniform(100, 2_500), role: 'taker' });
  }
}

/** When the bursts of a whale start, each at least a long pause after the previous one ended. */
function burstStarts(spec: MarketSpec, rng: Rng): number[] {
  const duration = spec.endTs - spec.openTs;
  switch (spec.kind) {
    case 'crypto5':
    case 'crypto15':
      return [spec.openTs + Math.floor(rng.between(0.1, 0.6) * duration)];
    case 'crypto60': {
      const first = spec.openTs + Math.floor(rng.between(0.05, 0.3) * duration);
      return rng.chance(0.5) ? [first] : [first, first + 400 + WHALE_PAUSE_MIN_SECONDS + rng.intBetween(0, 600)];
    }
    case 'sports': {
      const game = spec.gameStartTs ?? spec.openTs;
      const first = spec.openTs + Math.floor(rng.between(0.1, 0.8) * (game - spec.openTs));
      return rng.chance(0.5) ? [first] : [first, game + rng.intBetween(600, 3_600)];
    }
    case 'politics': {
      const starts: number[] = [];
      let ts = spec.openTs + rng.intBetween(600, 6 * 3_600);
      const count = rng.intBetween(1, 4);
      while (starts.length < count && ts < spec.endTs - 86_400) {
        starts.push(ts);
        ts += rng.intBetween(4 * 3_600, 3 * 86_400);
      }
      return starts;
    }
  }
}

/** Accumulates one side in bursts of several $2k–$50k fills within minutes. */
function planWhale(context: PlanContext): void {
  const { spec, path, rng } = context;
  const starts = burstStarts(spec, rng);
  if (starts.length === 0) return;
  const side = rng.chance(0.7) ? favoriteAt(path, starts[0]!) : other(favoriteAt(path, starts[0]!));
  for (const start of starts) {
    const count = rng.intBetween(3, 7);
    const sizes = Array.from({ length: count }, () => rng.logUniform(2_000, 20_000));
    const total = sizes.reduce((sum, size) => sum + size, 0);
    const scale = total < WHALE_BURST_MIN_USD ? WHALE_BURST_MIN_USD / total : 1;
    let ts = start;
    for (const size of sizes) {
      if (ts >= spec.endTs - 1) break;
      add(context, { ts, kind: 'buy', tokenSide: side, usd: Math.min(50_000, size * scale), role: 'taker' });
      ts += rng.intBetween(10, 50);
    }
  }
}

/** Splits cash into both sides, then sells one side off: sell-dominated flow. */
function planSplitSeller(context: PlanContext): void {
  const { spec, path, rng } = context;
  const duration = spec.endTs - spec.openTs;
  const rounds = rng.intBetween(1, isCrypto(spec.kind) ? 3 : 4);
  const roundStarts = Array.from(
    { length: rounds },
    () => spec.openTs + Math.floor(rng.between(0.05, 0.75) * duration),
  ).sort((left, right) => left - right);
  for (const start of roundStarts) {
    add(context, { ts: start, kind: 'split', tokenSide: 1, usd: rng.logUniform(100, 1_500), role: 'maker' });
    const unwanted = rng.chance(0.5) ? favoriteAt(path, start) : other(favoriteAt(path, start));
    const pieces = rng.intBetween(2, 5);
    let ts = start;
    for (let piece = 0; piece < pieces; piece++) {
      ts += rng.intBetween(5, 60);
      add(context, {
        ts: Math.min(ts, spec.endTs - 2),
        kind: 'sell',
        tokenSide: unwanted,
        usd: 0,
        fraction: 1 / (pieces - piece),
        role: rng.chance(0.6) ? 'maker' : 'taker',
      });
    }
  }
  if (rng.chance(0.25)) {
    add(context, {
      ts: spec.endTs - Math.floor(rng.between(0.05, 0.15) * duration),
      kind: 'sell',
      tokenSide: rng.chance(0.5) ? 1 : 2,
      usd: 0,
      fraction: 0.5,
      role: 'taker',
    });
  }
}

/** Buys, mostly, the side that ends up losing. */
function planSteadyLoser(context: PlanContext): void {
  const { spec, path, rng } = context;
  const duration = spec.endTs - spec.openTs;
  const loser = other(path.winner);
  const count = rng.intBetween(2, 6);
  for (let index = 0; index < count; index++) {
    add(context, {
      ts: spec.openTs + Math.floor(rng.between(0.1, 0.85) * duration),
      kind: 'buy',
      tokenSide: rng.chance(0.7) ? loser : path.winner,
      usd: rng.logUniform(10, 300),
      role: 'taker',
    });
  }
}

/** A few small buys, now and then a sale. */
function planCasual(context: PlanContext): void {
  const { spec, rng } = context;
  const duration = spec.endTs - spec.openTs;
  const count = rng.intBetween(1, 3);
  for (let index = 0; index < count; index++) {
    const ts = spec.openTs + Math.floor(rng.between(0, 0.9) * duration);
    const side: TokenSide = rng.chance(0.5) ? 1 : 2;
    add(context, {
      ts,
      kind: 'buy',
      tokenSide: side,
      usd: rng.logUniform(5, 150),
      role: rng.chance(0.8) ? 'taker' : 'maker',
    });
    if (rng.chance(0.3)) {
      add(context, {
        ts: Math.min(spec.endTs - 2, ts + Math.floor(rng.between(0.02, 0.3) * duration)),
        kind: 'sell',
        tokenSide: side,
        usd: 0,
        fraction: rng.between(0.5, 1),
        role: 'taker',
      });
    }
  }
}

const PLANNERS: Readonly<Record<TraderHabit, (context: PlanContext) => void>> = {
  market_maker: planMarketMaker,
  late_piler: planLatePiler,
  whale: planWhale,
  split_seller: planSplitSeller,
  steady_loser: planSteadyLoser,
  casual: planCasual,
};

/**
 * Every named trader's plan in a market, merged in execution order (second, then trader, then the
 * order planned). Actions before `notBeforeTs` (the start of the simulated period) are dropped: no
 * named trader holds anything from before it.
 */
export function planMarket(
  seed: number,
  spec: MarketSpec,
  path: PricePath,
  traders: readonly SimulatedTrader[],
  intensity: number,
  notBeforeTs: number,
): PlannedAction[] {
  const actions: PlannedAction[] = [];
  for (const trader of traders) {
    const chance = Math.min(0.95, PARTICIPATION[trader.habit][spec.kind] * intensity);
    if (chance <= 0 || unitOf(mix32(spec.key, trader.key)) >= chance) continue;
    const context: PlanContext = {
      spec,
      path,
      trader,
      rng: new Rng(keyOf(seed, 'plan', spec.key, trader.key)),
      actions: [],
    };
    PLANNERS[trader.habit](context);
    for (const action of context.actions) {
      if (action.ts >= notBeforeTs && action.ts >= spec.openTs && action.ts < spec.endTs) actions.push(action);
    }
  }
  // Stable: ties keep trader order, then planned order.
  return actions.sort((left, right) => left.ts - right.ts);
}
