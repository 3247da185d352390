/**
 * The live plane's fast path without a node (issue 45): a wallet watched or followed on the plane has its
 * new /activity rows polled every few seconds, while it is watched or followed, within a stated share of
 * the provider's rate budget; a tracked wallet nobody watches keeps its slow period. A local server replays
 * the recorded data-API answers (swisstony's real activity rows); the poller runs on a virtual clock, so
 * periods are counted, not waited for. A follow reaches the poller the way it does in production: a client
 * follows on a listening plane, whose slot store (process memory, or the machine's Redis read through a
 * connection of the poller's own) is what the `upstream` role reads.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseConfig, type Config } from '../config.ts';
import { createUpstreamClient } from '../ingest/sources/upstream/index.ts';
import { UpstreamPoller } from '../ingest/sources/upstream/poller.ts';
import { MemoryRequestedWallets } from '../ingest/sources/upstream/requests.ts';
import { MemoryStateStore } from '../ingest/sources/upstream/state.ts';
import { VirtualClock } from '../ingest/sources/upstream/test-support.ts';
import { createLogger } from '../log.ts';
import { fastPathWallets, MemorySlots, type SlotStore } from '../operations/gates/slots.ts';
import { RedisSlots } from '../operations/gates/slots-redis.ts';
import { withPublisher } from '../roles/runtime.ts';
import { inProcessConfig, publishTestAccounts } from './harness/api.ts';
import { uniqueId } from './harness/context.ts';
import { LiveClient, startLiveServer } from './harness/live.ts';
import { RecordingSink } from './harness/polymarket.ts';
import { deleteKeysWithPrefix } from './harness/redis.ts';
import { loadFixture, PolymarketReplay, type Json } from './harness/polymarket-replay.ts';

const SWISSTONY = '0x204f72f35326db932158cba6adff0b9a1da95e14';
const UNWATCHED = '0x1111111111111111111111111111111111111111';
/** A few minutes after the recorded rows: they are the watched wallet's recent activity. */
const NOW = 1_786_120_500;

// The recorded rows, newest first (as the data API lists them): the older half is the history, the
// newer ones arrive while the wallet is watched.
const recorded = loadFixture<Json[]>('data-api/polyprinter_activity_sample.json');
const history = recorded.slice(10);
const arrivals = recorded.slice(0, 10).reverse();

/** The contract's fast-path terms, as docs/upstream.md states them: every 5 s, a quarter of the data API budget. */
const WATCHED_EVERY_S = 5;
const DATA_API_PER_SECOND = 1000 / 10;

function pollerConfig(replay: PolymarketReplay): Config {
  return parseConfig({ LOG_LEVEL: 'silent', ...replay.environment() });
}

function makePoller(
  config: Config,
  clock: VirtualClock,
  sink: RecordingSink,
  watched: () => readonly string[] | Promise<readonly string[]>,
) {
  const log = createLogger('silent');
  const requested = new MemoryRequestedWallets();
  requested.note(UNWATCHED, NOW - 60);
  return new UpstreamPoller({
    http: createUpstreamClient(config, log, clock),
    sink,
    state: new MemoryStateStore(),
    config: config.upstream,
    clock,
    log,
    requested,
    watched: async () => watched(),
    reject: async () => {},
  });
}

/** /activity requests of one wallet so far. */
function activityRequests(replay: PolymarketReplay, wallet: string): number {
  return replay.requests.filter((seen) => seen.startsWith('GET /data/activity') && seen.includes(wallet)).length;
}

/** The distinct fills and legs of a wallet published so far (a row polled again is the same event). */
const rowIds = (sink: RecordingSink, wallet: string) =>
  new Set(
    [...sink.events('fillsUpstream'), ...sink.events('positions')]
      .filter((event: { wallet: string }) => event.wallet === wallet)
      .map((event: { tx_hash: string; log_index: number }) => `${event.tx_hash}:${event.log_index}`),
  );

