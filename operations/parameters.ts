/**
 * Parameters shared by a route's query and a tool's arguments: integer, epoch-seconds and number types
 * (zod, coerced from query strings), cursors, page limits and market ids, with the contract's refusals.
 */
import { z } from 'zod';
import type { PageLimits } from '../config.ts';
import { MAX_EPOCH_SECONDS } from '../projections/params.ts';
import { errors } from './errors.ts';

const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
/** Query strings arrive as text: a numeric text becomes a number, anything else stays and fails the type check (422). */
const numericText = (value: unknown) => (typeof value === 'string' && NUMERIC.test(value) ? Number(value) : value);

/**
 * An integer query parameter. `bounds` are documented (OpenAPI) but not enforced by validation: they
 * clamp or map to a contract code in the route. (Bounds and default sit on the inner schema: zod keeps
 * a `default` there in the input JSON Schema.)
 */
export const queryInt = (description: string, bounds: { minimum?: number; maximum?: number; default?: number } = {}) =>
  z.preprocess(numericText, z.int().meta(bounds)).meta({ description });
/**
 * An epoch-seconds query parameter: any integer within ±(2^53 − 1) (beyond is 422). The store holds the
 * seconds 0..MAX_EPOCH_SECONDS (UInt32); the read functions bind a bound outside that range to what it
 * means there (projections/params.ts), never to a wrapped value.
 */
export const queryEpochSeconds = (description: string) =>
  queryInt(
    `${description} Epoch seconds (an integer). The store holds 0..${MAX_EPOCH_SECONDS}: an earlier time means the first second; a start after the last second selects nothing, an end after it means the last second.`,
  );
/**
 * `as_of`: the answer as the service knew it at that instant (epoch seconds, 0..now). A time in the future
 * has nothing to say yet: 422 naming the parameter (judged against the wall clock when the request is read).
 */
export const queryAsOf = z
  .preprocess(
    numericText,
    z
      .int()
      .min(0)
      .refine((seconds) => seconds <= Math.floor(Date.now() / 1000), {
        message: 'as_of is in the future: pass a past instant (epoch seconds) or omit it for now',
      }),
  )
  .optional()
  .meta({
    description:
      "Epoch seconds: the answer as the service knew it then, computed only from fills, legs, prices and resolutions stamped at or before it (a market resolved later is open, marked at its last trade before it) and the provider's profile as reported by then. Immutable: carries an ETag, and If-None-Match answers 304. In the future: 422.",
  });
/** A number query parameter; beyond ±2^53 is 422 (no threshold means anything there, and the store refuses such literals). */
export const queryNumber = (
  description: string,
  bounds: { minimum?: number; maximum?: number; default?: number } = {},
) =>
  z
    .preprocess(numericText, z.number().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).meta(bounds))
    .meta({ description });
export const queryCursor = z.string().max(8192).optional().meta({
  description:
    'Opaque cursor: the next_cursor of the previous page. Omit for the first page. A malformed cursor is 400 bad_cursor; a forged one reads as page 1.',
});

/** `limit`: below 1 is `400 bad_limit`; above the maximum is clamped silently; absent is the default. */
export function pageLimit(limit: number | undefined, limits: PageLimits): number {
  if (limit === undefined) return limits.defaultLimit;
  if (limit < 1) throw errors.badLimit();
  return Math.min(limit, limits.maxLimit);
}

export const limitParameter = (limits: PageLimits, what: string) =>
  queryInt(
    `Caps one page of ${what}: at least 1 (0 is 400 bad_limit), default ${limits.defaultLimit}, values above ${limits.maxLimit} are clamped to it.`,
    {
      minimum: 1,
      default: limits.defaultLimit,
    },
  ).optional();

const CONDITION_ID = /^0x[0-9a-fA-F]{64}$/;

/** A market id, lower-cased; anything but 0x + 64 hex is `400 invalid_condition_id`. */
export function parseConditionId(input: string): string {
  if (!CONDITION_ID.test(input)) throw errors.invalidConditionId(input);
  return input.toLowerCase();
}
