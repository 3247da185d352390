/**
 * Resolutions inferred from redemptions (issue 47), through the pipeline an operator uses: a real /activity
 * export (the smart-money fixture's activity_all.json: one wallet's buys in two markets and the redemption
 * of each at 1.00 per token, no resolution anywhere) is imported; the rollup refresh infers each market's
 * resolution from the redemption (the wallet bought only token 2 in each: token 2 won) and the card counts
 * both markets as resolved. The figures are worked by hand from the rows: a resolved market's result is the
 * tokens bought at 1.00 less what they cost, usdcSize included (the redemption paid for more tokens than
 * the export's buys: the rest were bought before it starts). Then the provider's stated resolution arrives:
 * the card is the same and each market counts once. Redemptions of two wallets that contradict each other
 * (both outcomes paid 1.00) resolve nothing and are dead-lettered with their reason.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importPolymarketExports } from '../ingest/sources/polymarket/index.ts';
import { createLogger } from '../log.ts';
import { readCareer } from '../projections/careers.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { readMarketSummary } from '../projections/market-summary.ts';
import { CONTRADICTION_TOPIC } from '../projections/resolution-inference.ts';
import { openStore, type Store } from '../projections/store.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeLeg, makeMarket, makeTxHash, makeWallet } from './factories.ts';
import { inProcessConfig } from './harness/api.ts';
import { polymarketData } from './harness/polymarket.ts';

const EXPORT = path.join(polymarketData, 'polymarket-smart-money-fixtures', 'activity_all.json');
const WALLET = '0x09b428f7c2b469786286214aa5c90dd9015f7320';
const SPAIN_ADVANCES = '0xecba7b1db1c698ab73b3572abfcde327a02b5112676144e049edcc1e1e0f5b0b';
const FRANCE_WINS = '0x20fac1c925b7a2fed6b3b2736f47a800b4d0d4001b9deaeb7b918868eb63d081';

// "France vs. Spain: Team to Advance": six buys of Spain (token 2).
const spainTokens = 402482.85 + 157454.72 + 1263392.49 + 364286.61 + 7917.59 + 300000;
const spainCost = 267876.215535 + 103671.785315 + 580841.15001 + 167369.274035 + 3660.89567 + 137915.5752;
// "Will France win on …?": 36 buys of No (token 2).
const noTokens =
  92.75 +
  116413.11 +
  13.698629 +
  131.33793 +
  19.178081 +
  70 +
  267.260272 +
  14.931505 +
  27.397259 +
  54.794519 +
  273.972601 +
  68.493149 +
  10.958903 +
  2.739725 +
  105 +
  27.397259 +
  8.109588 +
  61.452053 +
  35.616437 +
  205.479451 +
  54.794519 +
  13.698629 +
  65.205478 +
  82.191779 +
  547.945204 +
  2.739725 +
  136.9863 +
  68.876711 +
  5.479451 +
  73.972601 +
  198.520546 +
  10.328766 +
  136.9863 +
  54.794519 +
  13.698629 +
  2.739725;
const noCost =
  59.128125 +
  75558.474725 +
  8.69863 +
  83.727931 +
  12.178082 +
  44.45 +
  169.710273 +
  9.481506 +
  17.39726 +
  34.79452 +
  173.972602 +
  43.49315 +
  6.958904 +
  1.739726 +
  66.675 +
  17.39726 +
  5.149589 +
  39.022054 +
  22.616438 +
  130.479452 +
  34.79452 +
  8.69863 +
  41.405479 +
  52.19178 +
  347.945205 +
  1.739726 +
  86.986301 +
  43.736712 +
  3.479452 +
  46.972602 +
  126.060547 +
  6.558767 +
  86.986301 +
  34.79452 +
  8.69863 +
  1.739726;
const spainPnl = spainTokens - spainCost;
const noPnl = noTokens - noCost;
// The redemptions' times: when each market is first known to be resolved.
const SPAIN_REDEEMED_AT = 1784064509;
const NO_REDEEMED_AT = 1784063783;

const close = (value: number) => expect.closeTo(value, 4);

const stores: Store[] = [];
afterAll(async () => {
  for (const store of stores) {
    await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store.close();
  }
});

describe('an imported export with redemptions and no resolutions', () => {
  it('resolves the redeemed markets; the stated resolution, once it arrives, changes nothing', async () => {
    const config = inProcessConfig('inferred', { CARD_INCLUDE_V1: 'true' });
    const log = createLogger('error');
    const counts = await withPublisher(config, log, ({ publisher }) => importPolymarketExports([EXPORT], publisher));
    expect(counts).toMatchObject({ imported: 44, rejected: 0 });
    const store = await openStore(config.clickhouse);
    stores.push(store);

    const career = {
      markets_total: 2,
      resolved_total: 2,
      winrate: 1,
      avg_win_usd: close((spainPnl + noPnl) / 2),
      avg_loss_usd: null,
      open_markets: 0,
      open_value_usd: 0,
      career_pnl_usd: close(spainPnl + noPnl),
      pnl_marked_usd: close(spainPnl + noPnl),
      fills_count: 42,
    };
    const inferred = await readCareer(store, WALLET, true);
    expect(inferred).toMatchObject(career);
    expect(spainPnl + noPnl).toBeCloseTo(1234199.364235 + 41934.302118, 4);

    const rows = (await readTraderMarkets(store, WALLET, { limit: 10 })).markets;
    expect(rows.map((row) => [row.condition_id, row.resolved, row.winner, row.resolution_source, row.pnl_usd])).toEqual(
      [
        [SPAIN_ADVANCES, true, 'Spain', 'redemptions', close(spainPnl)],
        [FRANCE_WINS, true, 'No', 'redemptions', close(noPnl)],
      ],
    );
    const summary = await readMarketSummary(store, WALLET, SPAIN_ADVANCES);
    expect(summary!.market).toMatchObject({ resolved: true, winner: 'Spain', resolution_source: 'redemptions' });
    expect(summary!.summary).toMatchObject({ pnl_usd: close(spainPnl), won: true, open: false });

    const resolutions = async () =>
      store.query<{ condition_id: string; winner_token_side: number; ts: number; inferred: number; source: string }>(
        'SELECT condition_id, winner_token_side, ts, inferred, source FROM {db:Identifier}.market_resolutions_v2 FINAL ORDER BY condition_id, inferred',
      );
    expect(await resolutions()).toEqual([
      { condition_id: FRANCE_WINS, winner_token_side: 2, ts: NO_REDEEMED_AT, inferred: 1, source: 'redemptions' },
      { condition_id: SPAIN_ADVANCES, winner_token_side: 2, ts: SPAIN_REDEEMED_AT, inferred: 1, source: 'redemptions' },
    ]);

    // The provider states both results (Gamma, through the upstream poller), at the markets' ends, before the redemptions.
    await withPublisher(config, log, ({ publisher }) =>
      publisher.publish(
        'markets',
        [FRANCE_WINS, SPAIN_ADVANCES].map((conditionId) => ({
          type: 'resolution' as const,
          condition_id: conditionId,
          winner_token_side: 2 as const,
          payout_numerators: [0, 1] as [number, number],
          ts: NO_REDEEMED_AT - 3600,
          source: 'gamma' as const,
        })),
      ),
    );
    expect(await readCareer(store, WALLET, true)).toStrictEqual(inferred);
    const stated = (await readTraderMarkets(store, WALLET, { limit: 10 })).markets;
    expect(
      stated.map((row) => [row.condition_id, row.resolved, row.winner, row.resolution_source, row.pnl_usd]),
    ).toEqual([
      [SPAIN_ADVANCES, true, 'Spain', 'gamma', close(spainPnl)],
      [FRANCE_WINS, true, 'No', 'gamma', close(noPnl)],
    ]);
    // Both resolutions are kept; every read takes the stated one.
    expect((await resolutions()).map((row) => [row.condition_id, row.inferred, row.source])).toEqual([
      [FRANCE_WINS, 0, 'gamma'],
      [FRANCE_WINS, 1, 'redemptions'],
      [SPAIN_ADVANCES, 0, 'gamma'],
      [SPAIN_ADVANCES, 1, 'redemptions'],
    ]);
    const [letters] = await store.query<{ count: number }>('SELECT count() AS count FROM {db:Identifier}.dead_letters');
    expect(Number(letters!.count)).toBe(0);
  });
});

describe('redemptions that contradict each other', () => {
  it('resolve nothing: the market stays open and the contradiction is a dead letter with its reason', async () => {
    const config = inProcessConfig('inferred-contradiction');
    const log = createLogger('error');
    const market = makeConditionId('contradicted');
    const one = makeWallet('paid-for-token-1');
    const two = makeWallet('paid-for-token-2');
    const ts = 1_767_600_000;
    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish('markets', [makeMarket({ condition_id: market })]);
      await publisher.publish('fillsArchive', [
        makeFill({ wallet: one, condition_id: market, token_side: 1, price: 0.4, size_tokens: 10, usd: 4, ts }),
        makeFill({ wallet: two, condition_id: market, token_side: 2, price: 0.6, size_tokens: 10, usd: 6, ts }),
      ]);
      // Each wallet held only its own side, and each side paid 1.00 per token.
      await publisher.publish('positions', [
        makeLeg({
          wallet: one,
          condition_id: market,
          kind: 'REDEEM',
          tokens: 10,
          usd: 10,
          ts: ts + 100,
          tx_hash: makeTxHash('r1'),
        }),
        makeLeg({
          wallet: two,
          condition_id: market,
          kind: 'REDEEM',
          tokens: 10,
          usd: 10,
          ts: ts + 200,
          tx_hash: makeTxHash('r2'),
        }),
      ]);
    });
    const store = await openStore(config.clickhouse);
    stores.push(store);

    const [resolved] = await store.query<{ count: number }>(
      'SELECT count() AS count FROM {db:Identifier}.market_resolutions_v2 WHERE condition_id = {market:String}',
      { market },
    );
    expect(Number(resolved!.count)).toBe(0);
    for (const wallet of [one, two])
      expect(await readCareer(store, wallet, true)).toMatchObject({
        markets_total: 1,
        resolved_total: 0,
        winrate: null,
      });
    const letters = await store.query<{ topic: string; reason: string; original_base64: string }>(
      'SELECT topic, reason, original_base64 FROM {db:Identifier}.dead_letters FINAL',
    );
    expect(letters).toHaveLength(1);
    expect(letters[0]!.topic).toBe(CONTRADICTION_TOPIC);
    // Each wallet's evidence, in the order of their addresses.
    const said = new Map([
      [one, `${one} redeemed 10 of token 1 at 1.00 per token (token 1 won)`],
      [two, `${two} redeemed 10 of token 2 at 1.00 per token (token 2 won)`],
    ]);
    const byAddress = [one, two].sort();
    expect(letters[0]!.reason).toBe(
      `market ${market}: redemptions contradict: ${said.get(byAddress[0]!)}; ${said.get(byAddress[1]!)}; no resolution is inferred`,
    );
    const evidence = JSON.parse(Buffer.from(letters[0]!.original_base64, 'base64').toString('utf8')) as {
      wallet: string;
      won_tokens: number;
    }[];
    expect(evidence.map((row) => [row.wallet, row.won_tokens])).toEqual(byAddress.map((wallet) => [wallet, 10]));
  });
});
