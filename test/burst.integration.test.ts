/**
 * Gates first, then capacity: a burst that a plan allows is answered, the calls beyond it are the plan's
 * 429 (never 503 overloaded), and a refused call consumes nothing. Fourteen concurrent calls of one
 * Basic key (burst 10) to /popular, against both gate stores, their store reads held until every call
 * is answered, queued or reading (so that they overlap on any machine), on a limiter that has measured
 * calls holding their slot for a while (its wait prediction is what refused a burst as overload before
 * the plan's gate had spoken). The limiter's clock is the test's, so the prediction is the same on any
 * machine; no timing is asserted (bench:overload measures the latencies).
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { InFlightLimiter } from '../operations/gates/in-flight.ts';
import { API, bodyOf, inProcessConfig, publishPlanKeys, startTestApi } from './harness/api.ts';
import { GATE_KINDS, gateStoreFactory, QueryHold } from './harness/gates.ts';

const config = inProcessConfig('burst');
const { basic } = config.plans;
const NOW_S = Math.floor(Date.now() / 1000);
const POPULAR = `${API}/popular`;
const CALLS = basic.burst + 4;
/** How long the warm-up call holds its slot on the limiter's clock: several calls' worth of the old queue bound. */
const WARM_HOLD_MS = 25;
const stores = gateStoreFactory('burst');

let keys: Awaited<ReturnType<typeof publishPlanKeys>>;

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW_S - 60);
});

afterAll(async () => {
  await stores.cleanup();
});

describe.each(GATE_KINDS)('a Basic burst with gates in %s', (kind) => {
  it(`${CALLS} concurrent calls: ${basic.burst} answered, 4 × 429 rate_limited with Retry-After, none 503, the refused ones consume nothing`, async () => {
    const gatesClock = { ms: Date.UTC(2026, 10, 22, 12) };
    const limiterClock = { ms: 0 };
    // The production limits (the test config lifts them, for suites that fire many calls at once).
    const limiter = new InFlightLimiter(parseConfig({}).api.inFlight, () => limiterClock.ms);
    const hold = new QueryHold();
    const api = await startTestApi(config, {
      now: () => Math.floor(gatesClock.ms / 1000),
      keys,
      gates: stores.open(kind),
      gatesClockMs: () => gatesClock.ms,
      wrapStore: (store) => hold.wrap(store),
      inFlight: limiter,
    });
    const call = (plan: 'basic' | 'pro') =>
      api.app.inject({ method: 'GET', url: POPULAR, headers: { authorization: `Bearer ${keys[plan]}` } });
    try {
      // Warm-up by another account: a call holds its slot for WARM_HOLD_MS on the limiter's clock (after a
      // first call, so that the held read is the shelf's, not the key's lookup).
      expect((await call('pro')).statusCode).toBe(200);
      hold.holding = true;
      const warm = call('pro');
      await hold.heldCount(1);
      limiterClock.ms += WARM_HOLD_MS;
      hold.holding = false;
      hold.resumeAll();
      expect((await warm).statusCode).toBe(200);

      // The burst, its store reads held: every call is answered at once (a refusal), waits for a slot,
      // or holds one at its read. Then the reads go on.
      await api.app.inject({
        method: 'GET',
        url: `${API}/openapi.json`,
        headers: { authorization: `Bearer ${keys.basic}` },
      });
      hold.holding = true;
      let settled = 0;
      let onSettled = () => {};
      const pending = Array.from({ length: CALLS }, () =>
        call('basic').then((response) => {
          settled += 1;
          onSettled();
          return response;
        }),
      );
      while (settled + hold.held.length + limiter.stats.queued < CALLS) {
        await Promise.race([
          new Promise<void>((resolve) => (onSettled = resolve)),
          hold.heldCount(hold.held.length + 1),
          new Promise<void>((resolve) => limiter.events.once('queued', () => resolve())),
        ]);
      }
      hold.holding = false;
      hold.resumeAll();
      const responses: LightMyRequestResponse[] = await Promise.all(pending);
      const statuses = responses.map((response) => response.statusCode);
      expect(statuses.filter((status) => status === 503)).toEqual([]);
      expect(statuses.filter((status) => status === 200)).toHaveLength(basic.burst);
      const refused = responses.filter((response) => response.statusCode === 429);
      expect(refused).toHaveLength(CALLS - basic.burst);
      for (const response of refused) {
        expect((bodyOf(response) as { error: string }).error).toBe('rate_limited');
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }

      // The answers are the shelf, as a lone call reads it; and only the answered calls were counted.
      gatesClock.ms += 60_000;
      const alone = await call('basic');
      expect(alone.statusCode).toBe(200);
      for (const response of responses.filter((answered) => answered.statusCode === 200))
        expect(bodyOf(response)).toEqual(bodyOf(alone));
      const me = await api.app.inject({
        method: 'GET',
        url: `${API}/me`,
        headers: { authorization: `Bearer ${keys.basic}` },
      });
      // The burst's answered calls, the lone call and this one.
      expect((bodyOf(me) as { usage: { day: { requests: number } } }).usage.day.requests).toBe(basic.burst + 2);
    } finally {
      await api.close();
    }
  });
});
