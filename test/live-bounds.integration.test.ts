/**
 * What one live connection may cost the server (docs/live.md, Bounds), through a real `ws` client against
 * a listening server: a client that sends without reading is closed with its reason while the bytes the
 * server holds for it stay under the bound (measured inside the server: the socket's bufferedAmount after
 * every send); one that reads nothing is closed after one unanswered ping whatever it sends; commands past
 * the rate are refused, then the connection closed; store lookups past the plan's budget are refused and
 * read nothing; a revoked key's open streams, and a user's whose plan changed, are closed (slots in process
 * memory and in the machine's Redis); a browser page of another origin is refused on the upgrade.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { setImmediate as turn } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Config, PlanId } from '../config.ts';
import { createLogger } from '../log.ts';
import { mintApiKey, publishAccount } from '../ingest/sources/accounts.ts';
import { liveCommands } from '../metrics/registry.ts';
import { MemorySlots, type SlotStore } from '../operations/gates/slots.ts';
import { RedisSlots } from '../operations/gates/slots-redis.ts';
import type { Store } from '../projections/store.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeMarket, makeWallet } from './factories.ts';
import { inProcessConfig, publishTestAccounts } from './harness/api.ts';
import { uniqueId } from './harness/context.ts';
import { LiveClient, startLiveServer, type LiveServer, type LiveServerOptions } from './harness/live.ts';
import { deleteKeysWithPrefix } from './harness/redis.ts';

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const NOW_S = Math.floor(Date.now() / 1000);
const log = createLogger('silent');
/** Heartbeats long enough that none interferes unless a test asks for short ones. */
const base = inProcessConfig('live_bounds', {}, { live: { heartbeatSeconds: 30 } });
const withLive = (live: Partial<Config['live']>): Config => ({ ...base, live: { ...base.live, ...live } });
const PROTOCOL = base.live.protocol;

const ACCOUNTS = [
  { accountId: 'lb-basic', plan: 'basic', keys: ['b1'] },
  { accountId: 'lb-pro', plan: 'pro', keys: ['p1'] },
] as const;
const keys = {} as Record<'b1' | 'p1', string>;
const TRADER = makeWallet('bounds-trader');
const M1 = makeConditionId('bounds-1');

beforeAll(async () => {
  await withPublisher(base, createLogger('error'), async ({ publisher }) => {
    Object.assign(keys, await publishTestAccounts(publisher, ACCOUNTS, NOW_S));
    await publisher.publish('markets', [makeMarket({ condition_id: M1 })]);
  });
});

const servers: LiveServer[] = [];
async function start(config: Config, options: LiveServerOptions = {}): Promise<LiveServer> {
  const server = await startLiveServer(config, log, options);
  servers.push(server);
  return server;
}

const redisPrefix = `test:${uniqueId('live_bounds')}:`;
const redisConnections: Redis[] = [];

afterAll(async () => {
  for (const server of servers.splice(0)) await server.close().catch(() => undefined);
  const redis = new Redis(TEST_REDIS_URL);
  try {
    await deleteKeysWithPrefix(redis, redisPrefix);
  } finally {
    await redis.quit();
    for (const connection of redisConnections) connection.disconnect();
  }
});

