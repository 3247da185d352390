/**
 * The four gates and the address guard, through the HTTP app, against both gate stores (process memory
 * and the machine's Redis): the same contract for each. The clock of the gates is the test's (no
 * sleeping); expected numbers come from the plan ladder in config, never from the code under test.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config, PlanLimits } from '../config.ts';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import { QueryTimeoutError } from '../projections/store.ts';
import { makeWallet } from './factories.ts';
import { API, bodyOf, inProcessConfig, publishTestAccounts, startTestApi, type TestApi } from './harness/api.ts';
import { GATE_KINDS, gateStoreFactory, QueryHold, SwitchableGates, type GateKind } from './harness/gates.ts';

const config = inProcessConfig('gates');
const { basic, pro, max } = config.plans;
const NOW_S = Math.floor(Date.now() / 1000);
const stores = gateStoreFactory('gates');

/** Keys by name: two users per plan family, two keys on the first of each, and a founder seat. */
const ACCOUNTS = [
  { accountId: 'g-basic', plan: 'basic', keys: ['b1', 'b2'] },
  { accountId: 'g-basic-other', plan: 'basic', keys: ['b3'] },
  { accountId: 'g-pro', plan: 'pro', keys: ['p1', 'p2'] },
  { accountId: 'g-pro-other', plan: 'pro', keys: ['p3'] },
  { accountId: 'g-founder', plan: 'basic', founder: true, keys: ['f1'] },
] as const;
type KeyName = (typeof ACCOUNTS)[number]['keys'][number];
const keys = {} as Record<KeyName, string>;

beforeAll(async () => {
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    Object.assign(keys, await publishTestAccounts(publisher, ACCOUNTS, NOW_S));
  });
});

afterAll(async () => {
  await stores.cleanup();
});

const wallets = Array.from({ length: 12 }, (_, index) => makeWallet(`gates-${index}`));
const card = (wallet: string) => `${API}/traders/${wallet}`;
/** A trader-scoped call that is counted (wallet included) and answers 400 without reading the store. */
const failingRead = (wallet: string) => `${API}/traders/${wallet}/markets/not-a-market/summary`;
const ME = `${API}/me`;
/** A raw-ticks read (heavy) of one of the trader's markets; calls that must each hold a read name different markets. */
const heavyRead = (wallet: string, market = 'ab') => `${API}/traders/${wallet}/markets/0x${market.repeat(32)}?raw=1`;

interface Harness {
  api: TestApi;
  gates: SwitchableGates;
  clock: { ms: number };
  call(
    key: KeyName | null,
    url: string,
    options?: { address?: string; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  me(key: KeyName): Promise<{
    usage: {
      window: { tokens_remaining: number; rpm_used: number };
      day: { requests: number; cap: number };
      month: { requests: number; cap: number };
    };
    plan: string;
  }>;
}

async function startHarness(
  kind: GateKind,
  options: { config?: Config; startMs?: number; hold?: QueryHold } = {},
): Promise<Harness> {
  const clock = { ms: options.startMs ?? Date.UTC(2026, 10, 22, 20, 0, 0) };
  const gates = new SwitchableGates(stores.open(kind));
  const api = await startTestApi(options.config ?? config, {
    now: () => Math.floor(clock.ms / 1000),
    keys: { basic: keys.b1, pro: keys.p1, max: keys.p1 },
    gates,
    gatesClockMs: () => clock.ms,
    ...(options.hold ? { wrapStore: (store) => options.hold!.wrap(store) } : {}),
  });
  const call: Harness['call'] = (key, url, { address = '127.0.0.1', headers = {} } = {}) =>
    api.app.inject({
      method: 'GET',
      url,
      remoteAddress: address,
      headers: { ...(key ? { authorization: `Bearer ${keys[key]}` } : {}), ...headers },
    });
  return {
    api,
    gates,
    clock,
    call,
    async me(key) {
      const response = await call(key, ME);
      expect(response.statusCode, response.body).toBe(200);
      return bodyOf(response) as Awaited<ReturnType<Harness['me']>>;
    },
  };
}

const intervalMs = (limits: PlanLimits) => 1000 / limits.rps;
const errorOf = (response: LightMyRequestResponse) => (bodyOf(response) as { error?: string }).error;

describe.each(GATE_KINDS)('gates in %s', (kind) => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness(kind);
  });
  afterAll(async () => {
    await harness.api.close();
  });

