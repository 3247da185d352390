/**
 * The market channel's recorded sequences (../shared/data/polymarket/http/clob-ws/streams/, never copied
 * here) through the frame reader and the translator: a book replayed from its deltas ends equal to the
 * venue's next book, the venue's own best prices are reproduced on the way, and prints and ticks carry the
 * recorded prices in UP space. Expected values are read from the recordings, not from the code.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OrderBook, type Level } from './book.ts';
import { decodeFrame, type BookMessage, type ClobMessage } from './protocol.ts';
import { ClobTranslator } from './translate.ts';

const STREAMS = path.resolve(import.meta.dirname, '../../../../shared/data/polymarket/http/clob-ws/streams');
const lines = (file: string) =>
  readFileSync(path.join(STREAMS, file), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');

const MIKELIN = 'mikelin97_btc-updown-15m-1761786000';
const MIKELIN_MARKET = '0x9444d31814238a9d89fed3eab0e2782da96eb9b7bf1ba5da8663edeee137ec06';
/** The notebook's YES token (Up, the first outcome) and the other one. */
const MIKELIN_UP = '83183308674131023197302415258788997759161749822734524473545155235350145282641';
const MIKELIN_DOWN = '41962797971457692471944227875529019000673384934005887575219956926514413062682';
const NAUTILUS_MARKET = '0x285746de0e4f751fd4dc8f9dc2cecd0101ba9ad0096a43145ed9643b09514f01';
const NAUTILUS_YES = '76670567130917723816490572615540605537878462672464291990940067659127658071111';

const only = (text: string): ClobMessage => {
  const frame = decodeFrame(text);
  expect(frame.rejected).toEqual([]);
  expect(frame.messages).toHaveLength(1);
  return frame.messages[0]!;
};

/** A recorded book's levels, best first, read straight from its strings. */
function recordedLevels(raw: { bids: { price: string; size: string }[]; asks: { price: string; size: string }[] }) {
  const sorted = (levels: { price: string; size: string }[], descending: boolean): Level[] =>
    levels
      .map((level) => ({ price: Number(level.price), size: Number(level.size) }))
      .sort((a, b) => (descending ? b.price - a.price : a.price - b.price));
  return { bids: sorted(raw.bids, true), asks: sorted(raw.asks, false) };
}

const tenDecimals = (value: number) => Number(value.toFixed(10));

