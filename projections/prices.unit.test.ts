import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bucketCount,
  FIDELITY_LADDER,
  finestFittingFidelity,
  pinToWinner,
  planChart,
  snapToLadder,
  type MarketTimes,
  type SeriesPoint,
} from './prices.ts';

const limits = { defaultPoints: 300, minPoints: 20, maxPoints: 600 };
const market = (overrides: Partial<MarketTimes> = {}): MarketTimes => ({
  conditionId: '0x',
  titleStartTs: 1_767_556_800,
  outcome1: 'Up',
  outcome2: 'Down',
  firstTradeTs: 1_767_550_000,
  lastTradeTs: 1_767_557_700,
  resolution: null,
  ...overrides,
});

describe('fidelity ladder choice', () => {
  it('takes the finest rung whose buckets fit, and the budget is never exceeded', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_600_000_000, max: 1_900_000_000 }),
        fc.integer({ min: 0, max: 550 * 86_400 }),
        fc.integer({ min: 20, max: 600 }),
        (from, span, points) => {
          const fidelity = finestFittingFidelity(from, from + span, points);
          expect(FIDELITY_LADDER).toContain(fidelity);
          expect(bucketCount(from, from + span, fidelity)).toBeLessThanOrEqual(points);
          const finer = FIDELITY_LADDER.filter((rung) => rung < fidelity);
          for (const rung of finer) expect(bucketCount(from, from + span, rung)).toBeGreaterThan(points);
        },
      ),
    );
  });

  it('never plans more buckets than points, even for windows longer than the coarsest rung can hold', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_500_000_000, max: 1_900_000_000 }),
        fc.integer({ min: 0, max: 20 * 365 * 86_400 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.option(fc.integer({ min: 0, max: 10_000_000 })),
        (from, span, points, resolution) => {
          const plan = planChart(
            market(),
            { fromTs: from, toTs: from + span, points, resolution: resolution ?? undefined },
            limits,
            0,
          );
          expect(FIDELITY_LADDER).toContain(plan.fidelity);
          expect(plan.points).toBeGreaterThanOrEqual(20);
          expect(plan.points).toBeLessThanOrEqual(600);
          expect(bucketCount(plan.fromTs, plan.toTs, plan.fidelity)).toBeLessThanOrEqual(plan.points);
          expect(plan.toTs).toBe(from + span);
        },
      ),
    );
  });

  it("keeps any requested window inside the store's epoch range (0 .. 2^32 − 1), within the budget", () => {
    const anyTs = fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
    fc.assert(
      fc.property(
        fc.option(anyTs, { nil: undefined }),
        fc.option(anyTs, { nil: undefined }),
        fc.option(anyTs, { nil: undefined }),
        (fromTs, toTs, resolution) => {
          const plan = planChart(market(), { fromTs, toTs, resolution }, limits, 1_767_560_000);
          expect(plan.fromTs).toBeGreaterThanOrEqual(0);
          expect(plan.toTs).toBeGreaterThanOrEqual(plan.fromTs);
          expect(plan.toTs).toBeLessThanOrEqual(2 ** 32 - 1);
          expect(bucketCount(plan.fromTs, plan.toTs, plan.fidelity)).toBeLessThanOrEqual(plan.points);
        },
      ),
      { numRuns: 500 },
    );
    expect(planChart(market(), { fromTs: -100, toTs: -5 }, limits, 1_767_560_000)).toMatchObject({
      fromTs: 0,
      toTs: 0,
    });
  });

  it('snaps a forced resolution to the smallest rung at least as wide', () => {
    expect(snapToLadder(1)).toBe(1);
    expect(snapToLadder(0)).toBe(1);
    expect(snapToLadder(6)).toBe(15);
    expect(snapToLadder(60)).toBe(60);
    expect(snapToLadder(61)).toBe(300);
    expect(snapToLadder(10_000_000)).toBe(2_592_000);
  });

  it('plans a chart: default window from the title start, clamped points, forced rung only when it fits', () => {
    const plan = planChart(market(), {}, limits, 1_800_000_000);
    expect(plan).toMatchObject({ fromTs: 1_767_556_800, toTs: 1_767_557_700, points: 300 });
    expect(plan.fidelity).toBe(5); // 900 s in ≤ 300 buckets
    expect(planChart(market(), { points: 5 }, limits, 0).points).toBe(20);
    expect(planChart(market(), { points: 5000 }, limits, 0).points).toBe(600);
    expect(planChart(market(), { resolution: 3600 }, limits, 0).fidelity).toBe(3600);
    expect(planChart(market(), { resolution: 1 }, limits, 0).fidelity).toBe(5); // 1 s would be 901 buckets
    expect(planChart(market({ titleStartTs: null }), {}, limits, 0).fromTs).toBe(1_767_550_000);
    const resolved = market({ resolution: { winnerTokenSide: 1, ts: 1_767_558_000 } });
    expect(planChart(resolved, {}, limits, 0).toTs).toBe(1_767_558_000);
    expect(planChart(market(), { fromTs: 1_767_557_000 }, limits, 0)).toMatchObject({
      fromTs: 1_767_557_000,
      toTs: 1_767_557_700,
    });
  });
});

describe('full tape shaping', () => {
  it('ends a resolved market pinned at the winner level, after its last trade', () => {
    const rows: SeriesPoint[] = [
      [100, 0.4, 0.4, 0.5],
      [160, 0.9, 0.9, 0.9],
    ];
    expect(pinToWinner(rows, { winnerTokenSide: 1, ts: 150 }).at(-1)).toEqual([161, 1, 1, 1]);
    expect(pinToWinner(rows, { winnerTokenSide: 2, ts: 200 }).at(-1)).toEqual([200, 0, 0, 0]);
    expect(pinToWinner(rows, null)).toEqual(rows);
    expect(pinToWinner([[10, 1, 1, 1]], { winnerTokenSide: 1, ts: 20 })).toEqual([[10, 1, 1, 1]]);
  });
});
