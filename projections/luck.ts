/**
 * Luck or skill, and for many traders at once (docs/skill.md).
 *
 * The null hypothesis is the market's own: a price is a fair forecast, so tokens bought at p pay 1 with
 * probability p. Under it a market's entries — T tokens bought at a mean price p — pay T with probability p
 * and 0 otherwise, independently across markets, and what they paid above their price, Σ T (o − p), has
 * mean 0. `luckProbability` bounds the chance that fair prices would have paid at least the trader's
 * excess: the Chernoff bound min over t of exp(K(t) − t·excess), with K the exact cumulant generating
 * function of that sum. A bound, not an estimate: it never understates the chance of luck, so the
 * false-discovery correction over it keeps its promise for any mix of prices and sizes (a normal
 * approximation does not: bets on long shots are skewed, and it finds skill in coin-flippers).
 *
 * `benjaminiHochberg` turns the probabilities of a ranked population into q-values: a trader is told
 * from luck at level α when its q-value is at most α, and then at most a share α of the traders so told
 * are expected to be lucky.
 */

/** The false-discovery rate at which the leaderboard tells a trader from luck. */
export const SKILL_FALSE_DISCOVERY_RATE = 0.1;

/** One market's entries under the fair-price null: tokens bought, and the mean price paid for them. */
export interface FairBet {
  tokens: number;
  price: number;
}

/** log(1 − p + p·e^x), without overflow for large x. */
function logBernoulliMgf(price: number, x: number): number {
  return x > 0 ? x + Math.log(price + (1 - price) * Math.exp(-x)) : Math.log1p(price * Math.expm1(x));
}

/** The probability a bought token pays under the exponential tilt t·T: K′'s weight. */
function tiltedPrice(price: number, x: number): number {
  return x > 0
    ? price / (price + (1 - price) * Math.exp(-x))
    : (price * Math.exp(x)) / (1 - price + price * Math.exp(x));
}

const SEARCH_STEPS = 80;

/**
 * An upper bound on the probability that bets priced fairly pay at least `excess` dollars above what they
 * cost (Σ tokens × payout − Σ tokens × price): 1 when the excess is not above 0, the chance that every bet
 * wins when it is as much as they could pay.
 */
export function luckProbability(bets: readonly FairBet[], excess: number): number {
  const live = bets.filter((bet) => bet.tokens > 0 && bet.price > 0 && bet.price < 1);
  if (!(excess > 0) || live.length === 0) return 1;
  const most = live.reduce((sum, bet) => sum + bet.tokens * (1 - bet.price), 0);
  // At (or, by rounding, past) the most they could pay: every bet won.
  if (excess >= most * (1 - 1e-12)) return live.reduce((product, bet) => product * bet.price, 1);
  const cumulant = (t: number) =>
    live.reduce((sum, bet) => sum + logBernoulliMgf(bet.price, t * bet.tokens) - t * bet.tokens * bet.price, 0);
  const slope = (t: number) =>
    live.reduce((sum, bet) => sum + bet.tokens * (tiltedPrice(bet.price, t * bet.tokens) - bet.price), 0);
  const curvature = (t: number) =>
    live.reduce((sum, bet) => {
      const tilted = tiltedPrice(bet.price, t * bet.tokens);
      return sum + bet.tokens * bet.tokens * tilted * (1 - tilted);
    }, 0);
  // K′ rises from 0 (t = 0) toward `most`: the t where it reaches the excess minimizes K(t) − t·excess.
  // Newton's steps on K′ (K is convex), kept inside a bracket that halves whenever a step would leave it.
  const largest = live.reduce((max, bet) => Math.max(max, bet.tokens), 0);
  let low = 0;
  let high = 1 / largest;
  while (slope(high) < excess && high < 1e6 / largest) high *= 2;
  let t = (low + high) / 2;
  for (let step = 0; step < SEARCH_STEPS; step++) {
    const gap = slope(t) - excess;
    if (gap < 0) low = t;
    else high = t;
    if (Math.abs(gap) <= 1e-12 * excess || high - low <= 1e-15 * high) break;
    const newton = t - gap / curvature(t);
    t = newton > low && newton < high ? newton : (low + high) / 2;
  }
  return Math.min(1, Math.exp(cumulant(t) - t * excess));
}

/**
 * Benjamini–Hochberg q-values, in the order given: for the probability ranked i-th smallest of m, the least
 * of p_(j) × m ÷ j over j ≥ i, at most 1. Telling the traders with q ≤ α from luck keeps the expected share
 * of lucky ones among them at most α.
 */
export function benjaminiHochberg(probabilities: readonly number[]): number[] {
  const count = probabilities.length;
  const order = probabilities.map((probability, index) => ({ probability, index }));
  order.sort((a, b) => a.probability - b.probability || a.index - b.index);
  const qValues = new Array<number>(count);
  let least = 1;
  for (let rank = count; rank >= 1; rank--) {
    const { probability, index } = order[rank - 1]!;
    least = Math.min(least, (probability * count) / rank);
    qValues[index] = least;
  }
  return qValues;
}
