/**
 * Load shedding: with N calls in flight (held at their store read) and the queue full, the next call
 * that reads the store is refused at once — 503 overloaded with Retry-After on REST and MCP, 429 busy
 * for a heavy read — and consumes no call (the gates admitted it first and got it back: GET /me counts
 * only what was served), while a call answered from memory (GET /me) is served; a queued call that
 * waits out the bound is refused too. The semantics only: no timing is asserted (bench:overload
 * measures the latencies).
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InFlightLimiter, type InFlightLimits } from '../operations/gates/in-flight.ts';
import type { Config } from '../config.ts';
import { makeWallet } from './factories.ts';
import { API, bodyOf, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { QueryHold } from './harness/gates.ts';

const config: Config = inProcessConfig(
  'shed',
  { API_MAX_IN_FLIGHT: '3' },
  {
    api: {
      inFlight: {
        queueDepth: 2,
        maxQueueWaitMs: 60_000,
        burstQueueWaitMs: 60_000,
        targetQueueWaitMs: 60_000,
        refusalWindowMs: 60_000,
      },
    },
  },
);
const { maxInFlight, queueDepth } = config.api.inFlight;
const NOW_S = Math.floor(Date.now() / 1000);
const card = (index: number) => `${API}/traders/${makeWallet(`shed-${index}`)}`;
const heavyRead = `${API}/traders/${makeWallet('shed-heavy')}/markets/0x${'ab'.repeat(32)}?raw=1`;

interface Harness {
  api: TestApi;
  hold: QueryHold;
  limiter: InFlightLimiter;
}

let keys: Awaited<ReturnType<typeof publishPlanKeys>>;
const opened: Harness[] = [];

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW_S - 60);
});

afterAll(async () => {
  for (const { hold } of opened) {
    hold.holding = false;
    hold.resumeAll();
  }
  if (opened[0]) await opened[0].api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
  for (const { api } of opened) await api.close();
});

async function start(limits: InFlightLimits): Promise<Harness> {
  const hold = new QueryHold();
  const limiter = new InFlightLimiter(limits);
  // A still gates clock: Pro's burst covers every call here, so only the shedding refuses.
  const api = await startTestApi(config, {
    now: () => NOW_S,
    keys,
    gatesClockMs: () => Date.UTC(2026, 10, 22, 12),
    wrapStore: (store) => hold.wrap(store),
    inFlight: limiter,
  });
  const harness = { api, hold, limiter };
  opened.push(harness);
  return harness;
}

function queued(limiter: InFlightLimiter, count: number): Promise<void> {
  if (limiter.stats.queued >= count) return Promise.resolve();
  return new Promise((resolve) => {
    const listener = (length: number) => {
      if (length < count) return;
      limiter.events.off('queued', listener);
      resolve();
    };
    limiter.events.on('queued', listener);
  });
}

const monthRequests = async (api: TestApi) => {
  const response = await api.get('me');
  expect(response.statusCode, response.body).toBe(200);
  return (bodyOf(response) as { usage: { month: { requests: number } } }).usage.month.requests;
};

function mcpCall(api: TestApi, name: string, args: Record<string, unknown> = {}): Promise<LightMyRequestResponse> {
  return api.app.inject({
    method: 'POST',
    url: config.mcp.path,
    headers: {
      host: 'localhost',
      authorization: `Bearer ${keys.pro}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    payload: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } }),
  });
}

describe('load shedding', () => {
  it(`with ${maxInFlight} calls in flight and ${queueDepth} queued, the next is refused at once: 503 overloaded + Retry-After, and it consumes no call`, async () => {
    const { api, hold, limiter } = await start(config.api.inFlight);
    const before = await monthRequests(api); // also caches the key: the held calls below hold at their card read
    hold.holding = true;
    const inFlight = Array.from({ length: maxInFlight }, (_, index) => api.get(card(index)));
    await hold.heldCount(maxInFlight);
    const waiting = Array.from({ length: queueDepth }, (_, index) => api.get(card(maxInFlight + index)));
    await queued(limiter, queueDepth);

    // The next calls, over every transport, while all of the above are still held. A call answered from
    // memory (the caller's budget) takes no slot: it is served.
    expect((await api.get('me')).statusCode).toBe(200);
    const refused = await api.get(card(90));
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(bodyOf(refused)).toEqual({
      error: 'overloaded',
      message: expect.stringMatching(/capacity/),
      retry_after: 1,
    });
    const heavy = await api.get(heavyRead);
    expect(heavy.statusCode).toBe(429);
    expect(bodyOf(heavy)).toMatchObject({ error: 'busy', retry_after: 1 });
    expect(heavy.headers['retry-after']).toBe('1');
    const tool = await mcpCall(api, 'get_trader_card', { trader: makeWallet('shed-tool') });
    expect(tool.statusCode).toBe(200);
    const result = (
      JSON.parse(tool.body) as { result: { isError: boolean; structuredContent: Record<string, unknown> } }
    ).result;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: 'overloaded', retry_after: 1 });
    // Free calls are not shed: the OpenAPI document still answers.
    expect((await api.get('openapi.json')).statusCode).toBe(200);
    expect(limiter.stats).toMatchObject({ running: maxInFlight, queued: queueDepth, refusedOnArrival: 3 });

    hold.holding = false;
    hold.resumeAll();
    expect((await Promise.all([...inFlight, ...waiting])).map((response) => response.statusCode)).toEqual(
      Array(maxInFlight + queueDepth).fill(200),
    );
    // Served: the first /me, the held and queued cards, the /me beside them, and this /me. The three
    // refusals are not there.
    expect(await monthRequests(api)).toBe(before + maxInFlight + queueDepth + 2);
    expect(limiter.stats).toMatchObject({ running: 0, queued: 0 });
  });

  it('a queued call that waits out the bound is refused then, and consumes no call', async () => {
    const limits = {
      initialInFlight: 1,
      minInFlight: 1,
      baselineInFlight: 1,
      maxInFlight: 1,
      queueDepth: 4,
      maxQueueWaitMs: 200,
      burstQueueWaitMs: 200,
      targetQueueWaitMs: 10,
      // Young until its deadline: refused then (a committed waiter would be served instead).
      refusalWindowMs: 1000,
    };
    const { api, hold, limiter } = await start(limits);
    const before = await monthRequests(api);
    hold.holding = true;
    const held = api.get(card(100));
    await hold.heldCount(1);
    // Resolves on its own, while the first call is still held: refused when its wait reached the bound.
    const timedOut = await api.get(card(101));
    expect(timedOut.statusCode).toBe(503);
    expect(bodyOf(timedOut)).toMatchObject({ error: 'overloaded', retry_after: 1 });
    expect(limiter.stats).toMatchObject({ running: 1, queued: 0, refusedAfterWaiting: 1 });
    hold.holding = false;
    hold.resumeAll();
    expect((await held).statusCode).toBe(200);
    expect(await monthRequests(api)).toBe(before + 2);
    expect(limiter.stats.maxQueueWaitMs).toBeLessThanOrEqual(limits.maxQueueWaitMs);
  });
});