describe('the recorded market channel, replayed', () => {
  it('rebuilds the second YES book from the first and the 69 deltas between them, stating the venue’s best prices on the way', () => {
    const books = lines(`${MIKELIN}_yes_token_books.jsonl`);
    const translator = new ClobTranslator();
    translator.track([{ conditionId: MIKELIN_MARKET, token1: MIKELIN_UP, token2: MIKELIN_DOWN }]);
    translator.translate([only(books[0]!)]);
    let mismatches = 0;
    const deltas = lines(`${MIKELIN}_yes_price_change_entries_frames1-69.jsonl`).map(
      (line) => JSON.parse(line) as { frame_timestamp: string; price_change_entry: Record<string, string> },
    );
    expect(deltas).toHaveLength(69);
    for (const { frame_timestamp, price_change_entry } of deltas) {
      const frame = {
        market: MIKELIN_MARKET,
        price_changes: [price_change_entry],
        timestamp: frame_timestamp,
        event_type: 'price_change',
      };
      const { outputs } = translator.translate([only(JSON.stringify(frame))]);
      const top = translator.bookOf(MIKELIN_UP)!.top();
      if (top.bid !== Number(price_change_entry.best_bid) || top.ask !== Number(price_change_entry.best_ask))
        mismatches++;
      // A tick only when the top moved, and then the book's top (token 1: UP space as it is).
      for (const output of outputs) expect(output.event).toMatchObject({ bid: top.bid, ask: top.ask });
    }
    expect(mismatches).toBe(0);
    expect(translator.bookOf(MIKELIN_UP)!.levels()).toEqual(recordedLevels(JSON.parse(books[1]!)));
  });

  it('rebuilds the crossing burst’s final book from its first and 49 two-token frames; the transient cross is tolerated', () => {
    const stream = lines('nautilus_crossing_burst_2026-09-29.jsonl');
    const first = JSON.parse(stream[0]!) as { asset_id: string };
    expect(first.asset_id).toBe(NAUTILUS_YES);
    const other = (JSON.parse(stream[1]!) as { price_changes: { asset_id: string }[] }).price_changes
      .map((entry) => entry.asset_id)
      .find((id) => id !== NAUTILUS_YES)!;
    const translator = new ClobTranslator();
    translator.track([{ conditionId: NAUTILUS_MARKET, token1: NAUTILUS_YES, token2: other }]);
    const ticks: { bid: number | null; ask: number | null }[] = [];
    for (const line of stream.slice(0, -1)) {
      const { outputs, rejected } = translator.translate([only(line)]);
      expect(rejected).toEqual([]);
      for (const output of outputs) if (output.topic === 'book') ticks.push(output.event);
    }
    expect(translator.bookOf(NAUTILUS_YES)!.levels()).toEqual(recordedLevels(JSON.parse(stream.at(-1)!)));
    // The last tick is the final book's top, read from the recording: best bid the highest, best ask the lowest.
    const last = recordedLevels(JSON.parse(stream.at(-1)!));
    translator.translate([only(stream.at(-1)!)]);
    expect(translator.bookOf(NAUTILUS_YES)!.top()).toEqual({ bid: last.bids[0]!.price, ask: last.asks[0]!.price });
    expect(ticks.length).toBeGreaterThan(0);
  });

  it('publishes a locked book as stated (best bid equal to best ask)', () => {
    const [change, book] = lines(`${MIKELIN}_price_change_then_book.jsonl`);
    const translator = new ClobTranslator();
    translator.track([{ conditionId: MIKELIN_MARKET, token1: MIKELIN_UP, token2: MIKELIN_DOWN }]);
    // No snapshot yet: the venue's stated best prices stand in.
    const { outputs } = translator.translate([only(change!)]);
    expect(outputs).toEqual([
      {
        topic: 'book',
        event: { condition_id: MIKELIN_MARKET, ts: 1761786625, seq: 1761786625422000, bid: 0.57, ask: 0.57 },
      },
    ]);
    const next = translator.translate([only(book!)]);
    const recorded = recordedLevels(JSON.parse(book!));
    expect(next.outputs.map((output) => output.event)).toEqual([
      expect.objectContaining({ bid: recorded.bids[0]?.price ?? null, ask: recorded.asks[0]?.price ?? null }),
    ]);
  });

  it('mirrors token 2’s book into UP space while token 1’s is unknown', () => {
    const translator = new ClobTranslator();
    translator.track([{ conditionId: MIKELIN_MARKET, token1: MIKELIN_UP, token2: MIKELIN_DOWN }]);
    const book: BookMessage = {
      event_type: 'book',
      market: MIKELIN_MARKET,
      asset_id: MIKELIN_DOWN,
      timestamp: 1761786033748,
      bids: [{ price: 0.62, size: 10 }],
      asks: [{ price: 0.66, size: 5 }],
    };
    expect(translator.translate([book]).outputs[0]!.event).toMatchObject({ bid: 0.34, ask: 0.38 });
  });

  it('turns every recorded print into a trade whose UP price is the recording’s (token 2 mirrored)', () => {
    const prints = lines(`${MIKELIN}_last_trade_price.jsonl`);
    const translator = new ClobTranslator();
    translator.track([{ conditionId: MIKELIN_MARKET, token1: MIKELIN_UP, token2: MIKELIN_DOWN }]);
    const messages = prints.map(only);
    const { outputs, rejected } = translator.translate(messages);
    expect(rejected).toEqual([]);
    expect(outputs).toHaveLength(594);
    prints.forEach((line, index) => {
      const raw = JSON.parse(line) as Record<string, string>;
      const output = outputs[index]!;
      if (output.topic !== 'trades') throw new Error('a print became something else');
      const up = raw.asset_id === MIKELIN_UP ? Number(raw.price) : tenDecimals(1 - Number(raw.price));
      expect(output.event).toMatchObject({
        tx_hash: raw.transaction_hash,
        condition_id: MIKELIN_MARKET,
        token_side: raw.asset_id === MIKELIN_UP ? 1 : 2,
        price: Number(raw.price),
        size_tokens: Number(raw.size),
        taker_side: raw.side,
        ts: Math.floor(Number(raw.timestamp) / 1000),
      });
      const side = output.event.token_side;
      expect(tenDecimals(side === 1 ? output.event.price : 1 - output.event.price)).toBe(up);
    });
  });
});

