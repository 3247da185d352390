/**
 * Load shedding of the store's work: how many calls read the store at once, and a short, fair queue in
 * front of them. Only a call that reads the store takes a slot, and only once its plan's gates admitted
 * it (operations/context.ts): an answer from memory never waits here, and a call beyond its plan's burst
 * is the plan's 429, not a 503.
 *
 * How many at once is measured, not fixed: an adaptive limit from the calls' latency (adaptive-limit.ts).
 *
 * The queue separates a burst from overload, as CoDel does: a queue that forms may last `maxQueueWaitMs`
 * (`burstQueueWaitMs` while it is mostly one account's burst: a plan's burst on a loaded machine outlasts
 * the shorter one) — a burst the service can absorb within that short horizon waits and is served: every
 * waiter admitted then has its deadline within the horizon — served first-in-first-out. Demand beyond that (an arrival
 * that finds no room within the horizon) is overload: the waiters that
 * will not be served soon are refused at once, an arrival may then wait `targetQueueWaitMs` at most, and the newest waiter is served first (adaptive LIFO: first-in-first-out would make
 * every served call wait out the wait on top of its work; the older ones reach their deadline and are
 * refused within it). Every arrival whose predicted wait (the waiters ahead × the recent hold time ÷ the
 * slots) misses its deadline is refused at once, so a refusal is answered in milliseconds, never after
 * seconds in a queue.
 *
 * Fairness between users: waiters queue per user and the next slot goes to the users in turn (round
 * robin), so one user's burst cannot keep another's call waiting behind it; when the queue is full, an
 * arrival of a user with fewer waiters than the user with the most takes the place of one of that user's
 * (refused at once), as fair queueing drops from the longest flow.
 */
import { EventEmitter } from 'node:events';
import { AdaptiveLimit } from './adaptive-limit.ts';

export interface InFlightLimits {
  /** Calls worked on at once at the start, before the limit has measured anything. */
  initialInFlight: number;
  /** The adaptive limit's floor. */
  minInFlight: number;
  /** Calls at once at most for a latency to count as uncontended (the adaptive limit's baseline). */
  baselineInFlight: number;
  /** The adaptive limit's ceiling. */
  maxInFlight: number;
  /** Calls waiting for a slot, at most. */
  queueDepth: number;
  /** The short horizon: a queue of many accounts' calls that formed is served within this long, or refuses. */
  maxQueueWaitMs: number;
  /** The burst horizon: the same for a queue that is mostly one account's burst. */
  burstQueueWaitMs: number;
  /** Under overload, the longest an arrival may wait. */
  targetQueueWaitMs: number;
  /**
   * A waiter may be refused only this long after its arrival; then it is committed: started in its turn,
   * never refused (unless its caller goes away). A refusal is then always quick, and a wrong guess of
   * the queue's speed makes a served call wait a little longer instead of a refusal arrive late.
   */
  refusalWindowMs: number;
}

/** Counters since start (benchmarks and metrics). */
export interface InFlightStats {
  running: number;
  queued: number;
  /** The adaptive limit's current slots, and its measured uncontended hold, ms. */
  limit: number;
  baselineMs: number;
  /** Calls that got a slot (at once or after queueing). */
  started: number;
  /** Of those, the ones that queued first. */
  startedAfterQueueing: number;
  /** Refused: on arrival (no room within the deadline), and after waiting (the deadline passed, or evicted). */
  refusedOnArrival: number;
  refusedAfterWaiting: number;
  /** Times the limiter went from burst to overload. */
  overloads: number;
  /** Waiters that outlived the refusal window and were started in their turn. */
  committed: number;
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
  user: string;
  /** Arrival order (ties of the clock included). */
  order: number;
  enqueuedAt: number;
  deadline: number;
  /** Past its refusal window and promised a slot in its turn. */
  committed: boolean;
  /** Started, refused or gone. */
  settled: boolean;
  grant: (slot: Slot) => void;
  refuse: () => void;
  timer: NodeJS.Timeout | undefined;
}

/** The counters at start and after `resetCounters`: everything counted since is zero. */
function zeroedCounters() {
  return {
    started: 0,
    startedAfterQueueing: 0,
    refusedOnArrival: 0,
    refusedAfterWaiting: 0,
    overloads: 0,
    committed: 0,
    maxQueueWaitMs: 0,
    released: 0,
    heldMs: 0,
  };
}

