/**
 * A market's Up price over its life. An underlying quantity X follows a random walk; the Up price is
 * the probability that X ends at or above zero, Φ(X / √(variance still to come)). That is a
 * martingale that drifts to 0 or 1 as the end nears, and the winner is the sign of X at the end, so the
 * resolution always agrees with the final prices.
 */
import { Rng, keyOf, normalCdf } from './random.ts';
import type { MarketSpec } from './schedule.ts';

export interface PricePath {
  openTs: number;
  stepSeconds: number;
  /** Up price in cents (1..99) per step. */
  upCents: Uint8Array;
  /** 1 when Up (token 1) wins. */
  winner: 1 | 2;
}

interface WalkShape {
  stepSeconds: number;
  steps: number;
  /** Variance of each step's increment. */
  stepVariance: (step: number) => number;
  /** Where X starts, in units of the total standard deviation (0 = a coin flip). */
  startZ: (rng: Rng) => number;
  /** Chance per step of a news jump, and its size in units of the remaining standard deviation. */
  jumpChance: number;
  jumpScale: number;
}

function walkShape(spec: MarketSpec): WalkShape {
  const duration = spec.endTs - spec.openTs;
  switch (spec.kind) {
    case 'crypto5':
    case 'crypto15':
    case 'crypto60':
      return { stepSeconds: 1, steps: duration, stepVariance: () => 1, startZ: () => 0, jumpChance: 0, jumpScale: 0 };
    case 'politics':
      return {
        stepSeconds: 60,
        steps: Math.ceil(duration / 60),
        stepVariance: () => 1,
        startZ: (rng) => Math.max(-1.6, Math.min(1.6, rng.normal() * 0.8)),
        jumpChance: 1 / 3000,
        jumpScale: 0.4,
      };
    case 'sports': {
      const stepSeconds = 10;
      const preGameSteps = Math.floor(((spec.gameStartTs ?? spec.openTs) - spec.openTs) / stepSeconds);
      return {
        stepSeconds,
        steps: Math.ceil(duration / stepSeconds),
        // Before the game only opinions move, and little.
        stepVariance: (step) => (step < preGameSteps ? 0.0025 : 1),
        startZ: (rng) => Math.max(-1.2, Math.min(1.2, rng.normal() * 0.5)),
        jumpChance: 1 / 150,
        jumpScale: 0.5,
      };
    }
  }
}

function toCents(probability: number): number {
  return Math.min(99, Math.max(1, Math.round(probability * 100)));
}

export function buildPricePath(seed: number, spec: MarketSpec): PricePath {
  const shape = walkShape(spec);
  const rng = new Rng(keyOf(seed, 'path', spec.key));
  const remaining = new Float64Array(shape.steps);
  let variance = 0;
  for (let step = shape.steps - 1; step >= 0; step--) {
    remaining[step] = variance;
    variance += shape.stepVariance(step);
  }
  const upCents = new Uint8Array(shape.steps);
  let x = shape.startZ(rng) * Math.sqrt(variance);
  for (let step = 0; step < shape.steps; step++) {
    const stepVariance = shape.stepVariance(step);
    x += Math.sqrt(stepVariance) * rng.normal();
    const stillToCome = remaining[step]!;
    if (shape.jumpChance > 0 && rng.next() < shape.jumpChance)
      x += rng.normal() * shape.jumpScale * Math.sqrt(stillToCome);
    upCents[step] = stillToCome > 0 ? toCents(normalCdf(x / Math.sqrt(stillToCome))) : x >= 0 ? 99 : 1;
  }
  return { openTs: spec.openTs, stepSeconds: shape.stepSeconds, upCents, winner: x >= 0 ? 1 : 2 };
}

/** The Up price in cents at a second of trading (clamped to the path's ends). */
export function upCentsAt(path: PricePath, ts: number): number {
  const step = Math.floor((ts - path.openTs) / path.stepSeconds);
  const clamped = Math.min(path.upCents.length - 1, Math.max(0, step));
  return path.upCents[clamped]!;
}
