import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TOPICS, TOPIC_IDS, TopicNames } from './topics.ts';
import { conditionIdSchema, txHashSchema, upNormalizedPrice, walletSchema } from './primitives.ts';
import { formatTitleWindow, parseTitleWindow } from './title-time.ts';

describe('UP-space price normalization', () => {
  it('keeps token-1 prices and complements token-2 prices, always inside [0, 1]', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), (basisPoints) => {
        const price = basisPoints / 10_000;
        expect(upNormalizedPrice(1, price)).toBe(price);
        const up = upNormalizedPrice(2, price);
        expect(up).toBeGreaterThanOrEqual(0);
        expect(up).toBeLessThanOrEqual(1);
        expect(up).toBeCloseTo(1 - price, 12);
        // Normalizing twice gives back the traded level: no float drift on a 0.0001 grid.
        expect(upNormalizedPrice(2, up)).toBe(price);
      }),
    );
  });

  it('turns a token-2 print at 0.99 into exactly 0.01, not 0.010000000000000009', () => {
    expect(upNormalizedPrice(2, 0.99)).toBe(0.01);
    expect(upNormalizedPrice(2, 0.3)).toBe(0.7);
  });
});

describe('title windows (US Eastern, no year)', () => {
  it('reads the windows of real Polymarket titles', () => {
    // Slug btc-updown-15m-1767555900 of the real exports in ../shared.
    expect(parseTitleWindow('Bitcoin Up or Down - January 4, 2:45PM-3:00PM ET', 1_767_556_817)).toEqual({
      startTs: 1_767_555_900,
      endTs: 1_767_556_800,
    });
    // Hourly titles name the hour only: 10PM ET on January 4 is 03:00 UTC on January 5.
    expect(parseTitleWindow('Bitcoin Up or Down - January 4, 10PM ET', 1_767_585_267)).toEqual({
      startTs: 1_767_582_000,
      endTs: 1_767_585_600,
    });
    expect(parseTitleWindow('Oilers vs. Ducks', 1_767_585_267)).toBeNull();
    expect(parseTitleWindow('Will the US confirm that aliens exist by September 30?', 1_767_585_267)).toBeNull();
  });

  it('measures windows across daylight-saving changes by the wall clock', () => {
    // The night daylight saving starts: clocks jump from 2:00 to 3:00; the window 1:45-3:00 lasts fifteen minutes.
    const window = parseTitleWindow('Bitcoin Up or Down - March 8, 1:45AM-3:00AM ET', Date.UTC(2026, 2, 8) / 1000);
    expect(window).not.toBeNull();
    expect(window!.endTs - window!.startTs).toBe(900);
    expect(new Date(window!.startTs * 1000).toISOString()).toBe('2026-03-08T06:45:00.000Z');
  });

  it('reads the hour repeated when daylight saving ends as the occurrence nearest the observation', () => {
    // The night daylight saving ends: clocks fall back from 2:00 EDT to 1:00 EST, so 1:00–1:59 AM happens twice:
    // 05:00–05:59 UTC (EDT), then 06:00–06:59 UTC (EST). The fast-check seed -309673020 found the second one read as the first.
    const title = 'Bitcoin Up or Down - November 1, 1:00AM-1:15AM ET';
    const first = Date.UTC(2026, 10, 1, 5, 0) / 1000;
    const second = Date.UTC(2026, 10, 1, 6, 0) / 1000;
    expect(parseTitleWindow(title, first + 120)).toEqual({ startTs: first, endTs: first + 900 });
    expect(parseTitleWindow(title, second + 120)).toEqual({ startTs: second, endTs: second + 900 });
    // An hourly title of the second 1 AM.
    expect(parseTitleWindow('Bitcoin Up or Down - November 1, 1AM ET', second + 120)).toEqual({
      startTs: second,
      endTs: second + 3600,
    });
  });

  it('parses back what it formats, for any quarter-hour or hour in a four-year span', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4 * 365 * 96 }), fc.constantFrom(300, 900, 3600), (slot, length) => {
        const startTs = 1_735_689_600 + slot * 900; // quarter hours from 2025-01-01
        const endTs = startTs + length;
        const title = `Bitcoin Up or Down - ${formatTitleWindow(startTs, endTs)}`;
        const parsed = parseTitleWindow(title, startTs + 120);
        expect(parsed?.startTs).toBe(startTs);
      }),
      { numRuns: 300 },
    );
  });

  it('never throws on arbitrary titles', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1_500_000_000, max: 4_000_000_000 }), (title, reference) => {
        const parsed = parseTitleWindow(title, reference);
        if (parsed) expect(parsed.endTs).toBeGreaterThan(parsed.startTs);
      }),
    );
  });
});