async function connect(server: LiveServer, secret: string, headers: Record<string, string> = {}): Promise<LiveClient> {
  const socket = new WebSocket(server.url, [PROTOCOL], { headers: { authorization: `Bearer ${secret}`, ...headers } });
  const client = new LiveClient(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  await client.nextOf('ready');
  return client;
}

/** The client's TCP socket: paused, it reads nothing (pings included) while it can still send. */
const tcpOf = (client: LiveClient) =>
  (client.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;

/** Bad frames the server answered (every connection of this process). */
async function badFramesAnswered(): Promise<number> {
  const metric = await liveCommands.get();
  return metric.values.find((value) => value.labels.outcome === 'bad_message')?.value ?? 0;
}

describe('a client that sends without reading', () => {
  it('is closed as too slow once the replies it does not read pass the bound; the server never holds more', async () => {
    const queueBytes = 64 * 1024;
    // The command rate out of the way: the replies alone must hit the byte bound.
    const server = await start(
      withLive({ queueBytes, commands: { perSecond: 1e9, burst: 1e9, refusalsBeforeClose: 1e9, maxPending: 64 } }),
    );
    const client = await connect(server, keys.b1);
    const observed = server.transports.at(-1)!;
    tcpOf(client).pause();
    // Enough bad frames that their replies (about 130 bytes each) fill the kernel's buffers many times over.
    const frames = 150_000;
    const answeredBefore = await badFramesAnswered();
    for (let index = 0; index < frames; index++) client.socket.send('x');
    // Until the server closes the connection, or has answered every frame (today's code: it never closes).
    while (observed.closedWith === null && (await badFramesAnswered()) - answeredBefore < frames) await turn();

    expect(observed.closedWith).toEqual({ code: 4408, reason: 'too_slow' });
    // What the server held for this client, at most: the bound, and the one error that says why it closes.
    expect(observed.peakBufferedBytes).toBeGreaterThan(queueBytes / 2);
    expect(observed.peakBufferedBytes).toBeLessThanOrEqual(queueBytes + 512);
    // Once it reads, the client learns why.
    tcpOf(client).resume();
    expect(await client.closed).toEqual({ code: 4408, reason: 'too_slow' });
    expect(client.messages.at(-1)).toMatchObject({ type: 'error', code: 'too_slow' });
  });

  it('is closed at the first heartbeat after a ping it did not answer, whatever it sends meanwhile (its own pongs included)', async () => {
    const server = await start(withLive({ heartbeatSeconds: 0.2 }));
    const client = await connect(server, keys.b1);
    const observed = server.transports.at(-1)!;
    tcpOf(client).pause();
    // Commands within the rate, and pongs of its own: frames, but no sign that it reads.
    const sender = setInterval(() => {
      client.send({ type: 'ping' });
      client.socket.pong('alive');
    }, 20);
    try {
      expect(await observed.closedWithin(3)).toEqual({ code: 4000, reason: 'no_pong' });
    } finally {
      clearInterval(sender);
    }
    tcpOf(client).resume();
    expect(await client.closed).toEqual({ code: 4000, reason: 'no_pong' });
    expect(client.messages.at(-1)).toMatchObject({ type: 'error', code: 'no_pong' });
  });
});

describe('the command rate', () => {
  it('serves a burst, refuses commands past it with rate_limited, then closes with 4429 when they keep coming', async () => {
    const server = await start(base);
    const { burst, perSecond, refusalsBeforeClose } = base.live.commands;
    const client = await connect(server, keys.p1);
    for (let index = 0; index < burst; index++) client.send({ type: 'ping', id: `c${index}` });
    await answered(client, burst);
    expect(client.messages.slice(1).map((message) => message.type === 'pong' && message.id)).toEqual(
      Array.from({ length: burst }, (_, index) => `c${index}`),
    );
    // The bucket is (nearly) empty: what follows at once is refused, and a client that keeps sending is closed.
    const more = refusalsBeforeClose * 3;
    for (let index = 0; index < more; index++) client.send({ type: 'ping', id: `d${index}` });
    const closed = await Promise.race([client.closed, answered(client, burst + more).then(() => null)]);
    expect(closed).toEqual({ code: 4429, reason: 'rate_limited' });
    const after = client.messages.slice(1 + burst);
    const refusals = after.filter((message) => message.type === 'error');
    expect(refusals.length).toBeGreaterThanOrEqual(refusalsBeforeClose);
    for (const refusal of refusals) expect(refusal).toMatchObject({ code: 'rate_limited' });
    expect(refusals[0]).toMatchObject({ retry_after: 1 });
    expect(refusals[0]?.type === 'error' && refusals[0].message).toContain(`${perSecond} commands a second`);
    expect(after.at(-1)).toMatchObject({ type: 'error', code: 'rate_limited' });
    // Only what refilled meanwhile was served.
    expect(after.filter((message) => message.type === 'pong').length).toBeLessThan(more - refusalsBeforeClose);
  });
});

/** Resolves once the client has `count` answers after its ready (never, if the connection closes first). */
async function answered(client: LiveClient, count: number): Promise<void> {
  while (client.messages.length < count + 1)
    await new Promise<void>((resolve) => client.socket.once('message', () => resolve()));
}

describe('store lookups of the plane', () => {
  it('are refused past the plan’s budget (and read nothing), while another caller is served', async () => {
    const budget = 5;
    let nameReads = 0;
    const counting = (store: Store): Store => ({
      ...store,
      database: store.database,
      kind: store.kind,
      query: (sql, params, options) => {
        if (sql.includes('trader_name_index')) nameReads += 1;
        return store.query(sql, params, options);
      },
    });
    const plans = { ...base.plans, basic: { ...base.plans.basic, liveLookupsPerHour: budget } };
    const server = await start({ ...base, plans }, { wrapStore: counting });
    const basic = await connect(server, keys.b1);
    const answers = [];
    for (let index = 0; index < budget + 7; index++)
      answers.push(
        await basic.command({ type: 'follow', id: `f${index}`, trader: `nobody-${randomBytes(6).toString('hex')}` }),
      );
    // The budget's worth were looked up (and found nobody); the rest were refused without a read.
    expect(answers.slice(0, budget).map((answer) => answer.type === 'error' && answer.code)).toEqual(
      Array(budget).fill('trader_not_found'),
    );
    for (const [index, refusal] of answers.slice(budget).entries())
      expect(refusal).toEqual({
        type: 'error',
        id: `f${budget + index}`,
        code: 'lookup_limit',
        message: expect.stringContaining(`${budget} store lookups an hour`),
        retry_after: Math.ceil(3600 / budget),
        lookups_per_hour: budget,
      });
    expect(nameReads).toBe(budget);
    // A watch's market check reads the store too: refused the same way.
    expect(
      await basic.command({ type: 'watch', id: 'w', trader: TRADER, market: makeConditionId('bounds-unknown') }),
    ).toMatchObject({ type: 'error', id: 'w', code: 'lookup_limit' });

    // Another user's lookups draw on their own budget: served (and read) at once.
    const pro = await connect(server, keys.p1);
    expect(await pro.command({ type: 'follow', id: 'p', trader: 'nobody-of-pro' })).toMatchObject({
      type: 'error',
      id: 'p',
      code: 'trader_not_found',
    });
    expect(await pro.command({ type: 'watch', id: 'pw', trader: TRADER, market: M1 })).toMatchObject({
      type: 'ack',
      id: 'pw',
      market: M1,
    });
    expect(nameReads).toBe(budget + 1);
    await Promise.all([basic.close(), pro.close()]);
  });
});

/** A slot store that tells the test when a slot of a user was given back. */
function releasesOf(target: SlotStore): { slots: SlotStore; released: (userId: string) => Promise<void> } {
  const waiters: { userId: string; wake: () => void }[] = [];
  const slots = new Proxy(target, {
    get(store, property, receiver) {
      if (property === 'release')
        return async (userId: string, slotId: string) => {
          await store.release(userId, slotId);
          for (const waiter of waiters.filter((candidate) => candidate.userId === userId)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.wake();
          }
        };
      const value: unknown = Reflect.get(store, property, receiver);
      return typeof value === 'function' ? value.bind(store) : value;
    },
  });
  return { slots, released: (userId) => new Promise((wake) => waiters.push({ userId, wake })) };
}

describe.each(['memory', 'redis'] as const)('revocation closes open streams (slots in %s)', (kind) => {
  const slotStore = (): SlotStore => {
    if (kind === 'memory') return new MemorySlots();
    const redis = new Redis(TEST_REDIS_URL);
    redisConnections.push(redis);
    return new RedisSlots(redis, `${redisPrefix}${uniqueId('revocation')}:`);
  };
  const window = base.api.keyCacheSeconds * 1000;
  const config = withLive({ heartbeatSeconds: 0.5, credentialCheckSeconds: 0.05 });

  async function account(plan: PlanId) {
    const accountId = uniqueId(`rv-${kind}`);
    const key = mintApiKey();
    const keyEvent = (revokedAt: number | null, version: number) => ({
      key_id: key.keyId,
      account_id: accountId,
      key_sha256: key.sha256,
      label: 'revocation test',
      last4: key.last4,
      created_at: NOW_S,
      revoked_at: revokedAt,
      version,
    });
    await withPublisher(base, createLogger('error'), async ({ publisher }) => {
      await publishAccount(publisher, { accountId, plan, displayName: accountId, version: NOW_S });
      await publisher.publish('keys', [keyEvent(null, NOW_S)]);
    });
    return { accountId, key, keyEvent };
  }

  it('a revoked key: every open connection is closed with 4401 once the key cache’s window ends, its slot freed', async () => {
    const clock = { ms: Date.now() };
    const { slots, released } = releasesOf(slotStore());
    const server = await start(config, { slots, authClockMs: () => clock.ms });
    const { accountId, key, keyEvent } = await account('pro');
    const watching = await connect(server, key.plaintext);
    expect(await watching.command({ type: 'watch', trader: TRADER, market: M1 })).toMatchObject({ type: 'ack' });
    await watching.nextOf('event');
    const following = await connect(server, key.plaintext);
    expect(await following.command({ type: 'follow', trader: TRADER })).toMatchObject({ type: 'ack' });
    expect(await slots.inUse(accountId, null)).toBe(1);

    await withPublisher(base, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('keys', [keyEvent(NOW_S + 1, NOW_S + 1)]);
    });
    const slotFreed = released(accountId);
    // The key cache's window ends: the next check reads the key again and finds it revoked.
    clock.ms += window;
    for (const [client, observed] of [
      [watching, server.transports.at(-2)!],
      [following, server.transports.at(-1)!],
    ] as const) {
      expect(await observed.closedWithin(20)).toEqual({ code: 4401, reason: 'unauthorized' });
      expect(await client.closed).toEqual({ code: 4401, reason: 'unauthorized' });
      expect(client.messages.at(-1)).toMatchObject({ type: 'error', code: 'unauthorized' });
    }
    await slotFreed;
    expect(await slots.inUse(accountId, null)).toBe(0);
  });

  it('a plan that changed: the connection is closed with 4409 plan_changed; the next one runs on the new plan’s slots', async () => {
    const clock = { ms: Date.now() };
    const { slots, released } = releasesOf(slotStore());
    const server = await start(config, { slots, authClockMs: () => clock.ms });
    const { accountId, key } = await account('pro');
    const client = await connect(server, key.plaintext);
    expect(await client.command({ type: 'watch', trader: TRADER, market: M1 })).toMatchObject({ type: 'ack' });
    await client.nextOf('event');

    await withPublisher(base, createLogger('error'), async ({ publisher }) => {
      await publishAccount(publisher, { accountId, plan: 'basic', displayName: accountId, version: NOW_S + 1 });
    });
    const slotFreed = released(accountId);
    clock.ms += window;
    expect(await server.transports.at(-1)!.closedWithin(20)).toEqual({ code: 4409, reason: 'plan_changed' });
    expect(await client.closed).toEqual({ code: 4409, reason: 'plan_changed' });
    expect(client.messages.at(-1)).toMatchObject({
      type: 'error',
      code: 'plan_changed',
      message: expect.stringContaining(base.plans.basic.name),
    });
    await slotFreed;
    const again = new LiveClient(
      new WebSocket(server.url, [PROTOCOL], { headers: { authorization: `Bearer ${key.plaintext}` } }),
    );
    expect(await again.nextOf('ready')).toMatchObject({
      plan: base.plans.basic.name,
      live_slots: base.plans.basic.liveSlots,
      slots_in_use: 0,
    });
    await again.close();
  });
});

/** An upgrade request by hand: the status and body of a refusal, or 101. */
function upgrade(server: LiveServer, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${server.origin}${server.livePath}`, {
      // One connection per upgrade (a refused one is closed by the server).
      agent: false,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        'sec-websocket-protocol': PROTOCOL,
        authorization: `Bearer ${keys.p1}`,
        ...headers,
      },
    });
    request.on('response', (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('upgrade', (response, socket) => {
      socket.destroy();
      resolve({ status: response.statusCode ?? 0, body: '' });
    });
    request.on('error', reject);
    request.end();
  });
}

describe('the Origin of the upgrade (as /mcp checks it)', () => {
  it('refuses a browser page of another origin with 403; accepts the service’s own origin and no Origin', async () => {
    const server = await start(base);
    for (const origin of ['http://evil.example', 'null', 'http://127.0.0.1.evil.example']) {
      const refused = await upgrade(server, { origin });
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toEqual({
        error: 'forbidden_origin',
        message: expect.stringContaining(`Invalid Origin header: ${origin}.`),
      });
    }
    // The page the service serves (the live chart) connects from the origin it reached, or PUBLIC_URL's.
    expect((await upgrade(server, { origin: server.origin })).status).toBe(101);
    expect((await upgrade(server, { origin: new URL(base.mcp.publicUrl).origin })).status).toBe(101);
    // A client that is not a browser sends none.
    expect((await upgrade(server, {})).status).toBe(101);
    const agent = await connect(server, keys.p1);
    await agent.close();
    const page = await connect(server, keys.p1, { origin: server.origin });
    await page.close();
  });
});
