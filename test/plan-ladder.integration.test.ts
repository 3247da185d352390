/**
 * The plan ladder as the contract states it (../shared/spec/read-api.md, "Plan ladder", "Identity and
 * budget" and "The four gates"), written here as literals and never read from config-plans.ts: a change to the
 * plan table that the contract does not make fails here. `/me` states every limit of every plan, and the
 * gates enforce them: the burst at once, the rolling minute, Basic's daily quota and distinct wallets.
 * Library storage: the contract's MB and GB are read as binary units (MiB, GiB), as docs/live.md states them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import { bodyOf, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { makeWallet } from './factories.ts';

const MIB = 1024 * 1024;

const LADDER = {
  basic: {
    plan: 'Basic Intelligence',
    limits: {
      rps: 0.5,
      burst: 10,
      rpm: 30,
      daily_requests: 50,
      monthly_requests: 0,
      max_keys: 1,
      live_slots: 1,
      history_depth: 5,
      records_live: false,
      library_bytes: 200 * MIB,
    },
  },
  pro: {
    plan: 'Pro Intelligence',
    limits: {
      rps: 5,
      burst: 60,
      rpm: 300,
      daily_requests: 0,
      monthly_requests: 50_000,
      max_keys: 3,
      live_slots: 3,
      history_depth: -1,
      records_live: true,
      library_bytes: 2 * 1024 * MIB,
    },
  },
  max: {
    plan: 'Max Intelligence',
    limits: {
      rps: 20,
      burst: 200,
      rpm: 1_200,
      daily_requests: 0,
      monthly_requests: 300_000,
      max_keys: 6,
      live_slots: 5,
      history_depth: -1,
      records_live: true,
      library_bytes: 10 * 1024 * MIB,
    },
  },
} as const;

/** Basic's distinct wallets per UTC day ("Trader lookups"); Pro and Max: unlimited. */
const BASIC_WALLETS_PER_DAY = 3;

const PLANS = Object.keys(LADDER) as PlanId[];
const config = inProcessConfig('plan-ladder');
const NOW_S = Math.floor(Date.now() / 1000);
let keys: Awaited<ReturnType<typeof publishPlanKeys>>;

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW_S - 60);
});

/** An API whose gates read the test's clock, frozen unless the test moves it. */
async function apiAt(startMs: number): Promise<{ api: TestApi; clock: { ms: number } }> {
  const clock = { ms: startMs };
  const api = await startTestApi(config, {
    now: () => Math.floor(clock.ms / 1000),
    keys,
    gatesClockMs: () => clock.ms,
  });
  return { api, clock };
}

const apis: TestApi[] = [];
afterAll(async () => {
  for (const api of apis) await api.close();
});

async function statuses(api: TestApi, plan: PlanId, calls: number): Promise<number[]> {
  const codes: number[] = [];
  for (let call = 0; call < calls; call++) codes.push((await api.get('me', { plan })).statusCode);
  return codes;
}

describe.each(PLANS)('the %s plan', (plan) => {
  const { limits } = LADDER[plan];

  it('is stated by /me as the contract writes it', async () => {
    const { api } = await apiAt(Date.UTC(2026, 10, 22, 12));
    apis.push(api);
    const me = bodyOf(await api.get('me', { plan })) as { plan: string; limits: Record<string, unknown> };
    expect(me.plan).toBe(LADDER[plan].plan);
    expect(me.limits).toEqual(limits);
  });

  it(`answers a burst of ${limits.burst} at once, then 429 rate_limited`, async () => {
    const { api } = await apiAt(Date.UTC(2026, 10, 22, 13));
    apis.push(api);
    // The clock is frozen: nothing refills.
    const codes = await statuses(api, plan, limits.burst);
    expect(codes.every((code) => code === 200)).toBe(true);
    const refused = await api.get('me', { plan });
    expect(refused.statusCode).toBe(429);
    expect(bodyOf(refused)).toMatchObject({ error: 'rate_limited' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it(`allows ${limits.rpm} calls in a rolling minute though the bucket refills, then 429 rate_limited`, async () => {
    const { api, clock } = await apiAt(Date.UTC(2026, 10, 22, 14));
    apis.push(api);
    // Calls spaced so that the bucket always has a token (one per 1/rps, after the burst is spent): only the
    // minute's ceiling can refuse one, and it must, at call rpm + 1, all within 60 s.
    const spacingMs = Math.floor(1000 / limits.rps);
    const spacedAfterBurst = limits.rpm - limits.burst;
    expect(spacedAfterBurst * spacingMs).toBeLessThan(60_000);
    const codes: number[] = [];
    for (let call = 0; call < limits.rpm + 1; call++) {
      if (call >= limits.burst) clock.ms += spacingMs;
      codes.push((await api.get('me', { plan })).statusCode);
    }
    expect(codes.filter((code) => code === 200)).toHaveLength(limits.rpm);
    expect(codes[limits.rpm]).toBe(429);
  });
});

describe('Basic', () => {
  it(`has ${LADDER.basic.limits.daily_requests} calls a UTC day, then 429 daily_limit until midnight`, async () => {
    const start = Date.UTC(2026, 10, 22, 20);
    const { api, clock } = await apiAt(start);
    apis.push(api);
    const codes: number[] = [];
    // A minute apart: neither the bucket nor the minute binds.
    for (let call = 0; call <= LADDER.basic.limits.daily_requests; call++) {
      clock.ms += 61_000;
      codes.push((await api.get('me', { plan: 'basic' })).statusCode);
    }
    expect(codes.slice(0, -1).every((code) => code === 200)).toBe(true);
    const spent = await api.get('me', { plan: 'basic' });
    expect(spent.statusCode).toBe(429);
    expect(bodyOf(spent)).toMatchObject({ error: 'daily_limit' });
    clock.ms = Date.UTC(2026, 10, 23, 0, 0, 1);
    expect((await api.get('me', { plan: 'basic' })).statusCode).toBe(200);
    // Pro's window is the month: the same calls leave it far from its cap.
    const pro = bodyOf(await api.get('me', { plan: 'pro' })) as { usage: { month: { cap: number } } };
    expect(pro.usage.month.cap).toBe(LADDER.pro.limits.monthly_requests);
  });

  it(`reads ${BASIC_WALLETS_PER_DAY} distinct traders a UTC day; the next is 403 wallet_quota (Pro: any number)`, async () => {
    const { api, clock } = await apiAt(Date.UTC(2026, 10, 24, 9));
    apis.push(api);
    const wallets = Array.from({ length: BASIC_WALLETS_PER_DAY + 2 }, (_, index) => makeWallet(`ladder-${index}`));
    for (const wallet of wallets.slice(0, BASIC_WALLETS_PER_DAY)) {
      clock.ms += 61_000;
      expect((await api.get(`traders/${wallet}`, { plan: 'basic' })).statusCode).toBe(200);
    }
    clock.ms += 61_000;
    const refused = await api.get(`traders/${wallets[BASIC_WALLETS_PER_DAY]}`, { plan: 'basic' });
    expect(refused.statusCode).toBe(403);
    expect(bodyOf(refused)).toMatchObject({
      error: 'wallet_quota',
      used: BASIC_WALLETS_PER_DAY,
      limit: BASIC_WALLETS_PER_DAY,
    });
    for (const wallet of wallets) {
      clock.ms += 1_000;
      expect((await api.get(`traders/${wallet}`, { plan: 'pro' })).statusCode).toBe(200);
    }
  });
});
