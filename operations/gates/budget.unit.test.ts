import { describe, expect, it } from 'vitest';
import { parseConfig, type PlanId } from '../../config.ts';
import { createLogger } from '../../log.ts';
import type { Caller } from '../auth.ts';
import { ApiError } from '../errors.ts';
import { Budget } from './budget.ts';
import type {
  AuthFailureRequest,
  AuthFailureVerdict,
  GateRequest,
  GateStore,
  GateVerdict,
  RefundRequest,
} from './store.ts';

const config = parseConfig(
  { HEAVY_READS_PER_INSTANCE: '2', AUTH_FAILURE_LIMIT: '3' },
  { gates: { authFailures: { windowSeconds: 60, blockSeconds: 120 } } },
);
const silent = createLogger('silent');
const USAGE = { tokensRemaining: 7.456, rpmUsed: 3, dayRequests: 11, monthRequests: 12 };

function caller(planId: PlanId): Caller {
  return {
    accountId: `acct-${planId}`,
    keyId: 'key-1',
    label: 'agent',
    last4: 'abcd',
    planId,
    limits: config.plans[planId],
  };
}

/** A gate store that answers what the test scripts and records what it was asked. */
class ScriptedStore implements GateStore {
  readonly kind = 'memory' as const;
  readonly requests: GateRequest[] = [];
  readonly released: [string, string][] = [];
  readonly failures: AuthFailureRequest[] = [];
  verdict: GateVerdict | Error = { kind: 'admitted', usage: USAGE, wallet: 'none', atMs: 0 };
  authVerdict: AuthFailureVerdict | Error = { kind: 'recorded', failures: 1, nowBlocked: false };

  async admit(request: GateRequest): Promise<GateVerdict> {
    this.requests.push(request);
    if (this.verdict instanceof Error) throw this.verdict;
    return this.verdict;
  }
  async release(userId: string, requestId: string): Promise<void> {
    this.released.push([userId, requestId]);
  }
  readonly refunds: RefundRequest[] = [];
  async refund(request: RefundRequest): Promise<void> {
    this.refunds.push(request);
  }
  async authFailure(request: AuthFailureRequest): Promise<AuthFailureVerdict> {
    this.failures.push(request);
    if (this.authVerdict instanceof Error) throw this.authVerdict;
    return this.authVerdict;
  }
  blocked: number | Error = 0;
  async blockedFor(): Promise<number> {
    if (this.blocked instanceof Error) throw this.blocked;
    return this.blocked;
  }
  async close(): Promise<void> {}
}

