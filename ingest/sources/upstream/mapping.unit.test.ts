/**
 * Golden tests: each recorded real response in ../shared/data/polymarket/http/ becomes exactly the events
 * computed here from the response itself (field by field, without the code under test).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../config.ts';
import { DEFAULT_EXCHANGE_V2_START_TS } from '../../../chain.ts';
import { polymarketData } from '../../../test/harness/polymarket.ts';
import {
  dataApiPage,
  epochOf,
  exchangeEraAt,
  gammaEventsPage,
  gammaMarketsPage,
  mapActivityRows,
  mapEquity,
  mapGammaEvents,
  mapGammaMarket,
  mapLeaderboard,
  mapProfile,
} from './mapping.ts';

const HTTP = path.join(polymarketData, 'http');
type Json = Record<string, unknown>;
const load = (relative: string): unknown => JSON.parse(readFileSync(path.join(HTTP, relative), 'utf8'));
const isoSeconds = (iso: string) => Math.floor(Date.parse(iso) / 1000);
/** The V1 → V2 exchange cut-over, as the test reads it off the calendar (not from the code under test). */
const V2_START_TS = Date.UTC(2026, 3, 28, 11, 15) / 1000;

/** The events one Gamma market must become, read off its JSON by hand. */
function expectedMarketEvents(
  market: Json,
  category: string,
  titleStart: number | null,
  endTs: number | null,
  negRisk: boolean,
) {
  const outcomes = JSON.parse(market.outcomes as string) as string[];
  const tokens = JSON.parse(market.clobTokenIds as string) as string[];
  const events: Json[] = [
    {
      type: 'metadata',
      condition_id: (market.conditionId as string).toLowerCase(),
      title: market.question,
      slug: market.slug,
      outcome1: outcomes[0],
      outcome2: outcomes[1],
      category,
      title_start_ts: titleStart,
      end_ts: endTs,
      version: isoSeconds(market.updatedAt as string),
      icon: market.icon,
    },
    {
      type: 'tokens',
      condition_id: (market.conditionId as string).toLowerCase(),
      token1_id: tokens[0],
      token2_id: tokens[1],
      neg_risk: negRisk,
    },
  ];
  return events;
}

