/**
 * One user's budget, as every transport (REST, MCP) applies it: the gate store's verdict on a call,
 * turned into the contract's refusals, plus the per-instance cap of the admission lane (which is this
 * process's own, so it lives here and not in the shared store).
 *
 * When the gate store cannot answer (Redis down or slower than `redis.commandTimeoutMs`) the call is
 * served unmetered and the failure logged: an outage of the meter does not become an outage of the API.
 */
import { randomUUID } from 'node:crypto';
import { nextPlan, type Config } from '../../config.ts';
import type { Logger } from '../../log.ts';
import type { Caller } from '../auth.ts';
import { ApiError, errors } from '../errors.ts';
import {
  authFailures as authFailureCount,
  gateDecisions,
  heavyReadsCapacity,
  heavyReadsInFlight,
} from '../../metrics/registry.ts';
import type { GateStore, GateUsage, GateVerdict, RefundRequest } from './store.ts';

/** Usage numbers of `/me`: the governing call window is the nonzero one. */
export interface UsageReport {
  window: { tokens_remaining: number; rpm_used: number };
  day: { requests: number; cap: number };
  month: { requests: number; cap: number };
}

export interface Admission {
  /** The caller's numbers after this call. */
  usage: UsageReport;
  /** Gives back a heavy-read slot; idempotent, and a no-op for other calls. */
  release(): void;
  /**
   * Gives back everything the call consumed (its token, its place in the minute, its quota call, the
   * wallet it counted) and its heavy-read slot: the call was shed before it was served. Idempotent;
   * never rejects (a gate store that cannot answer is logged).
   */
  refund(): Promise<void>;
}

export interface CallShape {
  /** The client address (too_many_auth_failures blocks by address). */
  address: string;
  /** Canonical wallet of a trader-scoped read (Basic counts distinct wallets), or null. */
  wallet: string | null;
  /** A heavy read takes a slot of the admission lane until released. */
  heavy: boolean;
}

const BUSY_RETRY_SECONDS = 1;

/** Whole seconds to wait, at least 1 (Retry-After is an integer). */
function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

export class Budget {
  #heavyInFlight = 0;
  #lastStoreFailureLog = 0;

  constructor(
    readonly store: GateStore,
    private readonly config: Config,
    private readonly log: Logger,
    /** Tests pin the clock; null is the store's own (Redis TIME, or Date.now in memory). */
    private readonly clockMs: (() => number) | null = null,
  ) {
    heavyReadsCapacity.set(config.gates.heavyReadsPerInstance);
  }

  /** Admits one call or throws the contract's refusal (429s consume nothing; wallet_quota consumed the call). */
  async admit(caller: Caller, call: CallShape): Promise<Admission> {
    try {
      const admission = await this.#admit(caller, call);
      gateDecisions.inc({ outcome: admission.unmetered ? 'unmetered' : 'admitted' });
      return admission;
    } catch (refusal) {
      gateDecisions.inc({ outcome: refusal instanceof ApiError ? refusal.code : 'error' });
      throw refusal;
    }
  }

