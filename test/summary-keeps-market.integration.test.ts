/**
 * A summary keeps the trader's market that a chart or tape of the same market starts from.
 *
 * An agent asks for a market's summary, then its chart (crack_this_trader does, milliseconds apart).
 * Both start from the trader's row of the market, its metadata, its trade span and its resolution; the
 * summary reads all four, so it keeps the trader's market (header and times) in the read cache under
 * the chart's own policy, and the chart's first statement is not sent. The kept answer must be exactly
 * what the chart would read itself, whichever way the summary got the market's names (read with it, or
 * from the kept names), for an open market, a resolved one (kept for good), a split payout and a market
 * without metadata; an open market's is kept no longer than an open answer (api.readCache.openMarketSeconds).
 * Expected values come from readTraderMarket on the same store without the cache.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { readCacheOf, Reader } from '../operations/reads.ts';
import { readTraderMarket } from '../projections/prices.ts';
import type { Store } from '../projections/store.ts';
import { openMigratedStore, withPublisher } from '../roles/runtime.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import { inProcessConfig } from './harness/api.ts';
import { recordingQueries } from './harness/recorded-store.ts';

const config = inProcessConfig('summary-keeps-market');
const WALLET = makeWallet('keeps-market');
const OPEN = makeConditionId('keeps-open');
const RESOLVED = makeConditionId('keeps-resolved');
const SPLIT = makeConditionId('keeps-split');
/** Fills and trades, no metadata event. */
const UNNAMED = makeConditionId('keeps-unnamed');
/** Fills only: no metadata, no trades (the chart has no market to start from). */
const UNKNOWN = makeConditionId('keeps-unknown');

let store: Store;

/** Every statement the cached reads send, in order (tests clear it before what they check). */
const sent: string[] = [];

/** The app's cached reads over the recorded store, on a clock the test moves. */
function cachedReader() {
  const time = { ms: 1_000_000 };
  const recorded = recordingQueries(store, sent);
  const cache = readCacheOf(config, recorded, { clock: { now: () => time.ms } });
  return { time, reader: new Reader(recorded, cache, config.api.readCache) };
}

beforeAll(async () => {
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('markets', [
      makeMarket({
        condition_id: OPEN,
        title: 'Open market',
        outcome1: 'Yes',
        outcome2: 'No',
        title_start_ts: BASE_TS - 600,
      }),
      makeMarket({
        condition_id: RESOLVED,
        title: 'Resolved market',
        outcome1: 'Up',
        outcome2: 'Down',
        title_start_ts: BASE_TS,
      }),
      makeMarket({ condition_id: SPLIT, title: 'Split market', outcome1: 'A', outcome2: 'B', title_start_ts: null }),
      makeResolution(RESOLVED, 2, BASE_TS + 900),
      {
        type: 'resolution',
        condition_id: SPLIT,
        winner_token_side: null,
        payout_numerators: [1, 3],
        ts: BASE_TS + 950,
      },
    ]);
    const trades = [OPEN, RESOLVED, SPLIT, UNNAMED].flatMap((market, index) => [
      makeTrade({ condition_id: market, token_side: 1, price: 0.4, ts: BASE_TS + 10 + index, seq: 1 }),
      makeTrade({ condition_id: market, token_side: 2, price: 0.7, ts: BASE_TS + 700 + index, seq: 2 }),
    ]);
    await publisher.publish('trades', trades);
    await publisher.publish(
      'fillsArchive',
      [OPEN, RESOLVED, SPLIT, UNNAMED, UNKNOWN].flatMap((market, index) => [
        makeFill({
          wallet: WALLET,
          condition_id: market,
          side: 'BUY',
          token_side: 1,
          price: 0.4,
          size_tokens: 50,
          usd: 20,
          ts: BASE_TS + 20 + index,
        }),
        makeFill({
          wallet: WALLET,
          condition_id: market,
          side: 'SELL',
          token_side: 1,
          price: 0.6,
          size_tokens: 20,
          usd: 12,
          ts: BASE_TS + 400 + index,
        }),
      ]),
    );
  });
  store = await openMigratedStore(config, createLogger('error'));
});

