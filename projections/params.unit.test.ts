import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clampEpochSeconds, clampUInt32, epochLowerBound, UINT32_MAX } from './params.ts';

/** What ClickHouse does with an out-of-range UInt32 parameter: it keeps the low 32 bits. */
const wrapped = (value: number) => Number(BigInt.asUintN(32, BigInt(value)));

describe('bounds of UInt32 parameters', () => {
  it('a UInt32 parameter is the value itself inside the range and its nearest end outside, never the wrapped value', () => {
    fc.assert(
      fc.property(fc.maxSafeInteger(), (value) => {
        expect(clampUInt32(value)).toBe(Math.min(UINT32_MAX, Math.max(0, value)));
      }),
    );
    expect(clampUInt32(2 ** 32)).toBe(UINT32_MAX);
    expect(wrapped(2 ** 32)).toBe(0);
    expect(clampUInt32(Number.NaN)).toBe(0);
    expect(clampUInt32(12.9)).toBe(12);
  });

  it('a lower time bound selects what ts >= bound selects over the seconds the store holds', () => {
    fc.assert(
      fc.property(fc.maxSafeInteger(), fc.integer({ min: 0, max: UINT32_MAX }), (bound, storedTs) => {
        const parameter = epochLowerBound(bound);
        const selected = parameter !== null && storedTs >= parameter;
        expect(selected).toBe(storedTs >= bound);
      }),
    );
    expect(epochLowerBound(2 ** 32)).toBeNull();
    expect(epochLowerBound(UINT32_MAX)).toBe(UINT32_MAX);
    expect(epochLowerBound(-5)).toBe(0);
    expect(clampEpochSeconds(6_090_387_296)).toBe(UINT32_MAX);
  });
});
