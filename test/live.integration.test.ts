/**
 * The live plane through a real WebSocket client (`ws`) against a listening server: authentication
 * (header and subprotocol), every subscription kind fed from the in-process log, bad messages, slots
 * per plan across connections and keys of one user (in process memory and in the machine's Redis, each
 * test under its own key prefix), slots freed on unwatch, disconnect and lease expiry, a slow client
 * closed with its reason. Slot leases run on a clock the test moves (no sleeping); what the server does
 * in the background (a release, a renewal) is awaited through the slot store.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as turn } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseConfig, type Config, type ConfigOverrides } from '../config.ts';
import { createLogger } from '../log.ts';
import { MemorySlots, type Follow, type SlotRequest, type SlotStore } from '../operations/gates/slots.ts';
import { RedisSlots } from '../operations/gates/slots-redis.ts';
import { liveDisconnects } from '../metrics/registry.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import { API, inProcessConfig, publishTestAccounts } from './harness/api.ts';
import { uniqueId } from './harness/context.ts';
import { LiveClient, startLiveServer, type LiveServer } from './harness/live.ts';
import { deleteKeysWithPrefix } from './harness/redis.ts';

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * A heartbeat long enough that no stall of this process (server and clients share its event loop) reads
 * as a silent client; the tests about pings and renewals use a short one. The leases run on the test's clock.
 */
const LIVE: ConfigOverrides = { live: { heartbeatSeconds: 1, slotLeaseSeconds: 30 } };
const config = inProcessConfig('live', {}, LIVE);
/** Frequent pings and renewals, for the tests that wait on them. */
const quickBeats = (seconds: number): Config => ({ ...config, live: { ...config.live, heartbeatSeconds: seconds } });
const PROTOCOL = config.live.protocol;
const NOW_S = Math.floor(Date.now() / 1000);
const log = createLogger('silent');

const ACCOUNTS = [
  { accountId: 'l-basic', plan: 'basic', keys: ['b1'] },
  { accountId: 'l-pro', plan: 'pro', keys: ['p1', 'p2'] },
  { accountId: 'l-max', plan: 'max', keys: ['m1'] },
] as const;
type KeyName = (typeof ACCOUNTS)[number]['keys'][number];
const keys = {} as Record<KeyName, string>;

const TRADER = makeWallet('live-trader');
const OTHER_TRADER = makeWallet('live-other');
const MARKETS = [1, 2, 3, 4, 5, 6].map((index) => makeConditionId(`live-${index}`));
const [M1, M2] = MARKETS as [string, string];

beforeAll(async () => {
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    Object.assign(keys, await publishTestAccounts(publisher, ACCOUNTS, NOW_S));
    await publisher.publish(
      'markets',
      MARKETS.map((conditionId, index) =>
        makeMarket({ condition_id: conditionId, outcome1: `Yes ${index}`, outcome2: `No ${index}` }),
      ),
    );
  });
});

