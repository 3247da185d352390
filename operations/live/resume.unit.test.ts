/** Resumed refs: a ref names its block; each waiting ref is told once, when its block ends or never after its connection went. */
import { describe, expect, it } from 'vitest';
import { blockKeyOf, refBlockOf, ResumeBook } from './resume.ts';

const HASH = `0x${'0123456789abcdef'.repeat(4)}`;
const OTHER = `0x${'fedcba9876543210'.repeat(4)}`;

describe('refBlockOf', () => {
  it("names a ref's block as a mark of the full hash names it", () => {
    expect(refBlockOf('81000000:0123456789abcdef:4')).toEqual({ block: 81_000_000, key: blockKeyOf(81_000_000, HASH) });
    expect(blockKeyOf(81_000_000, OTHER)).not.toBe(blockKeyOf(81_000_000, HASH));
    for (const bad of ['81000000:0123:4', '81000000:0123456789ABCDEF:4', 'a:0123456789abcdef:4', ''])
      expect(refBlockOf(bad)).toBeNull();
  });
});

describe('ResumeBook', () => {
  it('tells each waiting ref once when its block ends, per connection, and nothing after a connection went', () => {
    const book = new ResumeBook<string>();
    const key = blockKeyOf(10, HASH);
    book.wait('a', key, '10:0123456789abcdef:0');
    book.wait('a', key, '10:0123456789abcdef:0');
    book.wait('a', key, '10:0123456789abcdef:1');
    book.wait('b', key, '10:0123456789abcdef:0');
    book.wait('c', key, '10:0123456789abcdef:0');
    book.wait('a', blockKeyOf(11, HASH), '11:0123456789abcdef:0');
    expect(book.waiting('a')).toBe(3);
    book.drop('c');
    expect(book.end(blockKeyOf(10, OTHER))).toEqual([]);
    expect(book.end(key)).toEqual([
      { connection: 'a', ref: '10:0123456789abcdef:0' },
      { connection: 'a', ref: '10:0123456789abcdef:1' },
      { connection: 'b', ref: '10:0123456789abcdef:0' },
    ]);
    expect(book.end(key)).toEqual([]);
    expect(book.waiting('a')).toBe(1);
    expect(book.waiting('b')).toBe(0);
    book.drop('a');
    expect(book.end(blockKeyOf(11, HASH))).toEqual([]);
    expect(book.waiting('a')).toBe(0);
  });
});
