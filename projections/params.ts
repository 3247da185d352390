/**
 * Bound-parameter helpers shared by the read functions: the ranges of the ClickHouse integer types they
 * bind parameters as, and the one way a JavaScript number becomes such a parameter. ClickHouse does not
 * refuse an out-of-range parameter of a narrower type: it wraps it (4294967296 bound as UInt32 is 0),
 * which turned a request for "after the end of time" into "from the start" with a 200. So every read
 * function passes its integers through these helpers, whoever calls it (REST, MCP, the charts), and the
 * answer is the one the comparison means over the values the store can hold.
 */

/** The largest UInt32: the store's timestamps, counts and limits are UInt32 columns or parameters. */
export const UINT32_MAX = 4_294_967_295;

/**
 * Epoch seconds are UInt32 in every table: the last second the store can hold (early in 2106).
 * @alias UINT32_MAX under the name of what it bounds (knip: an intended duplicate export)
 */
export const MAX_EPOCH_SECONDS = UINT32_MAX;

/**
 * A number as the UInt32 a query binds: truncated, out-of-range values clamped to the ends of the range
 * (so a huge position or limit from a caller reads as "everything", never as a store error or a wrap).
 */
export function clampUInt32(value: number): number {
  if (Number.isNaN(value)) return 0;
  return Math.min(UINT32_MAX, Math.max(0, Math.trunc(value)));
}

/** Epoch seconds as the UInt32 the tables hold: a time before 1970 is the first second, one past 2106 the last. */
export function clampEpochSeconds(seconds: number): number {
  return clampUInt32(seconds);
}

/**
 * A lower time bound (`ts >= bound`) as a UInt32 parameter, or null when no stored time can satisfy it
 * (a bound past the last second the store holds selects nothing; clamping it to that second would not).
 */
export function epochLowerBound(seconds: number): number | null {
  return seconds > MAX_EPOCH_SECONDS ? null : clampEpochSeconds(seconds);
}
