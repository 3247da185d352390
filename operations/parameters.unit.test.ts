import { describe, expect, it } from 'vitest';
import { ApiError } from './errors.ts';
import { pageLimit, parseConditionId, queryCursor, queryInt, queryNumber } from './parameters.ts';

const LIMITS = { defaultLimit: 200, maxLimit: 1000 };

function refusal(run: () => unknown): { status: number; code: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, code: error.code };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('query parameters', () => {
  it('queryInt turns numeric text into numbers and lets anything else fail the type check', () => {
    const schema = queryInt('n');
    expect(schema.parse('42')).toBe(42);
    expect(schema.parse(' -7 ')).toBe(-7);
    expect(schema.parse('1e3')).toBe(1000);
    for (const text of ['abc', '4.5', '', '0x10', '12px']) expect(schema.safeParse(text).success).toBe(false);
  });

  it('queryNumber accepts decimals and refuses magnitudes beyond 2^53', () => {
    const schema = queryNumber('usd');
    expect(schema.parse('2500.5')).toBe(2500.5);
    expect(schema.parse(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    expect(schema.safeParse(String(2 ** 53 + 2)).success).toBe(false);
    expect(schema.safeParse('-1e308').success).toBe(false);
  });

  it('queryCursor is optional text of at most 8192 characters', () => {
    expect(queryCursor.parse(undefined)).toBeUndefined();
    expect(queryCursor.parse('abc')).toBe('abc');
    expect(queryCursor.safeParse('x'.repeat(8193)).success).toBe(false);
  });

  it('pageLimit: absent is the default, below 1 is 400 bad_limit, above the maximum is clamped', () => {
    expect(pageLimit(undefined, LIMITS)).toBe(200);
    expect(pageLimit(1, LIMITS)).toBe(1);
    expect(pageLimit(1000, LIMITS)).toBe(1000);
    expect(pageLimit(1001, LIMITS)).toBe(1000);
    expect(refusal(() => pageLimit(0, LIMITS))).toEqual({ status: 400, code: 'bad_limit' });
    expect(refusal(() => pageLimit(-5, LIMITS))).toEqual({ status: 400, code: 'bad_limit' });
  });

  it('parseConditionId lower-cases 0x + 64 hex and refuses anything else with 400 invalid_condition_id', () => {
    const id = `0x${'AbCdEf0123456789'.repeat(4)}`;
    expect(parseConditionId(id)).toBe(id.toLowerCase());
    for (const bad of [id.slice(0, -1), `${id}0`, id.slice(2), `0x${'g'.repeat(64)}`, '']) {
      expect(refusal(() => parseConditionId(bad))).toEqual({ status: 400, code: 'invalid_condition_id' });
    }
  });
});