/** A slot store that tells the test when the server gave a slot back or renewed its leases. */
class WatchedSlots implements SlotStore {
  readonly kind: 'memory' | 'redis';
  #released: (() => void)[] = [];
  #renewed: (() => void)[] = [];
  /** Releases by user (a user's connections count under `<user>:connections`). */
  readonly releases = new Map<string, number>();
  constructor(readonly target: SlotStore) {
    this.kind = target.kind;
  }
  acquire(request: SlotRequest) {
    return this.target.acquire(request);
  }
  async renew(userId: string, slotIds: readonly string[], leaseMs: number, nowMs: number | null) {
    const lost = await this.target.renew(userId, slotIds, leaseMs, nowMs);
    for (const wake of this.#renewed.splice(0)) wake();
    return lost;
  }
  async release(userId: string, slotId: string) {
    try {
      await this.target.release(userId, slotId);
    } finally {
      this.releases.set(userId, (this.releases.get(userId) ?? 0) + 1);
      for (const wake of this.#released.splice(0)) wake();
    }
  }
  inUse(userId: string, nowMs: number | null) {
    return this.target.inUse(userId, nowMs);
  }
  watching(nowMs: number | null) {
    return this.target.watching(nowMs);
  }
  watchedMarkets(nowMs: number | null) {
    return this.target.watchedMarkets(nowMs);
  }
  putFollows(follows: readonly Follow[], leaseMs: number, nowMs: number | null) {
    return this.target.putFollows(follows, leaseMs, nowMs);
  }
  removeFollow(id: string) {
    return this.target.removeFollow(id);
  }
  followed(nowMs: number | null) {
    return this.target.followed(nowMs);
  }
  close() {
    return this.target.close();
  }
  nextRelease(): Promise<void> {
    return new Promise((resolve) => this.#released.push(resolve));
  }
  /** Resolves once `count` more slots of the user have been given back. */
  async released(userId: string, count: number): Promise<void> {
    const target = (this.releases.get(userId) ?? 0) + count;
    while ((this.releases.get(userId) ?? 0) < target) await this.nextRelease();
  }
  nextRenewal(): Promise<void> {
    return new Promise((resolve) => this.#renewed.push(resolve));
  }
}

type Instance = LiveServer & { slots: WatchedSlots };

const instances: Instance[] = [];

/** A listening server with the live plane fed by its own in-process log, its slots watched by the test. */
async function startInstance(
  options: { slots?: SlotStore; clock?: { ms: number }; config?: Config } = {},
): Promise<Instance> {
  const slots = new WatchedSlots(options.slots ?? new MemorySlots());
  const clock = options.clock;
  const server = await startLiveServer(options.config ?? config, log, {
    slots,
    ...(clock ? { slotsClockMs: () => clock.ms } : {}),
  });
  const instance = { ...server, slots };
  instances.push(instance);
  return instance;
}

afterAll(async () => {
  for (const instance of instances.splice(0)) await instance.close().catch(() => undefined);
});

const Client = LiveClient;
type Client = LiveClient;

async function connect(
  instance: Instance,
  key: KeyName | string,
  how: 'header' | 'protocol' = 'header',
): Promise<Client> {
  const secret = key in keys ? keys[key as KeyName] : key;
  const socket =
    how === 'header'
      ? new WebSocket(instance.url, [PROTOCOL], { headers: { authorization: `Bearer ${secret}` } })
      : new WebSocket(instance.url, [PROTOCOL, `bearer.${secret}`]);
  const client = new Client(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return client;
}

async function ready(instance: Instance, key: KeyName, how: 'header' | 'protocol' = 'header') {
  const client = await connect(instance, key, how);
  const hello = await client.nextOf('ready');
  return { client, hello };
}

describe('connecting', () => {
  it('authenticates with the Authorization header and with the bearer subprotocol (never echoed)', async () => {
    const instance = await startInstance();
    const byHeader = await ready(instance, 'p1');
    expect(byHeader.hello).toEqual({
      type: 'ready',
      protocol: PROTOCOL,
      plan: config.plans.pro.name,
      live_slots: config.plans.pro.liveSlots,
      slots_in_use: 0,
      heartbeat_s: config.live.heartbeatSeconds,
    });
    const byProtocol = await ready(instance, 'b1', 'protocol');
    expect(byProtocol.client.socket.protocol).toBe(PROTOCOL);
    expect(byProtocol.hello).toMatchObject({ plan: config.plans.basic.name, live_slots: config.plans.basic.liveSlots });
    await byHeader.client.close();
    await byProtocol.client.close();
  });

  it('refuses an unknown key with an error message and close code 4401', async () => {
    const instance = await startInstance();
    const client = await connect(instance, `tak_${'x'.repeat(40)}`);
    const error = await client.nextOf('error');
    expect(error.code).toBe('unauthorized');
    expect(await client.closed).toEqual({ code: 4401, reason: 'unauthorized' });
  });

  it('counts a user’s connections across keys: one more is told why and closed with 4429', async () => {
    const cap = 2;
    const instance = await startInstance({
      config: { ...config, live: { ...config.live, maxConnectionsPerUser: cap } },
    });
    const first = await ready(instance, 'p1');
    const second = await ready(instance, 'p2');
    const refused = await connect(instance, 'p1');
    expect(await refused.nextOf('error')).toMatchObject({ code: 'too_many_connections' });
    expect(await refused.closed).toEqual({ code: 4429, reason: 'too_many_connections' });
    // One goes: its place is free again.
    const released = instance.slots.released('l-pro:connections', 1);
    await first.client.close();
    await released;
    const third = await ready(instance, 'p1');
    expect(third.hello.type).toBe('ready');
    await second.client.close();
    await third.client.close();
  });

  it('answers a plain GET with 426 and how to connect', async () => {
    const instance = await startInstance();
    const response = await instance.app.inject({ method: 'GET', url: `${API}/live` });
    expect(response.statusCode).toBe(426);
    expect(response.json()).toMatchObject({ error: 'upgrade_required' });
  });
});

describe('OAuth access tokens (as on /mcp)', () => {
  it('accept a token of the issuer for a known account; refuse one without the scope (4403) or for no account (4401)', async () => {
    const pair = await generateKeyPair('RS256');
    const jwks = JSON.stringify({
      keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }],
    });
    const issuer = http.createServer((request, response) => {
      if (request.url === '/.well-known/jwks.json')
        response.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => issuer.listen(0, '127.0.0.1', resolve));
    const issuerUrl = `http://127.0.0.1:${(issuer.address() as AddressInfo).port}`;
    try {
      // The same database, with OAuth switched on.
      const oauthConfig = parseConfig(
        {
          DATA_DIR: config.dataDir,
          CLICKHOUSE_DATABASE: config.clickhouse.database,
          LOG_LEVEL: 'error',
          PUBLIC_URL: 'http://localhost:8080',
          MCP_OAUTH_ISSUER: issuerUrl,
        },
        LIVE,
      );
      const instance = await startInstance({ config: oauthConfig });
      const token = (subject: string, scope = 'openid analytics:read') =>
        new SignJWT({ scope, client_id: 'browser' })
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setIssuer(issuerUrl)
          .setSubject(subject)
          .setAudience('http://localhost:8080/mcp')
          .setIssuedAt()
          .setExpirationTime(NOW_S + 600)
          .sign(pair.privateKey);

      const session = await connect(instance, await token('l-pro'), 'protocol');
      expect(await session.nextOf('ready')).toMatchObject({ plan: config.plans.pro.name });
      await session.close();

      const unscoped = await connect(instance, await token('l-pro', 'openid'), 'protocol');
      expect(await unscoped.nextOf('error')).toMatchObject({ code: 'insufficient_scope' });
      expect(await unscoped.closed).toEqual({ code: 4403, reason: 'insufficient_scope' });

      const nobody = await connect(instance, await token('no-such-account'), 'protocol');
      expect(await nobody.nextOf('error')).toMatchObject({ code: 'unauthorized' });
      expect(await nobody.closed).toEqual({ code: 4401, reason: 'unauthorized' });
    } finally {
      await new Promise((resolve) => issuer.close(resolve));
    }
  });
});

describe('bad messages are answered with errors, the connection stays', () => {
  it('names what is wrong and echoes the command id', async () => {
    const instance = await startInstance();
    const { client } = await ready(instance, 'm1');
    client.send('not json');
    expect(await client.nextOf('error')).toMatchObject({ code: 'bad_message' });
    expect(await client.command({ type: 'dance', id: 'c1' })).toMatchObject({
      type: 'error',
      code: 'bad_message',
      id: 'c1',
    });
    expect(await client.command({ type: 'watch', id: 'c2', trader: TRADER })).toMatchObject({
      type: 'error',
      code: 'bad_message',
      id: 'c2',
    });
    expect(await client.command({ type: 'watch', id: 'c3', trader: TRADER, market: '0x12' })).toMatchObject({
      type: 'error',
      code: 'invalid_condition_id',
      id: 'c3',
    });
    expect(await client.command({ type: 'watch', id: 'c4', trader: '0x1234', market: M1 })).toMatchObject({
      type: 'error',
      code: 'invalid_wallet',
      id: 'c4',
    });
    expect(
      await client.command({ type: 'watch', id: 'c5', trader: TRADER, market: makeConditionId('never-published') }),
    ).toMatchObject({ type: 'error', code: 'unknown_market', id: 'c5' });
    expect(await client.command({ type: 'unwatch', id: 'c6', trader: TRADER, market: M1 })).toMatchObject({
      type: 'error',
      code: 'not_subscribed',
      id: 'c6',
    });
    const pong = await client.command({ type: 'ping', id: 'c7' });
    expect(pong).toMatchObject({ type: 'pong', id: 'c7' });
    await client.close();
  });
});

describe('subscriptions', () => {
  it('watch: session start, the market’s trades and book, the trader’s fills there, the resolution, session stop; seq without gaps', async () => {
    const instance = await startInstance();
    const { client } = await ready(instance, 'm1');
    const ack = await client.command({ type: 'watch', id: 'w', trader: TRADER, market: M1 });
    expect(ack).toMatchObject({ type: 'ack', id: 'w', of: 'watch', market: M1, slots_in_use: 1 });
    expect(await client.nextOf('event')).toMatchObject({
      market: M1,
      wallet: TRADER,
      seq: 1,
      event: { type: 'session', state: 'start' },
    });

    // Not for this watch: another market's trade, another trader's fill, this trader's fill elsewhere.
    await instance.publisher.publish('trades', [makeTrade({ condition_id: M2 })]);
    await instance.publisher.publish('fillsArchive', [makeFill({ wallet: OTHER_TRADER, condition_id: M1 })]);
    await instance.publisher.publish('fillsArchive', [makeFill({ wallet: TRADER, condition_id: M2 })]);
    // For it: a token-2 trade at 0.30 (0.70 in UP space), a book tick, a token-2 fill, the resolution.
    // Each kind is its own topic, ordered within itself: the test awaits each before the next.
    const inputs: [() => Promise<void>, unknown][] = [
      [
        () =>
          instance.publisher.publish('trades', [
            makeTrade({ condition_id: M1, token_side: 2, price: 0.3, size_tokens: 10, usd: 3, ts: 1_767_556_900 }),
          ]),
        { type: 'trade', ts: 1_767_556_900, price: 0.7, size_tokens: 10, usd: 3, token_side: 2 },
      ],
      [
        () =>
          instance.publisher.publish('book', [{ condition_id: M1, ts: 1_767_556_901, seq: 1, bid: 0.69, ask: 0.71 }]),
        { type: 'book', ts: 1_767_556_901, bid: 0.69, ask: 0.71 },
      ],
      [
        () =>
          instance.publisher.publish('fillsArchive', [
            makeFill({
              wallet: TRADER,
              condition_id: M1,
              side: 'BUY',
              token_side: 2,
              price: 0.25,
              size_tokens: 4,
              usd: 1,
              ts: 1_767_556_902,
            }),
          ]),
        {
          type: 'fill',
          ts: 1_767_556_902,
          side: 'BUY',
          price: 0.75,
          token_side: 2,
          outcome: 'No 0',
          size_tokens: 4,
          usd: 1,
        },
      ],
      [
        () => instance.publisher.publish('markets', [makeResolution(M1, 2, 1_767_556_999)]),
        { type: 'resolution', ts: 1_767_556_999, winner: 'No 0', level: 0 },
      ],
    ];
    for (const [index, [publish, expected]] of inputs.entries()) {
      await publish();
      expect(await client.nextOf('event')).toEqual({
        type: 'event',
        market: M1,
        wallet: TRADER,
        seq: index + 2,
        event: expected,
      });
    }

    // Nothing happens in a resolved market any more: the watch ends, its slot is free.
    expect(await client.nextOf('event')).toMatchObject({ seq: 6, event: { type: 'session', state: 'stop' } });
    expect(await client.nextOf('ended')).toEqual({
      type: 'ended',
      market: M1,
      wallet: TRADER,
      reason: 'resolved',
      slots_in_use: 0,
    });
    await client.close();
  });

  it('unwatch: a session stop event, then the ack; the slot is free', async () => {
    const instance = await startInstance();
    const { client } = await ready(instance, 'm1');
    await client.command({ type: 'watch', trader: TRADER, market: M2 });
    expect(await client.nextOf('event')).toMatchObject({ seq: 1, event: { type: 'session', state: 'start' } });
    client.send({ type: 'unwatch', id: 'u', trader: TRADER, market: M2 });
    expect(await client.nextOf('event')).toMatchObject({ seq: 2, event: { type: 'session', state: 'stop' } });
    expect(await client.nextOf('ack')).toMatchObject({ id: 'u', of: 'unwatch', slots_in_use: 0 });
    await client.close();
  });

  it('a watch ends at its longest (live.maxWatchSeconds): a session stop, then ended', async () => {
    const instance = await startInstance({
      config: { ...config, live: { ...config.live, maxWatchSeconds: 0.05 } },
    });
    const { client } = await ready(instance, 'm1');
    await client.command({ type: 'watch', trader: TRADER, market: M2 });
    expect(await client.nextOf('event')).toMatchObject({ seq: 1, event: { type: 'session', state: 'start' } });
    expect(await client.nextOf('event')).toMatchObject({ seq: 2, event: { type: 'session', state: 'stop' } });
    expect(await client.nextOf('ended')).toMatchObject({ market: M2, reason: 'max_duration', slots_in_use: 0 });
    await client.close();
  });

  it('follow: the trader’s fills in every market, no slot, nothing else', async () => {
    const instance = await startInstance();
    const { client } = await ready(instance, 'b1');
    expect(await client.command({ type: 'follow', trader: TRADER })).toMatchObject({
      type: 'ack',
      of: 'follow',
      trader: { wallet: TRADER },
      slots_in_use: 0,
    });
    await instance.publisher.publish('trades', [makeTrade({ condition_id: M1 })]);
    await instance.publisher.publish('fillsArchive', [makeFill({ wallet: OTHER_TRADER, condition_id: M1 })]);
    await instance.publisher.publish('fillsArchive', [
      makeFill({ wallet: TRADER, condition_id: M1, token_side: 1, price: 0.4 }),
      makeFill({ wallet: TRADER, condition_id: M2, side: 'SELL', token_side: 1, price: 0.6 }),
    ]);
    const first = await client.nextOf('event');
    const second = await client.nextOf('event');
    expect([first.market, first.seq, first.event]).toEqual([
      M1,
      1,
      expect.objectContaining({ type: 'fill', price: 0.4, outcome: 'Yes 0' }),
    ]);
    expect([second.market, second.seq, second.event]).toEqual([
      M2,
      2,
      expect.objectContaining({ type: 'fill', side: 'SELL', price: 0.6, outcome: 'Yes 1' }),
    ]);
    expect(await client.command({ type: 'unfollow', trader: TRADER })).toMatchObject({ type: 'ack', of: 'unfollow' });
    await client.close();
  });

  it('streams consume no calls: only the /me calls count', async () => {
    const instance = await startInstance();
    const me = async () =>
      (
        await instance.app.inject({ method: 'GET', url: `${API}/me`, headers: { authorization: `Bearer ${keys.m1}` } })
      ).json() as { usage: { month: { requests: number } } };
    const before = (await me()).usage.month.requests;
    const { client } = await ready(instance, 'm1');
    await client.command({ type: 'watch', trader: TRADER, market: M1 });
    await client.nextOf('event');
    await client.command({ type: 'follow', trader: TRADER });
    await instance.publisher.publish('fillsArchive', [makeFill({ wallet: TRADER, condition_id: M1 })]);
    // The fill reaches both subscriptions (the watch and the follow).
    await client.nextOf('event');
    await client.nextOf('event');
    await client.command({ type: 'ping' });
    await client.close();
    expect((await me()).usage.month.requests).toBe(before + 1);
  });

  it('popular: the shelf at once, without a slot', async () => {
    const instance = await startInstance();
    const { client } = await ready(instance, 'b1');
    expect(await client.command({ type: 'popular', id: 'p' })).toMatchObject({
      type: 'ack',
      of: 'popular',
      slots_in_use: 0,
    });
    const shelf = await client.nextOf('popular');
    expect(shelf.count).toBe(shelf.traders.length);
    await client.close();
  });
});

/** Both slot stores: process memory, and the machine's Redis under a prefix of this test's own. */
const redisPrefix = `test:${uniqueId('live')}:`;
const redisConnections: Redis[] = [];
function slotStore(kind: 'memory' | 'redis', prefix = `${redisPrefix}${kind}:`): SlotStore {
  if (kind === 'memory') return new MemorySlots();
  const redis = new Redis(TEST_REDIS_URL);
  redisConnections.push(redis);
  return new RedisSlots(redis, prefix);
}

afterAll(async () => {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    await deleteKeysWithPrefix(redis, redisPrefix);
  } finally {
    await redis.quit();
    for (const connection of redisConnections) connection.disconnect();
  }
});

describe.each(['memory', 'redis'] as const)('slots (%s)', (kind) => {
  /** A watch's answer; a new watch's session start is read too. */
  const watch = async (client: Client, market: string, again = false) => {
    const answer = await client.command({ type: 'watch', trader: TRADER, market });
    if (answer.type === 'ack' && !again) await client.nextOf('event');
    return answer;
  };

  it('counts one user across two connections and two keys; freed on unwatch and on disconnect', async () => {
    const instance = await startInstance({ slots: slotStore(kind, `${redisPrefix}${kind}:limits:`) });
    const cap = config.plans.pro.liveSlots;
    const a = (await ready(instance, 'p1')).client;
    const b = (await ready(instance, 'p2')).client;
    for (let index = 0; index < cap; index++) {
      const client = index % 2 === 0 ? a : b;
      expect(await watch(client, MARKETS[index]!)).toMatchObject({ type: 'ack', slots_in_use: index + 1 });
    }
    const refused = await watch(b, MARKETS[cap]!);
    expect(refused).toMatchObject({ type: 'error', code: 'no_free_slot', slots_in_use: cap, live_slots: cap });
    expect(await watch(a, MARKETS[cap]!)).toMatchObject({ type: 'error', code: 'no_free_slot' });
    // The same watch again holds no second slot.
    expect(await watch(a, MARKETS[0]!, true)).toMatchObject({ type: 'ack', slots_in_use: cap });

    const me = await instance.app.inject({
      method: 'GET',
      url: `${API}/me`,
      headers: { authorization: `Bearer ${keys.p2}` },
    });
    expect(me.json().usage.live).toEqual({ slots_in_use: cap });
    // The watched markets, as the clob role reads them from the same store.
    expect(await instance.slots.watchedMarkets(null)).toEqual(new Set(MARKETS.slice(0, cap)));

    // Unwatch on a: b takes the slot.
    a.send({ type: 'unwatch', trader: TRADER, market: MARKETS[0] });
    await a.nextOf('event');
    expect(await a.nextOf('ack')).toMatchObject({ slots_in_use: cap - 1 });
    expect(await watch(b, MARKETS[cap]!)).toMatchObject({ type: 'ack', slots_in_use: cap });
    expect(await instance.slots.watchedMarkets(null)).toEqual(new Set(MARKETS.slice(1, cap + 1)));

    // b goes away: its two slots come back.
    const released = instance.slots.released('l-pro', 2);
    await b.close();
    await released;
    expect(await watch(a, MARKETS[0]!)).toMatchObject({ type: 'ack', slots_in_use: 2 });
    await a.close();
  });

  it('holds each plan to its own slots (Basic, Max)', async () => {
    const instance = await startInstance({ slots: slotStore(kind, `${redisPrefix}${kind}:plans:`) });
    for (const [key, limits] of [
      ['b1', config.plans.basic],
      ['m1', config.plans.max],
    ] as const) {
      const client = (await ready(instance, key)).client;
      for (let index = 0; index < limits.liveSlots; index++)
        expect(await watch(client, MARKETS[index]!)).toMatchObject({ type: 'ack', slots_in_use: index + 1 });
      expect(await watch(client, MARKETS[limits.liveSlots]!)).toMatchObject({
        type: 'error',
        code: 'no_free_slot',
        slots_in_use: limits.liveSlots,
        live_slots: limits.liveSlots,
      });
      await client.close();
    }
  });
});

describe('lease expiry (two instances on one Redis)', () => {
  it('a slot of an instance that died frees itself when its lease runs out; a live one is renewed', async () => {
    const prefix = `${redisPrefix}lease:`;
    const clock = { ms: Date.UTC(2026, 0, 1) };
    const leaseMs = config.live.slotLeaseSeconds * 1000;
    const dyingRedis = new Redis(TEST_REDIS_URL);
    const dying = await startInstance({ slots: new RedisSlots(dyingRedis, prefix), clock, config: quickBeats(0.25) });
    const survivor = await startInstance({ slots: slotStore('redis', prefix), clock, config: quickBeats(0.25) });

    const doomed = (await ready(dying, 'b1')).client;
    expect(await doomed.command({ type: 'watch', trader: TRADER, market: M1 })).toMatchObject({
      type: 'ack',
      slots_in_use: 1,
    });
    await doomed.nextOf('event');

    // While its instance lives, the lease is renewed: past the first lease, the slot is still taken.
    clock.ms += leaseMs * 0.75;
    // The second renewal certainly started after the clock moved.
    await dying.slots.nextRenewal();
    await dying.slots.nextRenewal();
    clock.ms += leaseMs * 0.75;
    const other = (await ready(survivor, 'b1')).client;
    expect(await other.command({ type: 'watch', trader: TRADER, market: M2 })).toMatchObject({ code: 'no_free_slot' });

    // The instance dies: it neither renews nor gives its slot back.
    await dying.slots.nextRenewal();
    dyingRedis.disconnect();
    await dying.close();
    expect(await other.command({ type: 'watch', trader: TRADER, market: M2 })).toMatchObject({ code: 'no_free_slot' });
    // The dead instance's watch still counts on /popular until its lease runs out, and not after.
    expect(await watchingOn(survivor, TRADER)).toBe(1);
    clock.ms += leaseMs + 1;
    expect(await watchingOn(survivor, TRADER)).toBe(0);
    expect(await other.command({ type: 'watch', trader: TRADER, market: M2 })).toMatchObject({
      type: 'ack',
      slots_in_use: 1,
    });
    await other.close();
  });
});

/** `/popular`'s live watcher count of a trader on an instance (0 when the trader is not on the shelf). */
async function watchingOn(instance: Instance, wallet: string): Promise<number> {
  const response = await instance.app.inject({
    method: 'GET',
    url: `${API}/popular`,
    headers: { authorization: `Bearer ${keys.p1}` },
  });
  expect(response.statusCode).toBe(200);
  const shelf = response.json() as { traders: { wallet: string; watching: number }[] };
  return shelf.traders.find((trader) => trader.wallet === wallet)?.watching ?? 0;
}

describe.each(['memory', 'redis'] as const)('watcher counts (%s)', (kind) => {
  it('/popular counts the sessions watching a trader now (on every instance), and forgets them as they end', async () => {
    const prefix = `${redisPrefix}watching:${kind}:`;
    const first = await startInstance({ slots: slotStore(kind, prefix) });
    // With Redis, a second instance shares the counts; in memory there is one instance.
    const second = kind === 'redis' ? await startInstance({ slots: slotStore(kind, prefix) }) : first;
    const both = async () => [await watchingOn(first, TRADER), await watchingOn(second, TRADER)];
    expect(await both()).toEqual([0, 0]);

    const pro = (await ready(first, 'p1')).client;
    const max = (await ready(second, 'm1')).client;
    const basic = (await ready(second, 'b1')).client;
    expect(await pro.command({ type: 'watch', trader: TRADER, market: M1 })).toMatchObject({ type: 'ack' });
    await pro.nextOf('event');
    expect(await both()).toEqual([1, 1]);
    expect(await max.command({ type: 'watch', trader: TRADER, market: M2 })).toMatchObject({ type: 'ack' });
    await max.nextOf('event');
    expect(await both()).toEqual([2, 2]);
    // Following a trader's fills is no watch; another trader's watch counts for that trader.
    expect(await basic.command({ type: 'follow', trader: TRADER })).toMatchObject({ type: 'ack' });
    expect(await basic.command({ type: 'watch', trader: OTHER_TRADER, market: M1 })).toMatchObject({ type: 'ack' });
    await basic.nextOf('event');
    expect(await both()).toEqual([2, 2]);
    expect(await watchingOn(first, OTHER_TRADER)).toBe(1);

    // The shelf pushed to a popular subscription carries the same count.
    expect(await basic.command({ type: 'popular' })).toMatchObject({ type: 'ack', of: 'popular' });
    const shelf = await basic.nextOf('popular');
    expect(shelf.traders.find((trader) => trader.wallet === TRADER)).toMatchObject({ watching: 2 });
    expect(shelf.traders[0]).toMatchObject({ wallet: TRADER, watching: 2 });

    // An unwatch ends one watch, a disconnect the other.
    pro.send({ type: 'unwatch', trader: TRADER, market: M1 });
    await pro.nextOf('event');
    await pro.nextOf('ack');
    expect(await both()).toEqual([1, 1]);
    const released = second.slots.released('l-max', 1);
    await max.close();
    await released;
    expect(await both()).toEqual([0, 0]);
    expect(await watchingOn(first, OTHER_TRADER)).toBe(1);
    await Promise.all([pro.close(), basic.close()]);
  });
});

describe('ending connections with a reason', () => {
  it('a client that answers no ping is closed with 4000 no_pong, its slot freed', async () => {
    const instance = await startInstance({ config: quickBeats(0.05) });
    const { client } = await ready(instance, 'p1');
    expect(await client.command({ type: 'watch', trader: TRADER, market: M1 })).toMatchObject({ type: 'ack' });
    await client.nextOf('event');
    // Paused, the client reads no ping and so sends no pong.
    const raw = (client.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    const released = instance.slots.released('l-pro', 1);
    raw.pause();
    await released;
    raw.resume();
    expect(await client.closed).toEqual({ code: 4000, reason: 'no_pong' });
    expect(client.messages.at(-1)).toMatchObject({ type: 'error', code: 'no_pong' });
  });

  it('a server that stops tells its clients (1001 shutting_down) and gives their slots back', async () => {
    const instance = await startInstance();
    const { client } = await ready(instance, 'b1');
    expect(await client.command({ type: 'watch', trader: TRADER, market: M1 })).toMatchObject({ type: 'ack' });
    await client.nextOf('event');
    const released = instance.slots.released('l-basic', 1);
    await instance.app.close();
    await released;
    expect(await client.nextOf('error')).toMatchObject({ code: 'shutting_down' });
    expect(await client.closed).toEqual({ code: 1001, reason: 'shutting_down' });
  });
});

describe('a slow client', () => {
  it('is told it is too slow, closed with 4408, and its slot is freed', async () => {
    // No pings meanwhile: a client that does not read would be closed as silent first.
    const slowConfig: Config = { ...config, live: { ...config.live, queueBytes: 64 * 1024, heartbeatSeconds: 600 } };
    const instance = await startInstance({ config: slowConfig });
    const tooSlow = async () =>
      (await liveDisconnects.get()).values.find((sample) => sample.labels.reason === 'too_slow')?.value ?? 0;
    const droppedBefore = await tooSlow();
    const { client } = await ready(instance, 'p1');
    expect(await client.command({ type: 'watch', trader: TRADER, market: M1 })).toMatchObject({ type: 'ack' });
    await client.nextOf('event');
    // The client stops reading: the server's queue fills behind the network buffers.
    const raw = (client.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    raw.pause();
    const released = instance.slots.released('l-pro', 1);
    let freed = false;
    void released.then(() => (freed = true));
    for (let round = 0; !freed; round++) {
      await instance.publisher.publish(
        'trades',
        Array.from({ length: 500 }, (_, index) => makeTrade({ condition_id: M1, seq: round * 500 + index })),
      );
      await turn();
    }
    raw.resume();
    const { code, reason } = await client.closed;
    expect({ code, reason }).toEqual({ code: 4408, reason: 'too_slow' });
    const last = client.messages.at(-1);
    expect(last).toMatchObject({ type: 'error', code: 'too_slow' });
    expect(await instance.slots.inUse('l-pro', null)).toBe(0);
    expect(await tooSlow()).toBe(droppedBefore + 1);
  });
});