describe('the upstream fast path for watched wallets', () => {
  const replay = new PolymarketReplay();
  beforeAll(async () => {
    await replay.start();
  });
  afterAll(() => replay.stop());

  it('publishes a watched wallet’s new row within one period; an unwatched tracked wallet keeps its 900 s', async () => {
    const rows = [...history];
    replay.wallets.set(SWISSTONY, { activity: [rows] });
    replay.wallets.set(UNWATCHED, { activity: [[]] });
    const config = pollerConfig(replay);
    expect(config.upstream.watched.everySeconds).toBe(WATCHED_EVERY_S);
    expect(config.upstream.walletEverySeconds).toBe(900);
    const clock = new VirtualClock(NOW * 1000);
    const sink = new RecordingSink();
    const poller = makePoller(config, clock, sink, () => [SWISSTONY]);

    await poller.tick();
    expect(rowIds(sink, SWISSTONY).size).toBe(history.length);

    // Each new recorded row appears at the provider; within one period (5 ticks a second apart) it is published.
    for (const row of arrivals) {
      rows.unshift(row);
      const before = rowIds(sink, SWISSTONY).size;
      let ticks = 0;
      while (rowIds(sink, SWISSTONY).size === before && ticks <= WATCHED_EVERY_S) {
        clock.advance(1000);
        await poller.tick();
        ticks += 1;
      }
      expect(ticks, `${String(row.type)} at ${String(row.timestamp)}`).toBeLessThanOrEqual(WATCHED_EVERY_S);
      expect(rowIds(sink, SWISSTONY).size).toBe(before + 1);
    }

    // A quarter of an hour of ticks: the watched wallet every 5 s, the unwatched one at its start and at 900 s.
    const startAt = clock.now();
    const watchedBefore = activityRequests(replay, SWISSTONY);
    const unwatchedBefore = activityRequests(replay, UNWATCHED);
    while (clock.now() - startAt < 900_000) {
      clock.advance(1000);
      await poller.tick();
    }
    // One poll a period: 180 in 900 s, give or take the period the window starts in.
    expect(Math.abs(activityRequests(replay, SWISSTONY) - watchedBefore - 900 / WATCHED_EVERY_S)).toBeLessThanOrEqual(
      1,
    );
    expect(unwatchedBefore).toBe(1);
    expect(activityRequests(replay, UNWATCHED) - unwatchedBefore).toBe(1);
  }, 120_000);

  it('stays inside its share of the rate budget however many wallets are watched, and reaches each in turn', async () => {
    const watched = Array.from({ length: 200 }, (_, index) => `0x${(index + 1).toString(16).padStart(40, '0')}`);
    const config = pollerConfig(replay);
    const clock = new VirtualClock(NOW * 1000);
    const poller = makePoller(config, clock, new RecordingSink(), () => watched);
    const share = config.upstream.watched.share;
    expect(share).toBe(0.25);
    const perSecond = DATA_API_PER_SECOND * config.upstream.rateFraction * share;
    const seconds = 60;
    const before = replay.requests.length;
    for (let second = 0; second < seconds; second++) {
      await poller.tick();
      clock.advance(1000);
    }
    const asked = replay.requests.slice(before).filter((seen) => seen.startsWith('GET /data/activity'));
    // At most a second's worth of tokens at the start, then the share's rate.
    expect(asked.length).toBeLessThanOrEqual(perSecond * (seconds + 1));
    // It uses what it has: no second's worth of tokens goes unspent while wallets wait.
    expect(asked.length).toBeGreaterThanOrEqual(Math.floor(perSecond) * (seconds - 1));
    const polled = new Set(watched.filter((wallet) => asked.some((seen) => seen.includes(wallet))));
    expect(polled.size).toBe(watched.length);
  }, 120_000);

  it('forgets a wallet once it is no longer watched', async () => {
    replay.wallets.set(SWISSTONY, { activity: [[...recorded]] });
    const config = pollerConfig(replay);
    const clock = new VirtualClock(NOW * 1000);
    let watched = [SWISSTONY];
    const poller = makePoller(config, clock, new RecordingSink(), () => watched);
    await poller.tick();
    watched = [];
    const before = activityRequests(replay, SWISSTONY);
    for (let second = 0; second < 4 * WATCHED_EVERY_S; second++) {
      clock.advance(1000);
      await poller.tick();
    }
    expect(activityRequests(replay, SWISSTONY)).toBe(before);
  }, 120_000);
});

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe.each(['memory', 'redis'] as const)('a wallet followed on the plane (slots in %s)', (kind) => {
  const replay = new PolymarketReplay();
  const liveConfig = inProcessConfig('upstream-followed');
  const log = createLogger('silent');
  const redisPrefix = `test:${uniqueId('upstream-followed')}:`;
  const closing: (() => Promise<unknown>)[] = [];
  let key = '';
  beforeAll(async () => {
    await replay.start();
    await withPublisher(liveConfig, createLogger('error'), async ({ publisher }) => {
      key = (
        await publishTestAccounts(
          publisher,
          [{ accountId: `follower-${kind}`, plan: 'basic', keys: ['k'] }],
          Math.floor(Date.now() / 1000),
        )
      ).k;
    });
  });
  afterAll(async () => {
    for (const close of closing.reverse()) await close().catch(() => undefined);
    replay.stop();
    const redis = new Redis(TEST_REDIS_URL);
    await deleteKeysWithPrefix(redis, redisPrefix).finally(() => redis.quit());
  });

  /** The plane's slot store and the upstream role's view of it (the same store in memory; two connections to Redis). */
  function slotStores(): { plane: SlotStore; upstream: SlotStore } {
    if (kind === 'memory') {
      const slots = new MemorySlots();
      return { plane: slots, upstream: slots };
    }
    const plane = new RedisSlots(new Redis(TEST_REDIS_URL), redisPrefix);
    const upstream = new RedisSlots(new Redis(TEST_REDIS_URL), redisPrefix);
    closing.push(
      () => plane.close(),
      () => upstream.close(),
    );
    return { plane, upstream };
  }

  it('publishes its new row within one period while followed, and polls it no more once unfollowed', async () => {
    const rows = [...history];
    replay.wallets.set(SWISSTONY, { activity: [rows] });
    const slots = slotStores();
    const server = await startLiveServer(liveConfig, log, { slots: slots.plane });
    closing.push(() => server.close());
    const socket = new WebSocket(server.url, [liveConfig.live.protocol], {
      headers: { authorization: `Bearer ${key}` },
    });
    const client = new LiveClient(socket);
    closing.push(() => client.close());
    await client.nextOf('ready');

    const config = pollerConfig(replay);
    const clock = new VirtualClock(NOW * 1000);
    const sink = new RecordingSink();
    // The poller reads what the `upstream` role reads: the wallets watched or followed now, on every instance.
    const upstream = makePoller(config, clock, sink, () => fastPathWallets(slots.upstream, null));

    // Not followed yet: the fast path does not poll it.
    await upstream.tick();
    expect(activityRequests(replay, SWISSTONY)).toBe(0);

    expect(await client.command({ type: 'follow', trader: SWISSTONY })).toMatchObject({ type: 'ack', of: 'follow' });
    await upstream.tick();
    expect(rowIds(sink, SWISSTONY).size).toBe(history.length);
    for (const row of arrivals.slice(0, 3)) {
      rows.unshift(row);
      const before = rowIds(sink, SWISSTONY).size;
      let ticks = 0;
      while (rowIds(sink, SWISSTONY).size === before && ticks <= WATCHED_EVERY_S) {
        clock.advance(1000);
        await upstream.tick();
        ticks += 1;
      }
      expect(ticks, `${String(row.type)} at ${String(row.timestamp)}`).toBeLessThanOrEqual(WATCHED_EVERY_S);
      expect(rowIds(sink, SWISSTONY).size).toBe(before + 1);
    }

    expect(await client.command({ type: 'unfollow', trader: SWISSTONY })).toMatchObject({
      type: 'ack',
      of: 'unfollow',
    });
    const polled = activityRequests(replay, SWISSTONY);
    for (let second = 0; second < 4 * WATCHED_EVERY_S; second++) {
      clock.advance(1000);
      await upstream.tick();
    }
    expect(activityRequests(replay, SWISSTONY)).toBe(polled);
  }, 120_000);
});
