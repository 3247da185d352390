/**
 * Trader identifiers: a 0x wallet (any case), a profile URL of the upstream provider, or a display
 * name; a string starting with 0x that is not 0x + 40 hex is a malformed wallet, never a name.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTraderIdentifier, type TraderIdentifier } from './traders.ts';

const WALLET = '0x' + '0123456789abcdef'.repeat(2) + '01234567';
const MIXED = '0x' + '0123456789ABCDEF'.repeat(2) + '01234567';

const wallet = (value: string): TraderIdentifier => ({ kind: 'wallet', wallet: value });
const name = (value: string): TraderIdentifier => ({ kind: 'name', name: value });
const invalid = (input: string): TraderIdentifier => ({ kind: 'invalid_wallet', input });

describe('parseTraderIdentifier', () => {
  const cases: [input: string, expected: TraderIdentifier][] = [
    // bare wallets
    [WALLET, wallet(WALLET)],
    [MIXED, wallet(WALLET)],
    ['0X' + WALLET.slice(2), wallet(WALLET)],
    [`  ${MIXED}\n`, wallet(WALLET)],
    // malformed wallets: never names
    ['0x', invalid('0x')],
    ['0X', invalid('0X')],
    [WALLET.slice(0, -1), invalid(WALLET.slice(0, -1))],
    [WALLET + '0', invalid(WALLET + '0')],
    [WALLET.slice(0, -1) + 'g', invalid(WALLET.slice(0, -1) + 'g')],
    ['0xTrader', invalid('0xTrader')],
    [` ${WALLET}1 `, invalid(`${WALLET}1`)],
    // profile URLs with a wallet
    [`https://polymarket.com/profile/${WALLET}`, wallet(WALLET)],
    [`https://polymarket.com/profile/${MIXED}/`, wallet(WALLET)],
    [`http://www.polymarket.com/profile/${MIXED}`, wallet(WALLET)],
    [`polymarket.com/profile/${WALLET}`, wallet(WALLET)],
    [`www.polymarket.com/profile/${WALLET}?tab=activity`, wallet(WALLET)],
    [`HTTPS://Polymarket.com/profile/${WALLET}#positions`, wallet(WALLET)],
    [`https://polymarket.com/profile/${WALLET}/?via=share#top`, wallet(WALLET)],
    // profile URLs with a malformed wallet
    [`https://polymarket.com/profile/${WALLET}ab`, invalid(`https://polymarket.com/profile/${WALLET}ab`)],
    ['https://polymarket.com/profile/0x1234', invalid('https://polymarket.com/profile/0x1234')],
    // profile URLs with a name
    ['https://polymarket.com/@Theo4', name('Theo4')],
    ['https://polymarket.com/@Theo4/', name('Theo4')],
    ['polymarket.com/@Theo4?tab=activity', name('Theo4')],
    ['https://www.polymarket.com/@Theo4#x', name('Theo4')],
    ['https://polymarket.com/profile/@Theo4', name('Theo4')],
    ['https://polymarket.com/profile/@Theo4/', name('Theo4')],
    ['https://polymarket.com/@Fr%C3%A9d%C3%A9ric%20B', name('Frédéric B')],
    ['https://polymarket.com/@0xSomeone', name('0xSomeone')],
    ['https://polymarket.com/@100%', name('100%')],
    // display names, taken as written
    ['Theo4', name('Theo4')],
    ['  Theo4  ', name('Theo4')],
    ['Frédéric B', name('Frédéric B')],
    ['x0abc', name('x0abc')],
    ['https://example.com/@Theo4', name('https://example.com/@Theo4')],
    ['https://polymarket.com/event/some-market', name('https://polymarket.com/event/some-market')],
    ['https://polymarket.com/@', name('https://polymarket.com/@')],
    ['https://polymarket.com/@a/b', name('https://polymarket.com/@a/b')],
    ['ftp://polymarket.com/@Theo4', name('ftp://polymarket.com/@Theo4')],
  ];

  it.each(cases)('%j', (input, expected) => {
    expect(parseTraderIdentifier(input)).toEqual(expected);
  });

  const hex40 = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 40, maxLength: 40 });
  const prefix = fc.constantFrom('0x', '0X');

  it('any string starting with 0x that is not 0x + 40 hex is invalid_wallet', () => {
    const hexish = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEFxXg '), maxLength: 60 });
    fc.assert(
      fc.property(
        prefix,
        fc.oneof(
          fc.string({ maxLength: 60 }),
          hexish,
          hex40.map((hex) => hex + 'a'),
          hex40.map((hex) => hex.slice(1)),
        ),
        (head, rest) => {
          const input = head + rest;
          fc.pre(!/^0x[0-9a-f]{40}$/i.test(input.trim()));
          expect(parseTraderIdentifier(input)).toEqual({ kind: 'invalid_wallet', input: input.trim() });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('any 40-hex wallet in any case round-trips lower-cased, bare or inside a profile URL', () => {
    const url = fc.tuple(
      fc.constantFrom('', 'http://', 'https://', 'HTTPS://'),
      fc.constantFrom('', 'www.'),
      fc.constantFrom('polymarket.com', 'Polymarket.com'),
      fc.constantFrom('', '/'),
      fc.constantFrom('', '?tab=positions', '#activity', '?a=1#b'),
    );
    fc.assert(
      fc.property(prefix, hex40, url, (head, hex, [scheme, www, host, slash, tail]) => {
        const expected = { kind: 'wallet', wallet: `0x${hex.toLowerCase()}` };
        expect(parseTraderIdentifier(head + hex)).toEqual(expected);
        expect(parseTraderIdentifier(` ${head}${hex}\t`)).toEqual(expected);
        expect(parseTraderIdentifier(`${scheme}${www}${host}/profile/${head}${hex}${slash}${tail}`)).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });
});