describe('Gamma markets → markets topic (metadata, tokens, resolution)', () => {
  it('an open 5-minute crypto window: metadata with the window from the slug, its tokens, no resolution', () => {
    const market = load('gamma/nautilus_gamma_market_btc_updown_5m.json') as Json;
    const { events, rejected } = mapGammaMarket(market);
    expect(rejected).toEqual([]);
    // btc-updown-5m-1773307200: starts at that epoch; Gamma's endDate is its end.
    expect(events).toEqual(
      expectedMarketEvents(market, 'crypto', 1773307200, isoSeconds('2026-03-12T09:25:00Z'), false),
    );
  });

  it('a Protocol V2 market (version "v2", built from a real one: no real V2 Gamma market is recorded): its tokens are its positionIds, its 31-byte condition id gets its zero byte', () => {
    const real = load('gamma/nautilus_gamma_market_btc_updown_5m.json') as Json;
    // Position ids of a BinaryModule market: module 1 in the top byte, outcome in the last (YES 0, NO 1).
    const condition = (1n << 248n) | (0xbeefn << 120n);
    const positionIds = [condition.toString(), (condition | 1n).toString()];
    const conditionId31 = `0x${condition.toString(16).padStart(64, '0').slice(0, 62)}`;
    const market = { ...real, version: 'v2', conditionId: conditionId31, positionIds: JSON.stringify(positionIds) };
    const { events, rejected } = mapGammaMarket(market);
    expect(rejected).toEqual([]);
    expect(events.find((event) => event.type === 'tokens')).toEqual({
      type: 'tokens',
      condition_id: `${conditionId31}00`,
      token1_id: positionIds[0],
      token2_id: positionIds[1],
      neg_risk: false,
    });
    expect(events[0]).toMatchObject({ type: 'metadata', condition_id: `${conditionId31}00` });
    // A V2 market without positionIds has no tokens, whatever its clobTokenIds say; a V1 one reads clobTokenIds.
    const { events: noPositions, rejected: noRejection } = mapGammaMarket({ ...market, positionIds: undefined });
    expect(noRejection).toEqual([]);
    expect(noPositions.some((event) => event.type === 'tokens')).toBe(false);
    expect(mapGammaMarket({ ...market, positionIds: '["1"]' }).rejected[0]?.reason).toMatch(
      /^positionIds must be two token ids/,
    );
  });

  it('a closed binary market with outcome prices [1, 0]: resolved to token 1 at closedTime, payouts [1, 0]', () => {
    const market = load('gamma/nautilus_gamma_market_closed_binary.json') as Json;
    const { events, rejected } = mapGammaMarket(market);
    expect(rejected).toEqual([]);
    expect(market.closedTime).toBe('2026-05-09 02:07:01+00');
    expect(events).toEqual([
      ...expectedMarketEvents(market, 'other', null, isoSeconds(market.endDate as string), false),
      {
        type: 'resolution',
        condition_id: (market.conditionId as string).toLowerCase(),
        winner_token_side: 1,
        payout_numerators: [1, 0],
        ts: Date.UTC(2026, 4, 9, 2, 7, 1) / 1000,
        source: 'gamma',
      },
    ]);
  });

  it('a resolved sports moneyline: category sports (sportsMarketType), winner FaZe (token 1)', () => {
    const market = load('gamma/nautilus_gamma_market_sports_moneyline.json') as Json;
    const { events } = mapGammaMarket(market);
    expect(events).toEqual([
      ...expectedMarketEvents(market, 'sports', null, isoSeconds(market.endDate as string), false),
      {
        type: 'resolution',
        condition_id: (market.conditionId as string).toLowerCase(),
        winner_token_side: 1,
        payout_numerators: [1, 0],
        ts: Date.UTC(2026, 3, 5, 19, 37, 33) / 1000,
        source: 'gamma',
      },
    ]);
  });

  it('a 2020 legacy scalar market closed at fractional prices: metadata (category Crypto) and tokens, no resolution (no payout vector stated)', () => {
    const market = load('gamma/nautilus_gamma_market_closed_nonbinary_legacy.json') as Json;
    const { events, rejected } = mapGammaMarket(market);
    expect(rejected).toEqual([]);
    // negRisk is null on this market: not a NegRisk market.
    expect(events).toEqual(expectedMarketEvents(market, 'crypto', null, isoSeconds(market.endDate as string), false));
  });

  it('a split payout (prices ½/½) resolves with no winner and payouts [1, 1]', () => {
    const market = {
      ...(load('gamma/nautilus_gamma_market_closed_binary.json') as Json),
      outcomePrices: '["0.5", "0.5"]',
    };
    const resolution = mapGammaMarket(market).events.find((event) => event.type === 'resolution');
    expect(resolution).toMatchObject({ winner_token_side: null, payout_numerators: [1, 1] });
  });

  it("an /events answer: every nested market, negRisk and the politics category from the event, versioned by the event's later updatedAt", () => {
    const body = load('gamma/nautilus_gamma_event.json') as Json[];
    const event = body[0]!;
    const markets = event.markets as Json[];
    const { events, rejected } = mapGammaEvents(body);
    expect(rejected).toEqual([]);
    // The event was updated (15:13:38) after its markets (15:13:18, 15:13:07): its reading is the newer one.
    const eventUpdatedAt = isoSeconds(event.updatedAt as string);
    expect(markets.every((market) => isoSeconds(market.updatedAt as string) < eventUpdatedAt)).toBe(true);
    const expected = markets.flatMap((market) =>
      expectedMarketEvents(market, 'politics', null, isoSeconds(market.endDate as string), true).map((expectedEvent) =>
        expectedEvent.type === 'metadata' ? { ...expectedEvent, version: eventUpdatedAt } : expectedEvent,
      ),
    );
    expect(events).toEqual(expected);
    // The same answer as an /events/keyset page ({events, next_cursor}), its cursor read.
    expect(gammaEventsPage({ events: body, next_cursor: 'abc' })).toEqual({ events: body, nextCursor: 'abc' });
    expect(mapGammaEvents({ events: body, next_cursor: 'abc' }).events).toEqual(expected);
  });

  it('a /public-search answer ({events, pagination}) maps its events the same way', () => {
    const body = load('gamma/nautilus_gamma_public_search.json') as { events: Json[] };
    const nested = body.events.flatMap((event) => event.markets as Json[]);
    const { events } = mapGammaEvents(body);
    expect(events.filter((event) => event.type === 'metadata').map((event) => event.condition_id)).toEqual(
      nested.map((market) => (market.conditionId as string).toLowerCase()),
    );
  });

  it('schema drift: an unknown field is ignored, a missing optional one (icon, endDate, clobTokenIds) leaves its default', () => {
    const market = load('gamma/nautilus_gamma_market_closed_binary.json') as Json;
    const drifted = { ...market, brandNewField: { nested: true } };
    expect(mapGammaMarket(drifted).events).toEqual(mapGammaMarket(market).events);
    const { icon: _icon, endDate: _end, clobTokenIds: _tokens, ...sparse } = market;
    const mapped = mapGammaMarket(sparse);
    expect(mapped.rejected).toEqual([]);
    expect(mapped.events.map((event) => event.type)).toEqual(['metadata', 'resolution']);
    expect(mapped.events[0]).toMatchObject({ icon: '', end_ts: null });
  });

  it('rejects with a reason, and keeps the rest of a page: three outcomes, a bad condition id, a non-object', () => {
    const good = load('gamma/nautilus_gamma_market_btc_updown_5m.json') as Json;
    const page = gammaMarketsPage({
      markets: [{ ...good, outcomes: '["A","B","C"]' }, { ...good, conditionId: '0x12' }, 7, good],
      next_cursor: 'abc',
    })!;
    expect(page.nextCursor).toBe('abc');
    const results = page.markets.map((market) => mapGammaMarket(market));
    expect(results.map((result) => result.rejected.length)).toEqual([1, 1, 1, 0]);
    expect(results[0]!.rejected[0]!.reason).toMatch(/two names/);
    expect(results[1]!.rejected[0]!.reason).toMatch(/condition_id/);
    expect(results[3]!.events).toHaveLength(2);
  });

  it("takes the category from the market's nested event tags when the market alone does not say", () => {
    const market = load('gamma/nautilus_gamma_market_closed_binary.json') as Json;
    const withEvent = {
      ...market,
      events: [{ id: '1', title: 'Ceasefire', tags: [{ id: '2', label: 'Geopolitics', slug: 'geopolitics' }] }],
    };
    expect(mapGammaMarket(market).events[0]).toMatchObject({ category: 'other' });
    expect(mapGammaMarket(withEvent).events[0]).toMatchObject({ category: 'politics' });
  });

  it('reads Gamma timestamps in both spellings', () => {
    expect(epochOf('2026-05-09 02:07:01+00')).toBe(Date.UTC(2026, 4, 9, 2, 7, 1) / 1000);
    expect(epochOf('2026-03-11T15:14:46.097817Z')).toBe(Date.UTC(2026, 2, 11, 15, 14, 46) / 1000);
    expect(epochOf('not a date')).toBeNull();
  });
});

