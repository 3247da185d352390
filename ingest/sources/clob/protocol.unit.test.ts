/** The REST API's book (`GET /book`) read as the channel's `book`: the recorded answer, and any body at all. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { polymarketData } from '../../../test/harness/polymarket.ts';
import { decodeRestBook } from './protocol.ts';

const recorded = JSON.parse(
  readFileSync(path.join(polymarketData, 'http/clob/nautilus_clob_book.json'), 'utf8'),
) as Record<string, unknown> & { asset_id: string; bids: { price: string; size: string }[] };

describe('decodeRestBook', () => {
  it("reads the recorded answer as its token's book, numbers as numbers", () => {
    const read = decodeRestBook(recorded, recorded.asset_id);
    expect('book' in read && read.book).toMatchObject({
      event_type: 'book',
      market: recorded.market,
      asset_id: recorded.asset_id,
      timestamp: Number(recorded.timestamp),
      bids: recorded.bids.map((level) => ({ price: Number(level.price), size: Number(level.size) })),
    });
  });

  it("rejects another token's book, naming both tokens", () => {
    expect(decodeRestBook(recorded, '42')).toEqual({
      raw: JSON.stringify(recorded),
      reason: `GET /book: the book of token ${recorded.asset_id}, asked for 42`,
    });
  });

  it('property: any body is a book of the asked token or a reason, never a throw', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.constant(undefined)), (body) => {
        const read = decodeRestBook(body, recorded.asset_id);
        if ('book' in read) expect(read.book.asset_id).toBe(recorded.asset_id);
        else expect(read.reason).toMatch(/^GET \/book: /);
      }),
    );
  });
});
