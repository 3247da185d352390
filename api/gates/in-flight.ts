/**
 * Load shedding: a bound on the calls this instance works on at once, with a short FIFO queue in front.
 * A call that would wait longer than the configured bound is refused at once (503 overloaded, or 429
 * busy for a heavy read) instead of queueing for seconds and ending in a 504: an instance that cannot
 * keep up says so fast, and a refusal costs the caller nothing (it comes before the budget is drawn).
 *
 * The wait is predicted at arrival from the queue ahead and the recent time a call holds its slot
 * (an exponential average), so that the excess is refused on arrival rather than after waiting out the
 * bound; a queued call that has still not started when the bound runs out is refused then (the bound
 * holds even when the prediction was wrong). This instance's own, like the per-instance heavy-read cap.
 */
import { EventEmitter } from 'node:events';

export interface InFlightLimits {
  /** Calls worked on at once. */
  maxInFlight: number;
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
  /** The current average time a call holds its slot, ms. */
  averageHoldMs: number;
}

interface Waiter {
  enqueuedAt: number;
  grant: (release: () => void) => void;
  refuse: () => void;
  timer: NodeJS.Timeout;
}

/** Weight of the latest hold time in the average (about the last 10 calls dominate). */
const HOLD_SMOOTHING = 0.1;

export class InFlightLimiter {
  /** 'queued' (queue length) when a call starts waiting: tests await it instead of polling. */
  readonly events = new EventEmitter();
  #running = 0;
  readonly #queue: Waiter[] = [];
  #averageHoldMs = 0;
  #holdMeasured = false;
  readonly #stats = { started: 0, startedAfterQueueing: 0, refusedOnArrival: 0, refusedAfterWaiting: 0, maxQueueWaitMs: 0 };

  constructor(
    readonly limits: InFlightLimits,
    private readonly clockMs: () => number = () => performance.now(),
  ) {}

  /**
   * A slot for one call: resolves to its release (idempotent), or to null when the call is refused: the
   * queue is full, the predicted wait exceeds the bound, the bound ran out while queued, or `signal`
   * aborted (the caller went away) while queued.
   */
  acquire(signal?: AbortSignal): Promise<(() => void) | null> {
    if (this.#running < this.limits.maxInFlight) return Promise.resolve(this.#start(this.clockMs()));
    const position = this.#queue.length + 1;
    const predictedWaitMs = (position * this.#averageHoldMs) / this.limits.maxInFlight;
    if (position > this.limits.queueDepth || predictedWaitMs > this.limits.maxQueueWaitMs || signal?.aborted) {
      this.#stats.refusedOnArrival += 1;
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
    Object.assign(this.#stats, { started: 0, startedAfterQueueing: 0, refusedOnArrival: 0, refusedAfterWaiting: 0, maxQueueWaitMs: 0 });
  }

  #start(startedAt: number): () => void {
    this.#running += 1;
    this.#stats.started += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = this.clockMs();
      const heldMs = now - startedAt;
      this.#averageHoldMs = this.#holdMeasured ? this.#averageHoldMs + HOLD_SMOOTHING * (heldMs - this.#averageHoldMs) : heldMs;
      this.#holdMeasured = true;
      this.#running -= 1;
      // The bound is strict: a waiter past it (its timer not yet run, the event loop being busy) is
      // refused, not started late.
      let next = this.#queue[0];
      while (next && now - next.enqueuedAt > this.limits.maxQueueWaitMs) {
        next.refuse();
        next = this.#queue[0];
      }
      if (next) {
        this.#stats.startedAfterQueueing += 1;
        this.#stats.maxQueueWaitMs = Math.max(this.#stats.maxQueueWaitMs, now - next.enqueuedAt);
        next.grant(this.#start(now));
      }
    };
  }
}
