import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import type { Caller } from '../operations/auth.ts';
import type { AdmittedCall } from '../operations/context.ts';
import { applyMarketCaching, callOf, errorResponses, ifNoneMatch, strongEtag } from './http.ts';

/** The headers a reply was given, and the request's If-None-Match. */
function exchange(ifNoneMatchHeader?: string | string[]) {
  const headers: Record<string, string> = {};
  const request = {
    headers: ifNoneMatchHeader === undefined ? {} : { 'if-none-match': ifNoneMatchHeader },
  } as unknown as FastifyRequest;
  const reply = {
    header(name: string, value: string) {
      headers[name] = value;
      return this;
    },
  } as unknown as FastifyReply;
  return { request, reply, headers };
}

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
    expect(
      Object.keys(errorResponses(400, 404, 503))
        .map(Number)
        .sort(),
    ).toEqual([400, 401, 404, 422, 429, 503]);
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
    expect(
      responses[422]!.safeParse({ detail: [{ loc: ['query', 'limit'], msg: 'expected int', type: 'invalid_type' }] })
        .success,
    ).toBe(true);
  });
});

describe('callOf', () => {
  const config = parseConfig({});
  const caller: Caller = {
    accountId: 'acct',
    keyId: 'k',
    label: 'l',
    last4: 'abcd',
    planId: 'basic',
    limits: config.plans.basic,
  };
  const USAGE = {
    window: { tokens_remaining: 1, rpm_used: 1 },
    day: { requests: 1, cap: 50 },
    month: { requests: 0, cap: 0 },
  };

  it('callOf refuses a request the gates did not admit', () => {
    const admitted = { usage: USAGE, release: () => {}, trader: null, traderRefusal: null } as AdmittedCall;
    expect(callOf({ caller, admitted } as unknown as FastifyRequest)).toEqual({ caller, admitted });
    expect(() => callOf({ caller, admitted: null } as unknown as FastifyRequest)).toThrow(/outside an admitted call/);
    expect(() => callOf({ caller: null, admitted } as unknown as FastifyRequest)).toThrow(/outside an admitted call/);
  });
});
