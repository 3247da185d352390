import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeBatch } from './decode.ts';
import type { LogMessage } from './bus/types.ts';

const wallet = `0x${'a1'.repeat(20)}`;
const market = `0x${'b2'.repeat(32)}`;
const fill = {
  tx_hash: `0x${'c3'.repeat(32)}`,
  log_index: 1,
  wallet,
  condition_id: market,
  side: 'SELL',
  token_side: 1,
  price: 0.55,
  size_tokens: 20,
  usd: 11,
  role: 'taker',
  era: 'v2',
  ts: 1_767_556_800,
};

function message(offset: number, value: string | null): LogMessage {
  return { offset: String(offset), key: null, value: value === null ? null : Buffer.from(value), headers: {} };
}

describe('decodeBatch', () => {
  it('lands valid events, dead-letters the rest with a reason and the original bytes', () => {
    const messages = [
      message(10, JSON.stringify(fill)),
      message(11, 'not json'),
      message(12, JSON.stringify({ ...fill, price: 1.5 })),
      message(13, null),
      message(14, JSON.stringify({ ...fill, log_index: 2, wallet: wallet.toUpperCase().replace('0X', '0x') })),
    ];
    const decoded = decodeBatch('fillsArchive', 'fills.archive', 3, messages);
    expect(decoded.validCount).toBe(2);
    expect(decoded.rowsByTable.get('fills')?.lines).toHaveLength(2);
    expect(JSON.parse(decoded.rowsByTable.get('fills')!.lines[1]!).wallet).toBe(wallet);
    expect(decoded.deadLetters.map((letter) => [letter.offset, letter.reason.split(':')[0]])).toEqual([
      ['11', 'invalid JSON'],
      ['12', 'schema fills.archive'],
      ['13', 'empty message value'],
    ]);
    expect(decoded.deadLetters[1]!.reason).toContain('price');
    expect(decoded.deadLetters[0]!.original?.toString()).toBe('not json');
    expect(decoded.deadLetters.every((letter) => letter.topic === 'fills.archive' && letter.partition === 3)).toBe(
      true,
    );
  });

  it('dead-letters a redemption whose payout per token names no side, and lands the losing side redeemed for nothing', () => {
    const redemption = { ...fill, kind: 'REDEEM', tokens: 4.166664, usd: 0 };
    const decoded = decodeBatch('positions', 'positions', 0, [
      message(0, JSON.stringify(redemption)),
      message(1, JSON.stringify({ ...redemption, log_index: 2, tokens: 10, usd: 7 })),
      message(2, JSON.stringify({ ...redemption, log_index: 3, tokens: 3, usd: 1 })),
    ]);
    expect(decoded.validCount).toBe(1);
    expect(decoded.rowsByTable.get('position_legs')?.lines).toHaveLength(1);
    expect(decoded.deadLetters.map((letter) => [letter.offset, letter.kind, letter.reason])).toEqual([
      [
        '1',
        'schema',
        'schema positions: usd: a redemption of 10 tokens for 7 USD pays 0.700000 per token, not 0 (the losing side), 0.5 (a split payout) or 1 (the winner): its side cannot be told',
      ],
      [
        '2',
        'schema',
        'schema positions: usd: a redemption of 3 tokens for 1 USD pays 0.333333 per token, not 0 (the losing side), 0.5 (a split payout) or 1 (the winner): its side cannot be told',
      ],
    ]);
  });

  it('dead-letters everything of a topic it does not know', () => {
    const decoded = decodeBatch(undefined, 'stranger', 0, [message(0, JSON.stringify(fill))]);
    expect(decoded.validCount).toBe(0);
    expect(decoded.deadLetters[0]?.reason).toBe('unknown topic stranger');
  });

  it('reports markets that resolved', () => {
    const decoded = decodeBatch('markets', 'markets', 0, [
      message(0, JSON.stringify({ type: 'resolution', condition_id: market, winner_token_side: 2, ts: 1_767_557_000 })),
    ]);
    expect(decoded.resolvedMarkets).toEqual([market]);
    expect(decoded.rowsByTable.get('market_resolutions')?.lines).toHaveLength(1);
  });

  it("a trade of a market's tape names no wallet and no market's metadata (marks live a short TTL)", () => {
    const trade = {
      tx_hash: fill.tx_hash,
      log_index: 3,
      condition_id: market,
      token_side: 1,
      price: 0.4,
      size_tokens: 5,
      usd: 2,
      ts: 1_767_556_900,
      seq: 7,
    };
    const traded = decodeBatch('trades', 'trades', 0, [
      message(0, JSON.stringify(trade)),
      message(1, JSON.stringify({ ...trade, price: 2 })),
    ]);
    expect(traded.rowsByTable.get('trades')?.lines).toHaveLength(1);
    expect([...traded.wallets, ...traded.markets, ...traded.named, ...traded.upstream]).toEqual([]);
  });

  it('reports the wallets whose upstream profile or equity rows land (their cached upstream profile goes stale), and no others', () => {
    const other = `0x${'d4'.repeat(20)}`;
    const profile = {
      wallet,
      name: 'Someone',
      pnl: 1,
      pnl_realized: 1,
      pnl_unrealized: 0,
      portfolio_value: 5,
      as_of: 1_767_556_800,
    };
    const profiles = decodeBatch('upstreamProfiles', 'upstream.profiles', 0, [
      message(0, JSON.stringify(profile)),
      message(1, JSON.stringify({ ...profile, pnl: 'x' })),
    ]);
    expect(profiles.validCount).toBe(1);
    expect([...profiles.upstream]).toEqual([wallet]);
    const equity = decodeBatch('upstreamEquity', 'upstream.equity', 0, [
      message(0, JSON.stringify({ wallet: other, ts: 1_767_556_800, pnl_usd: 3 })),
    ]);
    expect([...equity.upstream]).toEqual([other]);
    // A fill is the wallet's data (its answers go stale), not the provider's report on it.
    const fills = decodeBatch('fillsArchive', 'fills.archive', 0, [message(0, JSON.stringify(fill))]);
    expect([...fills.wallets]).toEqual([wallet]);
    expect([...fills.upstream]).toEqual([]);
  });

  it('never throws, and accounts for every message, whatever the bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.json(), fc.constant(JSON.stringify(fill)))), (values) => {
        const decoded = decodeBatch(
          'fillsArchive',
          'fills.archive',
          0,
          values.map((value, index) => message(index, value)),
        );
        expect(decoded.validCount + decoded.deadLetters.length).toBe(values.length);
      }),
    );
  });
});