describe('data API /activity and /trades → fills.upstream (one row mapping with the importer)', () => {
  it('the v1 /activity sample: 19 fills with usd = size × price and fee_usd = usdcSize − size × price, 1 redeem leg', () => {
    const rows = load('data-api/polyprinter_activity_sample.json') as Json[];
    const page = dataApiPage(rows)!;
    const { parsed, rejected, skipped } = mapActivityRows(page.rows, V2_START_TS, 'activity');
    expect(rejected).toEqual([]);
    expect(skipped).toBe(0);
    const fills = parsed.flatMap((row) => (row.kind === 'fill' ? [row.fill] : []));
    const legs = parsed.flatMap((row) => (row.kind === 'leg' ? [row.leg] : []));
    const trades = rows.filter((row) => row.type === 'TRADE');
    expect(fills).toHaveLength(19);
    expect(legs).toHaveLength(1);
    let withFee = 0;
    trades.forEach((row, index) => {
      const fill = fills[index]!;
      const notional = (row.size as number) * (row.price as number);
      const fee = (row.usdcSize as number) - notional;
      expect(fill).toMatchObject({
        tx_hash: (row.transactionHash as string).toLowerCase(),
        wallet: (row.proxyWallet as string).toLowerCase(),
        condition_id: (row.conditionId as string).toLowerCase(),
        side: row.side,
        token_side: (row.outcomeIndex as number) + 1,
        price: row.price,
        size_tokens: row.size,
        ts: row.timestamp,
        name: row.name,
      });
      expect(fill.usd).toBeCloseTo(notional, 6);
      if (Math.abs(fee) >= 5e-6) {
        withFee += 1;
        expect(fill.fee_usd).toBeCloseTo(fee, 6);
        // Taker fee of the exchange: feeRate × size × p × (1 − p), floored to 1e-5 (DECODING.md); 5% here.
        const p = row.price as number;
        expect(fill.fee_usd!).toBeCloseTo(Math.floor(0.05 * (row.size as number) * p * (1 - p) * 1e5) / 1e5, 4);
      } else {
        expect(fill.fee_usd).toBeUndefined();
        expect(fill.usd).toBe(row.usdcSize);
      }
    });
    expect(withFee).toBe(8);
    const redeem = rows.find((row) => row.type === 'REDEEM')!;
    expect(legs[0]).toMatchObject({
      kind: 'REDEEM',
      tokens: redeem.size,
      usd: redeem.usdcSize,
      condition_id: (redeem.conditionId as string).toLowerCase(),
    });
  });

  it('the v2 /trades envelope (snake_case, {data, pagination}): 3 fills with usd = size × price, its cursor', () => {
    const body = load('data-api/nautilus_data_api_trades_v2_envelope_SANITIZED.json') as {
      data: Json[];
      pagination: Json;
    };
    const page = dataApiPage(body)!;
    expect(page).toMatchObject({ nextCursor: null, hasMore: false });
    const { parsed, rejected } = mapActivityRows(page.rows, V2_START_TS, 'trades');
    expect(rejected).toEqual([]);
    expect(parsed.map((row) => (row.kind === 'fill' ? row.fill : null))).toEqual(
      body.data.map((row) =>
        expect.objectContaining({
          tx_hash: row.transaction_hash,
          wallet: row.proxy_wallet,
          condition_id: row.condition_id,
          side: row.side,
          token_side: (row.outcome_index as number) + 1,
          price: row.price,
          size_tokens: row.size,
          usd: Math.round((row.size as number) * (row.price as number) * 1e6) / 1e6,
          ts: row.timestamp,
          name: row.name,
        }),
      ),
    );
    const sightings = parsed.map((row) => row.market.outcome);
    expect(sightings).toEqual(
      body.data.map((row) => ({ tokenSide: (row.outcome_index as number) + 1, name: row.outcome })),
    );
  });

  it('stamps each fill and leg with the exchange era of its time: V1 before the 2026-04-28 cut-over, V2 from it', () => {
    const rows = load('data-api/polyprinter_activity_sample.json') as Json[];
    const redeem = rows.find((row) => row.type === 'REDEEM')!;
    const page = [
      { ...rows[0], timestamp: V2_START_TS - 1 },
      { ...rows[1], timestamp: V2_START_TS },
      { ...rows[2], timestamp: Date.UTC(2026, 0, 4, 20) / 1000 },
      { ...redeem, timestamp: V2_START_TS - 86_400 },
      { ...redeem, timestamp: V2_START_TS + 86_400 },
    ];
    const { parsed, rejected } = mapActivityRows(page, V2_START_TS, 'activity');
    expect(rejected).toEqual([]);
    expect(parsed.map((row) => (row.kind === 'fill' ? ['fill', row.fill.era] : ['leg', row.leg.era]))).toEqual([
      ['fill', 'v1'],
      ['fill', 'v2'],
      ['fill', 'v1'],
      ['leg', 'v1'],
      ['leg', 'v2'],
    ]);
    // The recorded sample postdates the cut-over: all V2.
    expect(
      mapActivityRows(rows, V2_START_TS, 'activity').parsed.every(
        (row) => (row.kind === 'fill' ? row.fill.era : row.leg.era) === 'v2',
      ),
    ).toBe(true);
    expect(exchangeEraAt(V2_START_TS - 1, V2_START_TS)).toBe('v1');
    // The cut-over is that instant, one for every source: the poller, the importer, the archive's legs.
    expect(parseConfig({}).upstream.v2StartTs).toBe(V2_START_TS);
    expect(parseConfig({}).exchangeV2StartTs).toBe(V2_START_TS);
    expect(parseConfig({ POLYGON_RPC_URL: 'http://127.0.0.1:1' }).archive!.v2StartTs).toBe(V2_START_TS);
    expect(DEFAULT_EXCHANGE_V2_START_TS).toBe(V2_START_TS);
  });

  it('bad rows are rejected with their reason and the rest of the page is used: price 2, negative size, a non-wallet', () => {
    const rows = load('data-api/polyprinter_activity_sample.json') as Json[];
    const page = [
      { ...rows[0], price: 2 },
      { ...rows[1], size: -5 },
      { ...rows[2], proxyWallet: 'alice' },
      rows[3],
      rows[4],
    ];
    const { parsed, rejected } = mapActivityRows(page, V2_START_TS, 'activity');
    expect(parsed).toHaveLength(2);
    expect(rejected.map((rejection) => rejection.what)).toEqual(['activity row 1', 'activity row 2', 'activity row 3']);
    expect(rejected[0]!.reason).toMatch(/price/);
    expect(rejected[1]!.reason).toMatch(/size/);
    expect(rejected[2]!.reason).toMatch(/wallet/);
  });
});

