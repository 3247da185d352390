/**
 * Neg-risk conversions in the projections: the archive publishes a NegRiskAdapter `PositionsConverted` as
 * CONVERT_OUT legs (NO tokens of the converted questions out, the released USDC spread over them) and
 * CONVERT_IN legs (YES tokens of the other questions in). Through the in-process log, each market row's pnl
 * and holdings equal figures computed here by hand, and the per-question figures add up to what the
 * trader's NO tokens would have paid without converting.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { withPublisher } from '../roles/runtime.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { readMarketSummary } from '../projections/market-summary.ts';
import { openStore, type Store } from '../projections/store.ts';
import { BASE_TS, makeConditionId, makeFill, makeLeg, makeMarket, makeTxHash, makeWallet } from './factories.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

describe('neg-risk conversions', () => {
  let store: Store | undefined;
  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('NO out and YES in move holdings and cash exactly; value is conserved across the market’s questions', async () => {
    const environment = testEnvironment(uniqueId('convert'), PROCESS_DATA_DIR);
    delete (environment as Record<string, string | undefined>).KAFKA_BROKERS;
    const config = parseConfig(environment);
    const one = makeWallet('convert-one');
    const two = makeWallet('convert-two');
    const [q0, q1, q2] = [makeConditionId('nr-q0'), makeConditionId('nr-q1'), makeConditionId('nr-q2')];
    const convertedAt = BASE_TS + 100;
    const leg = (
      wallet: string,
      condition_id: string,
      kind: 'CONVERT_OUT' | 'CONVERT_IN',
      tokens: number,
      usd: number,
      tx: string,
    ) => makeLeg({ wallet, condition_id, kind, tokens, usd, tx_hash: makeTxHash(tx), log_index: 7, ts: convertedAt });

    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish(
        'markets',
        [q0, q1, q2].map((condition_id, index) =>
          makeMarket({ condition_id, title: `Who wins? Candidate ${index}`, outcome1: 'Yes', outcome2: 'No' }),
        ),
      );
      await publisher.publish('fillsArchive', [
        // one: 10 NO of q0 at 0.60, then converts them (k = 1: no USDC) into 10 YES of q1 and of q2
        makeFill({
          wallet: one,
          condition_id: q0,
          side: 'BUY',
          token_side: 2,
          price: 0.6,
          size_tokens: 10,
          usd: 6,
          ts: BASE_TS + 10,
        }),
        // two: 4 NO of q0 at 0.50 and 4 NO of q1 at 0.70, converts both (k = 2: 4 USDC) into 4 YES of q2
        makeFill({
          wallet: two,
          condition_id: q0,
          side: 'BUY',
          token_side: 2,
          price: 0.5,
          size_tokens: 4,
          usd: 2,
          ts: BASE_TS + 20,
        }),
        makeFill({
          wallet: two,
          condition_id: q1,
          side: 'BUY',
          token_side: 2,
          price: 0.7,
          size_tokens: 4,
          usd: 2.8,
          ts: BASE_TS + 30,
        }),
      ]);
      await publisher.publish('positions', [
        leg(one, q0, 'CONVERT_OUT', 10, 0, 'convert-one'),
        leg(one, q1, 'CONVERT_IN', 10, 0, 'convert-one'),
        leg(one, q2, 'CONVERT_IN', 10, 0, 'convert-one'),
        leg(two, q0, 'CONVERT_OUT', 4, 2, 'convert-two'),
        leg(two, q1, 'CONVERT_OUT', 4, 2, 'convert-two'),
        leg(two, q2, 'CONVERT_IN', 4, 0, 'convert-two'),
      ]);
      // q1 wins: its YES pays 1, q0's and q2's NO pay 1.
      await publisher.publish('markets', [
        { type: 'resolution', condition_id: q0, winner_token_side: 2, payout_numerators: [0, 1], ts: BASE_TS + 900 },
        { type: 'resolution', condition_id: q1, winner_token_side: 1, payout_numerators: [1, 0], ts: BASE_TS + 900 },
        { type: 'resolution', condition_id: q2, winner_token_side: 2, payout_numerators: [0, 1], ts: BASE_TS + 900 },
      ]);
    });

    store = await openStore(config.clickhouse);
    const pnl = async (wallet: string) =>
      new Map(
        (await readTraderMarkets(store!, wallet, { limit: 10 })).markets.map((row) => [row.condition_id, row.pnl_usd]),
      );
    // one: q0 paid 6 and holds no NO any more; q1's 10 YES pay 10; q2's 10 YES pay 0.
    const onePnl = await pnl(one);
    expect(onePnl.get(q0)).toBeCloseTo(-6, 9);
    expect(onePnl.get(q1)).toBeCloseTo(10, 9);
    expect(onePnl.get(q2)).toBeCloseTo(0, 9);
    // Without converting, 10 NO of q0 would have paid 10 (q0 lost): the same +4 in all.
    expect([...onePnl.values()].reduce((sum, value) => sum + value, 0)).toBeCloseTo(10 - 6, 9);
    // two: q0: -2 + 2 (its share of the USDC); q1: -2.8 + 2; q2: 4 YES that pay 0.
    const twoPnl = await pnl(two);
    expect(twoPnl.get(q0)).toBeCloseTo(0, 9);
    expect(twoPnl.get(q1)).toBeCloseTo(-0.8, 9);
    expect(twoPnl.get(q2)).toBeCloseTo(0, 9);
    // Without converting: 4 NO of q0 pay 4, 4 NO of q1 pay 0, for 4.80 paid.
    expect([...twoPnl.values()].reduce((sum, value) => sum + value, 0)).toBeCloseTo(4 - 4.8, 9);
    // Holdings: one's NO of q0 are gone, its YES of q2 are there.
    const q0Sides = (await readMarketSummary(store, one, q0))!.summary.sides;
    const q2Sides = (await readMarketSummary(store, one, q2))!.summary.sides;
    expect(q0Sides.reduce((sum, side) => sum + Math.abs(side.net_tokens), 0)).toBeCloseTo(0, 9);
    expect(q2Sides.reduce((sum, side) => sum + side.net_tokens, 0)).toBeCloseTo(10, 9);
  });
});
