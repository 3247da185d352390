import { availableParallelism } from 'node:os';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../config.ts';
import { AdaptiveLimit } from './adaptive-limit.ts';
import { InFlightLimiter, type InFlightLimits, type Slot } from './in-flight.ts';

const LIMITS: InFlightLimits = {
  initialInFlight: 2,
  minInFlight: 2,
  baselineInFlight: 2,
  maxInFlight: 2,
  queueDepth: 8,
  maxQueueWaitMs: 300,
  burstQueueWaitMs: 300,
  targetQueueWaitMs: 10,
  // Past every deadline below, unless a test sets it: the deadlines alone refuse.
  refusalWindowMs: 10_000,
};

/** A limiter on a clock the test moves (one horizon for bursts and load unless the test sets both). */
function limiter(limits: Partial<InFlightLimits> = {}) {
  const clock = { ms: 0 };
  const horizons = { burstQueueWaitMs: limits.maxQueueWaitMs ?? LIMITS.maxQueueWaitMs };
  return { clock, limiter: new InFlightLimiter({ ...LIMITS, ...horizons, ...limits }, () => clock.ms) };
}

const granted = async (slot: Promise<Slot | null>): Promise<Slot> => {
  const release = await slot;
  if (!release) throw new Error('expected a slot');
  return release;
};