  it('a Basic key: exactly burst immediate calls, then 429 rate_limited with Retry-After; one more after the refill interval', async () => {
    harness.gates.target = stores.open(kind);
    for (let call = 0; call < basic.burst; call++) expect((await harness.call('b1', ME)).statusCode).toBe(200);
    const refused = await harness.call('b1', ME);
    expect(refused.statusCode).toBe(429);
    const expectedWait = Math.ceil(intervalMs(basic) / 1000);
    expect(refused.headers['retry-after']).toBe(String(expectedWait));
    expect(bodyOf(refused)).toMatchObject({ error: 'rate_limited', retry_after: expectedWait });
    expect((bodyOf(refused) as { message: string }).message).toContain('Basic Intelligence');
    harness.clock.ms += intervalMs(basic) - 1;
    expect((await harness.call('b1', ME)).statusCode).toBe(429);
    harness.clock.ms += 1;
    expect((await harness.call('b1', ME)).statusCode).toBe(200);
    expect((await harness.call('b1', ME)).statusCode).toBe(429);
  });

  it('burst + k concurrent requests: exactly burst pass', async () => {
    harness.gates.target = stores.open(kind);
    const responses = await Promise.all(
      Array.from({ length: pro.burst + 25 }, (_, index) => harness.call(index % 2 === 0 ? 'p1' : 'p2', ME)),
    );
    const statuses = responses.map((response) => response.statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(pro.burst);
    expect(
      responses
        .filter((response) => response.statusCode === 429)
        .every((response) => errorOf(response) === 'rate_limited'),
    ).toBe(true);
  });

  it('the rolling minute binds where the bucket would allow more, burst spend included', async () => {
    harness.gates.target = stores.open(kind);
    const start = harness.clock.ms;
    for (let call = 0; call < basic.burst; call++) expect((await harness.call('b1', ME)).statusCode).toBe(200);
    // One call per refill interval: the bucket admits each (it refills one token every interval).
    let spaced = 0;
    while (basic.burst + spaced < basic.rpm) {
      harness.clock.ms += intervalMs(basic);
      expect((await harness.call('b1', ME)).statusCode).toBe(200);
      spaced += 1;
    }
    const me = await harness.me('b3'); // another user: untouched
    expect(me.usage.window.rpm_used).toBe(1);
    harness.clock.ms += intervalMs(basic);
    const refused = await harness.call('b1', ME);
    expect(refused.statusCode).toBe(429);
    // The bucket has a token again; the minute is full until the burst calls of `start` leave it.
    const minuteFreesInS = Math.ceil((start + config.gates.rpmWindowSeconds * 1000 - harness.clock.ms) / 1000);
    expect(bodyOf(refused)).toMatchObject({ error: 'rate_limited', retry_after: minuteFreesInS });
    expect(refused.headers['retry-after']).toBe(String(minuteFreesInS));
    harness.clock.ms = start + config.gates.rpmWindowSeconds * 1000 + 1;
    expect((await harness.call('b1', ME)).statusCode).toBe(200);
  });

  it('the daily quota ends in daily_limit on Basic and resets at midnight UTC', async () => {
    harness.gates.target = stores.open(kind);
    harness.clock.ms = Date.UTC(2026, 10, 22, 20, 0, 0);
    for (let call = 0; call < basic.dailyRequests; call++) {
      harness.clock.ms += 3000;
      expect((await harness.call('b1', ME)).statusCode).toBe(200);
    }
    harness.clock.ms += 3000;
    const refused = await harness.call('b1', ME);
    expect(refused.statusCode).toBe(429);
    const toMidnight = Math.ceil((Date.UTC(2026, 10, 23) - harness.clock.ms) / 1000);
    expect(bodyOf(refused)).toMatchObject({ error: 'daily_limit', retry_after: toMidnight });
    const message = (bodyOf(refused) as { message: string }).message;
    expect(message).toContain('Basic Intelligence');
    expect(message).toContain(`Pro Intelligence allows ${pro.monthlyRequests.toLocaleString('en-US')} calls per month`);
    // The other key of the same user is refused too; another user is not.
    expect(errorOf(await harness.call('b2', ME))).toBe('daily_limit');
    expect((await harness.call('b3', ME)).statusCode).toBe(200);
    harness.clock.ms = Date.UTC(2026, 10, 23) - 1;
    expect(errorOf(await harness.call('b1', ME))).toBe('daily_limit');
    harness.clock.ms = Date.UTC(2026, 10, 23);
    const me = await harness.me('b1');
    expect(me.usage.day).toEqual({ requests: 1, cap: basic.dailyRequests });
  });

  it('the monthly quota ends in monthly_limit on Pro and resets at the month start (across a year end)', async () => {
    const smallMonth = { ...pro, monthlyRequests: 30 };
    const local = await startHarness(kind, {
      config: { ...config, plans: { ...config.plans, pro: smallMonth } },
      startMs: Date.UTC(2026, 11, 31, 23, 59, 0),
    });
    try {
      for (let call = 0; call < smallMonth.monthlyRequests; call++)
        expect((await local.call(call % 2 ? 'p1' : 'p2', ME)).statusCode).toBe(200);
      const refused = await local.call('p1', ME);
      expect(refused.statusCode).toBe(429);
      expect(bodyOf(refused)).toMatchObject({ error: 'monthly_limit', retry_after: 60 });
      const message = (bodyOf(refused) as { message: string }).message;
      expect(message).toContain('Pro Intelligence');
      expect(message).toContain(
        `Max Intelligence allows ${max.monthlyRequests.toLocaleString('en-US')} calls per month`,
      );
      local.clock.ms = Date.UTC(2027, 0, 1);
      const me = await local.me('p1');
      expect(me.usage.month).toEqual({ requests: 1, cap: smallMonth.monthlyRequests });
      expect(me.usage.day).toEqual({ requests: 0, cap: 0 });
    } finally {
      await local.api.close();
    }
  });

  it('Basic: the 4th distinct wallet of a UTC day is wallet_quota; counted wallets repeat free; a failed read still counts; the next day resets', async () => {
    harness.gates.target = stores.open(kind);
    harness.clock.ms = Date.UTC(2026, 10, 22, 20, 0, 0);
    const step = () => (harness.clock.ms += 3000);
    const cap = basic.distinctWalletsPerDay;
    step();
    // The first wallet's read fails (400) and still counts.
    expect((await harness.call('b1', failingRead(wallets[0]!))).statusCode).toBe(400);
    for (const wallet of wallets.slice(1, cap)) {
      step();
      expect((await harness.call('b1', card(wallet))).statusCode).toBe(200);
    }
    step();
    const before = (await harness.me('b1')).usage.day.requests;
    step();
    const refused = await harness.call('b2', card(wallets[cap]!)); // the user's other key: one counter
    expect(refused.statusCode).toBe(403);
    const body = bodyOf(refused) as Record<string, unknown>;
    expect(body).toMatchObject({ error: 'wallet_quota', used: cap, limit: cap, resets_at: '2026-11-23T00:00:00Z' });
    expect(body).not.toHaveProperty('retry_after');
    expect(body.message).toContain('Basic Intelligence');
    expect(body.message).toContain('Pro Intelligence');
    expect(body.message).toContain('midnight UTC');
    step();
    // The 403 consumed one call (and the /me after it one more).
    expect((await harness.me('b1')).usage.day.requests).toBe(before + 2);
    for (const wallet of wallets.slice(0, cap)) {
      step();
      expect((await harness.call('b1', card(wallet))).statusCode).toBe(200);
    }
    step();
    expect((await harness.call('b3', card(wallets[cap]!))).statusCode).toBe(200); // another user's own counter
    harness.clock.ms = Date.UTC(2026, 10, 23);
    expect((await harness.call('b1', card(wallets[cap]!))).statusCode).toBe(200);
    // Pro reads any number of wallets.
    for (const wallet of wallets) expect((await harness.call('p1', card(wallet))).statusCode).toBe(200);
  });

  it('two keys of one user drain one budget; a second user is unaffected', async () => {
    harness.gates.target = stores.open(kind);
    for (let call = 0; call < pro.burst; call++)
      expect((await harness.call(call % 2 ? 'p1' : 'p2', ME)).statusCode).toBe(200);
    expect(errorOf(await harness.call('p1', ME))).toBe('rate_limited');
    expect(errorOf(await harness.call('p2', ME))).toBe('rate_limited');
    expect((await harness.call('p3', ME)).statusCode).toBe(200);
  });

  it('a founder seat on a Basic plan has Pro limits', async () => {
    harness.gates.target = stores.open(kind);
    const me = await harness.me('f1');
    expect(me.plan).toBe('Pro Intelligence');
    for (let call = 1; call < pro.burst; call++) expect((await harness.call('f1', ME)).statusCode).toBe(200);
    expect(errorOf(await harness.call('f1', ME))).toBe('rate_limited');
  });

  it('counts 400, 404 and 422 answers (403: the wallet test; 304: the contract suite); not 429, 401, unknown paths or the OpenAPI document', async () => {
    harness.gates.target = stores.open(kind);
    harness.clock.ms = Date.UTC(2026, 10, 22, 12, 0, 0);
    expect((await harness.me('b1')).usage.day.requests).toBe(1);
    expect(errorOf(await harness.call('b1', `${API}/traders/0x123`))).toBe('invalid_wallet');
    expect(errorOf(await harness.call('b1', `${API}/traders/${encodeURIComponent('Nobody Known By This Name')}`))).toBe(
      'trader_not_found',
    );
    expect((await harness.call('b1', `${API}/traders/${wallets[0]}/markets?limit=many`)).statusCode).toBe(422);
    expect((await harness.call('b1', `${API}/no-such-endpoint`)).statusCode).toBe(404);
    expect((await harness.call('b1', `${API}/openapi.json`)).statusCode).toBe(200);
    expect((await harness.call(null, ME)).statusCode).toBe(401);
    expect((await harness.me('b1')).usage.day.requests).toBe(5);
    // Spend the rest of the bucket, then be refused: the refusals consume nothing.
    const me = await harness.me('b1');
    for (let call = 0; call < Math.floor(me.usage.window.tokens_remaining); call++)
      expect((await harness.call('b1', ME)).statusCode).toBe(200);
    const spent = 6 + Math.floor(me.usage.window.tokens_remaining);
    for (let call = 0; call < 5; call++) expect(errorOf(await harness.call('b1', ME))).toBe('rate_limited');
    harness.clock.ms += intervalMs(basic);
    const after = await harness.me('b1');
    expect(after.usage.day.requests).toBe(spent + 1);
    expect(after.usage.window.rpm_used).toBe(spent + 1);
  });

  it("/me: the governing window is the nonzero one; tokens and the minute are the gates' own numbers", async () => {
    harness.gates.target = stores.open(kind);
    const basicMe = await harness.me('b1');
    expect(basicMe.usage).toEqual({
      window: { tokens_remaining: basic.burst - 1, rpm_used: 1 },
      day: { requests: 1, cap: basic.dailyRequests },
      month: { requests: 0, cap: 0 },
      live: { slots_in_use: 0 },
      library: { tapes: 0, bytes_used: 0 },
    });
    const proMe = await harness.me('p1');
    expect(proMe.usage).toEqual({
      window: { tokens_remaining: pro.burst - 1, rpm_used: 1 },
      day: { requests: 0, cap: 0 },
      month: { requests: 1, cap: pro.monthlyRequests },
      live: { slots_in_use: 0 },
      library: { tapes: 0, bytes_used: 0 },
    });
    // Half an interval later the bucket holds half a token more.
    harness.clock.ms += intervalMs(basic) / 2;
    expect((await harness.me('b1')).usage.window.tokens_remaining).toBe(basic.burst - 2 + 0.5);
  });

  it('too_many_auth_failures: the configured failures from one address block it (valid keys too); a success does not reset; the block ends', async () => {
    harness.gates.target = stores.open(kind);
    const { limit, windowSeconds, blockSeconds } = config.gates.authFailures;
    const address = '203.0.113.7';
    const bad = { authorization: 'Bearer tak_not-a-real-key' };
    for (let failure = 0; failure < limit - 1; failure++)
      expect((await harness.call(null, ME, { address, headers: bad })).statusCode).toBe(401);
    expect((await harness.call('p1', ME, { address })).statusCode).toBe(200); // a success in between
    expect((await harness.call(null, ME, { address, headers: bad })).statusCode).toBe(401); // the limit-th failure: still a 401
    const blocked = await harness.call(null, ME, { address, headers: bad });
    expect(blocked.statusCode).toBe(429);
    expect(bodyOf(blocked)).toMatchObject({ error: 'too_many_auth_failures', retry_after: blockSeconds });
    expect(blocked.headers['retry-after']).toBe(String(blockSeconds));
    expect(errorOf(await harness.call('p1', ME, { address }))).toBe('too_many_auth_failures');
    expect((await harness.call('p1', ME, { address: '203.0.113.8' })).statusCode).toBe(200);
    harness.clock.ms += blockSeconds * 1000;
    expect((await harness.call('p1', ME, { address })).statusCode).toBe(200);
    // Failures spread wider than the window never block.
    const spread = '203.0.113.9';
    for (let failure = 0; failure < limit + 2; failure++) {
      expect((await harness.call(null, ME, { address: spread, headers: bad })).statusCode).toBe(401);
      harness.clock.ms += Math.ceil((windowSeconds * 1000) / (limit - 1));
    }
  });
});

