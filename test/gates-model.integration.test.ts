/**
 * Model test of the gates: fast-check drives random sequences of calls (users, keys, wallets, routes)
 * and clock steps through the HTTP app, and a plain reference model of the budget rules, written here
 * from read-api.md and decisions.md (a continuous token bucket counted in milliseconds of credit, a list
 * of admission times, per-day and per-month counters keyed by ISO date strings, per-day wallet sets),
 * predicts every answer: status, error code, retry_after, and the usage numbers of /me. Both gate
 * stores (memory, Redis) must agree with the model on every call.
 *
 * The plans are shrunk (data in config) so that every gate binds within a few dozen calls.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config, PlanLimits } from '../config.ts';
import { withPublisher } from '../roles/runtime.ts';
import { publishAccount, publishNewKey } from '../ingest/sources/accounts.ts';
import { createLogger } from '../log.ts';
import { makeWallet } from './factories.ts';
import { API, bodyOf, inProcessConfig, startTestApi, type TestApi } from './harness/api.ts';
import { GATE_KINDS, gateStoreFactory, SwitchableGates } from './harness/gates.ts';

const RUNS = Number(process.env.GATES_MODEL_RUNS ?? 100);
const base = inProcessConfig('gatesmodel');
const smallBasic: PlanLimits = {
  ...base.plans.basic,
  burst: 3,
  rps: 0.5,
  rpm: 5,
  dailyRequests: 8,
  distinctWalletsPerDay: 2,
};
const smallPro: PlanLimits = { ...base.plans.pro, burst: 4, rps: 1, rpm: 6, monthlyRequests: 12 };
const config: Config = { ...base, plans: { ...base.plans, basic: smallBasic, pro: smallPro } };
const NOW_S = Math.floor(Date.now() / 1000);
const stores = gateStoreFactory('gatesmodel');

const KEYS = { mb1: 'm-basic', mb2: 'm-basic', mb3: 'm-basic-other', mp1: 'm-pro', mp2: 'm-pro' } as const;
type KeyName = keyof typeof KEYS;
const PLAN_OF: Record<string, PlanLimits> = { 'm-basic': smallBasic, 'm-basic-other': smallBasic, 'm-pro': smallPro };
const plaintext = {} as Record<KeyName, string>;
const WALLETS = Array.from({ length: 5 }, (_, index) => makeWallet(`model-${index}`));
const WINDOW_MS = config.gates.rpmWindowSeconds * 1000;

beforeAll(async () => {
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    for (const accountId of new Set(Object.values(KEYS))) {
      await publishAccount(publisher, {
        accountId,
        plan: accountId.includes('pro') ? 'pro' : 'basic',
        displayName: accountId,
        version: NOW_S,
      });
    }
    for (const [name, accountId] of Object.entries(KEYS) as [KeyName, string][])
      plaintext[name] = (await publishNewKey(publisher, accountId, name, NOW_S)).plaintext;
  });
});

afterAll(async () => {
  await stores.cleanup();
});

// ---- The reference model ----

interface Usage {
  window: { tokens_remaining: number; rpm_used: number };
  day: { requests: number; cap: number };
  month: { requests: number; cap: number };
  live: { slots_in_use: number };
  library: { tapes: number; bytes_used: number };
}
interface Answer {
  status: number;
  error?: string;
  retry_after?: number;
  usage?: Usage;
  used?: number;
  limit?: number;
  resets_at?: string;
}

interface ModelUser {
  /** Bucket content in milliseconds of refill (one token = one interval). */
  credit: number;
  creditAt: number;
  admissions: number[];
  callsPerDay: Map<string, number>;
  callsPerMonth: Map<string, number>;
  walletsPerDay: Map<string, Set<string>>;
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const isoMonth = (ms: number) => new Date(ms).toISOString().slice(0, 7);
const startOfNextDay = (day: string) => Date.parse(`${day}T00:00:00.000Z`) + 86_400_000;
function startOfNextMonth(month: string): number {
  const [year, monthNumber] = month.split('-').map(Number) as [number, number];
  const next = monthNumber === 12 ? `${year + 1}-01` : `${year}-${String(monthNumber + 1).padStart(2, '0')}`;
  return Date.parse(`${next}-01T00:00:00.000Z`);
}
const wholeSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

