import { describe, expect, it } from 'vitest';
import { sleepOrAbort, sleepUnlessAborted } from './sleep.ts';

describe('sleeping that a stop interrupts', () => {
  it('sleepUnlessAborted resolves when the signal aborts, long before the time, and at once if it already has', async () => {
    const stop = new AbortController();
    const started = performance.now();
    const waiting = sleepUnlessAborted(60_000, stop.signal);
    stop.abort();
    await expect(waiting).resolves.toBeUndefined();
    await expect(sleepUnlessAborted(60_000, stop.signal)).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  it('sleepOrAbort rejects with the signal’s reason, or the given error, and resolves when nothing aborts', async () => {
    const stop = new AbortController();
    const waiting = sleepOrAbort(60_000, stop.signal);
    const reason = new Error('stopping');
    stop.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    class Stopped extends Error {}
    await expect(sleepOrAbort(60_000, stop.signal, () => new Stopped())).rejects.toBeInstanceOf(Stopped);
    await expect(sleepOrAbort(1, undefined)).resolves.toBeUndefined();
  });
});