describe('profiles, equity and the leaderboard', () => {
  it('a profile: pnl from the all-time leaderboard row, unrealized = Σ cashPnl of open positions, value from /value', () => {
    const positions = load('data-api/polyprinter_positions_sample.json') as Json[];
    const value = load('data-api/polyprinter_apinotes_value.json') as Json[];
    const wallet = value[0]!.user as string;
    const board = [
      {
        rank: '12',
        proxyWallet: wallet,
        userName: 'swisstony',
        pnl: 123456.78,
        vol: 1e6,
        profileImage: 'https://x.test/a.png',
      },
    ];
    const { profile, rejected } = mapProfile({ wallet, leaderboard: board, value, positions, asOf: 1_786_200_000 });
    expect(rejected).toEqual([]);
    const unrealized = positions.reduce((sum, position) => sum + (position.cashPnl as number), 0);
    expect(profile).toMatchObject({
      wallet,
      name: 'swisstony',
      profile_image: 'https://x.test/a.png',
      pnl: 123456.78,
      portfolio_value: value[0]!.value,
      as_of: 1_786_200_000,
    });
    expect(profile!.pnl_unrealized).toBeCloseTo(unrealized, 6);
    expect(profile!.pnl_realized).toBeCloseTo(123456.78 - unrealized, 6);
  });

  it('a wallet the provider does not know: a zero profile without a name', () => {
    const wallet = '0x' + 'ab'.repeat(20);
    expect(mapProfile({ wallet, leaderboard: [], value: [], positions: [], asOf: 1_786_200_000 }).profile).toEqual({
      wallet,
      name: '',
      profile_image: '',
      pnl: 0,
      pnl_realized: 0,
      pnl_unrealized: 0,
      portfolio_value: 0,
      as_of: 1_786_200_000,
    });
  });

  it('equity points from user-pnl [{t, p}], a bad point rejected and the rest kept', () => {
    const wallet = '0x' + 'cd'.repeat(20);
    const body = [
      { t: 1_786_000_000, p: 10.5 },
      { t: 'x', p: 1 },
      { t: 1_786_086_400, p: -3.25 },
    ];
    const { points, rejected } = mapEquity(wallet, body);
    expect(points).toEqual([
      { wallet, ts: 1_786_000_000, pnl_usd: 10.5 },
      { wallet, ts: 1_786_086_400, pnl_usd: -3.25 },
    ]);
    expect(rejected).toHaveLength(1);
  });

  it('the leaderboard pages: rank, wallet, a name unless it is the wallet-derived placeholder, pnl and vol', () => {
    for (const file of [
      'data-api/polyprinter_apinotes_leaderboard_week_vol_limit2.json',
      'data-api/polyprinter_apinotes_leaderboard_day_pnl_limit3_EXCERPT.json',
    ]) {
      const body = load(file) as Json[];
      const { rows, rejected } = mapLeaderboard(body, { period: 'WEEK', metric: 'PNL', asOf: 1_786_200_000 });
      expect(rejected).toEqual([]);
      expect(rows).toEqual(
        body.map((row) => ({
          period: 'WEEK',
          metric: 'PNL',
          as_of: 1_786_200_000,
          rank: Number(row.rank),
          wallet: (row.proxyWallet as string).toLowerCase(),
          name: (row.userName as string).toLowerCase().startsWith((row.proxyWallet as string).toLowerCase())
            ? ''
            : row.userName,
          profile_image: row.profileImage,
          pnl: row.pnl,
          vol: row.vol,
        })),
      );
    }
  });

  it('leaderboard values that are not finite numbers are rejected with a reason, as the profile path rejects them', () => {
    const wallet = '0x6031b6eed1c97e853c6e0f03ad3ce3529351f96d';
    const good = { rank: '1', proxyWallet: wallet, userName: 'someone', pnl: 12.5, vol: 100 };
    // 1e309 as the provider's JSON states it: the parser reads it as Infinity.
    const body = JSON.parse(
      `[${JSON.stringify(good)}, {"rank":"2","proxyWallet":"0x${'1'.repeat(40)}","pnl":"NaN","vol":1},` +
        `{"rank":"3","proxyWallet":"0x${'2'.repeat(40)}","pnl":1,"vol":"lots"},` +
        `{"rank":"4","proxyWallet":"0x${'3'.repeat(40)}","pnl":1e309,"vol":1}]`,
    ) as unknown;
    const { rows, rejected } = mapLeaderboard(body, { period: 'WEEK', metric: 'PNL', asOf: 1_786_200_000 });
    expect(rows.map((row) => [row.wallet, row.pnl, row.vol])).toEqual([[wallet, 12.5, 100]]);
    expect(rejected.map((rejection) => [rejection.what, rejection.reason])).toEqual([
      ['leaderboard row 2', 'pnl is not a number ("NaN")'],
      ['leaderboard row 3', 'vol is not a number ("lots")'],
      ['leaderboard row 4', 'pnl is not a number (null)'],
    ]);
    const profile = mapProfile({
      wallet,
      leaderboard: [{ pnl: 'NaN' }],
      value: [],
      positions: [],
      asOf: 1_786_200_000,
    });
    expect(profile.profile).toBeUndefined();
  });

  it('a wallet the provider spells in upper case is one trader, in lower case, at its first rank', () => {
    const wallet = '0x6031b6eed1c97e853c6e0f03ad3ce3529351f96d';
    const body = [
      { rank: '1', proxyWallet: wallet.toUpperCase().replace('0X', '0x'), userName: 'loud', pnl: 5, vol: 9 },
      { rank: '2', proxyWallet: wallet, userName: 'quiet', pnl: 4, vol: 8 },
    ];
    const { rows, rejected } = mapLeaderboard(body, { period: 'WEEK', metric: 'PNL', asOf: 1_786_200_000 });
    expect(rows.map((row) => [row.rank, row.wallet, row.name])).toEqual([[1, wallet, 'loud']]);
    expect(rejected).toEqual([
      { what: 'leaderboard row 2', reason: `wallet ${wallet} repeats leaderboard row 1`, raw: body[1] },
    ]);
  });
});