/** Reads the trader's name with the store's reads let through (one call), so that held calls read only their own. */
async function warmName(harness: Harness, hold: QueryHold, key: KeyName): Promise<void> {
  const holding = hold.holding;
  hold.holding = false;
  harness.clock.ms += 3000;
  await harness.call(key, heavyRead(wallets[0]!));
  hold.holding = holding;
}

describe.each(GATE_KINDS)('admission lane in %s', (kind) => {
  const hold = new QueryHold();
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness(kind, { hold });
  });
  afterAll(async () => {
    hold.holding = false;
    hold.resumeAll();
    await harness.api.close();
  });

  /**
   * Starts heavy reads that stay in flight (held at their first read) until the test ends them. The
   * trader's name is read once before (admission reads it beside the call, one read for concurrent calls):
   * each call's held read is then its own.
   */
  async function startHeld(key: KeyName, count: number): Promise<Promise<LightMyRequestResponse>[]> {
    await warmName(harness, hold, key);
    const base = hold.held.length;
    const calls: Promise<LightMyRequestResponse>[] = [];
    for (let index = 0; index < count; index++) {
      harness.clock.ms += 3000;
      calls.push(harness.call(key, heavyRead(wallets[0]!)));
      await hold.heldCount(base + index + 1);
    }
    return calls;
  }

  it('heavy reads beyond the lane are 429 busy at once; other calls pass; slots come back after errors and timeouts', async () => {
    harness.gates.target = stores.open(kind);
    await harness.me('b1'); // the key lookup is cached before reads are held
    hold.holding = true;
    const inFlight = await startHeld('b1', basic.heavyReadsInFlight);
    harness.clock.ms += 3000;
    const busy = await harness.call('b1', heavyRead(wallets[0]!));
    expect(busy.statusCode).toBe(429);
    expect(bodyOf(busy)).toMatchObject({ error: 'busy', retry_after: 1 });
    expect(busy.headers['retry-after']).toBe('1');
    harness.clock.ms += 3000;
    expect((await harness.call('b1', ME)).statusCode).toBe(200); // not a heavy read
    // The reads fail: their slots come back.
    hold.failAll(new Error('store went away'));
    expect((await Promise.all(inFlight)).map((response) => response.statusCode)).toEqual(
      Array(basic.heavyReadsInFlight).fill(500),
    );
    const timedOut = await startHeld('b1', basic.heavyReadsInFlight);
    hold.failAll(new QueryTimeoutError(config.clickhouse.queryTimeoutSeconds));
    expect((await Promise.all(timedOut)).map((response) => response.statusCode)).toEqual(
      Array(basic.heavyReadsInFlight).fill(504),
    );
    const again = await startHeld('b1', basic.heavyReadsInFlight);
    hold.holding = false;
    hold.resumeAll();
    expect((await Promise.all(again)).map((response) => response.statusCode)).toEqual(
      Array(basic.heavyReadsInFlight).fill(404),
    );
  });

  it('a client that goes away gives its slot back', async () => {
    harness.gates.target = stores.open(kind);
    await harness.me('b1');
    await harness.api.app.listen({ port: 0, host: '127.0.0.1' });
    try {
      hold.holding = true;
      const port = (harness.api.app.server.address() as AddressInfo).port;
      const aborted: http.ClientRequest[] = [];
      for (let index = 0; index < basic.heavyReadsInFlight; index++) {
        harness.clock.ms += 3000;
        const request = http.get({
          host: '127.0.0.1',
          port,
          path: heavyRead(wallets[0]!),
          headers: { authorization: `Bearer ${keys.b1}` },
        });
        request.on('error', () => {}); // destroyed below on purpose
        aborted.push(request);
        await hold.heldCount(index + 1);
      }
      harness.clock.ms += 3000;
      expect(errorOf(await harness.call('b1', heavyRead(wallets[0]!)))).toBe('busy');
      const released = harness.gates.nextRelease();
      aborted[0]!.destroy();
      await released;
      harness.clock.ms += 3000;
      const next = harness.call('b1', heavyRead(wallets[0]!));
      await hold.heldCount(basic.heavyReadsInFlight + 1); // admitted: it reached its read
      hold.holding = false;
      hold.resumeAll();
      expect((await next).statusCode).toBe(404);
      for (const request of aborted) request.destroy();
    } finally {
      hold.holding = false;
      hold.resumeAll();
    }
  });

  it('the per-instance cap binds across users', async () => {
    const perInstance = 3;
    const localHold = new QueryHold();
    const local = await startHarness(kind, {
      config: { ...config, gates: { ...config.gates, heavyReadsPerInstance: perInstance } },
      hold: localHold,
    });
    try {
      await local.me('p1');
      await local.me('p3');
      await warmName(local, localHold, 'p1');
      localHold.holding = true;
      // Three different reads: concurrent calls of one answer share one read (operations/reads.ts).
      const calls = [
        local.call('p1', heavyRead(wallets[0]!, 'a1')),
        local.call('p1', heavyRead(wallets[0]!, 'a2')),
        local.call('p3', heavyRead(wallets[0]!, 'a3')),
      ];
      await localHold.heldCount(perInstance);
      expect(pro.heavyReadsInFlight).toBeGreaterThan(2);
      expect(errorOf(await local.call('p1', heavyRead(wallets[0]!)))).toBe('busy');
      expect(errorOf(await local.call('p3', heavyRead(wallets[0]!)))).toBe('busy');
      localHold.holding = false;
      localHold.resumeAll();
      expect((await Promise.all(calls)).map((response) => response.statusCode)).toEqual([404, 404, 404]);
    } finally {
      localHold.holding = false;
      localHold.resumeAll();
      await local.api.close();
    }
  });
});

