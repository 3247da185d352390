/**
 * The fills page read in time order (migration 0014, `fills_by_time`) answers exactly what the page over
 * every copy of the wallet's fills answers: each fill once, as its kept copy (the highest source rank) at
 * that copy's second, in (ts, condition_id, fill_id) order, from `since`, after the keyset, within a history
 * depth. The expected pages come from a model of the fills in this file, not from the store.
 *
 * The data set is built to hit every way a copy can be placed: fills from the archive alone, from the
 * upstream alone, from both at the same second (the demo world's copies), from both with the upstream late
 * or early by up to five minutes (the archive's copy is kept: its second), the same copy landed twice, and
 * many fills in one second. The copies land in separate inserts, in an order of their own, so that the
 * engine has not folded them.
 *
 * Then: a busy wallet's page reads its window in order, however long its history (EXPLAIN's plan), and a
 * page whose window is crowded with copies that are not kept falls back to the read over all copies and is
 * still exact.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { fillId } from '../ingest/contract/primitives.ts';
import { readTraderFills, type FillPosition } from '../projections/fills.ts';
import { refreshRollups } from '../projections/rollups.ts';
import { BASE_TS, makeConditionId, makeFill, makeWallet, mulberry32 } from './factories.ts';
import { createTestContext, type TestContext } from './harness/context.ts';
import { landEvents } from './harness/land.ts';

type Fill = EventInputOf<'fillsArchive'>;

/** What the page shows of a fill: its kept copy's second, its market and id. */
interface ModelFill {
  ts: number;
  conditionId: string;
  fillId: string;
  usd: number;
}

const W = makeWallet('fills-by-time');
const MARKETS = Array.from({ length: 6 }, (_unused, index) => makeConditionId(`fills-by-time-${index}`));
const FILLS = 420;

/** The fills of W in every placement of copies, with the inserts they land in (by source and round). */
function dataSet() {
  const next = mulberry32(20_261_127);
  const archive: Fill[][] = [[], [], []];
  const upstream: Fill[][] = [[], [], []];
  const model: ModelFill[] = [];
  /** Copies at another second than their fill's kept copy: separate rows of fills_by_time that no merge folds. */
  let elsewhere = 0;
  for (let index = 0; index < FILLS; index++) {
    // Seconds with several fills: 420 fills over ~150 seconds.
    const ts = BASE_TS + Math.floor(next() * 150) * 7;
    const fill = makeFill({
      wallet: W,
      condition_id: MARKETS[Math.floor(next() * MARKETS.length)]!,
      ts,
      side: next() < 0.5 ? 'BUY' : 'SELL',
      token_side: next() < 0.5 ? 1 : 2,
      price: Math.round(next() * 98 + 1) / 100,
      size_tokens: Math.round(next() * 5000 + 100) / 100,
    });
    const round = () => Math.floor(next() * 3);
    const placement = next();
    // Same fill id for both sources: the upstream's log index is synthetic (primitives.fillId ignores it).
    const upstreamCopy = (shift: number): Fill => ({
      ...fill,
      ts: fill.ts + shift,
      log_index: fill.log_index + 1000,
      name: 'upstream name',
    });
    if (placement < 0.45) {
      archive[round()]!.push(fill);
      model.push({ ts, conditionId: fill.condition_id, fillId: fillId(fill), usd: fill.usd });
    } else if (placement < 0.6) {
      upstream[round()]!.push(fill);
      model.push({ ts, conditionId: fill.condition_id, fillId: fillId(fill), usd: fill.usd });
    } else if (placement < 0.8) {
      archive[round()]!.push(fill);
      upstream[round()]!.push(upstreamCopy(0));
      model.push({ ts, conditionId: fill.condition_id, fillId: fillId(fill), usd: fill.usd });
    } else if (placement < 0.95) {
      // The sources disagree on the second: the archive's is kept.
      const shift = (next() < 0.5 ? -1 : 1) * (1 + Math.floor(next() * 300));
      archive[round()]!.push(fill);
      upstream[round()]!.push(upstreamCopy(shift));
      elsewhere += 1;
      model.push({ ts, conditionId: fill.condition_id, fillId: fillId(fill), usd: fill.usd });
    } else {
      // The same copy landed twice (a replay of exported files).
      archive[0]!.push(fill);
      archive[2]!.push(fill);
      model.push({ ts, conditionId: fill.condition_id, fillId: fillId(fill), usd: fill.usd });
    }
  }
  return { archive, upstream, model, elsewhere };
}