describe('InFlightLimiter', () => {
  it('starts up to the limit at once, queues a burst first-in-first-out, and serves all of it within the horizon', async () => {
    const { limiter: shed } = limiter();
    const first = await granted(shed.acquire('a'));
    const second = await granted(shed.acquire('a'));
    const order: number[] = [];
    const waiting = [1, 2, 3, 4].map((index) => shed.acquire('a').then((release) => (order.push(index), release)));
    expect(shed.stats).toMatchObject({ running: 2, queued: 4 });
    first();
    first(); // idempotent: one slot comes back once
    second();
    for (const slot of waiting) (await granted(slot))();
    expect(order).toEqual([1, 2, 3, 4]);
    expect(shed.stats).toMatchObject({
      running: 0,
      queued: 0,
      started: 6,
      startedAfterQueueing: 4,
      refusedOnArrival: 0,
    });
  });

  it('refuses on arrival when the predicted wait (waiters ahead × average hold ÷ slots) misses the horizon; then overload: only the newest waiter stays (the next one served)', async () => {
    const { clock, limiter: shed } = limiter();
    const held = await granted(shed.acquire('a'));
    clock.ms += 100;
    held(); // the average hold is now 100 ms
    await granted(shed.acquire('a'));
    await granted(shed.acquire('a'));
    // 100 ms ÷ 2 slots per place: six places fit 300 ms, the seventh does not.
    const queued = Array.from({ length: 6 }, () => shed.acquire('a'));
    expect(shed.stats.queued).toBe(6);
    expect(await shed.acquire('a')).toBeNull();
    // The overload wait serves no more than the next waiter: the newest stays, the five older are refused
    // now, not at the end of the horizon.
    for (const waiter of queued.slice(0, 5)) expect(await waiter).toBeNull();
    expect(shed.stats).toMatchObject({ queued: 1, refusedOnArrival: 1, refusedAfterWaiting: 5 });
  });

  it('overload (an arrival found no room): the newest waiter first; the older ones are refused at their deadline', async () => {
    const { clock, limiter: shed } = limiter({ queueDepth: 3, maxQueueWaitMs: 100, targetQueueWaitMs: 20 });
    const a = await granted(shed.acquire('a'));
    await granted(shed.acquire('a'));
    const served: string[] = [];
    const waiter = (name: string) => shed.acquire('a').then((release) => (release && served.push(name), release));
    const first = waiter('first'); // deadline: the horizon, 100
    clock.ms = 5;
    const second = waiter('second');
    clock.ms = 10;
    const third = waiter('third');
    clock.ms = 20;
    // No room: refused, and overload from now on.
    expect(await shed.acquire('a')).toBeNull();
    clock.ms = 30;
    a();
    await granted(third);
    expect(served).toEqual(['third']);
    // Past the horizon: the older waiters are refused (not started late) at the next look.
    clock.ms = 101;
    void shed.acquire('a');
    expect(await first).toBeNull();
    expect(await second).toBeNull();
  });

  it("one account's burst may wait the burst horizon; other accounts' calls wait turns, not behind the whole burst", async () => {
    const { clock, limiter: shed } = limiter({ queueDepth: 64, maxQueueWaitMs: 100, burstQueueWaitMs: 1000 });
    const held = await granted(shed.acquire('a'));
    clock.ms += 100;
    held(); // the average hold is now 100 ms: 50 ms per place on 2 slots
    await granted(shed.acquire('a'));
    await granted(shed.acquire('a'));
    // Ten of one account's calls: 500 ms of waiting, within the burst horizon (the shorter one fits one).
    for (let index = 0; index < 10; index++) void shed.acquire('a');
    expect(shed.stats).toMatchObject({ queued: 10, refusedOnArrival: 0 });
    // Another account's call waits one turn behind the burst, not behind all of it.
    void shed.acquire('b');
    expect(shed.stats).toMatchObject({ queued: 11, refusedOnArrival: 0 });
    // A third account's would wait three turns, past the shorter horizon of a queue of many accounts'
    // calls: it takes the place of the burst's newest waiter (refused at once) instead.
    void shed.acquire('c');
    expect(shed.stats).toMatchObject({ queued: 11, refusedOnArrival: 0, refusedAfterWaiting: 1 });
  });

  it("fair: another user's call is served before one user's burst waiting ahead of it", async () => {
    const { limiter: shed } = limiter();
    const running = [await granted(shed.acquire('burst')), await granted(shed.acquire('burst'))];
    const order: string[] = [];
    const burst = [1, 2, 3].map((index) =>
      shed.acquire('burst').then((release) => (order.push(`burst ${index}`), release)),
    );
    const other = shed.acquire('other').then((release) => (order.push('other'), release));
    running[0]!();
    running[1]!();
    for (const slot of [...burst, other]) (await granted(slot))();
    // Turns: the burst's first waiter, then the other user, then the rest of the burst.
    expect(order).toEqual(['burst 1', 'other', 'burst 2', 'burst 3']);
  });

  it('fair: when the queue is full, a user with fewer waiters takes the place of one of the heaviest user', async () => {
    const { limiter: shed } = limiter({ queueDepth: 3 });
    await granted(shed.acquire('burst'));
    await granted(shed.acquire('burst'));
    const burst = [1, 2, 3].map(() => shed.acquire('burst'));
    // Full: the burst's own next call is refused (overload from now on); another user's call takes the
    // place of the burst's oldest waiter, the one least likely to be served under overload.
    expect(await shed.acquire('burst')).toBeNull();
    const other = shed.acquire('other');
    expect(await burst[0]).toBeNull();
    expect(shed.stats).toMatchObject({ queued: 3, refusedOnArrival: 1, refusedAfterWaiting: 1 });
    void other;
  });

  it('a waiter is refused only within its refusal window: past it, it is committed and served in its turn, before younger ones', async () => {
    const { clock, limiter: shed } = limiter({ refusalWindowMs: 20, queueDepth: 3, targetQueueWaitMs: 5 });
    const held = await granted(shed.acquire('a'));
    clock.ms += 40;
    held(); // the average hold is now 40 ms: 20 ms a turn on 2 slots
    const running = [await granted(shed.acquire('a')), await granted(shed.acquire('a'))];
    const served: string[] = [];
    const waiter = (user: string, name: string) =>
      shed.acquire(user).then((release) => (release && served.push(name), release));
    const old = waiter('a', 'old');
    clock.ms += 25;
    // The next look reviews it: its turn (the first, 20 ms) is within its deadline, so it is committed.
    const young = waiter('b', 'young');
    expect(shed.stats).toMatchObject({ queued: 2, committed: 1 });
    // A full queue and overload: the young waiter may be refused, the committed one may not.
    void waiter('c', 'third');
    expect(await shed.acquire('d')).toBeNull();
    expect(await shed.acquire('a')).toBeNull();
    expect(shed.stats.refusedAfterWaiting).toBeGreaterThanOrEqual(1);
    // Long past every deadline, the committed waiter is still served (first), not refused.
    clock.ms += 1000;
    running[0]!();
    expect(await granted(old)).toBeTypeOf('function');
    expect(served[0]).toBe('old');
    expect(await young).toBeNull();
  });

  it('at the end of its window a waiter whose turn would come after its deadline is refused then', async () => {
    const { clock, limiter: shed } = limiter({ refusalWindowMs: 20, maxQueueWaitMs: 60, burstQueueWaitMs: 60 });
    const held = await granted(shed.acquire('a'));
    clock.ms += 50;
    held(); // 50 ms a call: 25 ms a turn on 2 slots
    await granted(shed.acquire('a'));
    await granted(shed.acquire('a'));
    // Both predicted within the 60 ms horizon on arrival (one and two turns).
    const first = shed.acquire('a');
    const second = shed.acquire('a');
    clock.ms += 20;
    // Reviewed at the window's end: the first's turn comes within its deadline, so it is committed; the
    // second's, one turn later, after its deadline: it is refused now, at the end of its window.
    expect(await shed.acquire('b')).toBeNull();
    expect(await second).toBeNull();
    expect(shed.stats).toMatchObject({ queued: 1, committed: 1, refusedAfterWaiting: 1 });
    void first;
  });

  it('a queued caller that goes away leaves the queue; an aborted caller is not queued', async () => {
    const { limiter: shed } = limiter();
    const held = [await granted(shed.acquire('a')), await granted(shed.acquire('a'))];
    const gone = new AbortController();
    const leaving = shed.acquire('a', gone.signal);
    expect(shed.stats.queued).toBe(1);
    gone.abort();
    expect(await leaving).toBeNull();
    expect(shed.stats.queued).toBe(0);
    expect(await shed.acquire('a', gone.signal)).toBeNull();
    held[0]!();
    expect(typeof (await shed.acquire('a'))).toBe('function');
  });

  it('property: at most the limit run; every call is started or refused; a waiter past its refusal window is never refused', async () => {
    const WINDOW_MS = 30;
    const step = fc.oneof(
      fc.record({ kind: fc.constant('arrive' as const), user: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 120 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 200 }), fc.integer({ min: 1, max: 4 }), async (steps, maxLimit) => {
        const { clock, limiter: shed } = limiter({
          initialInFlight: maxLimit,
          minInFlight: 1,
          baselineInFlight: 1,
          maxInFlight: maxLimit,
          queueDepth: 6,
          maxQueueWaitMs: 100,
          targetQueueWaitMs: 10,
          refusalWindowMs: WINDOW_MS,
        });
        const running: Slot[] = [];
        /** Calls not yet answered; `promised` once the limiter looked at them past their window. */
        const pending = new Set<{ arrivedAt: number; promised: boolean }>();
        let settled = 0;
        let arrivals = 0;
        for (const action of steps) {
          if (action.kind === 'arrive') {
            arrivals += 1;
            const call = { arrivedAt: clock.ms, promised: false };
            pending.add(call);
            void shed.acquire(`u${action.user}`).then((slot) => {
              settled += 1;
              pending.delete(call);
              if (!slot) {
                expect(call.promised).toBe(false);
                return;
              }
              running.push(slot);
            });
          } else if (action.kind === 'release' && running.length > 0) {
            running.splice(action.pick % running.length, 1)[0]!();
          } else if (action.kind === 'tick') {
            clock.ms += action.ms;
          }
          await Promise.resolve();
          expect(shed.stats.running).toBeLessThanOrEqual(maxLimit);
          expect(shed.stats.running).toBeLessThanOrEqual(shed.stats.limit);
          // An arrival or a release reviews every waiter as of now: one past its window that is still
          // waiting was committed.
          if (action.kind !== 'tick')
            for (const call of pending) if (clock.ms - call.arrivedAt >= WINDOW_MS) call.promised = true;
        }
        // Everything still queued ends: the slots come back and the committed waiters are served; a drain
        // call makes the limiter review the young ones as of the moved clock (refused or committed).
        for (let round = 0; round < 100 && (shed.stats.queued > 0 || running.length > 0); round++) {
          clock.ms += 200;
          for (const release of running.splice(0)) release();
          void shed.acquire('drain').then((slot) => slot?.());
          for (let tick = 0; tick < 5; tick++) await Promise.resolve();
        }
        expect(shed.stats).toMatchObject({ queued: 0, running: 0 });
        expect(settled).toBe(arrivals);
      }),
      { numRuns: 200 },
    );
  });
});

