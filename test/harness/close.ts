/** Deep equality for answers whose numbers are sums of floats added in an order the store does not fix. */
import { expect } from 'vitest';

/** Equal, numbers within a relative 1e-9 (sums of the same rows in another order differ in the last bits). */
export function expectClose(actual: unknown, expected: unknown, where: string): void {
  if (typeof expected === 'number' && typeof actual === 'number') {
    expect(Math.abs(actual - expected), `${where}: ${actual} vs ${expected}`).toBeLessThanOrEqual(
      1e-9 * Math.max(1, Math.abs(expected)),
    );
    return;
  }
  if (Array.isArray(expected)) {
    expect(Array.isArray(actual), where).toBe(true);
    expect((actual as unknown[]).length, `${where}: length`).toBe(expected.length);
    for (const [index, item] of expected.entries())
      expectClose((actual as unknown[])[index], item, `${where}[${index}]`);
    return;
  }
  if (expected !== null && typeof expected === 'object') {
    expect(actual !== null && typeof actual === 'object', where).toBe(true);
    expect(Object.keys(actual as object).sort(), `${where}: keys`).toEqual(Object.keys(expected).sort());
    for (const [key, value] of Object.entries(expected))
      expectClose((actual as Record<string, unknown>)[key], value, `${where}.${key}`);
    return;
  }
  expect(actual, where).toEqual(expected);
}