describe('frames', () => {
  it('reads PONG, arrays of messages, string numbers, and rejects garbage without throwing', () => {
    expect(decodeFrame('PONG')).toMatchObject({ pong: true, messages: [], rejected: [] });
    const array = decodeFrame(
      JSON.stringify([
        { event_type: 'tick_size_change', asset_id: '1', market: '0x', old_tick_size: '0.01', new_tick_size: '0.001' },
        {
          event_type: 'last_trade_price',
          market: '0x',
          asset_id: '7',
          price: '0.491',
          size: '85.36',
          side: 'SELL',
          timestamp: '1724564136087',
        },
      ]),
    );
    expect(array.ignored).toBe(1);
    expect(array.messages).toEqual([
      {
        event_type: 'last_trade_price',
        market: '0x',
        asset_id: '7',
        price: 0.491,
        size: 85.36,
        side: 'SELL',
        timestamp: 1724564136087,
      },
    ]);
    expect(decodeFrame('{"oops').rejected[0]!.reason).toMatch(/not JSON/);
    expect(decodeFrame('[1, {"event_type":"book","asset_id":"x"}]').rejected.map((item) => item.reason)).toEqual([
      expect.stringMatching(/no event_type/),
      expect.stringMatching(/^book: /),
    ]);
  });

  it('dead-letters a print without its transaction and a resolution of an unknown side', () => {
    const translator = new ClobTranslator();
    translator.track([{ conditionId: MIKELIN_MARKET, token1: MIKELIN_UP, token2: MIKELIN_DOWN }]);
    const { rejected } = translator.translate([
      {
        event_type: 'last_trade_price',
        market: MIKELIN_MARKET,
        asset_id: MIKELIN_UP,
        price: 0.5,
        size: 1,
        side: 'BUY',
        timestamp: 1761786035832,
      },
      { event_type: 'market_resolved', market: MIKELIN_MARKET, winning_asset_id: '5', timestamp: 1761786035832 },
    ]);
    expect(rejected.map((item) => item.reason)).toEqual([
      expect.stringMatching(/transaction_hash/),
      expect.stringMatching(/no known side/),
    ]);
  });

  it('turns the recorded new_market and market_resolved into metadata, tokens and a resolution', () => {
    const read = (file: string) => only(readFileSync(path.join(STREAMS, '..', file), 'utf8'));
    const translator = new ClobTranslator();
    const created = translator
      .translate([read('nautilus_ws_market_new_market.json')])
      .outputs.map((output) => output.event);
    expect(created).toEqual([
      expect.objectContaining({
        type: 'metadata',
        condition_id: '0x311d0c4b6671ab54af4970c06fcf58662516f5168997bdda209ec3db5aa6b0c1',
        title: 'Will NVIDIA (NVDA) close above $240 end of January?',
        outcome1: 'Yes',
        outcome2: 'No',
      }),
      {
        type: 'tokens',
        condition_id: '0x311d0c4b6671ab54af4970c06fcf58662516f5168997bdda209ec3db5aa6b0c1',
        token1_id: '76043073756653678226373981964075571318267289248134717369284518995922789326425',
        token2_id: '31690934263385727664202099278545688007799199447969475608906331829650099442770',
      },
    ]);
    // The winning asset is the first listed: token 1 won.
    expect(translator.translate([read('nautilus_ws_market_resolved.json')]).outputs).toEqual([
      {
        topic: 'markets',
        event: {
          type: 'resolution',
          condition_id: '0x311d0c4b6671ab54af4970c06fcf58662516f5168997bdda209ec3db5aa6b0c1',
          winner_token_side: 1,
          ts: 1766790415,
          source: 'clob',
        },
      },
    ]);
  });
});

// The replayed book is compared level by level, so a stray level would fail it: a fresh book of the same levels compares equal.
it('compares books by their levels', () => {
  const one = new OrderBook();
  one.replace([{ price: 0.1, size: 1 }], []);
  const two = new OrderBook();
  two.replace(
    [
      { price: 0.1, size: 1 },
      { price: 0.2, size: 0 },
    ],
    [],
  );
  expect(one.levels()).toEqual(two.levels());
  two.apply({ price: 0.2, size: 3, side: 'BUY' });
  expect(one.levels()).not.toEqual(two.levels());
});
