/**
 * Whale flow against a brute-force reference: random accumulations with pauses around the burst gap
 * (both sides of it, exactly on it), buys and sells, duplicated fills; the service's bursts, window
 * totals, ranking and coverage clamp equal the reference. Then the equity curve's windows and the
 * upstream's offline state.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { upNormalizedPrice } from '../ingest/contract/primitives.ts';
import { readEquitySeries } from '../projections/equity.ts';
import { refreshRollups } from '../projections/rollups.ts';
import { readWhaleFlow, type WhaleRow } from '../projections/whales.ts';
import { makeConditionId, makeFill, makeMarket, makeWallet } from './factories.ts';
import { createTestContext, type TestContext } from './harness/context.ts';
import { landEvents } from './harness/land.ts';

type Fill = EventInputOf<'fillsArchive'>;

const GAP = 900;
const EXACT_ABOVE = 1000;
const SETTINGS = { burstGapSeconds: GAP, exactAboveUsd: EXACT_ABOVE };
/** In the future: the accumulations' three-day TTL must not expire test data. */
const FUTURE = Math.floor(Date.now() / 1000) + 30 * 86_400;

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext('whales');
});
afterAll(async () => {
  await context.cleanup();
});

/** Lands events as the pipeline does; returns the insert tokens (the rollup batches they staged). */
const land = <T extends 'fillsArchive' | 'markets' | 'upstreamEquity' | 'upstreamStatus' | 'upstreamProfiles'>(
  topicId: T,
  events: readonly EventInputOf<T>[],
) => landEvents(context.store, topicId, events);

interface Expected extends Omit<WhaleRow, 'name' | 'title' | 'outcome'> {
  ranking: number;
}

/** The reference, plainly: group distinct fills by accumulation, walk them in time order. */
function reference(fills: readonly Fill[], nowSeconds: number, windowHours: number): Expected[] {
  const distinct = new Map(fills.map((fill) => [`${fill.wallet}:${fill.tx_hash}:${fill.log_index}`, fill]));
  const groups = new Map<string, Fill[]>();
  for (const fill of distinct.values()) {
    const key = `${fill.wallet}|${fill.condition_id}|${fill.token_side}`;
    groups.set(key, [...(groups.get(key) ?? []), fill]);
  }
  const cutoff = nowSeconds - windowHours * 3600;
  const out: Expected[] = [];
  for (const group of groups.values()) {
    group.sort((a, b) => a.ts - b.ts || (`${a.tx_hash}:${a.log_index}` < `${b.tx_hash}:${b.log_index}` ? -1 : 1));
    let start = 0;
    for (let i = 1; i < group.length; i++) if (group[i]!.ts - group[i - 1]!.ts >= GAP) start = i;
    const burst = group.slice(start);
    const net = (fill: Fill) => (fill.side === 'BUY' ? fill.usd : -fill.usd);
    const inWindow = group.filter((fill) => fill.ts >= cutoff);
    const buys = inWindow.filter((fill) => fill.side === 'BUY');
    const buyTokens = buys.reduce((sum, fill) => sum + fill.size_tokens, 0);
    const last = group[group.length - 1]!;
    const recent = group.filter((fill) => fill.ts + 86_400 >= last.ts);
    const burstBuys = burst.filter((fill) => fill.side === 'BUY').reduce((sum, fill) => sum + fill.usd, 0);
    const recentBuys = recent.filter((fill) => fill.side === 'BUY').reduce((sum, fill) => sum + fill.usd, 0);
    if (Math.max(burstBuys, recentBuys) < EXACT_ABOVE || last.ts < cutoff) continue;
    out.push({
      wallet: last.wallet,
      condition_id: last.condition_id,
      token_side: last.token_side as 1 | 2,
      burst_usd: burst.reduce((sum, fill) => sum + net(fill), 0),
      burst_started_at: burst[0]!.ts,
      burst_fills: burst.length,
      window_usd: inWindow.reduce((sum, fill) => sum + net(fill), 0),
      window_fills: inWindow.length,
      avg_price:
        buyTokens > 0
          ? buys.reduce(
              (sum, fill) => sum + upNormalizedPrice(fill.token_side as 1 | 2, fill.price) * fill.size_tokens,
              0,
            ) / buyTokens
          : null,
      last_fill_at: last.ts,
      last_price: upNormalizedPrice(last.token_side as 1 | 2, last.price),
      ranking: 0,
    });
  }
  return out;
}

