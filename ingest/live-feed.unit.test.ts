/** The live feed's reading of the log: only the keys someone subscribed to, prices in UP space, bad messages skipped. */
import { describe, expect, it } from 'vitest';
import type { PartitionSlice } from './bus/types.ts';
import { liveEventsOf } from './live-feed.ts';

const WATCHED = `0x${'a1'.repeat(32)}`;
const OTHER = `0x${'b2'.repeat(32)}`;
const FOLLOWED = `0x${'c3'.repeat(20)}`;
const STRANGER = `0x${'d4'.repeat(20)}`;
const TX = `0x${'e5'.repeat(32)}`;

const trade = (market: string, tokenSide: 1 | 2, price: number) => ({
  tx_hash: TX,
  log_index: 1,
  condition_id: market,
  token_side: tokenSide,
  price,
  size_tokens: 10,
  usd: 10 * price,
  ts: 1_767_556_900,
  seq: 1,
});
const fill = (wallet: string, market: string, price: number) => ({
  tx_hash: TX,
  log_index: 2,
  wallet,
  condition_id: market,
  side: 'BUY',
  token_side: 1,
  price,
  size_tokens: 10,
  usd: 10 * price,
  role: 'taker',
  era: 'v2',
  ts: 1_767_556_901,
});

function slice(messages: { key: string; value: unknown }[]): PartitionSlice {
  return {
    topic: 't',
    partition: 0,
    messages: messages.map((message, index) => ({
      offset: String(index),
      key: Buffer.from(message.key),
      value: Buffer.from(typeof message.value === 'string' ? message.value : JSON.stringify(message.value)),
      headers: {},
    })),
  };
}

const target = {
  wantsMarket: (market: string) => market === WATCHED,
  wantsWallet: (wallet: string) => wallet === FOLLOWED,
};

describe('liveEventsOf', () => {
  it('decodes only the watched markets’ trades, in UP space, and skips what does not parse', () => {
    const trades = slice([
      { key: OTHER, value: trade(OTHER, 1, 0.5) },
      { key: WATCHED, value: trade(WATCHED, 2, 0.3) },
      { key: WATCHED, value: '{not json' },
      { key: WATCHED, value: { condition_id: WATCHED } },
    ]);
    expect(liveEventsOf(trades, 'trades', 'market', target)).toEqual([
      expect.objectContaining({ kind: 'trade', market: WATCHED, price: 0.7, token_side: 2, ts: 1_767_556_900 }),
    ]);
  });

  it('decodes the followed wallets’ fills, and every market’s names and resolutions', () => {
    const fills = slice([
      { key: STRANGER, value: fill(STRANGER, OTHER, 0.4) },
      { key: FOLLOWED, value: fill(FOLLOWED, OTHER, 0.4) },
    ]);
    expect(liveEventsOf(fills, 'fillsArchive', 'wallet', target)).toEqual([
      expect.objectContaining({ kind: 'fill', wallet: FOLLOWED, market: OTHER, price: 0.4 }),
    ]);
    const markets = slice([
      {
        key: OTHER,
        value: {
          type: 'metadata',
          condition_id: OTHER,
          title: 'Will it?',
          outcome1: 'Yes',
          outcome2: 'No',
          title_start_ts: null,
          version: 1,
        },
      },
      { key: OTHER, value: { type: 'resolution', condition_id: OTHER, winner_token_side: 1, ts: 1_767_557_000 } },
    ]);
    expect(liveEventsOf(markets, 'markets', 'any', target)).toEqual([
      expect.objectContaining({ kind: 'names', market: OTHER, outcome1: 'Yes', outcome2: 'No' }),
      { kind: 'resolution', market: OTHER, ts: 1_767_557_000, winnerTokenSide: 1 },
    ]);
  });
});
