/**
 * The gates in process memory: the embedded default (no REDIS_URL), with the behaviour of admit.lua
 * step for step, so that one contract suite and one model test hold for both. JavaScript runs each
 * `admit` to completion without yielding, which gives the same atomicity as the script.
 *
 * Idle users' state is collected when the map grows (a user whose periods are all over holds nothing).
 */
import {
  utcPeriods,
  type AuthFailureRequest,
  type AuthFailureVerdict,
  type GateRequest,
  type GateStore,
  type GateVerdict,
  type RefundRequest,
} from './store.ts';

interface UserState {
  tat: number;
  /** Admissions of the rolling minute (time, request id), ascending. */
  minute: { at: number; id: string }[];
  day: number;
  dayCount: number;
  month: number;
  monthCount: number;
  walletDay: number;
  wallets: Set<string>;
  /** Heavy-read slots: request id → lease expiry. */
  lane: Map<string, number>;
}

interface AddressState {
  failures: number[];
  blockedUntil: number;
}

const SWEEP_ABOVE = 100_000;

export class MemoryGates implements GateStore {
  readonly kind = 'memory';
  readonly #users = new Map<string, UserState>();
  readonly #addresses = new Map<string, AddressState>();

  constructor(private readonly clockMs: () => number = Date.now) {}

  admit(request: GateRequest): Promise<GateVerdict> {
    return Promise.resolve(this.#admit(request));
  }

  #admit(request: GateRequest): GateVerdict {
    const now = request.nowMs ?? this.clockMs();
    const blockedUntil = this.#addresses.get(request.address)?.blockedUntil ?? 0;
    if (blockedUntil > now) return { kind: 'address_blocked', retryAfterMs: blockedUntil - now };

    const periods = utcPeriods(now);
    const user = this.#user(request.userId);

    const interval = request.emissionIntervalMs;
    const newTat = Math.max(user.tat, now) + interval;
    const bucketWait = newTat - now - interval * request.burst;

    const windowStart = now - request.rpmWindowMs;
    let expired = 0;
    while (expired < user.minute.length && user.minute[expired]!.at <= windowStart) expired += 1;
    if (expired > 0) user.minute.splice(0, expired);
    const inMinute = user.minute.length;
    const minuteWait =
      inMinute >= request.rpm ? user.minute[inMinute - request.rpm]!.at + request.rpmWindowMs - now : 0;
    if (bucketWait > 0 || minuteWait > 0)
      return { kind: 'rate_limited', retryAfterMs: Math.max(bucketWait, minuteWait) };

    let dayCount = user.day === periods.day ? user.dayCount : 0;
    let monthCount = user.month === periods.month ? user.monthCount : 0;
    if (request.dailyCap > 0 && dayCount >= request.dailyCap)
      return { kind: 'daily_limit', retryAfterMs: periods.dayEndsMs - now };
    if (request.monthlyCap > 0 && monthCount >= request.monthlyCap)
      return { kind: 'monthly_limit', retryAfterMs: periods.monthEndsMs - now };

    if (request.heavy) {
      for (const [id, expiresAt] of user.lane) if (expiresAt <= now) user.lane.delete(id);
      if (user.lane.size >= request.laneCap) return { kind: 'busy' };
    }

    user.tat = newTat;
    user.minute.push({ at: now, id: request.requestId });
    if (request.dailyCap > 0) dayCount += 1;
    if (request.monthlyCap > 0) monthCount += 1;
    user.day = periods.day;
    user.dayCount = dayCount;
    user.month = periods.month;
    user.monthCount = monthCount;
    const usage = {
      tokensRemaining: (interval * request.burst - (newTat - now)) / interval,
      rpmUsed: inMinute + 1,
      dayRequests: dayCount,
      monthRequests: monthCount,
    };

    let wallet: 'free' | 'counted' | 'none' = 'none';
    if (request.wallet !== null && request.walletCap >= 0) {
      if (user.walletDay !== periods.day) {
        user.wallets.clear();
        user.walletDay = periods.day;
      }
      if (user.wallets.has(request.wallet)) {
        wallet = 'free';
      } else {
        if (user.wallets.size >= request.walletCap) {
          return {
            kind: 'wallet_quota',
            usage,
            used: user.wallets.size,
            limit: request.walletCap,
            resetsAtMs: periods.dayEndsMs,
          };
        }
        user.wallets.add(request.wallet);
        wallet = 'counted';
      }
    }

    if (request.heavy) user.lane.set(request.requestId, now + request.leaseMs);
    return { kind: 'admitted', usage, wallet, atMs: now };
  }

