/**
 * The skill answer (issue 39) through REST and MCP's operation: a wallet whose every figure is worked by
 * hand below (edge, per token, held and sold apart, Brier and its decomposition, the interval by an
 * independent bootstrap with the same seed, the shrinkage with the default prior), a loser never sold nor
 * redeemed counted as a loss, and a lucky small sample ranked below a skilled large one. The sums behind it
 * are the skill rollup's rows (migration 0020), checked against the same hand-worked figures, kept current
 * when a resolution lands later, and equal to the per-request computation from the fills (the as-of path);
 * the leaderboard as of an instant between two resolutions ranks what was resolved then.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { loadMigrations } from '../projections/migrate.ts';
import { withPublisher } from '../roles/runtime.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import {
  BASE_TS,
  makeConditionId,
  makeFill,
  makeLeg,
  makeMarket,
  makeResolution,
  makeWallet,
  mulberry32,
} from './factories.ts';
import { bodyOf, gatesNeverBind, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';

const close = (value: number) => expect.closeTo(value, 9);
/** `value` with every number compared to 9 decimals. */
const approx = (value: unknown): unknown => {
  if (typeof value === 'number') return close(value);
  if (Array.isArray(value)) return value.map(approx);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, approx(inner)]));
  return value;
};
/** A bucket-sum array of the skill rollup: `value` at `bucket`, 0 elsewhere. */
const only = (bucket: number, value: number) =>
  Array.from({ length: 10 }, (_, index) => (index === bucket ? value : 0));