describe.each(GATE_KINDS)('gate store %s, directly', (kind) => {
  const request = (nowMs: number, extra: Partial<Parameters<ReturnType<typeof stores.open>['admit']>[0]> = {}) => ({
    userId: 'direct',
    address: '198.51.100.1',
    nowMs,
    emissionIntervalMs: 1,
    burst: 1_000_000,
    rpm: 1_000_000,
    rpmWindowMs: 60_000,
    dailyCap: 0,
    monthlyCap: 0,
    wallet: null,
    walletCap: -1,
    heavy: false,
    laneCap: 2,
    leaseMs: 30_000,
    requestId: `r-${Math.random()}`,
    ...extra,
  });

  it("a dead instance's slots expire with their lease", async () => {
    const store = stores.open(kind);
    const t0 = Date.UTC(2026, 10, 22);
    expect((await store.admit(request(t0, { heavy: true }))).kind).toBe('admitted');
    expect((await store.admit(request(t0 + 1, { heavy: true }))).kind).toBe('admitted');
    // Never released (the instance died): busy until the leases run out.
    expect((await store.admit(request(t0 + 29_999, { heavy: true }))).kind).toBe('busy');
    expect((await store.admit(request(t0 + 30_000, { heavy: true }))).kind).toBe('admitted');
  });

  it('a refund gives back what the call consumed (token, minute, quotas, a new wallet, its slot), once', async () => {
    const store = stores.open(kind);
    const t0 = Date.UTC(2026, 10, 22, 9);
    const user = { userId: `refund-${kind}`, emissionIntervalMs: 1000, burst: 2, rpm: 2, dailyCap: 2, monthlyCap: 5 };
    const wallet = { wallet: makeWallet('refund'), walletCap: 1, heavy: true, laneCap: 1 };
    const first = await store.admit(request(t0, { ...user, ...wallet, requestId: 'refund-1' }));
    expect(first).toMatchObject({ kind: 'admitted', wallet: 'counted', atMs: t0 });
    if (first.kind !== 'admitted') return;
    const refund = {
      userId: user.userId,
      requestId: 'refund-1',
      atMs: first.atMs,
      emissionIntervalMs: user.emissionIntervalMs,
      daily: true,
      monthly: true,
      wallet: wallet.wallet,
    };
    await store.refund(refund);
    await store.refund(refund); // the second finds nothing to give back
    // As if the first call never happened: the full bucket, the minute, both quotas, the wallet cap and
    // the heavy lane all admit the same call twice more.
    const again = await store.admit(request(t0, { ...user, ...wallet, requestId: 'refund-2' }));
    expect(again).toMatchObject({
      kind: 'admitted',
      wallet: 'counted',
      usage: { tokensRemaining: 1, rpmUsed: 1, dayRequests: 1, monthRequests: 1 },
    });
    await store.release(user.userId, 'refund-2');
    expect(await store.admit(request(t0, { ...user, ...wallet, requestId: 'refund-3' }))).toMatchObject({
      kind: 'admitted',
      wallet: 'free',
      usage: { tokensRemaining: 0, rpmUsed: 2, dayRequests: 2, monthRequests: 2 },
    });
  });

  it("the quotas' UTC calendar: the reset is the next midnight and the next first of a month, on any date", async () => {
    const store = stores.open(kind);
    // Dates around every kind of boundary: month ends of 28, 29, 30 and 31 days, year ends, leap days.
    const instants = [
      Date.UTC(2026, 1, 28, 23, 59, 59, 999),
      Date.UTC(2028, 1, 29, 12),
      Date.UTC(2026, 11, 31, 23, 0),
      Date.UTC(2027, 0, 1, 0, 0, 0, 1),
      Date.UTC(2026, 3, 30, 6),
      Date.UTC(2100, 1, 28, 18),
      Date.UTC(2000, 1, 29, 1),
      Date.UTC(1999, 11, 31, 23, 59),
      ...Array.from({ length: 40 }, (_, index) => Date.UTC(2024, 0, 1) + index * 2_160_017_011),
    ];
    for (const [index, now] of instants.entries()) {
      const date = new Date(now);
      const nextMidnight = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
      const nextMonth = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
      const daily = { userId: `cal-d-${index}`, dailyCap: 1 };
      expect((await store.admit(request(now, daily))).kind).toBe('admitted');
      expect(await store.admit(request(now, daily))).toEqual({ kind: 'daily_limit', retryAfterMs: nextMidnight - now });
      expect((await store.admit(request(nextMidnight, daily))).kind).toBe('admitted');
      const monthly = { userId: `cal-m-${index}`, monthlyCap: 1 };
      expect((await store.admit(request(now, monthly))).kind).toBe('admitted');
      expect(await store.admit(request(nextMidnight - 1, monthly))).toMatchObject({
        kind: nextMidnight - 1 < nextMonth ? 'monthly_limit' : 'admitted',
      });
      expect(await store.admit(request(nextMonth - 1, monthly))).toEqual({ kind: 'monthly_limit', retryAfterMs: 1 });
      expect((await store.admit(request(nextMonth, monthly))).kind).toBe('admitted');
    }
  });
});

describe('when the gate store cannot answer', () => {
  it('calls are served unmetered (fail open) and the failure is logged, not answered', async () => {
    const failing = new SwitchableGates(stores.open('memory'));
    failing.target = {
      kind: 'redis',
      admit: () => Promise.reject(new Error('connection refused')),
      release: () => Promise.reject(new Error('connection refused')),
      refund: () => Promise.reject(new Error('connection refused')),
      authFailure: () => Promise.reject(new Error('connection refused')),
      blockedFor: () => Promise.reject(new Error('connection refused')),
      close: () => Promise.resolve(),
    };
    const api = await startTestApi(config, {
      now: () => NOW_S,
      keys: { basic: keys.b1, pro: keys.p1, max: keys.p1 },
      gates: failing,
    });
    try {
      for (let call = 0; call < basic.burst + 5; call++)
        expect((await api.get('me', { plan: 'basic' })).statusCode).toBe(200);
      expect((await api.get('me', { authorization: 'Bearer tak_unknown' })).statusCode).toBe(401);
    } finally {
      await api.close();
    }
  });
});