class ReferenceBudget {
  readonly users = new Map<string, ModelUser>();

  call(userId: string, plan: PlanLimits, now: number, route: 'me' | 'trader', wallet: string): Answer {
    const interval = 1000 / plan.rps;
    const full = plan.burst * interval;
    let user = this.users.get(userId);
    if (!user) {
      user = {
        credit: full,
        creditAt: now,
        admissions: [],
        callsPerDay: new Map(),
        callsPerMonth: new Map(),
        walletsPerDay: new Map(),
      };
      this.users.set(userId, user);
    }
    user.credit = Math.min(full, user.credit + (now - user.creditAt));
    user.creditAt = now;
    const bucketWait = user.credit >= interval ? 0 : interval - user.credit;
    const inMinute = user.admissions.filter((at) => at > now - WINDOW_MS).sort((a, b) => a - b);
    const minuteWait = inMinute.length >= plan.rpm ? inMinute[inMinute.length - plan.rpm]! + WINDOW_MS - now : 0;
    if (bucketWait > 0 || minuteWait > 0)
      return { status: 429, error: 'rate_limited', retry_after: wholeSeconds(Math.max(bucketWait, minuteWait)) };

    const day = isoDay(now);
    const month = isoMonth(now);
    const dayCalls = user.callsPerDay.get(day) ?? 0;
    const monthCalls = user.callsPerMonth.get(month) ?? 0;
    if (plan.dailyRequests > 0 && dayCalls >= plan.dailyRequests)
      return { status: 429, error: 'daily_limit', retry_after: wholeSeconds(startOfNextDay(day) - now) };
    if (plan.monthlyRequests > 0 && monthCalls >= plan.monthlyRequests)
      return { status: 429, error: 'monthly_limit', retry_after: wholeSeconds(startOfNextMonth(month) - now) };

    user.credit -= interval;
    user.admissions.push(now);
    if (plan.dailyRequests > 0) user.callsPerDay.set(day, dayCalls + 1);
    if (plan.monthlyRequests > 0) user.callsPerMonth.set(month, monthCalls + 1);

    if (route === 'trader' && plan.distinctWalletsPerDay >= 0) {
      let seen = user.walletsPerDay.get(day);
      if (!seen) user.walletsPerDay.set(day, (seen = new Set()));
      if (!seen.has(wallet)) {
        if (seen.size >= plan.distinctWalletsPerDay) {
          return {
            status: 403,
            error: 'wallet_quota',
            used: seen.size,
            limit: plan.distinctWalletsPerDay,
            resets_at: new Date(startOfNextDay(day)).toISOString().replace('.000Z', 'Z'),
          };
        }
        seen.add(wallet);
      }
    }
    if (route === 'trader') return { status: 400, error: 'invalid_condition_id' };
    return {
      status: 200,
      usage: {
        window: {
          tokens_remaining: Math.floor((user.credit / interval) * 100 + 1e-6) / 100,
          rpm_used: inMinute.length + 1,
        },
        day:
          plan.dailyRequests > 0
            ? { requests: user.callsPerDay.get(day)!, cap: plan.dailyRequests }
            : { requests: 0, cap: 0 },
        month:
          plan.monthlyRequests > 0
            ? { requests: user.callsPerMonth.get(month)!, cap: plan.monthlyRequests }
            : { requests: 0, cap: 0 },
        // No watch in these sequences: the live plane holds no slot.
        live: { slots_in_use: 0 },
        // Nor a tape: the library is empty.
        library: { tapes: 0, bytes_used: 0 },
      },
    };
  }
}

