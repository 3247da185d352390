/**
 * Price projections against brute-force references written plainly here: for random trade streams
 * (both token sides, shuffled within and across insert blocks, duplicates), the per-second tape, every
 * rung of the ladder and the change-only full tape equal the reference exactly, and every level served
 * is one a trade printed (or, at the very end of a resolved market's tape, the winner level). Then the
 * sampled chart's contract, and a 53-day market's full tape.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import {
  FIDELITY_LADDER,
  readFullTape,
  readRawTicks,
  readRung,
  readSampledChart,
  readTraderMarket,
  type SeriesPoint,
  type TickPosition,
} from '../projections/prices.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeTrade, makeWallet } from './factories.ts';
import { refreshRollups } from '../projections/rollups.ts';
import { createTestContext, type TestContext } from './harness/context.ts';
import { landEvents } from './harness/land.ts';
import { readMarketTimes } from './harness/prices.ts';

type Trade = EventInputOf<'trades'>;

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext('prices');
});
afterAll(async () => {
  await context.cleanup();
});

const SETTINGS = { burstGapSeconds: 900, exactAboveUsd: 1000 };

/** Lands each block as one insert, and recomputes what it staged, the way a worker would write after write. */
async function land<T extends 'trades' | 'fillsArchive' | 'markets'>(
  topicId: T,
  blocks: readonly (readonly EventInputOf<T>[])[],
): Promise<void> {
  for (const block of blocks)
    await refreshRollups(context.store, await landEvents(context.store, topicId, block), SETTINGS);
}

/** UP space, computed plainly. */
const up = (trade: Trade) => (trade.token_side === 1 ? trade.price : Math.round((1 - trade.price) * 1e10) / 1e10);

/** The reference: bucket every distinct trade, last = the greatest (ts, seq, price), lo/hi = extremes. */
function referenceRung(trades: readonly Trade[], fidelity: number): SeriesPoint[] {
  const distinct = new Map(trades.map((trade) => [`${trade.tx_hash}:${trade.log_index}`, trade]));
  const buckets = new Map<number, Trade[]>();
  for (const trade of distinct.values()) {
    const bucket = Math.floor(trade.ts / fidelity) * fidelity;
    buckets.set(bucket, [...(buckets.get(bucket) ?? []), trade]);
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => a - b)
    .map(([bucket, inBucket]) => {
      let last = inBucket[0]!;
      for (const trade of inBucket) {
        const better =
          trade.ts !== last.ts
            ? trade.ts > last.ts
            : trade.seq !== last.seq
              ? trade.seq > last.seq
              : up(trade) > up(last);
        if (better) last = trade;
      }
      const prices = inBucket.map(up);
      return [bucket, up(last), Math.min(...prices), Math.max(...prices)];
    });
}

function referenceChangeOnly(rows: readonly SeriesPoint[]): SeriesPoint[] {
  const out: SeriesPoint[] = [];
  for (const row of rows) {
    const previous = out[out.length - 1];
    if (previous && previous[1] === row[1] && previous[2] === row[2] && previous[3] === row[3]) continue;
    out.push(row);
  }
  return out;
}

const tradeStream = fc
  .array(
    fc.record({
      second: fc.integer({ min: 0, max: 400 }),
      tick: fc.integer({ min: 1, max: 99 }),
      tokenSide: fc.constantFrom(1 as const, 2 as const),
      duplicate: fc.boolean(),
    }),
    { minLength: 1, maxLength: 120 },
  )
  .chain((specs) =>
    fc.tuple(
      fc.constant(specs),
      fc.shuffledSubarray(
        specs.map((_, index) => index),
        { minLength: specs.length, maxLength: specs.length },
      ),
      fc.integer({ min: 1, max: 3 }),
    ),
  );

