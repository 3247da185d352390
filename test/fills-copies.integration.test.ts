/**
 * A fills page reads each fill's kept copy (the highest source rank) and filters on that copy's ts. The
 * upstream and the archive state the same fill (same fill id) and may disagree on its second: the page
 * must place the fill where the archive's copy puts it, whatever the upstream's copy says, on every page
 * (`since`, the keyset `after`). A filter applied to the copies before choosing the kept one would let
 * the upstream's later second through a `since` the fill does not reach.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { readTraderFills } from '../projections/fills.ts';
import { openStore, type Store } from '../projections/store.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeMarket, makeWallet } from './factories.ts';
import { inProcessConfig } from './harness/api.ts';

describe('fills pages over copies of a fill that disagree on its second', () => {
  let store: Store | undefined;
  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it("place the fill at the archive copy's second on every page, never at the upstream's", async () => {
    const config = inProcessConfig('fillcopies');
    const log = createLogger('error');
    const wallet = makeWallet('fill-copies');
    const market = makeConditionId('fill-copies');
    const T = 1_767_300_000;
    // The fill both sources state: the upstream 20 s late, the archive at the block's second.
    const upstreamCopy = makeFill({ wallet, condition_id: market, ts: T + 20, price: 0.3, size_tokens: 10 });
    const archiveCopy = { ...upstreamCopy, ts: T, log_index: upstreamCopy.log_index + 1, role: 'maker' as const };
    // Fills around it, one source each: before T, between T and T + 20, after T + 20.
    const others = [T - 5, T + 10, T + 30].map((ts) =>
      makeFill({ wallet, condition_id: market, ts, price: 0.5, size_tokens: 2 }),
    );

    // Each source lands in its own ingest (its own insert: one insert folds the copies it holds).
    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish('markets', [makeMarket({ condition_id: market })]);
      await publisher.publish('fillsUpstream', [upstreamCopy]);
    });
    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish('fillsArchive', [archiveCopy, ...others]);
    });
    store = await openStore(config.clickhouse);
    // Both copies are stored (no merge has folded them): the read chooses.
    const [stored] = await store.query<{ rows: number }>(
      'SELECT count() AS rows FROM {db:Identifier}.fills_v2 WHERE wallet = {wallet:String}',
      { wallet },
    );
    expect(stored!.rows).toBe(5);

    const seconds = async (page: Parameters<typeof readTraderFills>[2]) =>
      (await readTraderFills(store!, wallet, page)).fills.map((fill) => fill.ts);
    // Every page: the fill once, at T.
    expect(await seconds({ limit: 10 })).toEqual([T - 5, T, T + 10, T + 30]);
    expect(await seconds({ limit: 10, since: T })).toEqual([T, T + 10, T + 30]);
    // A `since` past T: the fill is not on the page, though the upstream's copy says T + 20.
    expect(await seconds({ limit: 10, since: T + 1 })).toEqual([T + 10, T + 30]);
    expect(await seconds({ limit: 10, since: T + 15 })).toEqual([T + 30]);
    // The keyset: after the fill at T + 10, nothing of it again.
    const first = await readTraderFills(store, wallet, { limit: 3 });
    expect(first.fills.map((fill) => fill.ts)).toEqual([T - 5, T, T + 10]);
    expect(first.next).not.toBeNull();
    expect(await seconds({ limit: 10, after: first.next! })).toEqual([T + 30]);
    // The kept copy's values: the archive's fill (its second), stated once.
    const atT = (await readTraderFills(store, wallet, { limit: 10, since: T })).fills[0]!;
    expect(atT).toMatchObject({ ts: T, condition_id: market, side: 'BUY', size_tokens: 10 });
  });
});
