/**
 * Real resolutions from the chain: a 50/50 split payout (numerators [1, 1], no winner) resolves the market,
 * values its tokens at 0.50 each, and names the winner "50/50"; fees paid are out of pnl but not of volume.
 * Checked against figures computed here by hand, through the in-process log.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { withPublisher } from '../roles/runtime.ts';
import { readCareer } from '../projections/careers.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { readMarketSummary } from '../projections/market-summary.ts';
import { readFullTape } from '../projections/prices.ts';
import { readMarketTimes } from './harness/prices.ts';
import { openStore, type Store } from '../projections/store.ts';
import { BASE_TS, makeConditionId, makeFill, makeLeg, makeMarket, makeTrade, makeWallet } from './factories.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

describe('split payouts and fees', () => {
  let store: Store | undefined;
  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('a 50/50 resolution: resolved, pnl at 0.50 per token (redeemed or not), winner "50/50"; fees net of pnl', async () => {
    const environment = testEnvironment(uniqueId('split'), PROCESS_DATA_DIR);
    delete (environment as Record<string, string | undefined>).KAFKA_BROKERS;
    const config = parseConfig(environment);
    const holder = makeWallet('split-holder');
    const redeemer = makeWallet('split-redeemer');
    const split = makeConditionId('split-50-50');
    const won = makeConditionId('split-won');
    const resolutionTs = BASE_TS + 900;

    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('markets', [
        makeMarket({ condition_id: split, outcome1: 'Yes', outcome2: 'No' }),
        makeMarket({ condition_id: won }),
      ]);
      await publisher.publish('fillsArchive', [
        // holder: 100 Yes at 0.30 (fee 0.50), 40 No at 0.60; keeps everything unredeemed
        makeFill({
          wallet: holder,
          condition_id: split,
          side: 'BUY',
          token_side: 1,
          price: 0.3,
          size_tokens: 100,
          usd: 30,
          fee_usd: 0.5,
          ts: BASE_TS + 10,
        }),
        makeFill({
          wallet: holder,
          condition_id: split,
          side: 'BUY',
          token_side: 2,
          price: 0.6,
          size_tokens: 40,
          usd: 24,
          ts: BASE_TS + 20,
        }),
        // redeemer: 50 Yes at 0.80, then sells 10 at 0.70 (fee 0.10), redeems the remaining 40 for 20.00
        makeFill({
          wallet: redeemer,
          condition_id: split,
          side: 'BUY',
          token_side: 1,
          price: 0.8,
          size_tokens: 50,
          usd: 40,
          ts: BASE_TS + 30,
        }),
        makeFill({
          wallet: redeemer,
          condition_id: split,
          side: 'SELL',
          token_side: 1,
          price: 0.7,
          size_tokens: 10,
          usd: 7,
          fee_usd: 0.1,
          ts: BASE_TS + 40,
        }),
        // a market with a winner, for the career figures: holder wins 10 at 0.50 (fee 0.25)
        makeFill({
          wallet: holder,
          condition_id: won,
          side: 'BUY',
          token_side: 1,
          price: 0.5,
          size_tokens: 10,
          usd: 5,
          fee_usd: 0.25,
          ts: BASE_TS + 50,
        }),
      ]);
      await publisher.publish('positions', [
        makeLeg({ wallet: redeemer, condition_id: split, kind: 'REDEEM', tokens: 20, usd: 20, ts: resolutionTs + 60 }),
      ]);
      await publisher.publish('trades', [
        makeTrade({ condition_id: split, token_side: 1, price: 0.55, ts: BASE_TS + 100, seq: 1 }),
      ]);
      await publisher.publish('markets', [
        {
          type: 'resolution',
          condition_id: split,
          winner_token_side: null,
          payout_numerators: [1, 1],
          ts: resolutionTs,
        },
        { type: 'resolution', condition_id: won, winner_token_side: 1, payout_numerators: [1, 0], ts: resolutionTs },
      ]);
    });

    store = await openStore(config.clickhouse);
    const holderPnl = -30 - 0.5 - 24 + 100 * 0.5 + 40 * 0.5; // 15.5
    const redeemerPnl = -40 + 7 - 0.1 + 20; // every remaining token redeemed: -13.1
    const { markets } = await readTraderMarkets(store, holder, { limit: 10 });
    const splitRow = markets.find((row) => row.condition_id === split)!;
    expect(splitRow).toMatchObject({ resolved: true, open: false, winner: '50/50', volume_usd: 54 });
    expect(splitRow.pnl_usd).toBeCloseTo(holderPnl, 9);
    expect(splitRow.market_value_usd).toBeUndefined();
    expect(markets.find((row) => row.condition_id === won)).toMatchObject({
      resolved: true,
      winner: expect.any(String),
    });

    const redeemerRow = (await readTraderMarkets(store, redeemer, { limit: 10 })).markets[0]!;
    expect(redeemerRow).toMatchObject({ resolved: true, winner: '50/50', volume_usd: 47 });
    expect(redeemerRow.pnl_usd).toBeCloseTo(redeemerPnl, 9);

    const detail = (await readMarketSummary(store, redeemer, split))!;
    expect(detail.market).toMatchObject({
      resolved: true,
      open: false,
      winner: '50/50',
      outcome: 'Yes',
      outcome2: 'No',
    });
    expect(detail.summary.won).toBe(false);
    // all redeemed: nothing held any more on either side
    for (const side of detail.summary.sides) expect(side.net_tokens).toBeCloseTo(0, 9);
    const holderDetail = (await readMarketSummary(store, holder, split))!;
    expect(holderDetail.summary.won).toBe(true);

    const career = await readCareer(store, holder, false);
    expect(career.resolved_total).toBe(2);
    expect(career.winrate).toBe(1);
    expect(career.volume_usd).toBeCloseTo(59, 9);
    expect(career.career_pnl_usd).toBeCloseTo(holderPnl + (10 - 5 - 0.25), 9);

    // The tape ends pinned at the level token 1 paid: 0.50.
    expect((await readFullTape(store, (await readMarketTimes(store, split))!)).at(-1)?.slice(1)).toEqual([
      0.5, 0.5, 0.5,
    ]);
  });
});