async function refusalOf(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

const call = (heavy = false, wallet: string | null = null) => ({ address: '10.0.0.1', wallet, heavy });

describe('Budget.admit', () => {
  it('asks the store with the plan as numbers and reports usage as /me states it', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent, () => 1_234_000);
    const basic = await budget.admit(caller('basic'), call(false, '0xabc'));
    const plan = config.plans.basic;
    expect(store.requests[0]).toMatchObject({
      userId: 'acct-basic',
      address: '10.0.0.1',
      nowMs: 1_234_000,
      emissionIntervalMs: 1000 / plan.rps,
      burst: plan.burst,
      rpm: plan.rpm,
      rpmWindowMs: 60_000,
      dailyCap: plan.dailyRequests,
      monthlyCap: plan.monthlyRequests,
      wallet: '0xabc',
      walletCap: plan.distinctWalletsPerDay,
      heavy: false,
      laneCap: plan.heavyReadsInFlight,
      leaseMs: config.gates.heavyReadLeaseSeconds * 1000,
    });
    // Two decimals, rounded down; Basic is governed by the day, so the month reads zeros.
    expect(basic.usage).toEqual({
      window: { tokens_remaining: 7.45, rpm_used: 3 },
      day: { requests: 11, cap: 50 },
      month: { requests: 0, cap: 0 },
    });
    const pro = await budget.admit(caller('pro'), call());
    expect(pro.usage).toEqual({
      window: { tokens_remaining: 7.45, rpm_used: 3 },
      day: { requests: 0, cap: 0 },
      month: { requests: 12, cap: 50_000 },
    });
  });

  it('turns each refusal into the contract: status, code, whole seconds to wait (at least 1)', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent);
    const cases: [GateVerdict, number, string, number | undefined][] = [
      [{ kind: 'rate_limited', retryAfterMs: 1 }, 429, 'rate_limited', 1],
      [{ kind: 'rate_limited', retryAfterMs: 1001 }, 429, 'rate_limited', 2],
      [{ kind: 'daily_limit', retryAfterMs: 3_600_000 }, 429, 'daily_limit', 3600],
      [{ kind: 'monthly_limit', retryAfterMs: 0 }, 429, 'monthly_limit', 1],
      [{ kind: 'busy' }, 429, 'busy', 1],
      [{ kind: 'address_blocked', retryAfterMs: 90_500 }, 429, 'too_many_auth_failures', 91],
    ];
    for (const [verdict, status, code, retryAfter] of cases) {
      store.verdict = verdict;
      const refusal = await refusalOf(budget.admit(caller('basic'), call()));
      expect({ status: refusal.status, code: refusal.code, retry_after: refusal.body().retry_after }).toEqual({
        status,
        code,
        retry_after: retryAfter,
      });
      expect(refusal.headers['Retry-After']).toBe(String(retryAfter));
    }
  });

  it('names the next plan in a paywall, and none at the top of the ladder', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent);
    store.verdict = { kind: 'monthly_limit', retryAfterMs: 10_000 };
    expect((await refusalOf(budget.admit(caller('pro'), call()))).message).toContain(config.plans.max.name);
    const top = await refusalOf(budget.admit(caller('max'), call()));
    expect(top.message).not.toContain('Upgrade');
    expect(top.message).toContain('largest plan');
  });

  it('wallet_quota is a 403 with used, limit and the reset as ISO 8601 without milliseconds', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent);
    const resetsAtMs = Date.UTC(2026, 10, 24);
    store.verdict = { kind: 'wallet_quota', usage: USAGE, used: 3, limit: 3, resetsAtMs };
    const refusal = await refusalOf(budget.admit(caller('basic'), call(false, '0xdef')));
    expect(refusal.status).toBe(403);
    expect(refusal.body()).toMatchObject({
      error: 'wallet_quota',
      used: 3,
      limit: config.plans.basic.distinctWalletsPerDay,
      resets_at: '2026-11-24T00:00:00Z',
    });
    expect(refusal.body()).not.toHaveProperty('retry_after');
  });

  it('caps heavy reads per instance before the store, and gives a slot back exactly once', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent);
    const first = await budget.admit(caller('max'), call(true));
    const second = await budget.admit(caller('max'), call(true));
    expect(budget.heavyInFlight).toBe(2);
    const asked = store.requests.length;
    const overflow = await refusalOf(budget.admit(caller('max'), call(true)));
    expect({ status: overflow.status, code: overflow.code }).toEqual({ status: 429, code: 'busy' });
    expect(store.requests.length).toBe(asked);
    // A light call is not capped.
    await budget.admit(caller('max'), call(false));
    first.release();
    first.release();
    expect(budget.heavyInFlight).toBe(1);
    expect(store.released).toEqual([['acct-max', store.requests[0]!.requestId]]);
    second.release();
    expect(budget.heavyInFlight).toBe(0);
    expect(store.released).toHaveLength(2);
  });

  it('a heavy call the store refuses gives its instance slot back at once', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent);
    store.verdict = { kind: 'busy' };
    await refusalOf(budget.admit(caller('pro'), call(true)));
    expect(budget.heavyInFlight).toBe(0);
  });

  it('serves unmetered when the store fails: full bucket, zero counts, and no store release', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent);
    store.verdict = new Error('redis down');
    const admitted = await budget.admit(caller('basic'), call(true));
    expect(admitted.usage).toEqual({
      window: { tokens_remaining: config.plans.basic.burst, rpm_used: 0 },
      day: { requests: 0, cap: 50 },
      month: { requests: 0, cap: 0 },
    });
    expect(budget.heavyInFlight).toBe(1);
    admitted.release();
    expect(budget.heavyInFlight).toBe(0);
    expect(store.released).toEqual([]);
  });
});

describe('Budget.authenticationFailed', () => {
  it('passes the configured limit, window and block, and answers the 401 until the address is blocked', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent, () => 5_000);
    expect(await budget.authenticationFailed('10.0.0.9')).toBeNull();
    expect(store.failures[0]).toMatchObject({
      address: '10.0.0.9',
      nowMs: 5_000,
      limit: 3,
      windowMs: 60_000,
      blockMs: 120_000,
    });
    store.authVerdict = { kind: 'recorded', failures: 3, nowBlocked: true };
    expect(await budget.authenticationFailed('10.0.0.9')).toBeNull();
    store.authVerdict = { kind: 'blocked', retryAfterMs: 119_001 };
    const blocked = await budget.authenticationFailed('10.0.0.9');
    expect(blocked?.status).toBe(429);
    expect(blocked?.body()).toMatchObject({ error: 'too_many_auth_failures', retry_after: 120 });
  });

  it('fails open when the store cannot answer', async () => {
    const store = new ScriptedStore();
    store.authVerdict = new Error('timeout');
    expect(await new Budget(store, config, silent).authenticationFailed('10.0.0.9')).toBeNull();
  });
});

describe('Budget.addressBlock', () => {
  it('answers the 429 of a blocked address in whole seconds (at least 1), null when not blocked or when the store fails', async () => {
    const store = new ScriptedStore();
    const budget = new Budget(store, config, silent, () => 5_000);
    expect(await budget.addressBlock('10.0.0.9')).toBeNull();
    store.blocked = 119_001;
    const blocked = await budget.addressBlock('10.0.0.9');
    expect(blocked?.status).toBe(429);
    expect(blocked?.headers).toEqual({ 'Retry-After': '120' });
    expect(blocked?.body()).toMatchObject({ error: 'too_many_auth_failures', retry_after: 120 });
    store.blocked = 1;
    expect((await budget.addressBlock('10.0.0.9'))?.body()).toMatchObject({ retry_after: 1 });
    store.blocked = new Error('timeout');
    expect(await budget.addressBlock('10.0.0.9')).toBeNull();
  });
});
