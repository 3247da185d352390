/** toApiError's log: an overload refusal is counted by the request metrics, not logged; other 5xx are. */
import { describe, expect, it } from 'vitest';
import { errors, toApiError } from './errors.ts';

describe('toApiError', () => {
  it('logs a 5xx of ours but not a shed call (503 overloaded), and returns each as it is', () => {
    const lines: unknown[][] = [];
    const log = { warn: (...args: unknown[]) => lines.push(args), error: (...args: unknown[]) => lines.push(args) };
    const shed = errors.overloaded(1);
    expect(toApiError(shed, log, { url: '/x' })).toBe(shed);
    expect(lines).toEqual([]);
    const timeout = errors.queryTimeout();
    expect(toApiError(timeout, log, { url: '/y' })).toBe(timeout);
    expect(lines).toEqual([[{ code: timeout.code, url: '/y' }, timeout.message]]);
  });
});
