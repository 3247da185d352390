/**
 * `as_of` (issue 39): the card, the markets list and top-markets as the service knew a trader at a past
 * instant. A market resolved after it is open and marked at its last trade before it; a resolution, fill or
 * profile stamped after it never reaches any figure (a property over random instants against a model that
 * replays the events up to each); before the first fill it is the zeroed card; in the future a 422 naming
 * the parameter; an answer as of a past instant carries an ETag and a matching If-None-Match answers 304.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { createLogger } from '../log.ts';
import { withPublisher } from '../roles/runtime.ts';
import {
  BASE_TS,
  makeConditionId,
  makeFill,
  makeMarket,
  makeResolution,
  makeTrade,
  makeWallet,
  mulberry32,
} from './factories.ts';
import { bodyOf, gatesNeverBind, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';

const close = (value: number) => expect.closeTo(value, 6);
type Fill = EventInputOf<'fillsArchive'>;
interface Row {
  condition_id: string;
  resolved: boolean;
  pnl_usd: number;
  fills_count: number;
  pnl_marked_usd?: number | null;
}

describe('as_of: figures as the service knew them then', () => {
  const config = inProcessConfig('as-of');
  const wallet = makeWallet('as-of-trader');
  const [m1, m2] = [makeConditionId('as-of-m1'), makeConditionId('as-of-m2')];
  // A generated history for the property: markets with fills of the wallet and later resolutions.
  const random = mulberry32(39);
  const worldMarkets = Array.from({ length: 6 }, (_, index) => makeConditionId(`as-of-world-${index}`));
  const worldWallet = makeWallet('as-of-world');
  const worldFills: Fill[] = [];
  const worldResolutions: Array<{ conditionId: string; winner: 1 | 2; ts: number }> = [];
  worldMarkets.forEach((conditionId, index) => {
    const start = BASE_TS + 1000 + index * 400;
    for (let fill = 0; fill < 4; fill++) {
      const price = Math.round((0.1 + random() * 0.8) * 100) / 100;
      const tokens = 1 + Math.floor(random() * 20);
      const side = fill === 3 && random() < 0.5 ? 'SELL' : 'BUY';
      worldFills.push(
        makeFill({
          wallet: worldWallet,
          condition_id: conditionId,
          side,
          token_side: (1 + (index % 2)) as 1 | 2,
          price,
          size_tokens: side === 'SELL' ? 1 : tokens,
          usd: Math.round(price * (side === 'SELL' ? 1 : tokens) * 1e6) / 1e6,
          ts: start + fill * 50,
          tx_hash: `0x${(0x39000 + index * 10 + fill).toString(16).padStart(64, '0')}`,
          log_index: 1,
        }),
      );
    }
    if (index % 3 !== 2) worldResolutions.push({ conditionId, winner: random() < 0.5 ? 1 : 2, ts: start + 300 });
  });
  let api: TestApi;

  beforeAll(async () => {
    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('markets', [
        ...[m1, m2, ...worldMarkets].map((condition_id, index) =>
          makeMarket({ condition_id, title: `As of ${index}`, outcome1: 'Yes', outcome2: 'No' }),
        ),
        makeResolution(m1, 1, BASE_TS + 500),
        ...worldResolutions.map((resolution) =>
          makeResolution(resolution.conditionId, resolution.winner, resolution.ts),
        ),
      ]);
      await publisher.publish('fillsArchive', [
        // m1: 10 YES at 0.40 (then the market trades at 0.70, then YES wins); m2: 5 NO at 0.30 later.
        makeFill({
          wallet,
          condition_id: m1,
          side: 'BUY',
          token_side: 1,
          price: 0.4,
          size_tokens: 10,
          usd: 4,
          ts: BASE_TS + 10,
        }),
        makeFill({
          wallet,
          condition_id: m2,
          side: 'BUY',
          token_side: 2,
          price: 0.3,
          size_tokens: 5,
          usd: 1.5,
          ts: BASE_TS + 300,
        }),
        ...worldFills,
      ]);
      await publisher.publish('trades', [
        makeTrade({ condition_id: m1, token_side: 1, price: 0.4, ts: BASE_TS + 10, seq: 1 }),
        makeTrade({ condition_id: m1, token_side: 1, price: 0.7, ts: BASE_TS + 200, seq: 2 }),
      ]);
      await publisher.publish('upstreamProfiles', [
        {
          wallet,
          name: 'AsOf',
          pnl: 123,
          pnl_realized: 100,
          pnl_unrealized: 23,
          portfolio_value: 50,
          as_of: BASE_TS + 700,
        },
      ]);
    });
    const now = BASE_TS + 86_400;
    api = await startTestApi(config, {
      now: () => now,
      keys: await publishPlanKeys(config, now - 10),
      gatesClockMs: gatesNeverBind(),
    });
  });

  afterAll(async () => {
    await api?.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api?.close();
  });

  const get = async (route: string) => {
    const response = await api.get(route, { plan: 'max' });
    expect(response.statusCode, route).toBe(200);
    return bodyOf(response) as {
      card: Record<string, unknown>;
      upstream: Record<string, unknown>;
      markets: Row[];
      top_wins: Row[];
    };
  };
  const rowsAsOf = async (asOf: number) =>
    new Map((await get(`traders/${wallet}/markets?as_of=${asOf}`)).markets.map((row) => [row.condition_id, row]));

  it('a market resolved later is open, marked at its last trade before; nothing later leaks; zeroed before the first fill', async () => {
    // Before the first fill: a wallet unknown then.
    const before = await get(`traders/${wallet}?as_of=${BASE_TS + 5}`);
    expect(before.card).toMatchObject({ markets_total: 0, resolved_total: 0 });
    expect(before.upstream).toEqual({ status: 'upstream_offline' });
    // After the first print (0.40): m1 open, worth 10 × 0.40; m2 not traded yet.
    let rows = await rowsAsOf(BASE_TS + 100);
    expect([...rows.keys()]).toEqual([m1]);
    expect(rows.get(m1)).toMatchObject({ resolved: false, pnl_usd: close(-4), pnl_marked_usd: close(0) });
    // After the print at 0.70: marked there.
    rows = await rowsAsOf(BASE_TS + 400);
    expect(rows.get(m1)).toMatchObject({ resolved: false, pnl_usd: close(-4), pnl_marked_usd: close(3) });
    expect(rows.get(m2)).toMatchObject({ resolved: false, pnl_usd: close(-1.5) });
    // m1's 10 YES at its last print, 0.70; m2 has no print yet: unmarked.
    const card400 = await get(`traders/${wallet}?as_of=${BASE_TS + 400}`);
    expect(card400.card).toMatchObject({
      markets_total: 2,
      resolved_total: 0,
      open_value_usd: close(7),
      unmarked_markets: 1,
    });
    // The provider's profile is stamped later: the offline form, with the archive's figures.
    expect(card400.upstream).toEqual({ status: 'upstream_offline' });
    // After the resolution: m1 won (+6); after the profile: the profile.
    rows = await rowsAsOf(BASE_TS + 800);
    expect(rows.get(m1)).toMatchObject({ resolved: true, pnl_usd: close(6) });
    const card800 = await get(`traders/${wallet}?as_of=${BASE_TS + 800}`);
    expect(card800.card).toMatchObject({ markets_total: 2, resolved_total: 1, winrate: 1 });
    expect(card800.upstream).toMatchObject({ pnl: 123, as_of: BASE_TS + 700 });
    const top = await get(`traders/${wallet}/top-markets?as_of=${BASE_TS + 400}`);
    expect(top.top_wins).toEqual([]);
    // A summary: open then (the resolution comes later), its one fill; resolved after; a market the trader
    // had not traded yet is not found.
    type Summary = {
      market: { resolved: boolean; winner: string | null };
      summary: { fills_count: number; pnl_usd: number };
    };
    const summaryAt = async (asOf: number, market: string) =>
      api.get(`traders/${wallet}/markets/${market}/summary?as_of=${asOf}`, { plan: 'max' });
    const open = bodyOf(await summaryAt(BASE_TS + 400, m1)) as Summary;
    expect(open).toMatchObject({
      market: { resolved: false, winner: null },
      summary: { fills_count: 1, pnl_usd: close(-4) },
    });
    const settled = bodyOf(await summaryAt(BASE_TS + 800, m1)) as Summary;
    expect(settled).toMatchObject({ market: { resolved: true, winner: 'Yes' }, summary: { pnl_usd: close(6) } });
    const early = await summaryAt(BASE_TS + 100, m2);
    expect(early.statusCode).toBe(404);
    expect(bodyOf(early)).toMatchObject({ error: 'market_not_found' });
    // The skill answer: nothing resolved by then; after the resolution, m1's +6 on 4 (no population then).
    const skillAt = async (asOf: number) =>
      (await get(`traders/${wallet}/skill?as_of=${asOf}`)) as unknown as {
        sample: { markets: number };
        edge: { per_dollar: number | null };
        rank: { percentile: number | null };
      };
    expect((await skillAt(BASE_TS + 400)).sample.markets).toBe(0);
    const skill800 = await skillAt(BASE_TS + 800);
    expect(skill800.sample.markets).toBe(1);
    expect(skill800.edge.per_dollar).toBeCloseTo(6 / 4, 9);
    expect(skill800.rank.percentile).toBeNull();
  });

  it('in the future: 422 naming as_of; as of the past: an ETag, and 304 on a match', async () => {
    const future = await api.get(`traders/${wallet}?as_of=${Math.floor(Date.now() / 1000) + 3600}`, { plan: 'max' });
    expect(future.statusCode).toBe(422);
    expect(bodyOf(future)).toMatchObject({ detail: [{ loc: ['query', 'as_of'] }] });
    const first = await api.get(`traders/${wallet}?as_of=${BASE_TS + 400}`, { plan: 'max' });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"/);
    expect(first.headers['cache-control']).toContain('immutable');
    const again = await api.get(`traders/${wallet}?as_of=${BASE_TS + 400}`, {
      plan: 'max',
      headers: { 'if-none-match': etag },
    });
    expect(again.statusCode).toBe(304);
    const list = await api.get(`traders/${wallet}/markets?as_of=${BASE_TS + 400}`, { plan: 'max' });
    expect(list.headers.etag).toMatch(/^"/);
    // Today's card is not cached.
    expect((await api.get(`traders/${wallet}`, { plan: 'max' })).headers['cache-control']).toBe('no-store');
  });

  it('property: at any instant, every row equals a replay of the events stamped up to it', async () => {
    const first = Math.min(...worldFills.map((fill) => fill.ts));
    const last = Math.max(...worldFills.map((fill) => fill.ts), ...worldResolutions.map((resolution) => resolution.ts));
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: first - 10, max: last + 10 }), async (asOf) => {
        const rows = new Map(
          (await get(`traders/${worldWallet}/markets?as_of=${asOf}&limit=100`)).markets.map((row) => [
            row.condition_id,
            row,
          ]),
        );
        const known = worldFills.filter((fill) => fill.ts <= asOf);
        expect(new Set(rows.keys())).toEqual(new Set(known.map((fill) => fill.condition_id)));
        for (const conditionId of rows.keys()) {
          const fills = known.filter((fill) => fill.condition_id === conditionId);
          const cash = fills.reduce((sum, fill) => sum + (fill.side === 'SELL' ? fill.usd : -fill.usd), 0);
          const held = fills.reduce((sum, fill) => sum + (fill.side === 'SELL' ? -1 : 1) * fill.size_tokens, 0);
          const resolution = worldResolutions.find(
            (candidate) => candidate.conditionId === conditionId && candidate.ts <= asOf,
          );
          const tokenSide = fills[0]!.token_side;
          const pnl = resolution ? cash + (resolution.winner === tokenSide ? held : 0) : cash;
          expect(rows.get(conditionId)).toMatchObject({
            resolved: resolution !== undefined,
            fills_count: fills.length,
            pnl_usd: close(pnl),
          });
        }
      }),
      { numRuns: 25 },
    );
  });
});