describe('GET /traders/{trader}/skill', () => {
  let api: TestApi | undefined;
  afterAll(async () => {
    await api?.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api?.close();
  });

  it('hand-worked figures; an unredeemed loser is a loss; a lucky small sample ranks below a skilled large one', async () => {
    const config = inProcessConfig('skill');
    const wallet = makeWallet('skill-hand');
    const [m1, m2, m3] = ['skill-m1', 'skill-m2', 'skill-m3'].map((label) => makeConditionId(label)) as [
      string,
      string,
      string,
    ];
    let serial = 0;
    const fill = (
      who: string,
      market: string,
      side: 'BUY' | 'SELL',
      tokenSide: 1 | 2,
      price: number,
      tokens: number,
      ts: number,
    ): EventInputOf<'fillsArchive'> =>
      makeFill({
        wallet: who,
        condition_id: market,
        side,
        token_side: tokenSide,
        price,
        size_tokens: tokens,
        usd: Math.round(price * tokens * 1e6) / 1e6,
        ts,
        tx_hash: `0x${(++serial).toString(16).padStart(64, '0')}`,
        log_index: 1,
      });
    const events = {
      markets: [] as EventInputOf<'markets'>[],
      fills: [] as EventInputOf<'fillsArchive'>[],
      legs: [] as EventInputOf<'positions'>[],
    };
    // m1: 100 YES at 0.40, YES wins, redeemed: +60 (held to the resolution).
    // m2: 50 NO at 0.60, YES wins, never sold nor redeemed: −30 (held: a loss).
    // m3: 20 YES at 0.50, sold at 0.70 before NO wins: +4 (sold before).
    events.fills.push(
      fill(wallet, m1, 'BUY', 1, 0.4, 100, BASE_TS + 10),
      fill(wallet, m2, 'BUY', 2, 0.6, 50, BASE_TS + 20),
      fill(wallet, m3, 'BUY', 1, 0.5, 20, BASE_TS + 30),
      fill(wallet, m3, 'SELL', 1, 0.7, 20, BASE_TS + 40),
    );
    events.legs.push(
      makeLeg({
        wallet,
        condition_id: m1,
        kind: 'REDEEM',
        tokens: 100,
        usd: 100,
        ts: BASE_TS + 2000,
        tx_hash: `0x${'ab'.repeat(32)}`,
      }),
    );
    events.markets.push(
      ...[m1, m2, m3].map((condition_id, index) =>
        makeMarket({ condition_id, title: `Skill ${index}`, outcome1: 'Yes', outcome2: 'No' }),
      ),
      makeResolution(m1, 1, BASE_TS + 1000),
      makeResolution(m2, 1, BASE_TS + 1100),
      makeResolution(m3, 2, BASE_TS + 1200),
    );

    // The population: a skilled wallet (100 markets, 10 YES at 0.50, 60 won) and a lucky one (20 markets,
    // 10 YES at 0.10, 3 won): edges 0.2 and 0.5 per dollar.
    const population = (label: string, markets: number, price: number, wins: number) => {
      const who = makeWallet(label);
      for (let index = 0; index < markets; index++) {
        const market = makeConditionId(`${label}-${index}`);
        events.fills.push(fill(who, market, 'BUY', 1, price, 10, BASE_TS + 100 + index));
        events.markets.push(makeResolution(market, index < wins ? 1 : 2, BASE_TS + 3000 + index));
      }
      return who;
    };
    const skilled = population('skill-skilled', 100, 0.5, 60);
    const lucky = population('skill-lucky', 20, 0.1, 3);
    // A late buyer: 10 YES at 0.30 in m1 after its resolution (YES won: +7), and 10 NO at 0.20 in a market
    // that resolves only after the API started (YES wins: −2).
    const late = makeWallet('skill-late');
    const lateMarket = makeConditionId('skill-late-market');
    events.fills.push(
      fill(late, m1, 'BUY', 1, 0.3, 10, BASE_TS + 1500),
      fill(late, lateMarket, 'BUY', 2, 0.2, 10, BASE_TS + 4000),
    );
    events.markets.push(makeMarket({ condition_id: lateMarket, title: 'Skill late', outcome1: 'Yes', outcome2: 'No' }));

    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('markets', events.markets);
      await publisher.publish('fillsArchive', events.fills);
      await publisher.publish('positions', events.legs);
    });
    const now = BASE_TS + 86_400;
    api = await startTestApi(config, {
      now: () => now,
      keys: await publishPlanKeys(config, now - 10),
      gatesClockMs: gatesNeverBind(),
    });
    const skillOf = async (who: string) =>
      bodyOf(await api!.get(`traders/${who}/skill`, { plan: 'max' })) as Record<string, never> & {
        edge: {
          per_dollar: number;
          per_token: number;
          interval_90: [number, number];
          shrunk: number;
          standard_error: number;
        };
        rank: { percentile: number | null; ranked_wallets: number; min_markets: number; prior_sd: number };
      };

    // By hand. Markets (pnl, cost): (60, 40), (−30, 30), (4, 10).
    const markets = [
      { pnl: 60, cost: 40 },
      { pnl: -30, cost: 30 },
      { pnl: 4, cost: 10 },
    ];
    const edge = 34 / 80;
    const variance = markets.reduce((sum, market) => sum + (market.pnl - edge * market.cost) ** 2, 0) / (80 * 80);
    // Two ranked wallets; their edges spread less than their noise: the default prior (sd 0.1) stays.
    const prior = 0.1 ** 2;
    // The bootstrap, written again here: the wallet's FNV-1a seed, nearest-rank 5th and 95th percentiles.
    let seed = 0x811c9dc5;
    for (const char of wallet) seed = Math.imul(seed ^ char.charCodeAt(0), 0x01000193) >>> 0;
    const random = mulberry32(seed);
    const resampled: number[] = [];
    for (let sample = 0; sample < 1000; sample++) {
      let pnl = 0;
      let cost = 0;
      for (let draw = 0; draw < 3; draw++) {
        const market = markets[Math.floor(random() * 3)]!;
        pnl += market.pnl;
        cost += market.cost;
      }
      resampled.push(pnl / cost);
    }
    resampled.sort((a, b) => a - b);
    // Buys (price, outcome paid, tokens): (0.4, 1, 100), (0.6, 0, 50), (0.5, 0, 20).
    const buys = [
      { p: 0.4, o: 1, w: 100 },
      { p: 0.6, o: 0, w: 50 },
      { p: 0.5, o: 0, w: 20 },
    ];
    const weight = 170;
    const base = 100 / weight;
    const brier = buys.reduce((sum, buy) => sum + buy.w * (buy.p - buy.o) ** 2, 0) / weight;
    // One buy per bucket: each bucket's mean price and outcome rate are its buy's.
    const reliability = buys.reduce((sum, buy) => sum + buy.w * (buy.p - buy.o) ** 2, 0) / weight;
    const resolution = buys.reduce((sum, buy) => sum + buy.w * (buy.o - base) ** 2, 0) / weight;

    // Luck: the buys as fair bets, 100 at 0.40 (won), 50 at 0.60 and 20 at 0.50 (lost), paid 60 − 30 − 10 = 20
    // above their price. Exactly, fair prices pay 20 or more whenever the first bet wins (its 60 covers the
    // others' 40): 0.4. The answer is the Chernoff bound min_t exp(K(t) − 20 t), found here by a golden-section
    // search over t (the service bisects K′): never below the exact 0.4.
    const workedBets = [
      { tokens: 100, price: 0.4 },
      { tokens: 50, price: 0.6 },
      { tokens: 20, price: 0.5 },
    ];
    const exponent = (t: number) =>
      workedBets.reduce((sum, bet) => sum + Math.log(1 - bet.price + bet.price * Math.exp(t * bet.tokens)), 0) -
      t * workedBets.reduce((sum, bet) => sum + bet.tokens * bet.price, 0) -
      t * 20;
    let [low, high] = [0, 1];
    for (let step = 0; step < 200; step++) {
      const third = (high - low) / 3;
      if (exponent(low + third) < exponent(high - third)) high -= third;
      else low += third;
    }
    const workedLuck = Math.exp(exponent((low + high) / 2));
    expect(workedLuck).toBeGreaterThan(0.4);
    expect(workedLuck).toBeLessThan(1);

    expect(await skillOf(wallet)).toEqual({
      trader: expect.objectContaining({ wallet }),
      sample: {
        markets: 3,
        cost_usd: close(80),
        tokens_bought: close(170),
        first_resolved_ts: BASE_TS + 1000,
        last_resolved_ts: BASE_TS + 1200,
      },
      edge: {
        per_dollar: close(edge),
        per_token: close(34 / 170),
        interval_90: [close(resampled[49]!), close(resampled[949]!)],
        shrunk: close((edge * prior) / (prior + variance)),
        standard_error: close(Math.sqrt(variance)),
        luck_probability: close(workedLuck),
      },
      held_to_resolution: { markets: 2, pnl_usd: close(30), cost_usd: close(70), edge: close(30 / 70) },
      sold_before_resolution: { markets: 1, pnl_usd: close(4), cost_usd: close(10), edge: close(0.4) },
      calibration: {
        brier: close(brier),
        reliability: close(reliability),
        resolution: close(resolution),
        uncertainty: close(base * (1 - base)),
        table: [
          { from: 0.4, to: 0.5, buys: 1, tokens: close(100), mean_price: close(0.4), outcome_rate: close(1) },
          { from: 0.5, to: 0.6, buys: 1, tokens: close(20), mean_price: close(0.5), outcome_rate: close(0) },
          { from: 0.6, to: 0.7, buys: 1, tokens: close(50), mean_price: close(0.6), outcome_rate: close(0) },
        ],
      },
      // Three markets: below the ranking's sample.
      rank: { percentile: null, ranked_wallets: 2, min_markets: 20, prior_sd: close(0.1) },
    });

    // The skill rollup's rows behind it, by hand: per market its pnl, cost, tokens, held, resolution, the instant
    // it was known (a fill after the resolution moves it), and its buy's bucket sums and (price − payout)².
    type SkillRow = Record<string, unknown>;
    const rollupRows = async (): Promise<SkillRow[]> =>
      api!.store.query<SkillRow>(
        `SELECT wallet, condition_id, resolved_ts, known_ts, pnl_usd, cost_usd, tokens_bought, held_to_resolution,
                bucket_buys, bucket_tokens, bucket_price_tokens, bucket_payout_tokens, squared
         FROM {db:Identifier}.trader_skill_markets FINAL ORDER BY wallet, condition_id`,
      );
    const rowOf = (market: string, resolved: number, known: number, figures: number[], held: boolean) => {
      const [pnl, cost, tokens, bucket, price, payout] = figures as [number, number, number, number, number, number];
      return {
        condition_id: market,
        resolved_ts: resolved,
        known_ts: known,
        pnl_usd: close(pnl),
        cost_usd: close(cost),
        tokens_bought: close(tokens),
        held_to_resolution: held,
        bucket_buys: only(bucket, 1),
        bucket_tokens: only(bucket, tokens).map(close),
        bucket_price_tokens: only(bucket, tokens * price).map(close),
        bucket_payout_tokens: only(bucket, tokens * payout).map(close),
        squared: close(tokens * (price - payout) ** 2),
      };
    };
    const rowsOf = async (who: string) =>
      (await rollupRows())
        .filter((row) => row.wallet === who)
        .sort((a, b) => String(a.condition_id).localeCompare(String(b.condition_id)));
    const byMarket = (rows: Array<{ condition_id: string }>) =>
      rows.sort((a, b) => a.condition_id.localeCompare(b.condition_id));
    expect(await rowsOf(wallet)).toEqual(
      byMarket([
        rowOf(m1, BASE_TS + 1000, BASE_TS + 1000, [60, 40, 100, 4, 0.4, 1], true),
        rowOf(m2, BASE_TS + 1100, BASE_TS + 1100, [-30, 30, 50, 6, 0.6, 0], true),
        rowOf(m3, BASE_TS + 1200, BASE_TS + 1200, [4, 10, 20, 5, 0.5, 0], false),
      ]).map((row) => ({ wallet, ...row })),
    );
    // The late buyer's m1 row: resolved at 1000, known from its fill at 1500; its other market is open yet.
    expect(await rowsOf(late)).toEqual([
      { wallet: late, ...rowOf(m1, BASE_TS + 1000, BASE_TS + 1500, [7, 3, 10, 3, 0.3, 1], true) },
    ]);
    // The migration's backfill computes the same rows from the stored rollup as the refresher kept.
    const kept = await rollupRows();
    expect(kept.length).toBe(3 + 1 + 100 + 20);
    await api.store.command('TRUNCATE TABLE {db:Identifier}.trader_skill_markets');
    const migration = (await loadMigrations()).find((candidate) => candidate.version === 20)!;
    for (const statement of migration.statements) await api.store.command(statement);
    expect(await rollupRows()).toEqual(approx(kept));

    // The skilled large sample outranks the lucky small one, though its raw edge is lower.
    const [strong, luck] = [await skillOf(skilled), await skillOf(lucky)];
    expect(strong.edge.per_dollar).toBeCloseTo(0.2, 9);
    expect(luck.edge.per_dollar).toBeCloseTo(0.5, 9);
    expect(strong.edge.shrunk).toBeGreaterThan(luck.edge.shrunk);
    expect(strong.rank.percentile).toBe(0.5);
    expect(luck.rank.percentile).toBe(0);
    // The leaderboard: ranked wallets only (the hand wallet's three markets are below the sample), in order,
    // paged. Skilled: pnl 60 × 5 − 40 × 5 = 100, Brier 0.25 (every buy at 0.50); lucky: pnl 3 × 9 − 17 = 10,
    // Brier (3 × 0.81 + 17 × 0.01) ÷ 20 = 0.13.
    type Board = {
      traders: Array<{ rank: number; wallet: string; pnl_usd: number; brier: number }>;
      next_cursor: string | null;
    };
    const board = async (query: string) => bodyOf(await api!.get(`leaderboard?${query}`, { plan: 'max' })) as Board;
    const order = async (query: string) => (await board(query)).traders.map((row) => row.wallet);
    expect(await order('')).toEqual([skilled, lucky]);
    expect(await order('by=pnl')).toEqual([skilled, lucky]);
    expect(await order('by=calibration')).toEqual([lucky, skilled]);
    const byPnl = await board('by=pnl&window=7d');
    expect(byPnl.traders.map((row) => [row.rank, row.pnl_usd])).toEqual([
      [1, close(100)],
      [2, close(10)],
    ]);
    expect((await board('by=calibration')).traders.map((row) => row.brier)).toEqual([close(0.13), close(0.25)]);
    const first = await board('limit=1');
    expect(first.traders.map((row) => [row.rank, row.wallet])).toEqual([[1, skilled]]);
    const second = await board(`limit=1&cursor=${first.next_cursor}`);
    expect(second).toMatchObject({ traders: [{ rank: 2, wallet: lucky }], next_cursor: null });
    // A cursor of another order is refused, not read as a page of this one.
    expect((await api.get(`leaderboard?by=pnl&limit=1&cursor=${first.next_cursor}`, { plan: 'max' })).statusCode).toBe(
      400,
    );
    const unknownOrder = await api.get('leaderboard?by=luck', { plan: 'max' });
    expect(unknownOrder.statusCode).toBe(422);

    // As of an instant between two resolutions of the skilled wallet's markets (its 40th at 3039, its 41st at
    // 3040): the skilled wallet's first 40 markets, all won (5 on 5 each: edge 1, no spread), the lucky one's
    // 20 (edge 0.5, variance 255 ÷ 20² as above). The prior by moments: mean(edge²) − mean(se²).
    const asOf = BASE_TS + 3039;
    const luckyVariance = (3 * 8.5 ** 2 + 17 * 1.5 ** 2) / 20 ** 2;
    const priorThen = (1 ** 2 + 0.5 ** 2) / 2 - (0 + luckyVariance) / 2;
    // Luck then: the skilled wallet's 40 fair coins all won, 0.5⁴⁰; the lucky one's 20 bets of 10 at 0.10, 3
    // won, pay 10 or more whenever 3 or more win: the binomial's Chernoff bound exp(−20 · KL(0.15 ‖ 0.10)).
    // Their q-values over the two: 2 × 0.5⁴⁰ and the lucky one's own bound (2 × p ÷ 2).
    const skilledLuck = 0.5 ** 40;
    const luckyLuck = Math.exp(-20 * (0.15 * Math.log(0.15 / 0.1) + 0.85 * Math.log(0.85 / 0.9)));
    const then = bodyOf(await api.get(`leaderboard?by=pnl&as_of=${asOf}`, { plan: 'max' }));
    expect(then).toEqual({
      by: 'pnl',
      window: 'all',
      min_markets: 20,
      prior_sd: close(Math.sqrt(priorThen)),
      false_discovery_rate: 0.1,
      traders: [
        {
          rank: 1,
          wallet: skilled,
          name: expect.any(String),
          markets: 40,
          cost_usd: close(200),
          pnl_usd: close(200),
          edge: close(1),
          edge_shrunk: close(1),
          brier: close(0.25),
          luck_probability: expect.closeTo(skilledLuck, 20),
          q_value: expect.closeTo(2 * skilledLuck, 20),
          distinguishable_from_luck: true,
        },
        {
          rank: 2,
          wallet: lucky,
          name: expect.any(String),
          markets: 20,
          cost_usd: close(20),
          pnl_usd: close(10),
          edge: close(0.5),
          edge_shrunk: close((0.5 * priorThen) / (priorThen + luckyVariance)),
          brier: close(0.13),
          luck_probability: close(luckyLuck),
          q_value: close(luckyLuck),
          distinguishable_from_luck: false,
        },
      ],
      next_cursor: null,
    });
    // Filtered to those told from luck, or to the others; the q-values stay the whole population's.
    const told = async (filter: string) =>
      bodyOf(await api!.get(`leaderboard?as_of=${asOf}&distinguishable_from_luck=${filter}`, { plan: 'max' })) as {
        traders: Array<{ wallet: string; rank: number; q_value: number }>;
      };
    expect((await told('true')).traders.map((row) => [row.rank, row.wallet, row.q_value])).toEqual([
      [1, skilled, expect.closeTo(2 * skilledLuck, 20)],
    ]);
    expect((await told('false')).traders.map((row) => [row.rank, row.wallet, row.q_value])).toEqual([
      [1, lucky, close(luckyLuck)],
    ]);
    const badFilter = await api.get('leaderboard?distinguishable_from_luck=maybe', { plan: 'max' });
    expect(badFilter.statusCode).toBe(422);
    expect(JSON.stringify(bodyOf(badFilter))).toContain('distinguishable_from_luck');
    // A second earlier, neither had 20 markets resolved: nobody is ranked.
    expect(bodyOf(await api.get(`leaderboard?as_of=${BASE_TS + 3018}`, { plan: 'max' }))).toMatchObject({
      traders: [],
      next_cursor: null,
    });
    // At any instant around the resolutions, the board's rows are a replay of the resolutions up to it: each
    // wallet's markets resolved by then (skilled: 5 on 5, won below index 60; lucky: 9 on 1, won below 3),
    // listed once 20 are.
    const replay = (at: number) =>
      [
        { wallet: skilled, count: 100, won: 60, win: 5, loss: -5, cost: 5 },
        { wallet: lucky, count: 20, won: 3, win: 9, loss: -1, cost: 1 },
      ]
        .map((model) => {
          const resolved = Array.from({ length: model.count }, (_, index) => index).filter(
            (index) => BASE_TS + 3000 + index <= at,
          );
          return {
            wallet: model.wallet,
            markets: resolved.length,
            pnl_usd: close(resolved.reduce((sum, index) => sum + (index < model.won ? model.win : model.loss), 0)),
            cost_usd: close(resolved.length * model.cost),
          };
        })
        .filter((row) => row.markets >= 20);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: BASE_TS + 2990, max: BASE_TS + 3110 }), async (at) => {
        const rows = (await board(`by=pnl&as_of=${at}`)).traders as unknown as Array<Record<string, number>>;
        expect(
          rows
            .map(({ wallet: who, markets: count, pnl_usd, cost_usd }) => ({
              wallet: who,
              markets: count,
              pnl_usd,
              cost_usd,
            }))
            .sort((a, b) => String(a.wallet).localeCompare(String(b.wallet))),
        ).toEqual(replay(at).sort((a, b) => a.wallet.localeCompare(b.wallet)));
      }),
      { numRuns: 20 },
    );
    // Paged as of the same instant; its cursor is refused on today's board.
    const thenFirst = await board(`as_of=${asOf}&limit=1`);
    expect(thenFirst.traders.map((row) => [row.rank, row.wallet])).toEqual([[1, skilled]]);
    expect(await board(`as_of=${asOf}&limit=1&cursor=${thenFirst.next_cursor}`)).toMatchObject({
      traders: [{ rank: 2, wallet: lucky, pnl_usd: close(10) }],
      next_cursor: null,
    });
    expect((await api.get(`leaderboard?limit=1&cursor=${thenFirst.next_cursor}`, { plan: 'max' })).statusCode).toBe(
      400,
    );
    // Immutable as of a past instant: an ETag, and 304 on a match; in the future, 422 naming as_of.
    const tagged = await api.get(`leaderboard?as_of=${asOf}`, { plan: 'max' });
    expect(tagged.headers['cache-control']).toContain('immutable');
    const notModified = await api.get(`leaderboard?as_of=${asOf}`, {
      plan: 'max',
      headers: { 'if-none-match': tagged.headers.etag as string },
    });
    expect(notModified.statusCode).toBe(304);
    const future = await api.get(`leaderboard?as_of=${Math.floor(Date.now() / 1000) + 3600}`, { plan: 'max' });
    expect(future.statusCode).toBe(422);
    expect(bodyOf(future)).toMatchObject({ detail: [{ loc: ['query', 'as_of'] }] });

    // Basic: the answer weighs the trader's 5 most recent markets (indexes 95..99: all lost), and a fourth
    // distinct trader of the day is refused (wallet_quota), as for the card.
    const basic = await startTestApi(config, {
      now: () => now,
      keys: api.keys,
      gatesClockMs: () => Date.UTC(2026, 5, 1),
    });
    try {
      const recent = bodyOf(await basic.get(`traders/${skilled}/skill`, { plan: 'basic' })) as {
        sample: { markets: number };
        edge: { per_dollar: number };
      };
      expect(recent.sample.markets).toBe(5);
      expect(recent.edge.per_dollar).toBeCloseTo(-1, 9);
      expect((await basic.get(`traders/${lucky}/skill`, { plan: 'basic' })).statusCode).toBe(200);
      expect((await basic.get(`traders/${wallet}/skill`, { plan: 'basic' })).statusCode).toBe(200);
      const refused = await basic.get(`traders/${makeWallet('skill-fourth')}/skill`, { plan: 'basic' });
      expect(refused.statusCode).toBe(403);
      expect(bodyOf(refused)).toMatchObject({ error: 'wallet_quota' });
    } finally {
      await basic.close();
    }

    // A resolution landing later: the refresher adds the late buyer's market to the rollup, and its answer.
    expect((await skillOf(late)).sample).toMatchObject({ markets: 1, cost_usd: close(3) });
    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('markets', [makeResolution(lateMarket, 1, BASE_TS + 5000)]);
    });
    expect(await rowsOf(late)).toEqual(
      byMarket([
        rowOf(m1, BASE_TS + 1000, BASE_TS + 1500, [7, 3, 10, 3, 0.3, 1], true),
        rowOf(lateMarket, BASE_TS + 5000, BASE_TS + 5000, [-2, 2, 10, 2, 0.2, 0], true),
      ]).map((row) => ({ wallet: late, ...row })),
    );
    const lateSkill = await skillOf(late);
    expect(lateSkill.sample).toMatchObject({ markets: 2, cost_usd: close(5), last_resolved_ts: BASE_TS + 5000 });
    expect(lateSkill.edge.per_dollar).toBeCloseTo((7 - 2) / 5, 9);

    // The rollup's sums equal the per-request computation: today's answer (the rollup's rows, the prior from
    // their sums) is the answer as of now (the wallet's markets replayed from its fills, its buys read).
    for (const who of [wallet, skilled, lucky, late]) {
      const replayed = bodyOf(await api.get(`traders/${who}/skill?as_of=${now}`, { plan: 'max' }));
      expect(await skillOf(who), who).toEqual(approx(replayed));
    }

    // Skill of a wallet with no resolved entry: nulls, not zeros.
    const unknown = await skillOf(makeWallet('skill-nobody'));
    expect(unknown.edge).toEqual({
      per_dollar: null,
      per_token: null,
      interval_90: null,
      shrunk: null,
      standard_error: null,
      luck_probability: null,
    });
  });
});
