/**
 * The gate store: one atomic check-and-consume per call, over one user's budget (all of the user's keys
 * and sessions draw from it). Two implementations with the same behaviour: Redis (a Lua script, one
 * round trip; what several API instances share) and in-process memory (the embedded default, when no
 * REDIS_URL is set). One contract test suite and one model test run against both.
 *
 * The rules (read-api.md, Limits; decisions.md), in the order they are checked:
 *   0. address block    too_many_auth_failures (nothing consumed)
 *   1. token bucket     GCRA: one theoretical arrival time (tat) per user; a call is admitted when
 *                       tat' = max(tat, now) + interval stays within burst × interval of now
 *   2. rolling minute   exact: the admissions of the last 60 s (a sorted set), ceiling `rpm`
 *   3. call quota       daily (Basic, resets midnight UTC) and/or monthly (resets at the month start)
 *   4. admission lane   heavy reads in flight per user, each slot leased (a dead instance's slots expire)
 * Any of these refuses with a 429 and consumes nothing. Otherwise the call is consumed (bucket, minute,
 * quota; `refund` gives it back when the call is shed before it is served), and then:
 *   5. distinct wallets (Basic) a wallet already counted today is free; a new one is counted (even if
 *                       the read then fails) unless the cap is reached: 403 wallet_quota, which still
 *                       consumed the call but takes no lane slot.
 *
 * Time is milliseconds since the epoch. `nowMs` null means the store's own clock (Redis TIME in
 * production, so that every instance shares one clock); tests pass a controlled clock.
 */

export interface GateRequest {
  userId: string;
  /** The client address, for the block of too_many_auth_failures. */
  address: string;
  nowMs: number | null;
  /** Milliseconds between two tokens: 1000 / rps. */
  emissionIntervalMs: number;
  burst: number;
  rpm: number;
  rpmWindowMs: number;
  /** 0: no daily quota. */
  dailyCap: number;
  /** 0: no monthly quota. */
  monthlyCap: number;
  /** The canonical wallet of a trader-scoped read, or null. */
  wallet: string | null;
  /** Distinct wallets per UTC day; -1 unlimited. */
  walletCap: number;
  heavy: boolean;
  laneCap: number;
  leaseMs: number;
  /** Unique per call: the admission's member in the rolling minute and the lane. */
  requestId: string;
}

/** The caller's numbers after this call (what `/me` reports). */
export interface GateUsage {
  tokensRemaining: number;
  rpmUsed: number;
  dayRequests: number;
  monthRequests: number;
}

export type GateVerdict =
  /** `atMs`: the admission's time on the store's clock (a refund finds its day and month by it). */
  | { kind: 'admitted'; usage: GateUsage; wallet: 'free' | 'counted' | 'none'; atMs: number }
  | { kind: 'wallet_quota'; usage: GateUsage; used: number; limit: number; resetsAtMs: number }
  | { kind: 'rate_limited'; retryAfterMs: number }
  | { kind: 'daily_limit'; retryAfterMs: number }
  | { kind: 'monthly_limit'; retryAfterMs: number }
  | { kind: 'busy' }
  | { kind: 'address_blocked'; retryAfterMs: number };

/** What an admitted call consumed, to give back when it was shed before it was served. */
export interface RefundRequest {
  userId: string;
  requestId: string;
  /** The admission's time (GateVerdict admitted.atMs). */
  atMs: number;
  emissionIntervalMs: number;
  /** Whether the call counted toward a daily / monthly quota. */
  daily: boolean;
  monthly: boolean;
  /** The wallet this call counted as new (null: none, or one already counted). */
  wallet: string | null;
}

export interface AuthFailureRequest {
  address: string;
  nowMs: number | null;
  limit: number;
  windowMs: number;
  blockMs: number;
  failureId: string;
}

/** `blocked`: the address was already blocked (this failure is not counted); `recorded`: counted, and maybe now blocked. */
export type AuthFailureVerdict =
  | { kind: 'blocked'; retryAfterMs: number }
  | { kind: 'recorded'; failures: number; nowBlocked: boolean };

export interface GateStore {
  readonly kind: 'redis' | 'memory';
  admit(request: GateRequest): Promise<GateVerdict>;
  /** Gives back a heavy-read slot (idempotent). */
  release(userId: string, requestId: string): Promise<void>;
  /**
   * Gives back what an admitted call consumed (idempotent: a call's refund counts once, found by its
   * request id in the rolling minute): the bucket's token, the minute's admission, the quota's call of
   * the admission's period, the wallet it counted that day, its heavy-read slot.
   */
  refund(request: RefundRequest): Promise<void>;
  authFailure(request: AuthFailureRequest): Promise<AuthFailureVerdict>;
  /** How long the address stays blocked, in ms; 0 when it is not blocked. Reads only (counts nothing). */
  blockedFor(address: string, nowMs: number | null): Promise<number>;
  close(): Promise<void>;
}

const DAY_MS = 86_400_000;

/** UTC calendar of the quotas: the day and month a time falls in, and when each ends. */
export function utcPeriods(nowMs: number): { day: number; dayEndsMs: number; month: number; monthEndsMs: number } {
  const day = Math.floor(nowMs / DAY_MS);
  const date = new Date(day * DAY_MS);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  return {
    day,
    dayEndsMs: (day + 1) * DAY_MS,
    month: year * 100 + month + 1,
    monthEndsMs: Date.UTC(year, month + 1, 1),
  };
}