// ---- The property ----

type Step = { kind: 'call'; key: KeyName; route: 'me' | 'trader'; wallet: number } | { kind: 'wait'; ms: number };

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('call' as const),
      key: fc.constantFrom(...(Object.keys(KEYS) as KeyName[])),
      route: fc.constantFrom('me' as const, 'trader' as const),
      wallet: fc.integer({ min: 0, max: WALLETS.length - 1 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      ms: fc.oneof(
        fc.constantFrom(
          0,
          1,
          499,
          500,
          999,
          1000,
          1999,
          2000,
          4000,
          15_000,
          59_999,
          60_000,
          3_600_000,
          86_400_000,
          15 * 86_400_000,
        ),
        fc.integer({ min: 0, max: 120_000 }),
      ),
    }),
  },
);

const startArbitrary = fc.oneof(
  fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2028, 0, 1) }),
  // Just before a day, a month, a year and a leap-day boundary.
  fc.constantFrom(
    Date.UTC(2026, 10, 30, 23, 59, 50),
    Date.UTC(2026, 11, 31, 23, 59, 58),
    Date.UTC(2028, 1, 28, 23, 59, 59),
    Date.UTC(2026, 10, 22, 23, 59, 59, 500),
  ),
);

describe.each(GATE_KINDS)('gates in %s agree with the reference model', (kind) => {
  let api: TestApi;
  const gates = new SwitchableGates(stores.open(kind));
  const clock = { ms: 0 };
  beforeAll(async () => {
    api = await startTestApi(config, {
      now: () => Math.floor(clock.ms / 1000),
      keys: { basic: '', pro: '', max: '' },
      gates,
      gatesClockMs: () => clock.ms,
    });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('on every response of random call sequences', async () => {
    const codes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        startArbitrary,
        fc.array(stepArbitrary, { minLength: 1, maxLength: 80, size: 'max' }),
        async (start, steps) => {
          gates.target = stores.open(kind);
          clock.ms = start;
          const model = new ReferenceBudget();
          for (const [index, step] of steps.entries()) {
            if (step.kind === 'wait') {
              clock.ms += step.ms;
              continue;
            }
            const accountId = KEYS[step.key];
            const expected = model.call(accountId, PLAN_OF[accountId]!, clock.ms, step.route, WALLETS[step.wallet]!);
            const url =
              step.route === 'me' ? `${API}/me` : `${API}/traders/${WALLETS[step.wallet]}/markets/not-a-market/summary`;
            const response = await api.app.inject({
              method: 'GET',
              url,
              headers: { authorization: `Bearer ${plaintext[step.key]}` },
            });
            const body = bodyOf(response) as Record<string, unknown>;
            const actual: Record<string, unknown> = { status: response.statusCode };
            if (typeof body.error === 'string') actual.error = body.error;
            for (const field of ['retry_after', 'used', 'limit', 'resets_at'] as const)
              if (field in body) actual[field] = body[field];
            if (step.route === 'me' && response.statusCode === 200) actual.usage = body.usage;
            expect(actual, `step ${index} at ${new Date(clock.ms).toISOString()}: ${JSON.stringify(step)}`).toEqual(
              expected,
            );
            const code = `${expected.status}${expected.error ? ` ${expected.error}` : ''}`;
            codes.set(code, (codes.get(code) ?? 0) + 1);
          }
        },
      ),
      { numRuns: RUNS },
    );
    console.info(
      `gates model (${kind}): ${[...codes.entries()]
        .sort()
        .map(([code, count]) => `${code}×${count}`)
        .join(', ')}`,
    );
    // Every rule was exercised.
    for (const code of [
      '200',
      '400 invalid_condition_id',
      '403 wallet_quota',
      '429 rate_limited',
      '429 daily_limit',
      '429 monthly_limit',
    ])
      expect(codes.get(code) ?? 0).toBeGreaterThan(0);
  });
});
