/**
 * A recomputation of a trader's market always outranks the one before it. When the archive's copy of a
 * fill replaces the upstream's copy (same fill id, higher source rank), the fill count stays the same;
 * the version of the recomputed trader_markets row must still be higher, or the reads (the newest
 * version of each key, without FINAL) may serve the upstream's figures until a merge folds the rows.
 * Each source lands in its own ingest (its own refresh), and the reads run before any OPTIMIZE.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { readCareer } from '../projections/careers.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { readMarketSummary } from '../projections/market-summary.ts';
import { openStore, type Store } from '../projections/store.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeMarket, makeWallet } from './factories.ts';
import { inProcessConfig } from './harness/api.ts';

describe('versions of recomputed trader markets', () => {
  let store: Store | undefined;
  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('the archive copy of a fill, landing after its upstream copy, wins in every read without a merge', async () => {
    const config = inProcessConfig('versionties');
    const log = createLogger('error');
    const wallet = makeWallet('version-ties');
    const markets = [0, 1, 2, 3, 4].map((index) => makeConditionId(`version-ties-${index}`));
    // One fill per market, as the upstream states it (no fee) and as the chain does (with the fee).
    const upstreamCopies = markets.map((conditionId) =>
      makeFill({ wallet, condition_id: conditionId, side: 'BUY', price: 0.4, size_tokens: 100 }),
    );
    const archiveCopies = upstreamCopies.map((fill) => ({
      ...fill,
      log_index: fill.log_index + 1,
      fee_usd: 1.5,
      role: 'maker' as const,
    }));

    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish(
        'markets',
        markets.map((conditionId) => makeMarket({ condition_id: conditionId })),
      );
      await publisher.publish('fillsUpstream', upstreamCopies);
    });
    store = await openStore(config.clickhouse);
    const before = await readTraderMarkets(store, wallet, { limit: 10 });
    // The upstream's figures first: cash flow −40 per market (no fee).
    expect(before.markets.map((market) => market.pnl_usd)).toEqual(markets.map(() => -40));

    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish('fillsArchive', archiveCopies);
    });
    // Two recomputations of each market are stored, neither folded yet.
    const [stored] = await store.query<{ rows: number }>(
      'SELECT count() AS rows FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String}',
      { wallet },
    );
    expect(stored!.rows).toBe(2 * markets.length);

    const after = await readTraderMarkets(store, wallet, { limit: 10 });
    expect(after.markets.map((market) => market.pnl_usd)).toEqual(markets.map(() => -41.5));
    for (const conditionId of markets) {
      expect((await readMarketSummary(store, wallet, conditionId))!.market.pnl_usd, conditionId).toBe(-41.5);
    }
    // No trade marks these markets: the open result is the cash flow alone.
    const career = await readCareer(store, wallet, false);
    expect(career.fills_count).toBe(markets.length);
    expect(career.pnl_marked_usd).toBeCloseTo(-41.5 * markets.length, 9);
  });
});