afterAll(async () => {
  await store?.close();
});

describe('a summary keeps the trader market its chart starts from', () => {
  // What this file published: each market's times (trades at BASE_TS + 10 + i and BASE_TS + 700 + i, i its place).
  it.each([
    [
      'an open market',
      OPEN,
      {
        titleStartTs: BASE_TS - 600,
        outcome1: 'Yes',
        firstTradeTs: BASE_TS + 10,
        lastTradeTs: BASE_TS + 700,
        resolution: null,
      },
    ],
    [
      'a resolved market',
      RESOLVED,
      {
        titleStartTs: BASE_TS,
        outcome2: 'Down',
        firstTradeTs: BASE_TS + 11,
        resolution: { winnerTokenSide: 2, ts: BASE_TS + 900 },
      },
    ],
    [
      'a split payout',
      SPLIT,
      { titleStartTs: null, outcome1: 'A', resolution: { winnerTokenSide: null, ts: BASE_TS + 950, upPayout: 0.25 } },
    ],
    [
      'a market without metadata',
      UNNAMED,
      { titleStartTs: null, outcome1: '', outcome2: '', lastTradeTs: BASE_TS + 703, resolution: null },
    ],
  ])(
    '%s, names read with the summary: the chart sends no statement for it and gets what it would read',
    async (_label, market, times) => {
      const expected = await readTraderMarket(store, WALLET, market);
      expect(expected?.times).toMatchObject({ conditionId: market, ...times });
      const { reader: cached } = cachedReader();
      expect(await cached.marketSummary(WALLET, market)).not.toBeNull();
      sent.length = 0;
      expect(await cached.traderMarket(WALLET, market)).toEqual(expected);
      expect(sent).toEqual([]);
    },
  );

  it('names from the names cache (title_start_ts kept with them): the same', async () => {
    const expected = await readTraderMarket(store, WALLET, OPEN);
    expect(expected?.times.titleStartTs).toBe(BASE_TS - 600);
    const { reader: cached } = cachedReader();
    expect((await cached.marketNames([OPEN])).get(OPEN)).toEqual({
      title: 'Open market',
      outcome1: 'Yes',
      outcome2: 'No',
      title_start_ts: BASE_TS - 600,
    });
    sent.length = 0;
    await cached.marketSummary(WALLET, OPEN);
    // The summary used the kept names: its one statement has no metadata part.
    expect(sent).toHaveLength(1);
    expect(sent[0]).not.toContain('markets_meta_v2');
    sent.length = 0;
    expect(await cached.traderMarket(WALLET, OPEN)).toEqual(expected);
    expect(sent).toEqual([]);
  });

  it("an open market's is kept no longer than an open answer; a resolved market's for good", async () => {
    const { time, reader: cached } = cachedReader();
    await cached.marketSummary(WALLET, OPEN);
    await cached.marketSummary(WALLET, RESOLVED);
    time.ms += config.api.readCache.openMarketSeconds * 1000 + 1;
    sent.length = 0;
    expect(await cached.traderMarket(WALLET, OPEN)).toEqual(await readTraderMarket(store, WALLET, OPEN));
    expect(sent).toHaveLength(1);
    sent.length = 0;
    time.ms += 3_600_000;
    expect(await cached.traderMarket(WALLET, RESOLVED)).toEqual(await readTraderMarket(store, WALLET, RESOLVED));
    expect(sent).toEqual([]);
  });

  it('a market the chart cannot start from (no metadata, no trades) is not kept: the chart reads and finds none', async () => {
    expect(await readTraderMarket(store, WALLET, UNKNOWN)).toBeNull();
    const { reader: cached } = cachedReader();
    expect(await cached.marketSummary(WALLET, UNKNOWN)).not.toBeNull();
    sent.length = 0;
    expect(await cached.traderMarket(WALLET, UNKNOWN)).toBeNull();
    expect(sent).toHaveLength(1);
  });
});