  async #admit(caller: Caller, call: CallShape): Promise<Admission & { unmetered: boolean }> {
    const { limits } = caller;
    if (call.heavy) {
      if (this.#heavyInFlight >= this.config.gates.heavyReadsPerInstance) throw errors.busy(limits, BUSY_RETRY_SECONDS);
      this.#heavyInFlight += 1;
      heavyReadsInFlight.inc();
    }
    const requestId = randomUUID();
    let verdict: GateVerdict;
    try {
      verdict = await this.store.admit({
        userId: caller.accountId,
        address: call.address,
        nowMs: this.clockMs ? this.clockMs() : null,
        emissionIntervalMs: 1000 / limits.rps,
        burst: limits.burst,
        rpm: limits.rpm,
        rpmWindowMs: this.config.gates.rpmWindowSeconds * 1000,
        dailyCap: limits.dailyRequests,
        monthlyCap: limits.monthlyRequests,
        wallet: call.wallet,
        walletCap: limits.distinctWalletsPerDay,
        heavy: call.heavy,
        laneCap: limits.heavyReadsInFlight,
        leaseMs: this.config.gates.heavyReadLeaseSeconds * 1000,
        requestId,
      });
    } catch (failure) {
      this.#storeFailed(failure, 'admit');
      const unmetered = { tokensRemaining: limits.burst, rpmUsed: 0, dayRequests: 0, monthRequests: 0 };
      return { ...this.#admission(caller, requestId, call.heavy, null, unmetered), unmetered: true };
    }
    if (verdict.kind === 'admitted') {
      const refund: RefundRequest = {
        userId: caller.accountId,
        requestId,
        atMs: verdict.atMs,
        emissionIntervalMs: 1000 / limits.rps,
        daily: limits.dailyRequests > 0,
        monthly: limits.monthlyRequests > 0,
        wallet: verdict.wallet === 'counted' ? call.wallet : null,
      };
      return { ...this.#admission(caller, requestId, call.heavy, refund, verdict.usage), unmetered: false };
    }
    if (call.heavy) {
      this.#heavyInFlight -= 1;
      heavyReadsInFlight.dec();
    }
    throw this.#refusal(caller, verdict);
  }

  /**
   * Records a failed authentication from an address. Returns the 429 to answer instead of the 401 when
   * the address is blocked; the failure that reaches the limit still gets its 401, the next ones 429.
   */
  async authenticationFailed(address: string): Promise<ApiError | null> {
    const { authFailures } = this.config.gates;
    try {
      const verdict = await this.store.authFailure({
        address,
        nowMs: this.clockMs ? this.clockMs() : null,
        limit: authFailures.limit,
        windowMs: authFailures.windowSeconds * 1000,
        blockMs: authFailures.blockSeconds * 1000,
        failureId: randomUUID(),
      });
      authFailureCount.inc({ outcome: verdict.kind === 'blocked' ? 'blocked' : 'refused' });
      if (verdict.kind === 'blocked') return errors.tooManyAuthFailures(seconds(verdict.retryAfterMs));
      if (verdict.nowBlocked)
        this.log.warn(
          { address, failures: verdict.failures },
          'address blocked after repeated authentication failures',
        );
      return null;
    } catch (failure) {
      authFailureCount.inc({ outcome: 'refused' });
      this.#storeFailed(failure, 'authFailure');
      return null;
    }
  }

  /**
   * The 429 of a blocked address, or null: asked of every request that is not a probe, before its key is
   * looked at, so that a blocked address gets the same answer on every path whatever its key.
   */
  async addressBlock(address: string): Promise<ApiError | null> {
    try {
      const remainingMs = await this.store.blockedFor(address, this.clockMs ? this.clockMs() : null);
      return remainingMs > 0 ? errors.tooManyAuthFailures(seconds(remainingMs)) : null;
    } catch (failure) {
      this.#storeFailed(failure, 'blockedFor');
      return null;
    }
  }

  /** Heavy reads in flight on this instance (for tests and metrics). */
  get heavyInFlight(): number {
    return this.#heavyInFlight;
  }

  /** `metered`: what the store consumed (null: served unmetered, the store did not answer). */
  #admission(
    caller: Caller,
    requestId: string,
    heavy: boolean,
    metered: RefundRequest | null,
    usage: GateUsage,
  ): Admission {
    let released = !heavy;
    let refunded: Promise<void> | null = null;
    const release = () => {
      if (released) return;
      released = true;
      this.#heavyInFlight -= 1;
      heavyReadsInFlight.dec();
      if (metered)
        this.store
          .release(caller.accountId, requestId)
          .catch((failure: unknown) => this.#storeFailed(failure, 'release'));
    };
    return {
      usage: this.#usageReport(caller, usage),
      release,
      refund: () => {
        release();
        refunded ??= metered
          ? this.store.refund(metered).catch((failure: unknown) => this.#storeFailed(failure, 'refund'))
          : Promise.resolve();
        return refunded;
      },
    };
  }

  #usageReport(caller: Caller, usage: GateUsage): UsageReport {
    const { limits } = caller;
    return {
      // Tokens accrue continuously; two decimals are plenty (rounded down: never promise a token that is not there).
      window: {
        tokens_remaining: Math.max(0, Math.floor(usage.tokensRemaining * 100 + 1e-6) / 100),
        rpm_used: usage.rpmUsed,
      },
      day:
        limits.dailyRequests > 0 ? { requests: usage.dayRequests, cap: limits.dailyRequests } : { requests: 0, cap: 0 },
      month:
        limits.monthlyRequests > 0
          ? { requests: usage.monthRequests, cap: limits.monthlyRequests }
          : { requests: 0, cap: 0 },
    };
  }

  #refusal(caller: Caller, verdict: Exclude<GateVerdict, { kind: 'admitted' }>): ApiError {
    const { limits } = caller;
    const upgradeId = nextPlan(caller.planId);
    const upgrade = upgradeId ? this.config.plans[upgradeId] : null;
    switch (verdict.kind) {
      case 'rate_limited':
        return errors.rateLimited(limits, seconds(verdict.retryAfterMs));
      case 'busy':
        return errors.busy(limits, BUSY_RETRY_SECONDS);
      case 'daily_limit':
        return errors.dailyLimit(limits, upgrade, seconds(verdict.retryAfterMs));
      case 'monthly_limit':
        return errors.monthlyLimit(limits, upgrade, seconds(verdict.retryAfterMs));
      case 'address_blocked':
        return errors.tooManyAuthFailures(seconds(verdict.retryAfterMs));
      case 'wallet_quota':
        return errors.walletQuota(
          limits,
          upgrade,
          verdict.used,
          new Date(verdict.resetsAtMs).toISOString().replace('.000Z', 'Z'),
        );
    }
  }

  #storeFailed(failure: unknown, operation: string): void {
    const now = Date.now();
    if (now - this.#lastStoreFailureLog < 5000) return;
    this.#lastStoreFailureLog = now;
    this.log.error({ err: failure, operation, store: this.store.kind }, 'gate store unavailable: serving unmetered');
  }
}
