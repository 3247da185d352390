/**
 * A server's Retry-After, read one way for every source that honours it (the upstream's routes, the
 * archive's node).
 */

/** The longest Retry-After honoured; beyond it a source's own backoff or breaker is the better tool. */
export const MAX_RETRY_AFTER_MS = 120_000;

/** Seconds or an HTTP date → an instant (ms); undefined when absent or unreadable. */
export function retryAfterInstant(header: string | null, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return now + Math.min(MAX_RETRY_AFTER_MS, Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return now + Math.min(MAX_RETRY_AFTER_MS, Math.max(0, date - now));
}
