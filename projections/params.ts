/** Bound-parameter helpers shared by the read functions. */

/** The largest UInt32: the store's timestamps, counts and limits are UInt32 columns or parameters. */
export const UINT32_MAX = 4_294_967_295;

/**
 * A number as the UInt32 a query binds: truncated, out-of-range values clamped to the ends of the range
 * (so a huge position or limit from a caller reads as "everything", never as a store error).
 */
export function clampUInt32(value: number): number {
  return Math.min(UINT32_MAX, Math.max(0, Math.trunc(value)));
}
