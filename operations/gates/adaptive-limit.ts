/**
 * The number of store calls worth running at once, measured from their latency: the gradient design of
 * Envoy's adaptive concurrency filter and Netflix's concurrency-limits, small enough to keep here.
 *
 * A baseline is the latency of calls that ran while no more than `baselineConcurrency` calls ran (the
 * store was not contended: Envoy's "minRTT", measured at a pinned low concurrency): the median of the recent ones,
 * since answers of different kinds cost different amounts. Every `WINDOW_SAMPLES` completed calls, the
 * window's median latency is compared to the baseline with a tolerance:
 *
 *     gradient = clamp(baseline × TOLERANCE / windowMedian, MIN_GRADIENT, MAX_GRADIENT)
 *     limit   ← limit + SMOOTHING × (limit × gradient − limit), within [minLimit, maxLimit]
 *
 * so the limit settles where a call takes TOLERANCE × its uncontended time: below it the store has idle
 * capacity (the limit grows, but only when the window met the limit: a limit that demand never reached
 * says nothing about what more calls would cost), above it the calls queue inside the store and slow
 * each other (it shrinks). Every quiet moment (few calls at once) refreshes the baseline, and when the
 * floor is at the baseline's concurrency a limit that fell to it refreshes it with every call, so a
 * baseline that has gone stale corrects itself, as Envoy's periodic minRTT recalculation does. The floor
 * may be above the baseline's concurrency: where the work is the machine's own cores (the embedded
 * store), a limit below the cores plus one leaves a core idle while a call is between statements, and
 * the latency of calls on a machine shared with other processes rises with their load, not with ours.
 * Until a baseline exists the limit stays where it started.
 */

/** Latency may grow to this multiple of the uncontended one before the limit shrinks. */
const TOLERANCE = 1.25;
const MIN_GRADIENT = 0.5;
const MAX_GRADIENT = 2;
/** Completed calls per adjustment, and the share of the step taken (damps the noise of small windows). */
const WINDOW_SAMPLES = 16;
const SMOOTHING = 0.25;
/** Uncontended latencies the baseline is the median of. */
const BASELINE_SAMPLES = 64;

export interface AdaptiveLimitSettings {
  initialLimit: number;
  minLimit: number;
  maxLimit: number;
  /** Calls at once at most for a latency to count as uncontended (default: minLimit). */
  baselineConcurrency?: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export class AdaptiveLimit {
  #limit: number;
  readonly #baseline: number[] = [];
  #baselineNext = 0;
  #window: number[] = [];
  /** Whether demand reached the limit during the current window. */
  #limited = false;

  constructor(readonly settings: AdaptiveLimitSettings) {
    const { minLimit, maxLimit, initialLimit } = settings;
    if (!(minLimit >= 1 && maxLimit >= minLimit))
      throw new Error(`adaptive limit: need 1 ≤ minLimit ≤ maxLimit (got ${minLimit}, ${maxLimit})`);
    this.#limit = Math.min(maxLimit, Math.max(minLimit, initialLimit));
  }

  /** The calls to run at once now (a whole number within the bounds). */
  get slots(): number {
    return Math.min(this.settings.maxLimit, Math.max(this.settings.minLimit, Math.round(this.#limit)));
  }

  /** The uncontended latency, ms (NaN until measured). */
  get baselineMs(): number {
    return this.#baseline.length === 0 ? Number.NaN : median(this.#baseline);
  }

  /** Demand met the limit: a call found every slot taken. */
  limitReached(): void {
    this.#limited = true;
  }

  /** A call completed after `latencyMs`; at most `concurrency` calls ran at once while it did. */
  sample(latencyMs: number, concurrency: number): void {
    if (!(latencyMs >= 0) || !Number.isFinite(latencyMs)) return;
    if (concurrency <= (this.settings.baselineConcurrency ?? this.settings.minLimit)) {
      if (this.#baseline.length < BASELINE_SAMPLES) this.#baseline.push(latencyMs);
      else this.#baseline[this.#baselineNext] = latencyMs;
      this.#baselineNext = (this.#baselineNext + 1) % BASELINE_SAMPLES;
    }
    this.#window.push(latencyMs);
    if (this.#window.length < WINDOW_SAMPLES) return;
    const observed = median(this.#window);
    const limited = this.#limited;
    this.#window = [];
    this.#limited = false;
    if (this.#baseline.length === 0) return;
    const baseline = median(this.#baseline);
    const gradient =
      observed <= 0 ? MAX_GRADIENT : Math.min(MAX_GRADIENT, Math.max(MIN_GRADIENT, (baseline * TOLERANCE) / observed));
    if (gradient > 1 && !limited) return;
    const next = this.#limit + SMOOTHING * (this.#limit * gradient - this.#limit);
    this.#limit = Math.min(this.settings.maxLimit, Math.max(this.settings.minLimit, next));
  }
}
