import { describe, expect, it } from 'vitest';
import { parseTitleWindow } from '../../contract/title-time.ts';
import { marketsOpeningBetween, marketsPublishedBetween, marketsStandingAt } from './schedule.ts';

const SEED = 11;
/** 2026-01-05 03:00 UTC = January 4, 10PM ET: the hour of the real examples in shared/data. */
const TEN_PM_ET = 1_767_582_000;

describe('market schedule', () => {
  it('names crypto windows the way Polymarket does', () => {
    const markets = marketsOpeningBetween(SEED, TEN_PM_ET, TEN_PM_ET + 3_600);
    const bySlug = new Map(markets.map((market) => [market.slug, market]));

    const hourly = bySlug.get('bitcoin-up-or-down-january-4-10pm-et');
    expect(hourly?.title).toBe('Bitcoin Up or Down - January 4, 10PM ET');
    expect(bySlug.get('xrp-up-or-down-january-4-10pm-et')?.title).toBe('XRP Up or Down - January 4, 10PM ET');

    const quarter = bySlug.get('btc-updown-15m-1767583800');
    expect(quarter?.title).toBe('Bitcoin Up or Down - January 4, 10:30PM-10:45PM ET');
    expect(quarter).toMatchObject({ titleStartTs: 1_767_583_800, openTs: 1_767_583_800, endTs: 1_767_584_700 });

    const five = bySlug.get('eth-updown-5m-1767582300');
    expect(five?.title).toBe('Ethereum Up or Down - January 4, 10:05PM-10:10PM ET');
  });

  it('opens 4 assets × (12 five-minute + 4 quarter-hour + 1 hourly) crypto windows per hour', () => {
    const crypto = marketsOpeningBetween(SEED, TEN_PM_ET, TEN_PM_ET + 3_600).filter(
      (market) => market.category === 'crypto',
    );
    expect(crypto).toHaveLength(4 * (12 + 4 + 1));
    for (const market of crypto) {
      const window = parseTitleWindow(market.title, market.publishTs);
      expect(window).toEqual({ startTs: market.titleStartTs, endTs: market.endTs });
      expect(market.publishTs).toBeLessThan(market.openTs);
      expect(market.openTs - market.publishTs).toBeLessThanOrEqual(600);
      expect(market.resolveTs).toBeGreaterThanOrEqual(market.endTs);
      expect(market.conditionId).toMatch(/^0x[0-9a-f]{64}$/);
    }
    expect(new Set(crypto.map((market) => market.conditionId)).size).toBe(crypto.length);
  });

  it('keeps a handful of long politics markets and a few sports games standing', () => {
    const standing = marketsStandingAt(SEED, TEN_PM_ET);
    const politics = standing.filter((market) => market.category === 'politics');
    const sports = standing.filter((market) => market.category === 'sports');
    expect(politics.length).toBeGreaterThanOrEqual(4);
    expect(politics.length).toBeLessThanOrEqual(16);
    for (const market of politics) {
      expect(market).toMatchObject({ outcome1: 'Yes', outcome2: 'No', titleStartTs: null });
      expect(market.endTs - market.openTs).toBeGreaterThanOrEqual(4 * 86_400);
      expect(parseTitleWindow(market.title, market.openTs)).toBeNull();
    }
    expect(sports.length).toBeGreaterThanOrEqual(1);
    for (const market of sports) {
      expect(market.title).toBe(`${market.outcome1} vs. ${market.outcome2}`);
      expect(market.outcome1).not.toBe(market.outcome2);
      expect(market.resolveTs - (market.gameStartTs ?? 0)).toBeLessThan(5 * 3_600);
    }
  });

  it('answers the same whatever the stretch of time asked about', () => {
    const whole = marketsPublishedBetween(SEED, TEN_PM_ET, TEN_PM_ET + 7_200).map((market) => market.slug);
    const halves = [
      ...marketsPublishedBetween(SEED, TEN_PM_ET, TEN_PM_ET + 2_345),
      ...marketsPublishedBetween(SEED, TEN_PM_ET + 2_345, TEN_PM_ET + 7_200),
    ].map((market) => market.slug);
    expect(new Set(halves)).toEqual(new Set(whole));
    expect(halves).toHaveLength(whole.length);
  });
});
