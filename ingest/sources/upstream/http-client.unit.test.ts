import { describe, expect, it } from 'vitest';
import type { UpstreamRouteLimit } from '../../../config.ts';
import { UPSTREAM_PUBLISHED_LIMITS } from '../../../config.ts';
import { retryAfterInstant } from '../../retry-after.ts';
import { UpstreamError, UpstreamHttpClient, type HttpClientOptions } from './http-client.ts';
import { jsonResponse, scriptedFetch, VirtualClock } from './test-support.ts';

const LIMITS: UpstreamRouteLimit[] = [
  { service: 'data', path: '', requests: 100, perSeconds: 10 },
  { service: 'data', path: '/positions', requests: 20, perSeconds: 10 },
  { service: 'gamma', path: '', requests: 100, perSeconds: 10 },
  { service: 'pnl', path: '', requests: 100, perSeconds: 10 },
];

function client(fetchImpl: typeof fetch, clock: VirtualClock, overrides: Partial<HttpClientOptions> = {}) {
  return new UpstreamHttpClient({
    baseUrls: {
      gamma: 'http://gamma.test',
      data: 'http://data.test',
      pnl: 'http://pnl.test',
      clob: 'http://clob.test',
    },
    limits: LIMITS,
    rateFraction: 0.5,
    timeoutMs: 1000,
    maxRetries: 3,
    backoffBaseMs: 100,
    backoffMaxMs: 5000,
    breaker: { failures: 4, openMs: 30_000 },
    clock,
    random: () => 0.5,
    fetch: fetchImpl,
    ...overrides,
  });
}

describe('rate limits', () => {
  it('keeps every route under its share of the published limit, in any window', async () => {
    const clock = new VirtualClock();
    const sentAt: number[] = [];
    const http = client(
      scriptedFetch(() => {
        sentAt.push(clock.now());
        return jsonResponse([]);
      }),
      clock,
    );
    for (let index = 0; index < 60; index += 1) await http.getJson('data', '/positions', { user: '0x1' });
    // /positions: 20 per 10 s, half of it: 1 per second, burst 1.
    const allowedPerSecond = (20 / 10) * 0.5;
    for (let start = 0; start < sentAt.length; start += 1) {
      const windowEnd = sentAt[start]! + 10_000;
      const inWindow = sentAt.filter((instant) => instant >= sentAt[start]! && instant < windowEnd).length;
      expect(inWindow).toBeLessThanOrEqual(Math.floor(allowedPerSecond * 10) + 1);
    }
    expect(sentAt.at(-1)! - sentAt[0]!).toBeGreaterThanOrEqual(((60 - 1) / allowedPerSecond) * 1000 - 1);
  });

  it('charges the service-wide bucket too, and routes without a limit of their own use only it', async () => {
    const clock = new VirtualClock();
    const http = client(
      scriptedFetch(() => jsonResponse([])),
      clock,
    );
    const started = clock.now();
    for (let index = 0; index < 50; index += 1) await http.getJson('data', '/activity', { user: '0x1' });
    // data general: 100 per 10 s × 0.5 = 5/s, burst 5: 50 requests need at least (50 − 5) / 5 s.
    expect(clock.now() - started).toBeGreaterThanOrEqual(((50 - 5) / 5) * 1000 - 1);
    expect(http.sent.get('data *')).toBe(50);
  });

  it("stays below Polymarket's published limits with the default configuration", () => {
    for (const limit of UPSTREAM_PUBLISHED_LIMITS) expect(limit.requests / limit.perSeconds).toBeGreaterThan(0);
    expect(
      UPSTREAM_PUBLISHED_LIMITS.find((limit) => limit.service === 'gamma' && limit.path === '/markets'),
    ).toMatchObject({ requests: 300, perSeconds: 10 });
    expect(
      UPSTREAM_PUBLISHED_LIMITS.find((limit) => limit.service === 'data' && limit.path === '/positions'),
    ).toMatchObject({ requests: 150, perSeconds: 10 });
  });
});

describe('429 and Retry-After', () => {
  it('waits what Retry-After says before trying again, then answers', async () => {
    const clock = new VirtualClock();
    const fetchImpl = scriptedFetch((_url, call) =>
      call === 1 ? jsonResponse({ error: 'slow down' }, 429, { 'retry-after': '7' }) : jsonResponse([{ ok: true }]),
    );
    const http = client(fetchImpl, clock);
    const started = clock.now();
    const answer = await http.getJson('data', '/trades', { user: '0x1' });
    expect(answer.body).toEqual([{ ok: true }]);
    expect(fetchImpl.calls).toHaveLength(2);
    expect(clock.now() - started).toBeGreaterThanOrEqual(7000);
    expect(http.breaker.state).toBe('closed');
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    expect(retryAfterInstant('3', now)).toBe(now + 3000);
    expect(retryAfterInstant(new Date(now + 9000).toUTCString(), now)).toBe(now + 9000);
    expect(retryAfterInstant('soon', now)).toBeUndefined();
    expect(retryAfterInstant(null, now)).toBeUndefined();
    expect(retryAfterInstant('86400', now)).toBe(now + 120_000);
  });
});