describe('the fills page read in time order', () => {
  let context: TestContext;
  let model: ModelFill[] = [];

  beforeAll(async () => {
    context = await createTestContext('fills-by-time');
    const data = dataSet();
    // The order the copies land in: upstream round 1, archive round 0, upstream round 0, archive 2, archive 1, upstream 2.
    const inserts: [keyof Pick<typeof data, 'archive' | 'upstream'>, number][] = [
      ['upstream', 1],
      ['archive', 0],
      ['upstream', 0],
      ['archive', 2],
      ['archive', 1],
      ['upstream', 2],
    ];
    const batches: string[] = [];
    for (const [source, round] of inserts) {
      const fills = data[source][round]!;
      if (fills.length > 0)
        batches.push(
          ...(await landEvents(context.store, source === 'archive' ? 'fillsArchive' : 'fillsUpstream', fills)),
        );
    }
    await refreshRollups(context.store, batches, context.config.whales);
    model = data.model.sort(
      (a, b) => a.ts - b.ts || compare(a.conditionId, b.conditionId) || compare(a.fillId, b.fillId),
    );
    // Every fill is distinct (its id); copies at the same second may have been folded by a merge, the others are all there.
    expect(new Set(model.map((fill) => `${fill.conditionId}|${fill.fillId}`)).size).toBe(FILLS);
    const [stored] = await context.store.query<{ copies: number }>(
      'SELECT count() AS copies FROM {db:Identifier}.fills_by_time WHERE wallet = {wallet:String}',
      { wallet: W },
    );
    expect(stored!.copies).toBeGreaterThanOrEqual(FILLS + data.elsewhere);
    expect(data.elsewhere).toBeGreaterThan(30);
  });
  afterAll(async () => {
    await context?.cleanup();
  });

  function compare(a: string, b: string): number {
    return a < b ? -1 : a > b ? 1 : 0;
  }

  /** The markets a history depth leaves visible: the most recent by last fill (then condition_id), descending. */
  function visibleMarkets(depth: number): Set<string> {
    const last = new Map<string, number>();
    for (const fill of model) last.set(fill.conditionId, Math.max(last.get(fill.conditionId) ?? 0, fill.ts));
    const order = [...last].sort((a, b) => b[1] - a[1] || compare(b[0], a[0])).map(([conditionId]) => conditionId);
    return new Set(depth < 0 ? order : order.slice(0, depth));
  }

  /** The model's page: kept copies from `since`, strictly after `after`, within the depth, the first `limit`. */
  function modelPage(since: number, after: FillPosition | undefined, limit: number, depth: number) {
    const visible = visibleMarkets(depth);
    const window = model.filter(
      (fill) =>
        visible.has(fill.conditionId) &&
        fill.ts >= since &&
        (!after ||
          fill.ts > after.ts ||
          (fill.ts === after.ts &&
            (compare(fill.conditionId, after.conditionId) > 0 ||
              (fill.conditionId === after.conditionId && compare(fill.fillId, after.fillId) > 0)))),
    );
    return { fills: window.slice(0, limit), more: window.length > limit };
  }

  it('answers every page as the model does: any since, any limit, any depth, following the keyset to the end', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 160 }),
        fc.oneof(fc.constant(0), fc.integer({ min: BASE_TS - 10, max: BASE_TS + 1100 })),
        fc.constantFrom(-1, 0, 1, 3, 6),
        async (limit, since, depth) => {
          let after: FillPosition | undefined;
          const walked: string[] = [];
          for (let pages = 0; pages < 500; pages++) {
            const page = await readTraderFills(context.store, W, { since, after, limit, historyDepth: depth });
            const expected = modelPage(since, after, limit, depth);
            const got = page.fills.map((fill) => `${fill.ts}|${fill.condition_id}|${fill.usd}`);
            expect(got, `page ${pages} (limit ${limit}, since ${since}, depth ${depth})`).toEqual(
              expected.fills.map((fill) => `${fill.ts}|${fill.conditionId}|${fill.usd}`),
            );
            walked.push(...got);
            if (!expected.more) {
              expect(page.next).toBeNull();
              break;
            }
            expect(page.next).not.toBeNull();
            after = page.next!;
          }
          const whole = modelPage(since, undefined, FILLS, depth).fills;
          expect(walked).toEqual(whole.map((fill) => `${fill.ts}|${fill.conditionId}|${fill.usd}`));
        },
      ),
      { numRuns: 40, seed: 20_261_127 },
    );
  });

  it('falls back to the read over all copies when copies that are not kept crowd the window, and is still exact', async () => {
    // 40 fills whose upstream copies come 1,000 s before the archive's: the first page from the earliest of
    // those seconds finds only copies that are not kept, more than its candidates.
    const wallet = makeWallet('fills-by-time-crowded');
    const market = MARKETS[0]!;
    const start = BASE_TS + 50_000;
    const fills = Array.from({ length: 40 }, (_unused, index) =>
      makeFill({ wallet, condition_id: market, ts: start + 1000 + index, size_tokens: 10 + index }),
    );
    await landEvents(
      context.store,
      'fillsUpstream',
      fills.map((fill) => ({ ...fill, ts: fill.ts - 1000, log_index: fill.log_index + 1 })),
    );
    await landEvents(context.store, 'fillsArchive', fills);
    const page = await readTraderFills(context.store, wallet, { since: start, limit: 5 });
    expect(page.fills.map((fill) => fill.ts)).toEqual([0, 1, 2, 3, 4].map((index) => start + 1000 + index));
    expect(page.next).toEqual({ ts: start + 1004, conditionId: market, fillId: expect.any(String) });
  });

  it("reads a busy wallet's window in key order: the plan reads in order, and a poll selects a few granules, not the history", async () => {
    const busy = makeWallet('fills-by-time-busy');
    const fills = Array.from({ length: 20_000 }, (_unused, index) =>
      makeFill({ wallet: busy, condition_id: MARKETS[index % MARKETS.length]!, ts: BASE_TS + index }),
    );
    await landEvents(context.store, 'fillsArchive', fills);
    const plan = await context.store.query<{ explain: string }>(
      `EXPLAIN actions = 1
       SELECT ts, condition_id, fill_id, source_rank, fill_row FROM {db:Identifier}.fills_by_time
       WHERE wallet = {wallet:String} AND ts >= {since:UInt32} ORDER BY ts, condition_id, fill_id LIMIT 218`,
      { wallet: busy, since: 0 },
    );
    expect(plan.map((row) => row.explain).join('\n')).toMatch(/Read type: InOrder/);
    const selected = async (table: string, since: number) =>
      (
        await context.store.query<{ rows: number }>(
          `EXPLAIN ESTIMATE SELECT ts FROM {db:Identifier}.${table} WHERE wallet = {wallet:String} AND ts >= {since:UInt32}`,
          {
            wallet: busy,
            since,
          },
        )
      ).reduce((sum, row) => sum + Number(row.rows), 0);
    // A poll of the last minute: at most two granules of 256 (the range may straddle one) in the one part.
    expect(await selected('fills_by_time', BASE_TS + 20_000 - 60)).toBeLessThanOrEqual(512);
    // The same filter on fills_v2 (sorted by market and fill id) selects the wallet's every fill.
    expect(await selected('fills_v2', BASE_TS + 20_000 - 60)).toBe(20_000);
    const page = await readTraderFills(context.store, busy, { since: BASE_TS + 20_000 - 60, limit: 100 });
    expect(page.fills.map((fill) => fill.ts)).toEqual(
      Array.from({ length: 60 }, (_unused, index) => BASE_TS + 20_000 - 60 + index),
    );
  });
});
