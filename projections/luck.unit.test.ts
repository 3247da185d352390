import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { benjaminiHochberg, type FairBet, luckProbability, SKILL_FALSE_DISCOVERY_RATE } from './luck.ts';
import { mulberry32 } from './random.ts';

/** The exact chance that fair bets pay at least `excess` above their price: every outcome enumerated. */
function exactTail(bets: readonly FairBet[], excess: number): number {
  let total = 0;
  for (let outcome = 0; outcome < 2 ** bets.length; outcome++) {
    let paid = 0;
    let probability = 1;
    bets.forEach((bet, index) => {
      const won = (outcome >> index) & 1;
      paid += bet.tokens * (won - bet.price);
      probability *= won ? bet.price : 1 - bet.price;
    });
    if (paid >= excess - 1e-9) total += probability;
  }
  return total;
}

/** BH as its definition reads, with no shared code: q_i = min over p_j ≥ p_i of p_j × m ÷ rank_j, at most 1. */
function referenceQValues(probabilities: readonly number[]): number[] {
  const m = probabilities.length;
  const sorted = [...probabilities].sort((a, b) => a - b);
  return probabilities.map((probability) => {
    let least = 1;
    sorted.forEach((other, index) => {
      if (other >= probability) least = Math.min(least, (other * m) / (index + 1));
    });
    return least;
  });
}

interface Wallet {
  bets: FairBet[];
  excess: number;
}

/** A wallet of `markets` bets at random prices and sizes, each won with its price plus `skill`. */
function simulatedWallet(random: () => number, markets: number, skill: number): Wallet {
  const bets: FairBet[] = [];
  let excess = 0;
  for (let market = 0; market < markets; market++) {
    const price = 0.02 + random() * 0.96;
    const tokens = 10 + random() * 200;
    const won = random() < Math.min(1, price + skill) ? 1 : 0;
    bets.push({ tokens, price });
    excess += tokens * (won - price);
  }
  return { bets, excess };
}

function discoveries(wallets: readonly Wallet[]): number[] {
  const qValues = benjaminiHochberg(wallets.map((wallet) => luckProbability(wallet.bets, wallet.excess)));
  return qValues.flatMap((q, index) => (q <= SKILL_FALSE_DISCOVERY_RATE ? [index] : []));
}

describe('the luck probability', () => {
  it('never understates the exact chance of luck (every outcome of a few bets enumerated)', () => {
    const bet = fc.record({
      tokens: fc.double({ min: 0.5, max: 500, noNaN: true }),
      price: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
    });
    fc.assert(
      fc.property(
        fc.array(bet, { minLength: 1, maxLength: 10 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (bets, share) => {
          const most = bets.reduce((sum, one) => sum + one.tokens * (1 - one.price), 0);
          const excess = share * most;
          const bound = luckProbability(bets, excess);
          expect(bound).toBeLessThanOrEqual(1);
          expect(bound + 1e-12).toBeGreaterThanOrEqual(exactTail(bets, excess));
        },
      ),
    );
  });

  it('is 1 at no excess, the chance that all won at the most, and falls as the excess grows', () => {
    const bets = [
      { tokens: 100, price: 0.4 },
      { tokens: 50, price: 0.5 },
    ];
    expect(luckProbability(bets, 0)).toBe(1);
    expect(luckProbability(bets, -10)).toBe(1);
    expect(luckProbability(bets, 100 * 0.6 + 50 * 0.5)).toBeCloseTo(0.4 * 0.5, 12);
    expect(luckProbability([], 5)).toBe(1);
    const falling = [10, 30, 50, 70].map((excess) => luckProbability(bets, excess));
    expect([...falling].sort((a, b) => b - a)).toEqual(falling);
    // A 60-token win at 0.4 and a 25-token loss at 0.5 leave 35: less likely than the mean, but not rare.
    expect(luckProbability(bets, 35)).toBeGreaterThan(exactTail(bets, 35));
    expect(exactTail(bets, 35)).toBeCloseTo(0.4, 12);
  });
});

describe('Benjamini–Hochberg q-values', () => {
  it('equal the definition computed apart, in the order given', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 60 }), (probabilities) => {
        const qValues = benjaminiHochberg(probabilities);
        const reference = referenceQValues(probabilities);
        expect(qValues).toHaveLength(probabilities.length);
        qValues.forEach((q, index) => {
          expect(q).toBeCloseTo(reference[index]!, 12);
        });
      }),
    );
    // Ranked 0.01, 0.03, 0.04, 0.5 of 4: 0.04, 0.06, 0.0533…, 0.5, each the least from its rank up.
    const worked = benjaminiHochberg([0.01, 0.04, 0.03, 0.5]);
    [0.04, 0.16 / 3, 0.16 / 3, 0.5].forEach((q, index) => {
      expect(worked[index]).toBeCloseTo(q, 12);
    });
  });
});

describe('a population of traders', () => {
  it('of coin-flippers: at most the stated rate of seeds tell anyone from luck', () => {
    const seeds = 40;
    let seedsWithDiscoveries = 0;
    for (let seed = 1; seed <= seeds; seed++) {
      const random = mulberry32(seed * 7919);
      const wallets = Array.from({ length: 300 }, () => simulatedWallet(random, 20 + Math.floor(random() * 60), 0));
      // Every discovery among coin-flippers is false: the false-discovery proportion is 1 or 0.
      if (discoveries(wallets).length > 0) seedsWithDiscoveries += 1;
    }
    expect(seedsWithDiscoveries / seeds).toBeLessThanOrEqual(SKILL_FALSE_DISCOVERY_RATE);
  });

  it('with a skilled minority planted among coin-flippers: finds most of it, and few others', () => {
    const random = mulberry32(104_729);
    const skilled = 25;
    const wallets = Array.from({ length: 500 }, (_, index) =>
      index < skilled ? simulatedWallet(random, 100, 0.3) : simulatedWallet(random, 20 + Math.floor(random() * 60), 0),
    );
    const found = discoveries(wallets);
    const truePositives = found.filter((index) => index < skilled).length;
    expect(truePositives).toBeGreaterThanOrEqual(20);
    expect((found.length - truePositives) / found.length).toBeLessThanOrEqual(SKILL_FALSE_DISCOVERY_RATE);
  });
});
