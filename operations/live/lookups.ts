/**
 * The live plane's commands read the store the way a REST call does (docs/live.md, Bounds): through the
 * read caches (operations/reads.ts), inside a slot of the store's work (gates/in-flight.ts, taken at the
 * command's first store read, so an answer from the caches takes none), and drawing on a budget: a user's
 * commands that read the store share one token bucket per instance, `liveLookupsPerHour` of the plan
 * (config-plans.ts), refilled continuously. A command past the budget, or shed by the in-flight limit, is
 * refused with a message and reads nothing.
 */
import { LRUCache } from 'lru-cache';
import type { PlanLimits } from '../../config.ts';
import type { Caller } from '../auth.ts';
import type { InFlightLimiter } from '../gates/in-flight.ts';
import { StoreSlot } from '../gates/store-slot.ts';

/** Users whose bucket is kept (a bucket that is forgotten is full again: never more than the plan's). */
const USERS_KEPT = 100_000;
const HOUR_MS = 3_600_000;

/** A refusal of a live command, answered as an `error` message (the connection stays open). */
export class LiveRefusal extends Error {
  constructor(
    readonly code: 'lookup_limit' | 'overloaded',
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Every user's bucket of store lookups on this instance. */
export class LookupBudget {
  readonly #buckets = new LRUCache<string, { tokens: number; atMs: number }>({ max: USERS_KEPT });

  constructor(private readonly clockMs: () => number) {}

  /** Takes one lookup of the user's; false (nothing taken) when the bucket is empty. */
  take(accountId: string, limits: Pick<PlanLimits, 'liveLookupsPerHour'>): boolean {
    const capacity = limits.liveLookupsPerHour;
    const now = this.clockMs();
    const bucket = this.#buckets.get(accountId) ?? { tokens: capacity, atMs: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.atMs) / HOUR_MS) * capacity);
    bucket.atMs = now;
    this.#buckets.set(accountId, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Gives back a lookup taken for a command that then read nothing (shed by the in-flight limit). */
  giveBack(accountId: string, limits: Pick<PlanLimits, 'liveLookupsPerHour'>): void {
    const bucket = this.#buckets.get(accountId);
    if (bucket) bucket.tokens = Math.min(limits.liveLookupsPerHour, bucket.tokens + 1);
  }

  /** Seconds until the user's next lookup. */
  retryAfterSeconds(limits: Pick<PlanLimits, 'liveLookupsPerHour'>): number {
    return Math.ceil(HOUR_MS / limits.liveLookupsPerHour / 1000);
  }
}

/**
 * One command's slot of the store's work: its first store read draws a lookup from the user's budget,
 * then waits for a slot of the in-flight limit like a REST call's; `release` when the command is done.
 */
export function lookupSlot(inFlight: InFlightLimiter, budget: LookupBudget, caller: Caller): StoreSlot {
  const { limits } = caller;
  let refusal: LiveRefusal | null = null;
  return new StoreSlot(
    {
      acquire: (user, signal) => {
        if (!budget.take(caller.accountId, limits)) {
          const retryAfter = budget.retryAfterSeconds(limits);
          refusal = new LiveRefusal(
            'lookup_limit',
            `This command would read the store, and ${limits.name} allows the live plane ${limits.liveLookupsPerHour} store lookups an hour (resolving a display name, checking a market, starting a watch; answers already cached cost none). Retry in ${retryAfter} s, or name traders by wallet.`,
            { retry_after: retryAfter, lookups_per_hour: limits.liveLookupsPerHour },
          );
          return Promise.resolve(null);
        }
        return inFlight.acquire(user, signal);
      },
    },
    caller.accountId,
    () =>
      refusal ??
      new LiveRefusal(
        'overloaded',
        'The service is at capacity right now and did not run this command (it was not counted). Retry in about a second.',
        { retry_after: 1 },
      ),
    undefined,
    async () => {
      if (refusal === null) budget.giveBack(caller.accountId, limits);
    },
  );
}