describe('AdaptiveLimit', () => {
  const settings = { initialLimit: 4, minLimit: 2, maxLimit: 16 };
  const feed = (limit: AdaptiveLimit, latencyMs: number, concurrency: number, windows: number) => {
    for (let index = 0; index < windows * 16; index++) {
      limit.limitReached();
      limit.sample(latencyMs, concurrency);
    }
  };

  it('keeps its start until an uncontended latency is measured', () => {
    const limit = new AdaptiveLimit(settings);
    feed(limit, 100, 4, 10);
    expect(limit.slots).toBe(4);
    expect(limit.baselineMs).toBeNaN();
  });

  it('a floor above the uncontended concurrency: the baseline is measured below it, the limit never goes under it', () => {
    const limit = new AdaptiveLimit({ initialLimit: 3, minLimit: 3, maxLimit: 12, baselineConcurrency: 2 });
    feed(limit, 10, 2, 4);
    expect(limit.baselineMs).toBe(10);
    feed(limit, 100, 3, 20);
    expect(limit.slots).toBe(3);
  });

  it('shrinks while calls take more than the tolerance over the uncontended latency, grows while they take less', () => {
    const limit = new AdaptiveLimit(settings);
    feed(limit, 10, 2, 4);
    expect(limit.baselineMs).toBe(10);
    feed(limit, 40, 4, 20);
    expect(limit.slots).toBe(2);
    feed(limit, 9, 3, 40);
    expect(limit.slots).toBe(16);
    // 1.4 × the uncontended latency is past the tolerance (1.25): it shrinks.
    feed(limit, 14, 16, 10);
    expect(limit.slots).toBeLessThan(16);
  });

  it('does not grow when demand never reached the limit', () => {
    const limit = new AdaptiveLimit(settings);
    for (let index = 0; index < 32 * 16; index++) limit.sample(10, 2);
    expect(limit.slots).toBe(4);
  });

  it('property: the slots stay within their bounds whatever the latencies', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.double({ min: -1, max: 1e6, noNaN: false }), fc.integer({ min: 0, max: 40 }), fc.boolean()),
        ),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 8 }),
        (samples, minLimit, extra) => {
          const limit = new AdaptiveLimit({ initialLimit: minLimit + 1, minLimit, maxLimit: minLimit + extra });
          for (const [latency, concurrency, reached] of samples) {
            if (reached) limit.limitReached();
            limit.sample(latency, concurrency);
            expect(limit.slots).toBeGreaterThanOrEqual(minLimit);
            expect(limit.slots).toBeLessThanOrEqual(minLimit + extra);
            expect(Number.isInteger(limit.slots)).toBe(true);
          }
        },
      ),
    );
  });
});