describe('hex identifiers', () => {
  const hexString = (digits: number) =>
    fc
      .array(fc.constantFrom(...'0123456789abcdefABCDEF'), { minLength: digits, maxLength: digits })
      .map((chars) => `0x${chars.join('')}`);

  it('accepts any case and lands lowercase (one wallet, market or transaction whatever its source wrote)', () => {
    fc.assert(
      fc.property(hexString(40), hexString(64), (wallet, hash) => {
        expect(walletSchema.parse(wallet)).toBe(wallet.toLowerCase());
        expect(conditionIdSchema.parse(hash)).toBe(hash.toLowerCase());
        expect(txHashSchema.parse(hash)).toBe(hash.toLowerCase());
      }),
    );
  });

  it('refuses what is not 0x and the exact number of hex digits', () => {
    for (const bad of [
      `0x${'a'.repeat(39)}`,
      `0x${'a'.repeat(41)}`,
      `0X${'a'.repeat(40)}`,
      `0x${'g'.repeat(40)}`,
      ` 0x${'a'.repeat(40)}`,
      `0x${'a'.repeat(40)}\n`,
    ]) {
      expect(walletSchema.safeParse(bad).success, bad).toBe(false);
    }
    expect(conditionIdSchema.safeParse(`0x${'a'.repeat(63)}`).success).toBe(false);
    expect(txHashSchema.safeParse(`0x${'a'.repeat(65)}`).success).toBe(false);
  });
});

