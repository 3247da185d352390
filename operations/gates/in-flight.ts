/**
 * Load shedding: a bound on the calls this instance works on at once, with a short queue in front.
 * A call that would wait longer than the configured bound is refused at once (503 overloaded, or 429
 * busy for a heavy read) instead of queueing for seconds and ending in a 504: an instance that cannot
 * keep up says so fast, and a refusal costs the caller nothing (it comes before the budget is drawn).
 *
 * The wait is predicted at arrival from the queue ahead and the recent time a call holds its slot
 * (an exponential average), so that the excess is refused on arrival rather than after waiting out the
 * bound; a queued call that has still not started when the bound runs out is refused then (the bound
 * holds even when the prediction was wrong). This instance's own, like the per-instance heavy-read cap.
 *
 * While it refuses (calls were refused within the last few bounds) the queue serves the newest caller
 * first (adaptive LIFO, as in CoDel-style queue management): first-in-first-out would make every served
 * call wait nearly the whole bound on top of its work, while serving the newest keeps a served call's
 * wait near zero; a full queue lets a waiter past half the bound make room for an arrival (refused then,
 * within the bound), so that the waiter served next is a recent one. Without refusals (a burst within
 * capacity) the order stays first-in-first-out, so nobody is starved.
 *
 * Under sustained overload (refusing, and at least half of the recent calls refused: demand twice what it serves
 * or more) it also works on fewer calls at once, `overloadedInFlight` (config.ts; default
 * one fewer): at full occupancy the calls in flight compete for the same cores (the time a call holds
 * its slot grows with the calls beside it), and the served calls' latency, not the
 * last few percent of throughput, is what an overloaded instance protects. A short burst of costly calls
 * (an agent's first look at a trader: several uncached reads at once) that meets the bound refuses a few
 * calls and keeps every slot: dropping one at the first refusal cut the capacity exactly when it was
 * short, and a handful of refusals cascaded into many more (bench:api's mix; test/bench/RESULTS.md).
 */
import { EventEmitter } from 'node:events';

export interface InFlightLimits {
  /** Calls worked on at once. */
  maxInFlight: number;
  /** Calls worked on at once under sustained overload (default: one fewer than maxInFlight, at least one). */
  overloadedInFlight?: number | undefined;
  /** Calls waiting for a slot, at most. */
  queueDepth: number;
  /** No call waits in the queue longer than this. */
  maxQueueWaitMs: number;
}

/** Counters since start (benchmarks and metrics). */
export interface InFlightStats {
  running: number;
  queued: number;
  /** Calls that got a slot (at once or after queueing). */
  started: number;
  /** Of those, the ones that queued first. */
  startedAfterQueueing: number;
  /** Refused: on arrival (queue full or predicted wait too long) and after waiting out the bound. */
  refusedOnArrival: number;
  refusedAfterWaiting: number;
  /** The longest time a call that got a slot spent in the queue, ms. */
  maxQueueWaitMs: number;
  /** The current average time a call holds its slot, ms (the smoothed figure the prediction uses). */
  averageHoldMs: number;
  /** Slots released since the counters were zeroed, and the time they were held in all, ms. */
  released: number;
  heldMs: number;
}

/** A call's slot: calling it gives the slot back for good (idempotent). */
export type Slot = () => void;

interface Waiter {
  enqueuedAt: number;
  grant: (slot: Slot) => void;
  refuse: () => void;
  timer: NodeJS.Timeout;
}

/** How long the instance counts as refusing after it last refused a call: three bounds, at most a second. */
const OVERLOAD_MEMORY_BOUNDS = 3;
const OVERLOAD_MEMORY_MAX_MS = 1000;
/**
 * Sustained overload: the refused share of the recent arrivals (each counted with weight e^(−age / this))
 * at or above OVERLOADED_REFUSED_SHARE. The memory is short enough that under heavy overload the share
 * passes a half within a fraction of it (the served calls get the fewer slots almost at once), and long
 * enough that a short burst's refusals weigh against many more arrivals at a busy instance's rate.
 */
const REFUSED_SHARE_MEMORY_MS = 150;
const OVERLOADED_REFUSED_SHARE = 0.5;

/** Weight of the latest hold time in the average (about the last 10 calls dominate). */
const HOLD_SMOOTHING = 0.1;

