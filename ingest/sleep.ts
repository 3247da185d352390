/**
 * Waiting that a stop interrupts, on Node's own abortable timer (node:timers/promises): one place for
 * the sources' loops, backoffs and pacing instead of a hand-written timer and abort listener in each.
 */
import { setTimeout as timer } from 'node:timers/promises';

/** Waits `ms`, or until `signal` aborts, and then resolves either way: for a loop that checks its signal next. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return timer(Math.max(0, ms), undefined, signal ? { signal } : {}).catch(() => undefined);
}

/**
 * Waits `ms`; rejects when `signal` aborts first (at once if it already has), with `abortError()`:
 * by default the signal's reason.
 */
export function sleepOrAbort(
  ms: number,
  signal: AbortSignal | undefined,
  abortError: () => Error = () => signal?.reason as Error,
): Promise<void> {
  return timer(Math.max(0, ms), undefined, signal ? { signal } : {}).catch(() => {
    throw abortError();
  });
}
