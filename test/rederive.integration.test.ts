/**
 * The repair of an embedded restart (projections/rederive.ts): a landing row whose views never received
 * it (a SIGKILL between the landing insert's commit and its views') is derived again. The crash is
 * reproduced exactly: a fill and a trade land normally, then every row their views made is deleted and the
 * rollups are put back as they were before them. Deriving the tail again restores the read copy, the
 * marks, the staging and, after the refresh, the trader's figures: equal to the store where nothing was
 * lost, without a second raw row in any landing table; deriving twice changes nothing more.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../config.ts';
import { createLogger } from '../log.ts';
import { readTraderFills } from '../projections/fills.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { rederivedBatches, rederiveViewsSince } from '../projections/rederive.ts';
import { refreshRollups } from '../projections/rollups.ts';
import { openStore, type Store } from '../projections/store.ts';
import { withPublisher } from '../roles/runtime.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeTrade, makeWallet } from './factories.ts';
import { inProcessConfig } from './harness/api.ts';

const wallet = makeWallet('rederive');
const markets = [makeConditionId('rederive-a'), makeConditionId('rederive-b')];
const early = [
  makeFill({ wallet, condition_id: markets[0]!, side: 'BUY', price: 0.4, size_tokens: 100, ts: BASE_TS + 10 }),
  makeFill({ wallet, condition_id: markets[1]!, side: 'BUY', price: 0.3, size_tokens: 50, ts: BASE_TS + 20 }),
];
const earlyTrades = markets.map((conditionId, index) =>
  makeTrade({ condition_id: conditionId, price: 0.45, ts: BASE_TS + 30 + index, seq: 10 + index }),
);
// The tail: what landed just before the crash.
const TAIL_TS = BASE_TS + 600;
const lateFill = makeFill({
  wallet,
  condition_id: markets[0]!,
  side: 'SELL',
  price: 0.7,
  size_tokens: 40,
  ts: TAIL_TS,
});
const lateTrade = makeTrade({ condition_id: markets[0]!, price: 0.8, ts: TAIL_TS + 1, seq: 99 });

async function land(config: Config, publish: Parameters<typeof withPublisher>[2]): Promise<void> {
  await withPublisher(config, createLogger('error'), publish);
}

describe('deriving the views of a crash tail again', () => {
  let reference: Store;
  let crashed: Store;
  let config: Config;

  beforeAll(async () => {
    const referenceConfig = inProcessConfig('rederive_reference');
    config = inProcessConfig('rederive_crashed');
    for (const each of [referenceConfig, config]) {
      await land(each, async ({ publisher }) => {
        await publisher.publish(
          'markets',
          markets.map((conditionId) => makeMarket({ condition_id: conditionId })),
        );
        await publisher.publish('fillsArchive', early);
        await publisher.publish('trades', earlyTrades);
      });
    }
    reference = await openStore(referenceConfig.clickhouse);
    crashed = await openStore(config.clickhouse);
    // The crashed store's rollup before the tail, to put back after the views' rows are removed.
    const before = await crashed.query<Record<string, unknown>>(
      'SELECT * FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String}',
      { wallet },
    );
    for (const each of [referenceConfig, config]) {
      await land(each, async ({ publisher }) => {
        await publisher.publish('fillsArchive', [lateFill]);
        await publisher.publish('trades', [lateTrade]);
      });
    }
    // The crash: the landing rows of the tail committed, none of their views' rows.
    const sync = 'SETTINGS mutations_sync = 2';
    await crashed.command(`ALTER TABLE {db:Identifier}.fills_v2 DELETE WHERE ts >= {ts:UInt32} ${sync}`, {
      ts: TAIL_TS,
    });
    await crashed.command(`ALTER TABLE {db:Identifier}.fills_by_time DELETE WHERE ts >= {ts:UInt32} ${sync}`, {
      ts: TAIL_TS,
    });
    await crashed.command(
      `ALTER TABLE {db:Identifier}.trader_markets_v2 DELETE WHERE wallet = {wallet:String} ${sync}`,
      { wallet },
    );
    await crashed.insert('trader_markets_v2', before);
    // The marks of the tail's trade: the market's marks as they were (rebuilt from the trades before it).
    await crashed.command(
      `ALTER TABLE {db:Identifier}.market_marks_v2 DELETE WHERE condition_id = {market:String} ${sync}`,
      { market: markets[0]! },
    );
    await crashed.command(
      `INSERT INTO {db:Identifier}.market_marks_v2 (condition_id, last_up_price, last_ts, first_ts)
       SELECT condition_id, argMaxState(up_price, (ts, seq)), max(ts), min(ts) FROM {db:Identifier}.trades
       WHERE condition_id = {market:String} AND ts < {ts:UInt32} GROUP BY condition_id`,
      { market: markets[0]!, ts: TAIL_TS },
    );
  });

  afterAll(async () => {
    for (const store of [reference, crashed]) {
      await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
      await store?.close();
    }
  });

  const figures = async (store: Store) =>
    (await readTraderMarkets(store, wallet, { limit: 10 })).markets.map(
      ({ condition_id, fills_count, pnl_usd, volume_usd, market_value_usd }) => ({
        condition_id,
        fills_count,
        pnl_usd,
        volume_usd,
        market_value_usd,
      }),
    );
  const rawRows = async (store: Store, table: string) =>
    (await store.query<{ n: number }>(`SELECT count() AS n FROM {db:Identifier}.${table}`))[0]!.n;

  it('the crash lost the tail in the projections, not in the landing tables', async () => {
    expect(await figures(crashed)).not.toEqual(await figures(reference));
    for (const table of ['fills', 'trades'])
      expect(await rawRows(crashed, table), table).toBe(await rawRows(reference, table));
    for (const table of ['fills_v2', 'fills_by_time'])
      expect(await rawRows(crashed, table), table).toBe((await rawRows(reference, table)) - 1);
  });

  it('derives the views again: the read copy, the marks and, refreshed, the trader figures equal the reference; the landing tables keep one row each', async () => {
    const landingBefore = { fills: await rawRows(crashed, 'fills'), trades: await rawRows(crashed, 'trades') };
    const fed = await rederiveViewsSince(crashed, TAIL_TS - 1, 'rederive-test-1');
    expect(fed).toEqual(
      expect.arrayContaining([
        'fills_v2_from_fills',
        'fills_by_time_from_fills',
        'rollup_keys_from_fills',
        'market_marks_v2_from_trades',
      ]),
    );
    await refreshRollups(crashed, rederivedBatches('rederive-test-1'), config.whales);
    expect(await figures(crashed)).toEqual(await figures(reference));
    expect({ fills: await rawRows(crashed, 'fills'), trades: await rawRows(crashed, 'trades') }).toEqual(landingBefore);
    // The time-ordered copy of the fills is whole again: the tail's fill is on the wallet's page.
    expect(await rawRows(crashed, 'fills_by_time')).toBe(await rawRows(reference, 'fills_by_time'));
    expect(await readTraderFills(crashed, wallet, { limit: 100 })).toEqual(
      await readTraderFills(reference, wallet, { limit: 100 }),
    );
    // No scratch table or view is left behind.
    const scratch = await crashed.query(
      'SELECT name FROM system.tables WHERE database = {d:String} AND name LIKE {p:String}',
      { d: crashed.database, p: '\\_rederive\\_%' },
    );
    expect(scratch).toEqual([]);
    // Deriving again (same tail, a new token) changes no answer.
    await rederiveViewsSince(crashed, TAIL_TS - 1, 'rederive-test-2');
    await refreshRollups(crashed, rederivedBatches('rederive-test-2'), config.whales);
    expect(await figures(crashed)).toEqual(await figures(reference));
  });

  it('refuses a token that could not be a deduplication token', async () => {
    await expect(rederiveViewsSince(crashed, 0, "x' , y = '1")).rejects.toThrow(/outside/);
  });
});
