/**
 * The career rollup holds every figure of the card: a small, hand-checked career (a win, a loss, an
 * open market with a mark, an open market without one), ingested through the in-process log.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { withPublisher } from '../roles/runtime.ts';
import { readCareer, ZERO_CAREER } from '../projections/careers.ts';
import { openStore, type Store } from '../projections/store.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

describe('career statistics', () => {
  let store: Store | undefined;
  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('computes every card figure, marks included, and a zeroed card for an unknown wallet', async () => {
    const environment = testEnvironment(uniqueId('careers'), PROCESS_DATA_DIR);
    delete (environment as Record<string, string | undefined>).KAFKA_BROKERS;
    const config = parseConfig(environment);
    const wallet = makeWallet('career');
    const [won, lost, marked, unmarked] = ['won', 'lost', 'marked', 'unmarked'].map((label) =>
      makeConditionId(`career-${label}`),
    ) as [string, string, string, string];
    const markTs = BASE_TS + 500;

    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish(
        'markets',
        [won, lost, marked, unmarked].map((conditionId) => makeMarket({ condition_id: conditionId })),
      );
      await publisher.publish('fillsArchive', [
        makeFill({
          wallet,
          condition_id: won,
          side: 'BUY',
          token_side: 1,
          price: 0.4,
          size_tokens: 100,
          usd: 40,
          ts: BASE_TS + 10,
        }),
        makeFill({
          wallet,
          condition_id: lost,
          side: 'BUY',
          token_side: 1,
          price: 0.6,
          size_tokens: 50,
          usd: 30,
          ts: BASE_TS + 20,
        }),
        makeFill({
          wallet,
          condition_id: marked,
          side: 'BUY',
          token_side: 2,
          price: 0.25,
          size_tokens: 200,
          usd: 50,
          ts: BASE_TS + 30,
        }),
        makeFill({
          wallet,
          condition_id: unmarked,
          side: 'BUY',
          token_side: 1,
          price: 0.5,
          size_tokens: 10,
          usd: 5,
          ts: BASE_TS + 40,
        }),
      ]);
      // The marked market's last print is a token-2 trade at 0.30: Up is at 0.70.
      await publisher.publish('trades', [
        makeTrade({ condition_id: marked, token_side: 1, price: 0.55, ts: markTs - 10, seq: 1 }),
        makeTrade({ condition_id: marked, token_side: 2, price: 0.3, ts: markTs, seq: 2 }),
      ]);
      await publisher.publish('markets', [makeResolution(won, 1), makeResolution(lost, 2)]);
    });

    store = await openStore(config.clickhouse);
    const career = await readCareer(store, wallet, false);
    expect(career).toEqual({
      markets_total: 4,
      resolved_total: 2,
      winrate: 0.5,
      volume_usd: 125,
      first_seen: BASE_TS + 10,
      last_seen: BASE_TS + 40,
      avg_entry_price: expect.closeTo(125 / 360, 12),
      avg_win_usd: 60, // 100 tokens at 1.00 for 40
      avg_loss_usd: -30,
      open_markets: 2,
      unmarked_markets: 1,
      marked_at: markTs,
      open_value_usd: expect.closeTo(200 * 0.3, 9), // 200 Down tokens with Up at 0.70
      career_pnl_usd: 30,
      pnl_marked_usd: expect.closeTo(30 - 50 - 5 + 60, 9),
      fills_count: 4,
    });
    expect(await readCareer(store, makeWallet('never-seen'), false)).toEqual(ZERO_CAREER);
  });
});
