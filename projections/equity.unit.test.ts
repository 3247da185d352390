import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { drawdownStats, windowStart } from './equity.ts';
import type { EquityPoint } from './upstream-history.ts';

describe('equity windows', () => {
  const now = Date.UTC(2026, 10, 21, 15, 30) / 1000;

  it('cut at the right instants', () => {
    expect(windowStart('24h', now)).toBe(now - 86_400);
    expect(windowStart('7d', now)).toBe(now - 7 * 86_400);
    expect(windowStart('30d', now)).toBe(now - 30 * 86_400);
    expect(windowStart('1y', now)).toBe(now - 365 * 86_400);
    expect(windowStart('ytd', now)).toBe(Date.UTC(2026, 0, 1) / 1000);
    expect(windowStart('ytd', Date.UTC(2027, 0, 1, 0, 0, 5) / 1000)).toBe(Date.UTC(2027, 0, 1) / 1000);
    expect(windowStart('all', now)).toBe(0);
  });
});

describe('drawdown', () => {
  it('equals a plain reference: peak, low, and the worst fall below the running maximum', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -100_000, max: 100_000 }), { maxLength: 80 }), (values) => {
        const points: EquityPoint[] = values.map((value, index) => [index, value / 10]);
        const stats = drawdownStats(points);
        const pnl = points.map((point) => point[1]);
        let worst = 0;
        for (let i = 0; i < pnl.length; i++) {
          const before = Math.max(...pnl.slice(0, i + 1));
          worst = Math.max(worst, before - pnl[i]!);
        }
        expect(stats.peak).toBe(pnl.length ? Math.max(...pnl) : null);
        expect(stats.low).toBe(pnl.length ? Math.min(...pnl) : null);
        expect(stats.max_drawdown).toBe(worst);
        expect(stats.max_drawdown).toBeGreaterThanOrEqual(0);
      }),
    );
  });
});