describe('price projections', () => {
  it('per-second tape, every rung and the change-only tape equal the reference; every level was printed', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(tradeStream, async ([specs, order, blockCount]) => {
        run += 1;
        const conditionId = makeConditionId(`prop-${run}-${Math.random()}`);
        // seq follows production order (block and log position), whatever order the inserts arrive in.
        const trades: Trade[] = specs.map((spec, index) =>
          makeTrade({
            condition_id: conditionId,
            ts: BASE_TS + spec.second,
            seq: 1000 + index,
            token_side: spec.tokenSide,
            price: spec.tick / 100,
            size_tokens: 5,
          }),
        );
        const arrival = order.map((index) => trades[index]!);
        const duplicates = specs.flatMap((spec, index) => (spec.duplicate ? [trades[index]!] : []));
        const stream = [...arrival, ...duplicates];
        const blocks = Array.from({ length: blockCount }, (_, block) =>
          stream.filter((_, index) => index % blockCount === block),
        );
        await land('trades', blocks);

        const printed = new Set(trades.map(up));
        const from = BASE_TS;
        const to = BASE_TS + 400;
        for (const fidelity of FIDELITY_LADDER) {
          const rung = await readRung(context.store, conditionId, fidelity, from, to);
          expect(rung, `rung ${fidelity}`).toEqual(referenceRung(trades, fidelity));
          for (const [, last, lo, hi] of rung)
            for (const level of [last, lo, hi]) expect(printed.has(level)).toBe(true);
        }
        const times = await readMarketTimes(context.store, conditionId);
        const tape = await readFullTape(context.store, times!);
        expect(tape).toEqual(referenceChangeOnly(referenceRung(trades, 1)));
      }),
      { numRuns: 25 },
    );
  });

  it('a late trade that makes a second equal to the one before deletes that second from the change-only tape', async () => {
    const conditionId = makeConditionId(`late-equal-${Math.random()}`);
    const trade = (second: number, seq: number, price: number) =>
      makeTrade({ condition_id: conditionId, ts: BASE_TS + second, seq, token_side: 1, price, size_tokens: 5 });
    // Second 0 prints 0.5; second 1 prints 0.5 then 0.6: two changes, (0.5, 0.5, 0.5) and (0.6, 0.5, 0.6).
    const first = [trade(0, 10, 0.5), trade(1, 20, 0.5), trade(1, 21, 0.6)];
    await land('trades', [first]);
    const times = await readMarketTimes(context.store, conditionId);
    expect(await readFullTape(context.store, times!)).toEqual([
      [BASE_TS, 0.5, 0.5, 0.5],
      [BASE_TS + 1, 0.6, 0.5, 0.6],
    ]);
    // A late print in second 0 (0.6, after the 0.5): second 0 becomes (0.6, 0.5, 0.6), the same as second 1,
    // which is then no change any more and must be gone from the tape.
    const late = [trade(0, 11, 0.6)];
    await land('trades', [late]);
    const tape = await readFullTape(context.store, (await readMarketTimes(context.store, conditionId))!);
    expect(tape).toEqual([[BASE_TS, 0.6, 0.5, 0.6]]);
    expect(tape).toEqual(referenceChangeOnly(referenceRung([...first, ...late], 1)));
  });

  it('keeps exactly the rungs the read side knows (FIDELITY_LADDER)', async () => {
    const rungs = await context.store.query<{ fidelity: number }>(
      'SELECT DISTINCT fidelity FROM {db:Identifier}.price_ladder ORDER BY fidelity',
    );
    expect(rungs.map((row) => row.fidelity)).toEqual([...FIDELITY_LADDER]);
  });

  it('ends a resolved market’s full tape pinned at the winner level, and nothing else is unprinted', async () => {
    const conditionId = makeConditionId('pinned');
    const trades = [0.4, 0.55, 0.6].map((price, index) =>
      makeTrade({ condition_id: conditionId, ts: BASE_TS + index * 10, seq: index + 1, price }),
    );
    await land('trades', [trades]);
    await land('markets', [
      [
        makeMarket({ condition_id: conditionId }),
        { type: 'resolution', condition_id: conditionId, winner_token_side: 2, ts: BASE_TS + 900 },
      ],
    ]);
    const tape = await readFullTape(context.store, (await readMarketTimes(context.store, conditionId))!);
    expect(tape.at(-1)).toEqual([BASE_TS + 900, 0, 0, 0]);
    expect(
      tape
        .slice(0, -1)
        .flatMap(([, ...levels]) => levels)
        .every((level) => [0.4, 0.55, 0.6].includes(level)),
    ).toBe(true);
  });

  it('sampled chart: within the point budget, on the ladder, anchored at the title start; fills complete', async () => {
    const conditionId = makeConditionId('chart');
    const wallet = makeWallet('chart-trader');
    const titleStart = BASE_TS + 3600;
    await land('markets', [
      [makeMarket({ condition_id: conditionId, title_start_ts: titleStart, end_ts: titleStart + 900 })],
    ]);
    // Trading starts an hour before the window the title names and runs through it.
    const trades = Array.from({ length: 4500 }, (_, index) =>
      makeTrade({ condition_id: conditionId, ts: BASE_TS + index, seq: index, price: (((index * 37) % 97) + 1) / 100 }),
    );
    await land('trades', [trades.slice(0, 2000), trades.slice(2000)]);
    const fills = Array.from({ length: 700 }, (_, index) =>
      makeFill({
        wallet,
        condition_id: conditionId,
        ts: titleStart + (index % 900),
        price: 0.5,
        size_tokens: 1,
        usd: 0.5,
      }),
    );
    await land('fillsArchive', [fills]);
    // The trader's market (its header and the market's times) and the chart as the service reads them.
    const market = (await readTraderMarket(context.store, wallet, conditionId))!;
    const limits = { defaultPoints: 300, minPoints: 20, maxPoints: 600 };
    const chart = (request: Parameters<typeof readSampledChart>[3], nowSeconds: number) =>
      readSampledChart(context.store, wallet, market, request, limits, nowSeconds);

    const { series: byDefault, fills: allFills } = await chart({}, BASE_TS + 10_000);
    expect(byDefault.from_ts).toBe(titleStart);
    expect(byDefault.to_ts).toBe(BASE_TS + 4499);
    expect(FIDELITY_LADDER).toContain(byDefault.fidelity);
    expect(byDefault.points.length).toBeLessThanOrEqual(300);
    expect(byDefault.points[0]![0]).toBeGreaterThanOrEqual(
      Math.floor(titleStart / byDefault.fidelity) * byDefault.fidelity,
    );
    expect(byDefault.points).toEqual(
      referenceRung(trades, byDefault.fidelity).filter(
        ([ts]) => ts >= Math.floor(titleStart / byDefault.fidelity) * byDefault.fidelity,
      ),
    );

    for (const points of [20, 57, 600, 5000, 1]) {
      const { series } = await chart({ points, fromTs: BASE_TS, toTs: BASE_TS + 4499 }, 0);
      expect(series.points.length).toBeLessThanOrEqual(Math.min(600, Math.max(20, points)));
      expect(FIDELITY_LADDER).toContain(series.fidelity);
    }
    const { series: forced } = await chart({ resolution: 50, fromTs: BASE_TS, toTs: BASE_TS + 4499 }, 0);
    expect(forced.fidelity).toBe(60);

    expect(allFills).toHaveLength(700);
    expect(allFills[0]).toEqual({
      ts: titleStart,
      side: 'BUY',
      price: 0.5,
      token_side: 1,
      outcome: 'Up',
      size_tokens: 1,
      usd: 0.5,
    });
  });

  it('pages raw ticks forward by keyset, without gaps or repeats', async () => {
    const conditionId = makeConditionId('ticks');
    const trades = Array.from({ length: 250 }, (_, index) =>
      makeTrade({
        condition_id: conditionId,
        ts: BASE_TS + Math.floor(index / 3),
        seq: index,
        price: ((index % 90) + 5) / 100,
      }),
    );
    await land('trades', [trades, trades.slice(0, 40)]);
    const seen: number[] = [];
    let after: TickPosition | undefined;
    for (let page = 0; page < 10; page++) {
      const result = await readRawTicks(context.store, conditionId, { after, limit: 64 });
      seen.push(...result.ticks.map((tick) => tick.price));
      if (!result.next) break;
      after = result.next;
    }
    expect(seen).toEqual(trades.map((trade) => trade.price));
    const windowed = await readRawTicks(context.store, conditionId, { windowStartTs: BASE_TS + 50, limit: 1000 });
    expect(windowed.ticks).toHaveLength(trades.filter((trade) => trade.ts >= BASE_TS + 50).length);
    expect(windowed.next).toBeNull();
  });

  it('serves the full tape of a 53-day market with about 27,000 distinct rows in full', async () => {
    const conditionId = makeConditionId('long');
    // 27,000 trades spread over 53 days on a 0.01-tick random walk, every one moving the price.
    let price = 50;
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const trades = Array.from({ length: 27_000 }, (_, index) => {
      price = Math.min(99, Math.max(1, price + (random() < 0.5 ? -1 : 1)));
      return makeTrade({
        condition_id: conditionId,
        ts: BASE_TS + Math.floor((index * 53 * 86_400) / 27_000),
        seq: index,
        price: price / 100,
      });
    });
    for (let start = 0; start < trades.length; start += 9000) await land('trades', [trades.slice(start, start + 9000)]);
    const times = (await readMarketTimes(context.store, conditionId))!;
    const tape = await readFullTape(context.store, times);
    const reference = referenceChangeOnly(referenceRung(trades, 1));
    expect(reference.length).toBeGreaterThan(26_000);
    expect(tape).toEqual(reference);
  });
});