export class InFlightLimiter {
  /** 'queued' (queue length) when a call starts waiting: tests await it instead of polling. */
  readonly events = new EventEmitter();
  #running = 0;
  readonly #queue: Waiter[] = [];
  #averageHoldMs = 0;
  #holdMeasured = false;
  /** When a call was last refused (on arrival or after waiting); none yet: -Infinity. */
  #refusedAt = Number.NEGATIVE_INFINITY;
  /** Arrivals and refusals, each weighted by e^(−age / REFUSED_SHARE_MEMORY_MS) as of #countedAt. */
  #recentArrivals = 0;
  #recentRefusals = 0;
  #countedAt = 0;
  readonly #stats = {
    started: 0,
    startedAfterQueueing: 0,
    refusedOnArrival: 0,
    refusedAfterWaiting: 0,
    maxQueueWaitMs: 0,
    released: 0,
    heldMs: 0,
  };

  constructor(
    readonly limits: InFlightLimits,
    private readonly clockMs: () => number = () => performance.now(),
  ) {}

  /**
   * A slot for one call: resolves to its release (idempotent), or to null when the call is refused: the
   * queue is full, the predicted wait exceeds the bound, the bound ran out while queued, or `signal`
   * aborted (the caller went away) while queued.
   */
  acquire(signal?: AbortSignal): Promise<Slot | null> {
    const now = this.clockMs();
    this.#count(now, 1, 0);
    if (this.#running < this.#slots(now)) return Promise.resolve(this.#start(now));
    // The places in the queue whose predicted wait (place × average hold ÷ slots) fits in the bound.
    const places = Math.min(
      this.limits.queueDepth,
      Math.floor((this.limits.maxQueueWaitMs * this.#slots(now)) / Math.max(this.#averageHoldMs, Number.EPSILON)),
    );
    // Overloaded and full, a waiter that has spent half the bound already (behind newer arrivals, it will
    // hardly be served in time) makes room for the arrival, which will be served next: the served calls'
    // wait stays near zero, and the older one is refused now instead of at the end of its bound.
    const oldest = this.#queue[0];
    if (
      this.#queue.length + 1 > places &&
      oldest &&
      this.#refusing(now) &&
      now - oldest.enqueuedAt > this.limits.maxQueueWaitMs / 2 &&
      !signal?.aborted
    ) {
      oldest.refuse();
    }
    if (this.#queue.length + 1 > places || signal?.aborted) {
      this.#stats.refusedOnArrival += 1;
      this.#refused(now);
      return Promise.resolve(null);
    }
    return new Promise((resolve) => {
      const leave = () => {
        const index = this.#queue.indexOf(waiter);
        if (index >= 0) this.#queue.splice(index, 1);
        clearTimeout(waiter.timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        leave();
        resolve(null);
      };
      const waiter: Waiter = {
        enqueuedAt: this.clockMs(),
        grant: (release) => {
          leave();
          resolve(release);
        },
        refuse: () => {
          leave();
          this.#stats.refusedAfterWaiting += 1;
          this.#refused(this.clockMs());
          resolve(null);
        },
        timer: setTimeout(() => waiter.refuse(), this.limits.maxQueueWaitMs),
      };
      this.#queue.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.events.emit('queued', this.#queue.length);
    });
  }

  get stats(): InFlightStats {
    return { running: this.#running, queued: this.#queue.length, ...this.#stats, averageHoldMs: this.#averageHoldMs };
  }

  /** Zeroes the counters (not the slots or the queue): a benchmark measures each phase apart. */
  resetCounters(): void {
    Object.assign(this.#stats, {
      started: 0,
      startedAfterQueueing: 0,
      refusedOnArrival: 0,
      refusedAfterWaiting: 0,
      maxQueueWaitMs: 0,
      released: 0,
      heldMs: 0,
    });
  }

  /** Calls were refused within the last few bounds: demand is above what this instance serves right now. */
  #refusing(now: number): boolean {
    return (
      now - this.#refusedAt <= Math.min(OVERLOAD_MEMORY_BOUNDS * this.limits.maxQueueWaitMs, OVERLOAD_MEMORY_MAX_MS)
    );
  }

  #refused(now: number): void {
    this.#refusedAt = now;
    this.#count(now, 0, 1);
  }

  /** Ages the recent counts to `now`, then adds arrivals and refusals. */
  #count(now: number, arrivals: number, refusals: number): void {
    const kept = Math.exp(-Math.max(0, now - this.#countedAt) / REFUSED_SHARE_MEMORY_MS);
    this.#recentArrivals = this.#recentArrivals * kept + arrivals;
    this.#recentRefusals = this.#recentRefusals * kept + refusals;
    this.#countedAt = Math.max(this.#countedAt, now);
  }

  /** Refusing, and at least half the recent calls were refused: demand is twice what this instance serves, or more. */
  #overloaded(now: number): boolean {
    return this.#refusing(now) && this.#recentRefusals >= OVERLOADED_REFUSED_SHARE * this.#recentArrivals;
  }

  /** Slots in use at most: fewer under sustained overload, so that the calls served do not slow each other down. */
  #slots(now: number): number {
    if (!this.#overloaded(now)) return this.limits.maxInFlight;
    return Math.max(
      1,
      Math.min(this.limits.maxInFlight, this.limits.overloadedInFlight ?? this.limits.maxInFlight - 1),
    );
  }

  #start(startedAt: number): Slot {
    this.#running += 1;
    this.#stats.started += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = this.clockMs();
      const heldMs = now - startedAt;
      // The call is done: its time in the slot counts toward the average hold (the wait prediction).
      this.#averageHoldMs = this.#holdMeasured
        ? this.#averageHoldMs + HOLD_SMOOTHING * (heldMs - this.#averageHoldMs)
        : heldMs;
      this.#holdMeasured = true;
      this.#stats.released += 1;
      this.#stats.heldMs += heldMs;
      this.#freeSlot(now);
    };
  }

  /** A slot is free: the next waiter takes it (LIFO while refusing). */
  #freeSlot(now: number): void {
    this.#running -= 1;
    // The bound is strict: a waiter past it (its timer not yet run, the event loop being busy) is
    // refused, not started late.
    for (const waiter of this.#queue.filter((queued) => now - queued.enqueuedAt > this.limits.maxQueueWaitMs))
      waiter.refuse();
    if (this.#running >= this.#slots(now)) return;
    const next = this.#refusing(now) ? this.#queue.at(-1) : this.#queue[0];
    if (next) {
      this.#stats.startedAfterQueueing += 1;
      this.#stats.maxQueueWaitMs = Math.max(this.#stats.maxQueueWaitMs, now - next.enqueuedAt);
      next.grant(this.#start(now));
    }
  }
}
