/** A tape's figures from its events, by the rule every recorder shares: counts, bytes, taped profit, grade. */
import { describe, expect, it } from 'vitest';
import { TapeTally } from './tape-tally.ts';

const fill = (side: 'BUY' | 'SELL', token_side: 1 | 2, price: number, size_tokens: number, usd: number) =>
  ({
    type: 'fill',
    ts: 10,
    side,
    price,
    token_side,
    outcome: token_side === 1 ? 'Yes' : 'No',
    size_tokens,
    usd,
  }) as const;

describe('TapeTally', () => {
  it('counts ticks, fills and events, and each event’s JSON line in bytes', () => {
    const tally = new TapeTally();
    const start = { type: 'session', ts: 1, state: 'start' } as const;
    expect(tally.add(start)).toBe('{"type":"session","ts":1,"state":"start"}\n'.length);
    tally.add({ type: 'book', ts: 2, bid: 0.4, ask: 0.42 });
    tally.add({ type: 'trade', ts: 3, price: 0.41, size_tokens: 5, usd: 2.05, token_side: 1 });
    tally.add(fill('BUY', 1, 0.41, 10, 4.1));
    // A multi-byte outcome name counts its UTF-8 bytes, not its characters.
    const named = { ...fill('SELL', 2, 0.4, 1, 0.6), outcome: 'Nein – ä' };
    expect(tally.add(named)).toBe(Buffer.byteLength(JSON.stringify(named)) + 1);
    expect(tally.summary()).toMatchObject({ tick_count: 2, fill_count: 2, event_count: 5, outcome: '' });
  });

  it('marks the tokens left at the last level seen, and at the payout once resolved', () => {
    const tally = new TapeTally();
    // 100 Yes tokens for 40 USD, then the book moves to 0.50/0.60: worth 55, a taped +15.
    tally.add(fill('BUY', 1, 0.4, 100, 40));
    tally.add({ type: 'book', ts: 11, bid: 0.5, ask: 0.6 });
    expect(tally.summary()).toMatchObject({ pnl_taped_usd: 15 });
    // No wins: the Yes tokens pay nothing.
    tally.add({ type: 'resolution', ts: 12, winner: 'No', level: 0 });
    expect(tally.summary()).toMatchObject({ pnl_taped_usd: -40, outcome: 'No' });
  });

  it('grades A above 400 USD down to F at −400 and below, 200 USD a grade', () => {
    const gradeOf = (pnl: number) => {
      const tally = new TapeTally();
      // Cash only: a token 1 sold or bought at level 0, where the token it leaves (or owes) is worth nothing.
      tally.add(pnl > 0 ? fill('SELL', 1, 0, 1, pnl) : fill('BUY', 1, 0, 1, -pnl));
      return tally.summary().grade;
    };
    expect([900, 400.01, 400, 200.01, 200, 0.01, 0, -199.99, -200, -399.99, -400, -1000].map(gradeOf)).toEqual([
      'A',
      'A',
      'B',
      'B',
      'C',
      'C',
      'D',
      'D',
      'E',
      'E',
      'F',
      'F',
    ]);
  });
});