describe('load shedding defaults (config)', () => {
  const cores = availableParallelism();
  it('embedded: starts at one more than the cores (at least 3), as low as one, up to four times the start; uncontended at the cores but one', () => {
    const start = Math.max(2, cores) + 1;
    expect(parseConfig({}).api.inFlight).toEqual({
      initialInFlight: start,
      minInFlight: 1,
      baselineInFlight: Math.max(1, cores - 1),
      maxInFlight: 4 * start,
      queueDepth: 64,
      maxQueueWaitMs: 100,
      burstQueueWaitMs: 1000,
      targetQueueWaitMs: 10,
      refusalWindowMs: 20,
    });
  });
  it('a ClickHouse server: starts at 16, between 4 and 64', () => {
    expect(parseConfig({ CLICKHOUSE_URL: 'http://clickhouse:8123' }).api.inFlight).toMatchObject({
      initialInFlight: 16,
      minInFlight: 4,
      baselineInFlight: 4,
      maxInFlight: 64,
    });
  });
  it('API_MAX_IN_FLIGHT caps the limit, its start and its floor', () => {
    expect(parseConfig({ API_MAX_IN_FLIGHT: '1' }).api.inFlight).toMatchObject({
      initialInFlight: 1,
      minInFlight: 1,
      baselineInFlight: 1,
      maxInFlight: 1,
    });
  });
});
