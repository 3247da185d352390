import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Cursors } from './cursors.ts';
import { ApiError } from './errors.ts';

const SECRET = 'cursor-unit-test-secret-0123456789';

/** A codec over positions {ts, id}, as the routes build theirs. */
function pageCodec(cursors: Cursors, endpoint = 'things') {
  return cursors.codec<{ ts: number; id: string }, [number, string]>(
    endpoint,
    (position) => [position.ts, position.id],
    z.tuple([z.int().min(0), z.string().max(20)]),
    ([ts, id]) => ({ ts, id }),
  );
}

/** A token built by hand (payload and tag), to reach the decoder with exact bytes. */
function token(envelope: unknown, secret = SECRET): string {
  const payload = Buffer.from(JSON.stringify(envelope), 'utf8').toString('base64url');
  const tag = createHmac('sha256', secret).update(payload).digest().subarray(0, 16).toString('base64url');
  return `${payload}.${tag}`;
}

function refusal(run: () => unknown): { status: number; code: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, code: error.code };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('cursors', () => {
  const codec = pageCodec(new Cursors(SECRET));

  it('round-trips a position within its endpoint and scope', () => {
    const cursor = codec.encode('0xabc', { ts: 1_700_000_000, id: 'fill-7' });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(codec.decode(cursor, '0xabc')).toEqual({ ts: 1_700_000_000, id: 'fill-7' });
  });

  it('is the documented envelope: base64url of [endpoint, scope, items] and a 16-byte HMAC-SHA-256 tag', () => {
    expect(codec.encode('0xabc', { ts: 5, id: 'x' })).toBe(token(['things', '0xabc', [5, 'x']]));
  });

  it('reads no cursor (absent or empty) as the first page', () => {
    expect(codec.decode(undefined, '0xabc')).toBeUndefined();
    expect(codec.decode('', '0xabc')).toBeUndefined();
  });

  it('reads a forgery (a wrong tag, another secret, an altered payload) as the first page', () => {
    const genuine = codec.encode('0xabc', { ts: 5, id: 'x' });
    const [payload, tag] = genuine.split('.') as [string, string];
    const flipped = `${tag.slice(0, -2)}${tag.at(-2) === 'A' ? 'B' : 'A'}${tag.at(-1)}`;
    expect(codec.decode(`${payload}.${flipped}`, '0xabc')).toBeUndefined();
    expect(
      codec.decode(pageCodec(new Cursors('another-secret-of-sixteen+')).encode('0xabc', { ts: 5, id: 'x' }), '0xabc'),
    ).toBeUndefined();
    const altered = Buffer.from(JSON.stringify(['things', '0xabc', [6, 'x']]), 'utf8').toString('base64url');
    expect(codec.decode(`${altered}.${tag}`, '0xabc')).toBeUndefined();
  });

  it('refuses a genuine cursor of another endpoint or another scope with 400 bad_cursor', () => {
    const other = pageCodec(new Cursors(SECRET), 'others').encode('0xabc', { ts: 5, id: 'x' });
    expect(refusal(() => codec.decode(other, '0xabc'))).toEqual({ status: 400, code: 'bad_cursor' });
    const mine = codec.encode('0xabc', { ts: 5, id: 'x' });
    expect(refusal(() => codec.decode(mine, '0xdef'))).toEqual({ status: 400, code: 'bad_cursor' });
  });

  it('refuses what cannot be decoded, or decodes to the wrong shape, with 400 bad_cursor', () => {
    for (const garbage of [
      'not-a-cursor',
      'abc.def',
      `${'a'.repeat(10)}.${'b'.repeat(21)}`,
      '!!!.aaaaaaaaaaaaaaaaaaaaaa',
    ]) {
      expect(refusal(() => codec.decode(garbage, '0xabc'))).toEqual({ status: 400, code: 'bad_cursor' });
    }
    // Well-signed, but not JSON / not an envelope / items that fail the endpoint's schema.
    const notJson = Buffer.from('{{{', 'utf8').toString('base64url');
    const notJsonTag = createHmac('sha256', SECRET).update(notJson).digest().subarray(0, 16).toString('base64url');
    expect(refusal(() => codec.decode(`${notJson}.${notJsonTag}`, '0xabc'))).toEqual({
      status: 400,
      code: 'bad_cursor',
    });
    expect(refusal(() => codec.decode(token({ endpoint: 'things' }), '0xabc'))).toEqual({
      status: 400,
      code: 'bad_cursor',
    });
    expect(refusal(() => codec.decode(token(['things', '0xabc', [-1, 'x']]), '0xabc'))).toEqual({
      status: 400,
      code: 'bad_cursor',
    });
    expect(refusal(() => codec.decode(token(['things', '0xabc', [5, 'x'.repeat(21)]]), '0xabc'))).toEqual({
      status: 400,
      code: 'bad_cursor',
    });
  });
});