describe('retries', () => {
  it('retries a 5xx a bounded number of times with growing jittered waits, then fails with the cause', async () => {
    const clock = new VirtualClock();
    const fetchImpl = scriptedFetch(() => new Response('oops', { status: 502 }));
    const http = client(fetchImpl, clock, { breaker: { failures: 100, openMs: 1000 } });
    const error = await http.getJson('gamma', '/markets/keyset').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).status).toBe(502);
    expect(fetchImpl.calls).toHaveLength(4);
    // random() = 0.5: half of 100·2^attempt for attempts 0, 1, 2 (no wait after the last).
    const backoffs = clock.sleeps.filter((ms) => ms === 50 || ms === 100 || ms === 200);
    expect(backoffs).toEqual([50, 100, 200]);
  });

  it('does not retry a 404, and a 404 does not count against the breaker', async () => {
    const clock = new VirtualClock();
    const fetchImpl = scriptedFetch(() => new Response('{"error":"not found"}', { status: 404 }));
    const http = client(fetchImpl, clock);
    for (let index = 0; index < 6; index += 1)
      await expect(http.getJson('data', '/value', { user: '0x1' })).rejects.toMatchObject({ status: 404 });
    expect(fetchImpl.calls).toHaveLength(6);
    expect(http.breaker.state).toBe('closed');
  });

  it('retries a truncated body and fails with kind body when it stays truncated', async () => {
    const clock = new VirtualClock();
    const fetchImpl = scriptedFetch(
      (_url, call) => new Response(call < 3 ? '[{"a": 1}, {"b"' : '[{"a": 1}]', { status: 200 }),
    );
    const http = client(fetchImpl, clock);
    await expect(http.getJson('data', '/activity')).resolves.toMatchObject({ body: [{ a: 1 }] });
    const always = client(
      scriptedFetch(() => new Response('[{"a": 1}, {"b"', { status: 200 })),
      new VirtualClock(),
      { maxRetries: 1 },
    );
    await expect(always.getJson('data', '/activity')).rejects.toMatchObject({ kind: 'body' });
  });

  it('times out an attempt that never answers', async () => {
    const clock = new VirtualClock();
    const hanging = scriptedFetch(
      (url) =>
        new Promise<Response>(() => {
          void url;
        }),
    );
    // fetch implementations reject on abort; this one models that through the signal.
    const fetchImpl = ((input: string, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        void hanging(input);
        init?.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      })) as typeof fetch;
    const http = client(fetchImpl, clock, { timeoutMs: 50, maxRetries: 1 });
    await expect(http.getJson('pnl', '/user-pnl')).rejects.toMatchObject({ kind: 'timeout' });
    expect(hanging.calls).toHaveLength(2);
  });
});

describe('circuit breaker', () => {
  it('opens after consecutive failures, fails fast while open, probes after the cool-down and closes on success', async () => {
    const clock = new VirtualClock();
    let healthy = false;
    const fetchImpl = scriptedFetch(() => (healthy ? jsonResponse({ ok: 1 }) : new Response('down', { status: 503 })));
    const changes: string[] = [];
    const http = client(fetchImpl, clock, { maxRetries: 0, onBreakerChange: (state) => changes.push(state) });

    for (let index = 0; index < 4; index += 1)
      await expect(http.getJson('data', '/value')).rejects.toMatchObject({ status: 503 });
    expect(http.breaker.state).toBe('open');
    const callsWhenOpened = fetchImpl.calls.length;
    await expect(http.getJson('data', '/value')).rejects.toMatchObject({ kind: 'offline' });
    expect(fetchImpl.calls).toHaveLength(callsWhenOpened);

    clock.advance(30_000);
    expect(http.breaker.state).toBe('half-open');
    // The probe fails: open again for another cool-down.
    await expect(http.getJson('data', '/value')).rejects.toMatchObject({ status: 503 });
    expect(http.breaker.state).toBe('open');

    clock.advance(30_000);
    healthy = true;
    await expect(http.getJson('data', '/value')).resolves.toMatchObject({ body: { ok: 1 } });
    expect(http.breaker.state).toBe('closed');
    expect(changes).toEqual(['open', 'open', 'closed']);
  });
});

describe('answers past the size bound', () => {
  /** A JSON array of `bytes`, streamed in chunks, counting what the client pulled. */
  function hugeBody(bytes: number, declareLength: boolean): { response: Response; pulled: () => number } {
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= bytes) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(sent === chunk.byteLength ? new TextEncoder().encode('[') : chunk);
      },
    });
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (declareLength) headers['content-length'] = String(bytes);
    return { response: new Response(stream, { headers }), pulled: () => sent };
  }

  it.each([
    ['streamed without a length', false],
    ['declared by Content-Length', true],
  ] as const)('a 50 MB answer %s is abandoned, counted as a failure, and not asked again', async (_label, declare) => {
    const clock = new VirtualClock();
    const bytes = 50 * 1024 * 1024;
    let body: ReturnType<typeof hugeBody> | undefined;
    const fetchImpl = scriptedFetch(() => {
      body = hugeBody(bytes, declare);
      return body.response;
    });
    const http = client(fetchImpl, clock, { maxBodyBytes: 1024 * 1024, breaker: { failures: 1, openMs: 30_000 } });
    const failure = await http.getJson('data', '/v1/leaderboard', {}).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect((failure as UpstreamError).kind).toBe('too_large');
    expect(fetchImpl.calls).toHaveLength(1);
    // Read no further than the bound (and nothing at all when the length said so up front).
    expect(body!.pulled()).toBeLessThanOrEqual(declare ? 64 * 1024 : 2 * 1024 * 1024);
    // The failure counts: with a breaker of one failure, the next call is refused without the network.
    await expect(http.getJson('data', '/v1/leaderboard', {})).rejects.toMatchObject({ kind: 'offline' });
    expect(fetchImpl.calls).toHaveLength(1);
  });

  it('an answer within the bound is read whole', async () => {
    const clock = new VirtualClock();
    const http = client(
      scriptedFetch(() => jsonResponse([{ rank: 1 }])),
      clock,
      { maxBodyBytes: 1024 },
    );
    expect((await http.getJson('data', '/v1/leaderboard', {})).body).toEqual([{ rank: 1 }]);
  });
});
