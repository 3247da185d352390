import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../config.ts';
import { InFlightLimiter, type InFlightLimits } from './in-flight.ts';

/** A limiter on a clock the test moves. */
function limiter(limits: InFlightLimits) {
  const clock = { ms: 0 };
  return { clock, limiter: new InFlightLimiter(limits, () => clock.ms) };
}

describe('InFlightLimiter', () => {
  it('starts up to maxInFlight at once, queues up to queueDepth in order, refuses the next at once', async () => {
    const { limiter: shed } = limiter({ maxInFlight: 2, queueDepth: 2, maxQueueWaitMs: 60_000 });
    const first = await shed.acquire();
    const second = await shed.acquire();
    expect(first && second).toBeTruthy();
    const order: string[] = [];
    const third = shed.acquire().then((release) => (order.push('third'), release));
    const fourth = shed.acquire().then((release) => (order.push('fourth'), release));
    expect(shed.stats).toMatchObject({ running: 2, queued: 2 });
    first!();
    first!(); // idempotent: one slot comes back once
    expect(typeof (await third)).toBe('function');
    expect(shed.stats).toMatchObject({ running: 2, queued: 1 });
    second!();
    (await third)!();
    (await fourth)!();
    // Nothing was refused: first come, first served.
    expect(order).toEqual(['third', 'fourth']);
    expect(shed.stats).toMatchObject({
      running: 0,
      queued: 0,
      started: 4,
      startedAfterQueueing: 2,
      refusedOnArrival: 0,
    });
    const a = await shed.acquire();
    const b = await shed.acquire();
    void shed.acquire();
    void shed.acquire();
    expect(await shed.acquire()).toBeNull();
    expect(shed.stats).toMatchObject({ running: 2, queued: 2, refusedOnArrival: 1 });
    void a;
    void b;
  });

  it('overloaded (a call refused within three bounds), serves the newest waiter first; first come first served again after', async () => {
    const { clock, limiter: shed } = limiter({ maxInFlight: 1, queueDepth: 2, maxQueueWaitMs: 100 });
    const running = await shed.acquire();
    const order: string[] = [];
    const older = shed.acquire().then((release) => (order.push('older'), release));
    clock.ms += 1;
    const newer = shed.acquire().then((release) => (order.push('newer'), release));
    clock.ms += 1;
    // The queue is full: refused on arrival, and from now on the instance counts as overloaded.
    expect(await shed.acquire()).toBeNull();
    running!();
    const first = await newer;
    expect(order).toEqual(['newer']);
    first!();
    const second = await older;
    expect(typeof second).toBe('function');
    // Three bounds after the last refusal, the order is first come, first served again.
    clock.ms += 301;
    const x = shed.acquire().then((release) => (order.push('x'), release));
    clock.ms += 1;
    const y = shed.acquire().then((release) => (order.push('y'), release));
    second!();
    (await x)!();
    (await y)!();
    expect(order).toEqual(['newer', 'older', 'x', 'y']);
  });

  it('overloaded and full, a waiter past half the bound makes room for an arrival; a younger one does not', async () => {
    const { clock, limiter: shed } = limiter({ maxInFlight: 1, queueDepth: 1, maxQueueWaitMs: 100 });
    const running = await shed.acquire();
    const old = shed.acquire();
    expect(await shed.acquire()).toBeNull(); // full: refused, overloaded from here
    clock.ms += 40; // the waiter is younger than half the bound: the arrival is refused
    expect(await shed.acquire()).toBeNull();
    expect(shed.stats).toMatchObject({ queued: 1, refusedOnArrival: 2, refusedAfterWaiting: 0 });
    clock.ms += 20; // now past half the bound: it makes room
    const fresh = shed.acquire();
    expect(await old).toBeNull();
    expect(shed.stats).toMatchObject({ queued: 1, refusedOnArrival: 2, refusedAfterWaiting: 1 });
    running!();
    expect(typeof (await fresh)).toBe('function');
  });

  it('overloaded (half the recent calls refused), works on overloadedInFlight calls at once when it is set', async () => {
    const { clock, limiter: shed } = limiter({
      maxInFlight: 4,
      overloadedInFlight: 2,
      queueDepth: 1,
      maxQueueWaitMs: 100,
    });
    const running = await Promise.all([shed.acquire(), shed.acquire(), shed.acquire(), shed.acquire()]);
    const queued = shed.acquire();
    // Five arrivals taken, five refused (the queue is full): half refused, overloaded from here.
    for (let refused = 0; refused < 5; refused++) expect(await shed.acquire()).toBeNull();
    running[0]!();
    running[1]!();
    // Two slots came back, but two are in use and the overloaded limit is two: the waiter stays queued.
    expect(shed.stats).toMatchObject({ running: 2, queued: 1 });
    running[2]!();
    expect(typeof (await queued)).toBe('function');
    expect(shed.stats).toMatchObject({ running: 2, queued: 0 });
    // Three bounds after the last refusal, all four slots are in use again.
    clock.ms += 301;
    const again = await Promise.all([shed.acquire(), shed.acquire()]);
    expect(again.every((release) => typeof release === 'function')).toBe(true);
    expect(shed.stats.running).toBe(4);
  });

  it('overloaded, works on one call fewer at once, so that the calls it serves do not slow each other down', async () => {
    const { clock, limiter: shed } = limiter({ maxInFlight: 3, queueDepth: 1, maxQueueWaitMs: 100 });
    const running = [await shed.acquire(), await shed.acquire(), await shed.acquire()];
    const queued = shed.acquire();
    // Four arrivals taken, four refused (the queue is full): half refused, overloaded from here.
    for (let refused = 0; refused < 4; refused++) expect(await shed.acquire()).toBeNull();
    running[0]!();
    // A slot came back, but two are in use and the overloaded limit is two: the waiter stays queued.
    expect(shed.stats).toMatchObject({ running: 2, queued: 1 });
    running[1]!();
    const second = await queued;
    expect(typeof second).toBe('function');
    expect(shed.stats).toMatchObject({ running: 2, queued: 0 });
    // Three bounds after the last refusal, all three slots are in use again.
    clock.ms += 301;
    expect(typeof (await shed.acquire())).toBe('function');
    expect(shed.stats.running).toBe(3);
  });

  it('a burst that refuses a few calls keeps every slot: fewer only once half the recent calls are refused', async () => {
    const { clock, limiter: shed } = limiter({ maxInFlight: 2, queueDepth: 1, maxQueueWaitMs: 100 });
    // Calls served in the last second, none refused.
    for (let served = 0; served < 8; served++) {
      (await shed.acquire())!();
      clock.ms += 50;
    }
    const running = [await shed.acquire(), await shed.acquire()];
    const queued = shed.acquire();
    // Three refused of the recent arrivals (a burst meeting the bound): refusing, not overloaded.
    for (let refused = 0; refused < 3; refused++) expect(await shed.acquire()).toBeNull();
    running[0]!();
    // The slot that came back goes to the waiter at once: both slots stay in use.
    expect(typeof (await queued)).toBe('function');
    expect(shed.stats).toMatchObject({ running: 2, queued: 0 });
    // Demand keeps coming, most of it refused: now half the recent calls were refused, and one slot is dropped.
    const waiter = shed.acquire();
    for (let refused = 0; refused < 12; refused++) expect(await shed.acquire()).toBeNull();
    running[1]!();
    expect(shed.stats).toMatchObject({ running: 1, queued: 1 });
    // A second later (the refusals aged out, none since), every slot again.
    clock.ms += 1_000;
    const fresh = await shed.acquire();
    expect(typeof fresh).toBe('function');
    expect(shed.stats).toMatchObject({ running: 2, queued: 1 });
    // The waiter, long past its bound, is refused at the next release, not started late.
    fresh!();
    expect(await waiter).toBeNull();
  });

  it('refuses on arrival when the predicted wait (queue ahead × average hold / slots) exceeds the bound', async () => {
    const { clock, limiter: shed } = limiter({ maxInFlight: 2, queueDepth: 100, maxQueueWaitMs: 100 });
    // Teach it that a call holds its slot 40 ms.
    const sample = await shed.acquire();
    clock.ms += 40;
    sample!();
    expect(shed.stats.averageHoldMs).toBe(40);
    await shed.acquire();
    await shed.acquire();
    // Position p waits about p × 40 / 2 ms: positions 1..5 fit in 100 ms, the 6th would wait 120.
    const queued = Array.from({ length: 5 }, () => shed.acquire());
    expect(shed.stats.queued).toBe(5);
    expect(await shed.acquire()).toBeNull();
    expect(shed.stats.refusedOnArrival).toBe(1);
    void queued;
  });

  it('no call starts after waiting longer than the bound, even when its timer has not run yet', async () => {
    const { clock, limiter: shed } = limiter({ maxInFlight: 1, queueDepth: 4, maxQueueWaitMs: 100 });
    const running = await shed.acquire();
    const late = shed.acquire();
    clock.ms += 101; // the event loop was busy: the release comes before the waiter's timer
    running!();
    expect(await late).toBeNull();
    expect(shed.stats).toMatchObject({ running: 0, refusedAfterWaiting: 1, maxQueueWaitMs: 0 });
  });

  it('a queued caller that goes away leaves the queue', async () => {
    const { limiter: shed } = limiter({ maxInFlight: 1, queueDepth: 1, maxQueueWaitMs: 60_000 });
    const running = await shed.acquire();
    const gone = new AbortController();
    const waiting = shed.acquire(gone.signal);
    gone.abort();
    expect(await waiting).toBeNull();
    expect(shed.stats.queued).toBe(0);
    const next = shed.acquire();
    running!();
    expect(typeof (await next)).toBe('function');
  });
});

describe('load shedding defaults (config)', () => {
  const cores = availableParallelism();
  it('embedded: one more than the cores in flight (at least 3), one fewer while overloaded', () => {
    const slots = Math.max(2, cores) + 1;
    expect(parseConfig({}).api.inFlight).toEqual({
      maxInFlight: slots,
      overloadedInFlight: slots - 1,
      queueDepth: 16,
      maxQueueWaitMs: 30,
    });
  });
  it('a ClickHouse server: 16 in flight, one fewer while overloaded', () => {
    expect(parseConfig({ CLICKHOUSE_URL: 'http://clickhouse:8123' }).api.inFlight).toMatchObject({
      maxInFlight: 16,
      overloadedInFlight: 15,
    });
  });
  it('set: as set, one fewer while overloaded, at least one', () => {
    expect(parseConfig({ API_MAX_IN_FLIGHT: '2' }).api.inFlight).toMatchObject({
      maxInFlight: 2,
      overloadedInFlight: 1,
    });
    expect(parseConfig({ API_MAX_IN_FLIGHT: '1' }).api.inFlight).toMatchObject({
      maxInFlight: 1,
      overloadedInFlight: 1,
    });
  });
});