/** Weight of the latest hold time in the average (about the last 10 calls dominate). */
const HOLD_SMOOTHING = 0.1;

export class InFlightLimiter {
  /** 'queued' (queue length) when a call starts waiting: tests await it instead of polling. */
  readonly events = new EventEmitter();
  readonly #limit: AdaptiveLimit;
  /** Running calls, each with the most calls that ran at once while it did. */
  readonly #running = new Set<{ peak: number }>();
  /** Waiters per user; the map's order is the users' turn (a served user goes to the back). */
  readonly #queues = new Map<string, Waiter[]>();
  #queued = 0;
  /** Of the waiters, the committed ones (served first, in turn). */
  #committed = 0;
  #arrivals = 0;
  /** When the current queue formed (null: no queue). */
  #queueSince: number | null = null;
  /** Overload, not a burst, since then (null: not overloaded; see #overloaded). */
  #overloadSince: number | null = null;
  /** Arrivals and refusals, each weighted by e^(−age / burstQueueWaitMs) as of #countedAt. */
  #recentArrivals = 0;
  #recentRefusals = 0;
  #countedAt = 0;
  #averageHoldMs = 0;
  #holdMeasured = false;
  readonly #stats = zeroedCounters();

  constructor(
    readonly limits: InFlightLimits,
    private readonly clockMs: () => number = () => performance.now(),
  ) {
    this.#limit = new AdaptiveLimit({
      initialLimit: limits.initialInFlight,
      minLimit: limits.minInFlight,
      baselineConcurrency: limits.baselineInFlight,
      maxLimit: limits.maxInFlight,
    });
  }

  /**
   * A slot for one call of `user`: resolves to its release (idempotent), or to null when the call is
   * refused: no room within its deadline on arrival, its deadline passed while queued, its place taken
   * by a user with fewer waiters, or `signal` aborted (the caller went away) while queued.
   */
  acquire(user: string, signal?: AbortSignal): Promise<Slot | null> {
    const now = this.clockMs();
    this.#expire(now);
    if (signal?.aborted) {
      this.#stats.refusedOnArrival += 1;
      return Promise.resolve(null);
    }
    this.#count(now, 1, 0);
    if (this.#queued === 0 && this.#running.size < this.#limit.slots) return Promise.resolve(this.#start(now));
    this.#limit.limitReached();
    const overloaded = this.#overloaded(now);
    const own = this.#queues.get(user)?.length ?? 0;
    // One account's burst (most of the queue its own) may take the longer burst horizon: the service
    // serves it within that when nobody else asks; a queue of many accounts' calls is load, held to the
    // shorter one.
    const horizon = 2 * (own + 1) > this.#queued + 1 ? this.limits.burstQueueWaitMs : this.limits.maxQueueWaitMs;
    const deadline = overloaded
      ? now + this.#overloadWait()
      : Math.max(now + this.limits.targetQueueWaitMs, (this.#queueSince ?? now) + horizon);
    const predictedWait = ((this.#ahead(user, own) + 1) * this.#averageHoldMs) / this.#limit.slots;
    if (this.#queued + 1 > this.limits.queueDepth || now + predictedWait > deadline) {
      // Fair queueing's drop: the user with the most waiters gives up one place for a user with fewer
      // (its oldest young one under overload, the one least likely to be served; else its newest, served
      // last). Committed waiters keep their places.
      const heaviest = this.#heaviestQueue();
      const young = heaviest && heaviest.length > own + 1 ? heaviest.filter((waiter) => !waiter.committed) : [];
      if (young.length === 0) {
        // Demand exceeds what the slots serve within the horizon: overload from now on.
        if (!overloaded) this.#enterOverload(now);
        return this.#refuseOnArrival(now);
      }
      (overloaded ? young[0]! : young.at(-1)!).refuse();
    }
    return new Promise((resolve) => {
      const leave = () => {
        const queue = this.#queues.get(user);
        const index = queue?.indexOf(waiter) ?? -1;
        if (queue && index >= 0) {
          queue.splice(index, 1);
          this.#queued -= 1;
          if (queue.length === 0) this.#queues.delete(user);
          if (this.#queued === 0) this.#queueSince = null;
        }
        if (waiter.committed) this.#committed -= 1;
        waiter.settled = true;
        clearTimeout(waiter.timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        leave();
        resolve(null);
      };
      const waiter: Waiter = {
        user,
        order: this.#arrivals++,
        enqueuedAt: now,
        deadline,
        committed: false,
        settled: false,
        grant: (release) => {
          leave();
          resolve(release);
        },
        refuse: () => {
          leave();
          this.#stats.refusedAfterWaiting += 1;
          this.#count(this.clockMs(), 0, 1);
          resolve(null);
        },
        timer: undefined,
      };
      this.#schedule(waiter, now);
      let queue = this.#queues.get(user);
      if (!queue) this.#queues.set(user, (queue = []));
      queue.push(waiter);
      this.#queued += 1;
      this.#queueSince ??= now;
      signal?.addEventListener('abort', onAbort, { once: true });
      this.events.emit('queued', this.#queued);
    });
  }

  get stats(): InFlightStats {
    return {
      running: this.#running.size,
      queued: this.#queued,
      limit: this.#limit.slots,
      baselineMs: this.#limit.baselineMs,
      ...this.#stats,
      averageHoldMs: this.#averageHoldMs,
    };
  }

  /** Zeroes the counters (not the slots, the queue or the limit): a benchmark measures each phase apart. */
  resetCounters(): void {
    Object.assign(this.#stats, zeroedCounters());
  }

  #refuseOnArrival(now: number): Promise<null> {
    this.#stats.refusedOnArrival += 1;
    this.#count(now, 0, 1);
    return Promise.resolve(null);
  }

  /** Ages the recent counts to `now`, then adds arrivals and refusals. */
  #count(now: number, arrivals: number, refusals: number): void {
    const kept = Math.exp(-Math.max(0, now - this.#countedAt) / this.limits.burstQueueWaitMs);
    this.#recentArrivals = this.#recentArrivals * kept + arrivals;
    this.#recentRefusals = this.#recentRefusals * kept + refusals;
    this.#countedAt = Math.max(this.#countedAt, now);
  }

  /**
   * Overload, not a burst: an arrival found no room within the horizon. It lasts at least the burst
   * horizon (the longer one: a short memory of a noisy few arrivals would go in and out of overload,
   * queueing a burst's worth of calls each time it came out), then while at least half of the recent
   * arrivals are refused (demand twice what the slots serve): a
   * queue that empties for a moment between arrivals is still the same overload, and at a lower demand
   * the short overload wait refuses fewer than half, which ends it. A queue that is merely never empty
   * (calls close to capacity, each served within the horizon) is not overload: entering it on that
   * refused calls the service had time for.
   */
  #overloaded(now: number): boolean {
    if (
      this.#overloadSince !== null &&
      now - this.#overloadSince > this.limits.burstQueueWaitMs &&
      this.#recentRefusals < 0.5 * this.#recentArrivals
    )
      this.#overloadSince = null;
    return this.#overloadSince !== null;
  }

  /**
   * The wait an arrival may be given under overload: the target. One turn of a slot would keep a waiter
   * ready for every freed slot, but a turn is the hold ÷ the slots, tens of milliseconds when the store
   * is slow, and a waiter that is then refused has waited that long for its refusal; under overload the
   * next arrival refills a freed slot within milliseconds anyway.
   */
  #overloadWait(): number {
    return this.limits.targetQueueWaitMs;
  }

  /**
   * From now on overloaded. The waiters the slots will not serve within the overload wait are refused at
   * once, while they are young (the newest ones stay: served first from now on); left waiting, they
   * would be refused at the end of the horizon: refusals of hundreds of milliseconds.
   */
  #enterOverload(now: number): void {
    this.#overloadSince = now;
    this.#stats.overloads += 1;
    const keep = Math.max(1, Math.floor((this.#overloadWait() * this.#limit.slots) / Math.max(this.#averageHoldMs, 1)));
    const young = [...this.#queues.values()]
      .flat()
      .filter((waiter) => !waiter.committed)
      .sort((a, b) => b.order - a.order);
    for (const waiter of young.slice(Math.max(0, keep - this.#committed))) waiter.refuse();
  }

  /**
   * The waiters served before a new one of `user` (with `own` waiting), in turns: its own, and of every
   * other account as many as it has, up to one more than `user`'s own (each turn serves one of each).
   */
  #ahead(user: string, own: number): number {
    let ahead = own;
    for (const [other, queue] of this.#queues) if (other !== user) ahead += Math.min(queue.length, own + 1);
    return ahead;
  }

  #heaviestQueue(): Waiter[] | undefined {
    let heaviest: Waiter[] | undefined;
    for (const queue of this.#queues.values()) if (!heaviest || queue.length > heaviest.length) heaviest = queue;
    return heaviest;
  }

  /** Every young waiter reviewed as of `now` (its timer may not have run yet, the event loop being busy). */
  #expire(now: number): void {
    if (this.#queued === this.#committed) return;
    for (const queue of [...this.#queues.values()])
      for (const waiter of queue.filter((queued) => !queued.committed)) this.#review(waiter, now);
  }

  /**
   * A young waiter as of `now`: refused past its deadline; at the end of its refusal window committed
   * when its turn (behind the committed waiters, served first) comes within its deadline, else refused;
   * else left young until its next review.
   */
  #review(waiter: Waiter, now: number): void {
    if (waiter.committed) return;
    if (now > waiter.deadline) return waiter.refuse();
    if (now - waiter.enqueuedAt < this.limits.refusalWindowMs) return;
    const turn = ((this.#committed + 1) * this.#averageHoldMs) / this.#limit.slots;
    if (now + turn > waiter.deadline) return waiter.refuse();
    waiter.committed = true;
    this.#committed += 1;
    this.#stats.committed += 1;
    clearTimeout(waiter.timer);
    waiter.timer = undefined;
  }

  /** The waiter's next review: its deadline or the end of its refusal window, whichever comes first. */
  #schedule(waiter: Waiter, now: number): void {
    const at = Math.min(waiter.deadline + 1, waiter.enqueuedAt + this.limits.refusalWindowMs);
    waiter.timer = setTimeout(
      () => {
        const reviewedAt = this.clockMs();
        this.#review(waiter, reviewedAt);
        // Still young (a timer may run early by the clock it is measured with): look again.
        if (!waiter.committed && !waiter.settled) this.#schedule(waiter, reviewedAt);
      },
      Math.max(1, at - now),
    );
  }

  #start(startedAt: number): Slot {
    const call = { peak: 0 };
    this.#running.add(call);
    const running = this.#running.size;
    for (const other of this.#running) other.peak = Math.max(other.peak, running);
    this.#stats.started += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = this.clockMs();
      const heldMs = now - startedAt;
      this.#running.delete(call);
      // The call is done: its time in the slot counts toward the average hold (the wait prediction) and
      // is the latency sample of the adaptive limit.
      this.#averageHoldMs = this.#holdMeasured
        ? this.#averageHoldMs + HOLD_SMOOTHING * (heldMs - this.#averageHoldMs)
        : heldMs;
      this.#holdMeasured = true;
      this.#limit.sample(heldMs, call.peak);
      this.#stats.released += 1;
      this.#stats.heldMs += heldMs;
      this.#startWaiters(now);
    };
  }

  /** Slots are free: the users with waiters take them in turn (each user's newest first under overload). */
  #startWaiters(now: number): void {
    this.#expire(now);
    while (this.#queued > 0 && this.#running.size < this.#limit.slots) {
      const [user, queue] = this.#queues.entries().next().value!;
      // A committed waiter was promised its turn; else under overload the newest.
      const next = queue.find((waiter) => waiter.committed) ?? (this.#overloaded(now) ? queue.at(-1)! : queue[0]!);
      // The user goes to the back of the turn.
      this.#queues.delete(user);
      if (queue.length > 0) this.#queues.set(user, queue);
      this.#stats.startedAfterQueueing += 1;
      this.#stats.maxQueueWaitMs = Math.max(this.#stats.maxQueueWaitMs, now - next.enqueuedAt);
      next.grant(this.#start(now));
    }
  }
}
