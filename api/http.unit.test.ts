import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { ApiError } from './errors.ts';
import { applyMarketCaching, errorResponses, ifNoneMatch, pageLimit, parseConditionId, queryCursor, queryInt, queryNumber, strongEtag } from './http.ts';

const LIMITS = { defaultLimit: 200, maxLimit: 1000 };

function refusal(run: () => unknown): { status: number; code: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, code: error.code };
    throw error;
  }
  throw new Error('expected a refusal');
}

/** The headers a reply was given, and the request's If-None-Match. */
function exchange(ifNoneMatchHeader?: string | string[]) {
  const headers: Record<string, string> = {};
  const request = { headers: ifNoneMatchHeader === undefined ? {} : { 'if-none-match': ifNoneMatchHeader } } as unknown as FastifyRequest;
  const reply = {
    header(name: string, value: string) {
      headers[name] = value;
      return this;
    },
  } as unknown as FastifyReply;
  return { request, reply, headers };
}

describe('query parameters', () => {
  it('queryInt turns numeric text into numbers and lets anything else fail the type check', () => {
    const schema = queryInt('n');
    expect(schema.parse('42')).toBe(42);
    expect(schema.parse(' -7 ')).toBe(-7);
    expect(schema.parse('1e3')).toBe(1000);
    for (const text of ['abc', '4.5', '', '0x10', '12px']) expect(schema.safeParse(text).success).toBe(false);
  });

  it('queryNumber accepts decimals and refuses magnitudes beyond 2^53', () => {
    const schema = queryNumber('usd');
    expect(schema.parse('2500.5')).toBe(2500.5);
    expect(schema.parse(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    expect(schema.safeParse(String(2 ** 53 + 2)).success).toBe(false);
    expect(schema.safeParse('-1e308').success).toBe(false);
  });

  it('queryCursor is optional text of at most 8192 characters', () => {
    expect(queryCursor.parse(undefined)).toBeUndefined();
    expect(queryCursor.parse('abc')).toBe('abc');
    expect(queryCursor.safeParse('x'.repeat(8193)).success).toBe(false);
  });

  it('pageLimit: absent is the default, below 1 is 400 bad_limit, above the maximum is clamped', () => {
    expect(pageLimit(undefined, LIMITS)).toBe(200);
    expect(pageLimit(1, LIMITS)).toBe(1);
    expect(pageLimit(1000, LIMITS)).toBe(1000);
    expect(pageLimit(1001, LIMITS)).toBe(1000);
    expect(refusal(() => pageLimit(0, LIMITS))).toEqual({ status: 400, code: 'bad_limit' });
    expect(refusal(() => pageLimit(-5, LIMITS))).toEqual({ status: 400, code: 'bad_limit' });
  });

  it('parseConditionId lower-cases 0x + 64 hex and refuses anything else with 400 invalid_condition_id', () => {
    const id = `0x${'AbCdEf0123456789'.repeat(4)}`;
    expect(parseConditionId(id)).toBe(id.toLowerCase());
    for (const bad of [id.slice(0, -1), `${id}0`, id.slice(2), `0x${'g'.repeat(64)}`, '']) {
      expect(refusal(() => parseConditionId(bad))).toEqual({ status: 400, code: 'invalid_condition_id' });
    }
  });
});

describe('caching of market answers', () => {
  const config = parseConfig({ API_OPEN_MARKET_MAX_AGE_S: '7' });
  const body = { market: { resolved: true }, n: 1 };
  const etag = `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 32)}"`;

  it('strongEtag is the quoted first 32 base64url characters of the SHA-256', () => {
    expect(strongEtag('hello')).toBe(`"${createHash('sha256').update('hello').digest('base64url').slice(0, 32)}"`);
    expect(strongEtag(Buffer.from('hello'))).toBe(strongEtag('hello'));
  });

  it('an open market is cached briefly, without an ETag', () => {
    const { request, reply, headers } = exchange(etag);
    expect(applyMarketCaching(request, reply, body, false, config)).toBe('send');
    expect(headers).toEqual({ 'Cache-Control': 'private, max-age=7' });
  });

  it('a resolved market is immutable with a strong ETag of its body; a matching If-None-Match is not modified', () => {
    const fresh = exchange();
    expect(applyMarketCaching(fresh.request, fresh.reply, body, true, config)).toBe('send');
    expect(fresh.headers).toEqual({ 'Cache-Control': 'private, max-age=31536000, immutable', ETag: etag });
    const again = exchange(etag);
    expect(applyMarketCaching(again.request, again.reply, body, true, config)).toBe('not-modified');
    const stale = exchange('"something-else"');
    expect(applyMarketCaching(stale.request, stale.reply, body, true, config)).toBe('send');
  });

  it('a text body is tagged as it is sent, not as its JSON', () => {
    const { request, reply, headers } = exchange();
    applyMarketCaching(request, reply, '<html></html>', true, config);
    expect(headers.ETag).toBe(`"${createHash('sha256').update('<html></html>').digest('base64url').slice(0, 32)}"`);
  });

  it('If-None-Match compares weakly: W/ prefixes ignored, * matches, lists and repeated headers searched', () => {
    expect(ifNoneMatch(undefined, etag)).toBe(false);
    expect(ifNoneMatch(etag, etag)).toBe(true);
    expect(ifNoneMatch(`W/${etag}`, etag)).toBe(true);
    expect(ifNoneMatch('*', etag)).toBe(true);
    expect(ifNoneMatch(`"a", ${etag}`, etag)).toBe(true);
    expect(ifNoneMatch(['"a"', `"b" , ${etag}`], etag)).toBe(true);
    expect(ifNoneMatch('"a", "b"', etag)).toBe(false);
    expect(ifNoneMatch(etag.slice(1, -1), etag)).toBe(false);
  });
});

describe('errorResponses', () => {
  it('documents the statuses a route names plus 401, 422, 429 and 503 (overloaded) everywhere', () => {
    expect(Object.keys(errorResponses()).map(Number).sort()).toEqual([401, 422, 429, 503]);
    expect(Object.keys(errorResponses(400, 404, 503)).map(Number).sort()).toEqual([400, 401, 404, 422, 429, 503]);
  });

  it('gives 503 the overloaded body (and upstream_offline where a route names 503), the others {error, message}', () => {
    const overloaded = { error: 'overloaded', message: 'at capacity', retry_after: 1 };
    const upstreamOffline = { error: 'upstream_offline', status: 'upstream_offline', message: 'down' };
    expect(errorResponses()[503]!.safeParse(overloaded).success).toBe(true);
    expect(errorResponses()[503]!.safeParse(upstreamOffline).success).toBe(false);
    const responses = errorResponses(400, 503);
    expect(responses[503]!.safeParse(upstreamOffline).success).toBe(true);
    expect(responses[503]!.safeParse(overloaded).success).toBe(true);
    expect(responses[503]!.safeParse({ error: 'overloaded', message: 'no retry_after' }).success).toBe(false);
    expect(responses[503]!.safeParse({ error: 'bad_limit', message: 'x' }).success).toBe(false);
    expect(responses[400]!.safeParse({ error: 'bad_limit', message: 'limit must be at least 1.' }).success).toBe(true);
    expect(responses[400]!.safeParse({ message: 'no code' }).success).toBe(false);
    expect(responses[422]!.safeParse({ detail: [{ loc: ['query', 'limit'], msg: 'expected int', type: 'invalid_type' }] }).success).toBe(true);
  });
});