describe('topic registry', () => {
  it('gives every topic a distinct name, and maps prefixed physical names back', () => {
    const names = TOPIC_IDS.map((topicId) => TOPICS[topicId].name);
    expect(new Set(names).size).toBe(names.length);
    const topics = new TopicNames('prod.');
    for (const topicId of TOPIC_IDS) expect(topics.idOf(topics.of(topicId))).toBe(topicId);
    expect(topics.idOf('other.fills.archive')).toBeUndefined();
    expect(topics.deadLetter()).toBe('prod.dead-letter');
  });

  it('gives a fill the same id from the archive and from the upstream, per wallet', () => {
    const fill = {
      tx_hash: `0x${'ab'.repeat(32)}`,
      log_index: 7,
      wallet: `0x${'CD'.repeat(20)}`,
      condition_id: `0x${'ef'.repeat(32)}`,
      side: 'BUY',
      token_side: 2,
      price: 0.3,
      size_tokens: 10,
      usd: 3,
      role: 'maker',
      era: 'v2',
      ts: 1_767_556_800,
    };
    const archive = TOPICS.fillsArchive.schema.parse(fill);
    // The data API's copy: a synthetic log index, its own role and the price to ten significant digits.
    const upstream = TOPICS.fillsUpstream.schema.parse({
      ...fill,
      log_index: 1_234_567,
      role: 'taker',
      price: 0.3000000001,
      name: 'someone',
    });
    expect(TOPICS.fillsArchive.id(archive)).toBe(TOPICS.fillsUpstream.id(upstream));
    expect(archive.wallet).toBe(`0x${'cd'.repeat(20)}`);
    const landed = TOPICS.fillsArchive.land(archive);
    expect(landed.table).toBe('fills');
    expect(landed.row.up_price).toBe(0.7);
    expect(landed.row.fill_id).toBe(`0x${'ab'.repeat(32)}:2:BUY:10000000:3000`);
    expect(TOPICS.fillsUpstream.land(upstream).row.fill_id).toBe(landed.row.fill_id);
    expect(TOPICS.fillsArchive.land(archive).row.source_rank).toBeGreaterThan(
      TOPICS.fillsUpstream.land(upstream).row.source_rank as number,
    );
  });

  it('gives a position leg the same id from the archive and from the upstream: transaction, kind and USD, not tokens or log index', () => {
    const leg = {
      tx_hash: `0x${'AB'.repeat(32)}`,
      log_index: 12,
      wallet: `0x${'cd'.repeat(20)}`,
      condition_id: `0x${'ef'.repeat(32)}`,
      kind: 'REDEEM',
      tokens: 59.076955,
      usd: 59.076955,
      era: 'v2',
      ts: 1_784_777_541,
    };
    const archive = TOPICS.positions.schema.parse(leg);
    // The data API's copy: a synthetic log index and the tokens it redeemed (the chain states the payout only).
    const upstream = TOPICS.positions.schema.parse({ ...leg, log_index: 987_654 });
    expect(TOPICS.positions.id(archive)).toBe(TOPICS.positions.id(upstream));
    // A losing side's redemption: the chain pays nothing (its copy states no tokens), the data API names the tokens.
    const lostOnChain = TOPICS.positions.schema.parse({ ...leg, tokens: 0, usd: 0 });
    const lostUpstream = TOPICS.positions.schema.parse({ ...leg, log_index: 987_654, tokens: 4.166664, usd: 0 });
    expect(TOPICS.positions.id(lostOnChain)).toBe(TOPICS.positions.id(lostUpstream));
    expect(TOPICS.positions.land(archive).row.leg_id).toBe(`0x${'ab'.repeat(32)}:REDEEM:59076955`);
    expect(TOPICS.positions.land(upstream).row.leg_id).toBe(TOPICS.positions.land(archive).row.leg_id);
    expect(TOPICS.positions.land({ ...archive, kind: 'MERGE' }).row.leg_id).not.toBe(
      TOPICS.positions.land(archive).row.leg_id,
    );
    expect(TOPICS.positions.land({ ...archive, usd: 59.076956 }).row.leg_id).not.toBe(
      TOPICS.positions.land(archive).row.leg_id,
    );
  });

  it('admits a redemption paying 0, 0.5 or 1 per token and refuses any other payout with the reason', () => {
    const leg = {
      tx_hash: `0x${'ab'.repeat(32)}`,
      log_index: 1,
      wallet: `0x${'cd'.repeat(20)}`,
      condition_id: `0x${'ef'.repeat(32)}`,
      kind: 'REDEEM',
      era: 'v2',
      ts: 1_784_777_541,
    };
    const parse = (tokens: number, usd: number) => TOPICS.positions.schema.safeParse({ ...leg, tokens, usd });
    // the winner (the real collectmarkets row), the losing side, a split payout (a half rounded down), nothing
    for (const [tokens, usd] of [
      [4903.7727, 4903.7727],
      [4.166664, 0],
      [3.000001, 1.5],
      [0, 0],
    ] as const)
      expect(parse(tokens, usd).success, `${tokens} for ${usd}`).toBe(true);
    const refused = parse(10, 7);
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.message).toMatch(/pays 0\.700000 per token, not 0 .* its side cannot be told/);
    expect(parse(0, 5).error?.issues[0]?.message).toMatch(/something for nothing/);
    // other legs are not redemptions: a merge pays 1 per pair whatever the tokens say
    expect(TOPICS.positions.schema.safeParse({ ...leg, kind: 'MERGE', tokens: 10, usd: 7 }).success).toBe(true);
  });

  it('keeps two fills of one wallet in one transaction apart when their side, token, size or price level differ', () => {
    const base = TOPICS.fillsArchive.schema.parse({
      tx_hash: `0x${'ab'.repeat(32)}`,
      log_index: 7,
      wallet: `0x${'cd'.repeat(20)}`,
      condition_id: `0x${'ef'.repeat(32)}`,
      side: 'BUY',
      token_side: 1,
      price: 0.5,
      size_tokens: 100,
      usd: 50,
      role: 'maker',
      era: 'v2',
      ts: 1_767_556_800,
    });
    const variants = [
      { side: 'SELL' as const },
      { token_side: 2 as const },
      { size_tokens: 100.000001 },
      { price: 0.5001 },
    ];
    const ids = variants.map((change) => TOPICS.fillsArchive.land({ ...base, ...change }).row.fill_id);
    expect(new Set([TOPICS.fillsArchive.land(base).row.fill_id, ...ids]).size).toBe(variants.length + 1);
  });
});