  release(userId: string, requestId: string): Promise<void> {
    this.#users.get(userId)?.lane.delete(requestId);
    return Promise.resolve();
  }

  refund(request: RefundRequest): Promise<void> {
    const user = this.#users.get(request.userId);
    const index = user?.minute.findIndex((admission) => admission.id === request.requestId) ?? -1;
    if (!user || index < 0) return Promise.resolve();
    user.minute.splice(index, 1);
    user.lane.delete(request.requestId);
    user.tat -= request.emissionIntervalMs;
    const periods = utcPeriods(request.atMs);
    if (request.daily && user.day === periods.day && user.dayCount > 0) user.dayCount -= 1;
    if (request.monthly && user.month === periods.month && user.monthCount > 0) user.monthCount -= 1;
    if (request.wallet !== null && user.walletDay === periods.day) user.wallets.delete(request.wallet);
    return Promise.resolve();
  }

  authFailure(request: AuthFailureRequest): Promise<AuthFailureVerdict> {
    const now = request.nowMs ?? this.clockMs();
    let state = this.#addresses.get(request.address);
    if (!state) {
      if (this.#addresses.size >= SWEEP_ABOVE) this.#sweepAddresses(now);
      this.#addresses.set(request.address, (state = { failures: [], blockedUntil: 0 }));
    }
    if (state.blockedUntil > now) return Promise.resolve({ kind: 'blocked', retryAfterMs: state.blockedUntil - now });
    state.failures = state.failures.filter((at) => at > now - request.windowMs);
    state.failures.push(now);
    const failures = state.failures.length;
    if (failures >= request.limit) {
      state.blockedUntil = now + request.blockMs;
      state.failures = [];
      return Promise.resolve({ kind: 'recorded', failures, nowBlocked: true });
    }
    return Promise.resolve({ kind: 'recorded', failures, nowBlocked: false });
  }

  blockedFor(address: string, nowMs: number | null): Promise<number> {
    const blockedUntil = this.#addresses.get(address)?.blockedUntil ?? 0;
    return Promise.resolve(Math.max(0, blockedUntil - (nowMs ?? this.clockMs())));
  }

  close(): Promise<void> {
    this.#users.clear();
    this.#addresses.clear();
    return Promise.resolve();
  }

  #user(userId: string): UserState {
    let user = this.#users.get(userId);
    if (!user) {
      if (this.#users.size >= SWEEP_ABOVE) this.#sweepUsers(this.clockMs());
      user = {
        tat: 0,
        minute: [],
        day: -1,
        dayCount: 0,
        month: -1,
        monthCount: 0,
        walletDay: -1,
        wallets: new Set(),
        lane: new Map(),
      };
      this.#users.set(userId, user);
    }
    return user;
  }

  /** Drops users whose bucket is full, minute empty, no slot held, and whose month is over. */
  #sweepUsers(now: number): void {
    const { month } = utcPeriods(now);
    for (const [id, user] of this.#users) {
      const idle =
        user.tat <= now &&
        user.lane.size === 0 &&
        (user.minute.at(-1)?.at ?? -Infinity) <= now - 3_600_000 &&
        user.month !== month;
      if (idle) this.#users.delete(id);
    }
  }

  #sweepAddresses(now: number): void {
    for (const [address, state] of this.#addresses) {
      if (state.blockedUntil <= now && (state.failures.at(-1) ?? -Infinity) <= now - 3_600_000)
        this.#addresses.delete(address);
    }
  }
}