const accumulationSpec = fc.record({
  wallet: fc.integer({ min: 0, max: 2 }),
  market: fc.integer({ min: 0, max: 1 }),
  tokenSide: fc.constantFrom(1 as const, 2 as const),
  fills: fc.array(
    fc.record({
      gap: fc.oneof(fc.constantFrom(0, 1, GAP - 1, GAP, GAP + 1, 2 * GAP), fc.integer({ min: 0, max: 4000 })),
      buy: fc.boolean(),
      usd: fc.integer({ min: 1, max: 6000 }),
      tick: fc.integer({ min: 1, max: 99 }),
    }),
    { minLength: 1, maxLength: 25 },
  ),
});

describe('whale flow', () => {
  it('bursts, window totals, ranking and the coverage clamp equal the reference', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(accumulationSpec, { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 24 }),
        fc.constantFrom('burst' as const, 'window' as const),
        fc.boolean(),
        async (specs, windowHours, by, duplicate) => {
          run += 1;
          // Each run lives two days after the previous one: earlier runs fall out of every window.
          const start = FUTURE + run * 2 * 86_400;
          const fills: Fill[] = [];
          for (const spec of specs) {
            let ts = start;
            for (const fillSpec of spec.fills) {
              ts += fillSpec.gap;
              fills.push(
                makeFill({
                  wallet: makeWallet(`whale-${run}-${spec.wallet}`),
                  condition_id: makeConditionId(`whale-${run}-${spec.market}`),
                  token_side: spec.tokenSide,
                  side: fillSpec.buy ? 'BUY' : 'SELL',
                  price: fillSpec.tick / 100,
                  size_tokens: Math.round((fillSpec.usd / (fillSpec.tick / 100)) * 100) / 100,
                  usd: fillSpec.usd,
                  ts,
                }),
              );
            }
          }
          const batches = await land('fillsArchive', fills);
          if (duplicate) batches.push(...(await land('fillsArchive', fills.slice(0, Math.ceil(fills.length / 2)))));
          await refreshRollups(context.store, batches, SETTINGS);

          const nowSeconds = Math.max(...fills.map((fill) => fill.ts)) + 600;
          const flow = await readWhaleFlow(
            context.store,
            { minUsd: 0, by, windowHours, limit: 500, nowSeconds },
            { exactAboveUsd: EXACT_ABOVE, burstGapSeconds: GAP },
          );
          expect(flow.min_usd).toBe(EXACT_ABOVE); // clamped up to the coverage threshold
          expect(flow.coverage.exact_above_usd).toBe(EXACT_ABOVE);

          const expected = reference(fills, nowSeconds, windowHours)
            .map((row) => ({ ...row, ranking: by === 'window' ? row.window_usd : row.burst_usd }))
            .filter((row) => row.ranking >= EXACT_ABOVE - 1e-9)
            .sort(
              (a, b) =>
                b.ranking - a.ranking ||
                b.last_fill_at - a.last_fill_at ||
                (a.wallet + a.condition_id + a.token_side < b.wallet + b.condition_id + b.token_side ? -1 : 1),
            );
          expect(flow.rows.map((row) => `${row.wallet}|${row.condition_id}|${row.token_side}`)).toEqual(
            expected.map((row) => `${row.wallet}|${row.condition_id}|${row.token_side}`),
          );
          for (const [index, want] of expected.entries()) {
            const got = flow.rows[index]!;
            expect(got.burst_usd).toBeCloseTo(want.burst_usd, 6);
            expect(got.burst_started_at).toBe(want.burst_started_at);
            expect(got.burst_fills).toBe(want.burst_fills);
            expect(got.window_usd).toBeCloseTo(want.window_usd, 6);
            expect(got.window_fills).toBe(want.window_fills);
            if (want.avg_price === null) expect(got.avg_price).toBeNull();
            else expect(got.avg_price).toBeCloseTo(want.avg_price, 9);
            expect(got.last_fill_at).toBe(want.last_fill_at);
            expect(got.last_price).toBeCloseTo(want.last_price, 10);
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it('names the trader and the market of each row, and ranks by the requested measure with a minimum', async () => {
    const wallet = makeWallet('named-whale');
    const market = makeConditionId('named-market');
    const start = FUTURE - 10 * 86_400;
    await land('markets', [
      makeMarket({
        condition_id: market,
        title: 'Will it rain?',
        outcome1: 'Yes',
        outcome2: 'No',
        title_start_ts: null,
      }),
    ]);
    await land('upstreamProfiles', [
      { wallet, name: 'BigFish', pnl: 1, pnl_realized: 1, pnl_unrealized: 0, portfolio_value: 1, as_of: start },
    ]);
    const batches = await land('fillsArchive', [
      makeFill({
        wallet,
        condition_id: market,
        token_side: 2,
        side: 'BUY',
        price: 0.2,
        size_tokens: 100_000,
        usd: 20_000,
        ts: start,
      }),
      makeFill({
        wallet,
        condition_id: market,
        token_side: 2,
        side: 'BUY',
        price: 0.25,
        size_tokens: 40_000,
        usd: 10_000,
        ts: start + 60,
      }),
    ]);
    await refreshRollups(context.store, batches, SETTINGS);
    const coverage = { exactAboveUsd: EXACT_ABOVE, burstGapSeconds: GAP };
    const flow = await readWhaleFlow(
      context.store,
      { minUsd: 10_000, by: 'burst', windowHours: 24, limit: 50, nowSeconds: start + 120 },
      coverage,
    );
    expect(flow.rows.map((row) => [row.wallet, row.last_fill_at, row.burst_usd])).toEqual([
      [wallet, start + 60, 30_000],
    ]);
    expect(flow.rows[0]).toMatchObject({
      wallet,
      name: 'BigFish',
      condition_id: market,
      title: 'Will it rain?',
      token_side: 2,
      outcome: 'No',
      burst_usd: 30_000,
      burst_fills: 2,
      window_usd: 30_000,
    });
    expect(flow.rows[0]!.avg_price).toBeCloseTo((0.8 * 100_000 + 0.75 * 40_000) / 140_000, 10);
    const tooSmall = await readWhaleFlow(
      context.store,
      { minUsd: 40_000, by: 'burst', windowHours: 24, limit: 50, nowSeconds: start + 120 },
      coverage,
    );
    expect(tooSmall.rows).toHaveLength(0);
    const stale = await readWhaleFlow(
      context.store,
      { minUsd: 10_000, by: 'window', windowHours: 1, limit: 50, nowSeconds: start + 7200 },
      coverage,
    );
    expect(stale.rows).toHaveLength(0);
  });
});

describe('equity series', () => {
  it('cuts windows, computes peak, low and drawdown, and reports the upstream offline when it is', async () => {
    const wallet = makeWallet('equity');
    const now = FUTURE;
    const points = [
      [now - 400 * 86_400, 5],
      [now - 40 * 86_400, 100],
      [now - 20 * 86_400, 60],
      [now - 3 * 86_400, 150],
      [now - 86_400 - 1, 90],
      [now - 86_400 + 1, 120],
      [now - 3600, 80],
      [now - 60, 110],
    ] as const;
    await land(
      'upstreamEquity',
      points.map(([ts, pnl_usd]) => ({ wallet, ts, pnl_usd })),
    );
    await land('upstreamStatus', [{ ts: now - 30, state: 'online' as const }]);
    const options = { nowSeconds: now, upstreamStaleAfterSeconds: 300 };

    const day = await readEquitySeries(context.store, wallet, '24h', options);
    expect(day.series).toEqual([
      [now - 86_400 + 1, 120],
      [now - 3600, 80],
      [now - 60, 110],
    ]);
    expect(day).toMatchObject({
      peak: 120,
      low: 80,
      max_drawdown: 40,
      model: 'upstream_profile',
      as_of: now - 60,
      upstream: { state: 'online' },
    });
    const month = await readEquitySeries(context.store, wallet, '30d', options);
    expect(month.series.map(([ts]) => ts)).toEqual(points.filter(([ts]) => ts >= now - 30 * 86_400).map(([ts]) => ts));
    expect(month).toMatchObject({ peak: 150, low: 60, max_drawdown: 70 });
    const all = await readEquitySeries(context.store, wallet, 'all', options);
    expect(all.series).toHaveLength(points.length);
    expect(all).toMatchObject({ peak: 150, low: 5, max_drawdown: 70 });

    // Heartbeats stopped: offline. An explicit offline heartbeat: offline.
    expect(
      (await readEquitySeries(context.store, wallet, '24h', { ...options, nowSeconds: now + 600 })).upstream.state,
    ).toBe('offline');
    await land('upstreamStatus', [{ ts: now - 10, state: 'offline' as const, detail: 'HTTP 503' }]);
    expect((await readEquitySeries(context.store, wallet, '24h', options)).upstream).toEqual({
      state: 'offline',
      heartbeat_at: now - 10,
    });
  });
});
