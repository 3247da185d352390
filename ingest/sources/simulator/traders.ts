/**
 * The named traders of the simulated world: wallet, display name, habit, a career before the simulated
 * period (historical pnl), and how popular their live stream is.
 */
import { HANDLE_STEMS, NAME_ADJECTIVES, NAME_NOUNS } from './catalog.ts';
import { walletOf } from './ids.ts';
import { Rng, hashString } from './random.ts';

const TRADER_HABITS = ['market_maker', 'late_piler', 'whale', 'split_seller', 'steady_loser', 'casual'] as const;
export type TraderHabit = (typeof TRADER_HABITS)[number];

/** Share of each habit in the roster; casuals take what the others leave. */
const HABIT_SHARES: Readonly<Record<Exclude<TraderHabit, 'casual'>, number>> = {
  market_maker: 0.05,
  late_piler: 0.1,
  whale: 0.05,
  split_seller: 0.08,
  steady_loser: 0.12,
};

/** How many traders the simulated provider's leaderboard lists. */
const POPULAR_TRADERS = 10;

export interface SimulatedTrader {
  index: number;
  wallet: string;
  name: string;
  habit: TraderHabit;
  /** Profit of the career before the simulated period; the upstream's pnl includes it. */
  historicalPnlUsd: number;
  profileImage: string;
  /** Whether the simulated provider's leaderboard lists the trader (the popular shelf's members). */
  onBoard: boolean;
  /** A hash of the wallet, to key per-trader draws cheaply. */
  key: number;
}

/** Habit counts by share (largest remainders), at least one of each when the roster is big enough. */
function habitQuotas(traderCount: number): TraderHabit[] {
  const habits: TraderHabit[] = [];
  const minimum = traderCount >= TRADER_HABITS.length ? 1 : 0;
  for (const [habit, share] of Object.entries(HABIT_SHARES) as [TraderHabit, number][]) {
    const count = Math.max(minimum, Math.round(share * traderCount));
    for (let index = 0; index < count && habits.length < traderCount; index++) habits.push(habit);
  }
  while (habits.length < traderCount) habits.push('casual');
  return habits;
}

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index--) {
    const other = rng.below(index + 1);
    [copy[index], copy[other]] = [copy[other]!, copy[index]!];
  }
  return copy;
}

/** A Polymarket-like display name; pattern 2 (CamelCase) always has upper case. */
function displayName(rng: Rng, pattern: number): string {
  switch (pattern) {
    case 0:
      return `${rng.pick(HANDLE_STEMS)}${rng.intBetween(1, 999)}`;
    case 1:
      return `${rng.pick(NAME_ADJECTIVES)}-${rng.pick(NAME_NOUNS)}`;
    case 2:
      return `${rng.pick(NAME_NOUNS)}${rng.pick(NAME_NOUNS)}${rng.pick(NAME_NOUNS)}`;
    case 3: {
      const stem = rng.pick(HANDLE_STEMS);
      return `${stem.charAt(0).toUpperCase()}${stem.slice(1)}${rng.intBetween(1, 9999)}`;
    }
    default:
      return rng.pick(HANDLE_STEMS);
  }
}

function historicalPnl(habit: TraderHabit, rng: Rng): number {
  const cents = (usd: number) => Math.round(usd * 100) / 100;
  switch (habit) {
    case 'market_maker':
      return cents(rng.logUniform(20_000, 400_000));
    case 'late_piler':
      return cents(rng.logUniform(5_000, 150_000));
    case 'whale':
      return cents((rng.chance(0.65) ? 1 : -1) * rng.logUniform(50_000, 2_000_000));
    case 'split_seller':
      return cents(rng.logUniform(2_000, 80_000));
    case 'steady_loser':
      return cents(-rng.logUniform(3_000, 120_000));
    case 'casual':
      return cents((rng.chance(0.5) ? 1 : -1) * rng.logUniform(10, 5_000));
  }
}

const FAME_BY_HABIT: Readonly<Record<TraderHabit, number>> = {
  whale: 3,
  market_maker: 2.5,
  late_piler: 2,
  split_seller: 1.5,
  steady_loser: 1,
  casual: 0.5,
};

export function createTraders(seed: number, traderCount: number): SimulatedTrader[] {
  const habits = shuffled(habitQuotas(traderCount), Rng.of(seed, 'habits', traderCount));
  const usedNames = new Set<string>();
  const traders = habits.map((habit, index): SimulatedTrader => {
    const rng = Rng.of(seed, 'trader', index);
    const wallet = walletOf(seed, index);
    let name = displayName(rng, index === 0 ? 2 : rng.below(5));
    while (usedNames.has(name.toLowerCase())) name = `${name}${rng.below(10)}`;
    usedNames.add(name.toLowerCase());
    return {
      index,
      wallet,
      name,
      habit,
      historicalPnlUsd: historicalPnl(habit, rng),
      profileImage: rng.chance(0.7) ? `https://example.com/simulator/avatars/${wallet.slice(2, 14)}.png` : '',
      onBoard: false,
      key: hashString(wallet),
    };
  });

  const fame = traders.map((trader) => ({
    trader,
    score: FAME_BY_HABIT[trader.habit] + Rng.of(seed, 'fame', trader.index).next() * 2,
  }));
  fame.sort((left, right) => right.score - left.score || left.trader.index - right.trader.index);
  const popular = fame.slice(0, Math.min(POPULAR_TRADERS, traders.length));
  for (const { trader } of popular) trader.onBoard = true;
  return traders;
}
