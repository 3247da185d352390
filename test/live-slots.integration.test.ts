/**
 * The slot stores' contract, the same for both (process memory, and the machine's Redis under a key
 * prefix of this test's own, deleted afterwards): a slot per watch up to the plan's cap, the same watch
 * again holds no second slot, one user's count is apart from another's, a release frees at once, a
 * renewal extends only the slots still held, and a lease not renewed runs out; the slots naming a trader
 * are its watchers, every user's, under the same leases; the follows name the wallets followed now, every
 * instance's, under leases of their own. The clock is the test's.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { Config } from '../config.ts';
import { createLogger } from '../log.ts';
import { openSlotStore } from '../operations/gates/open.ts';
import { RedisSlots } from '../operations/gates/slots-redis.ts';
import { fastPathWallets, type SlotStore } from '../operations/gates/slots.ts';
import { inProcessConfig } from './harness/api.ts';
import { uniqueId } from './harness/context.ts';
import { deleteKeysWithPrefix } from './harness/redis.ts';

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const config = inProcessConfig('live-slots');
const prefix = `test:${uniqueId('live-slots')}:`;
const opened: SlotStore[] = [];
let serial = 0;

function open(kind: 'memory' | 'redis'): SlotStore {
  const store =
    kind === 'memory'
      ? openSlotStore({ ...config, redis: { ...config.redis, url: undefined } } as Config, createLogger('silent'))
      : new RedisSlots(new Redis(TEST_REDIS_URL), `${prefix}${++serial}:`);
  opened.push(store);
  return store;
}

afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
  const redis = new Redis(TEST_REDIS_URL);
  try {
    await deleteKeysWithPrefix(redis, prefix);
  } finally {
    await redis.quit();
  }
});

describe.each(['memory', 'redis'] as const)('slot store (%s)', (kind) => {
  const leaseMs = config.live.slotLeaseSeconds * 1000;
  const cap = config.plans.pro.liveSlots;
  const start = Date.UTC(2026, 0, 1);

  it('takes a slot per watch up to the cap; the same watch again holds no second one; users apart', async () => {
    const slots = open(kind);
    const acquire = (userId: string, slotId: string, nowMs = start) =>
      slots.acquire({ userId, slotId, cap, leaseMs, nowMs });
    for (let index = 1; index <= cap; index++)
      expect(await acquire('u', `w${index}`)).toEqual({ kind: 'acquired', inUse: index });
    expect(await acquire('u', 'extra')).toEqual({ kind: 'full', inUse: cap, cap });
    expect(await acquire('u', 'w1')).toEqual({ kind: 'held', inUse: cap });
    expect(await acquire('other', 'w1')).toEqual({ kind: 'acquired', inUse: 1 });
    expect(await slots.inUse('u', start)).toBe(cap);

    await slots.release('u', 'w2');
    await slots.release('u', 'w2');
    expect(await slots.inUse('u', start)).toBe(cap - 1);
    expect(await acquire('u', 'extra')).toEqual({ kind: 'acquired', inUse: cap });
  });

  it('renews the leases still held, names the lost ones, and lets an unrenewed lease run out', async () => {
    const slots = open(kind);
    await slots.acquire({ userId: 'u', slotId: 'kept', cap, leaseMs, nowMs: start });
    await slots.acquire({ userId: 'u', slotId: 'left', cap, leaseMs, nowMs: start });
    expect(await slots.renew('u', ['kept', 'never-taken'], leaseMs, start + leaseMs - 1)).toEqual(['never-taken']);
    // `left` was not renewed: past its lease it no longer counts, and a renewal cannot bring it back.
    expect(await slots.inUse('u', start + leaseMs)).toBe(1);
    expect(await slots.renew('u', ['kept', 'left'], leaseMs, start + leaseMs)).toEqual(['left']);
    expect(await slots.inUse('u', start + 2 * leaseMs - 2)).toBe(1);
    expect(await slots.inUse('u', start + 3 * leaseMs)).toBe(0);
    expect(await slots.acquire({ userId: 'u', slotId: 'next', cap: 1, leaseMs, nowMs: start + 3 * leaseMs })).toEqual({
      kind: 'acquired',
      inUse: 1,
    });
  });

  it('counts the slots naming a trader as its watchers, every user’s, under the same leases', async () => {
    const slots = open(kind);
    const watch = (userId: string, slotId: string, trader?: string, nowMs = start) =>
      slots.acquire({ userId, slotId, cap, leaseMs, nowMs, ...(trader ? { trader } : {}) });
    expect(await slots.watching(start)).toEqual(new Map());
    await watch('u', 'a', 'alice');
    await watch('v', 'a', 'alice');
    await watch('v', 'b', 'bob');
    await watch('v', 'connection');
    // A watch taken again is still one watcher.
    await watch('u', 'a', 'alice');
    expect(await slots.watching(start)).toEqual(
      new Map([
        ['alice', 2],
        ['bob', 1],
      ]),
    );

    await slots.release('u', 'a');
    expect(await slots.watching(start)).toEqual(
      new Map([
        ['alice', 1],
        ['bob', 1],
      ]),
    );
    // `v`'s alice is renewed, its bob is not: past the first lease only alice is watched.
    expect(await slots.renew('v', ['a', 'connection'], leaseMs, start + leaseMs - 1)).toEqual([]);
    expect(await slots.watching(start + leaseMs)).toEqual(new Map([['alice', 1]]));
    expect(await slots.watching(start + 3 * leaseMs)).toEqual(new Map());
  });

  it('names the markets watched now, every user’s, under the same leases (what the clob source subscribes)', async () => {
    const slots = open(kind);
    const market = (digit: string) => `0x${digit.repeat(64)}`;
    const watch = (userId: string, slotId: string, watched?: string) =>
      slots.acquire({
        userId,
        slotId,
        cap,
        leaseMs,
        nowMs: start,
        trader: 'alice',
        ...(watched ? { market: watched } : {}),
      });
    expect(await slots.watchedMarkets(start)).toEqual(new Set());
    await watch('u', 'a', market('a'));
    await watch('v', 'a', market('a'));
    await watch('v', 'b', market('b'));
    await watch('v', 'unnamed');
    expect(await slots.watchedMarkets(start)).toEqual(new Set([market('a'), market('b')]));

    // One of two watches of a market ends: the market is still watched.
    await slots.release('u', 'a');
    expect(await slots.watchedMarkets(start)).toEqual(new Set([market('a'), market('b')]));
    // `v`'s b is not renewed: past its lease its market is no longer watched.
    expect(await slots.renew('v', ['a', 'unnamed'], leaseMs, start + leaseMs - 1)).toEqual([]);
    expect(await slots.watchedMarkets(start + leaseMs)).toEqual(new Set([market('a')]));
    await slots.release('v', 'a');
    expect(await slots.watchedMarkets(start + leaseMs)).toEqual(new Set());
  });

  it('names the wallets followed now, every instance’s, under leases of their own (what the fast path polls)', async () => {
    const slots = open(kind);
    expect(await slots.followed(start)).toEqual(new Set());
    await slots.putFollows(
      [
        { id: 'i1:1:alice', wallet: 'alice' },
        { id: 'i2:7:alice', wallet: 'alice' },
        { id: 'i2:7:bob', wallet: 'bob' },
      ],
      leaseMs,
      start,
    );
    expect(await slots.followed(start)).toEqual(new Set(['alice', 'bob']));
    // A follow held by no slot adds nothing to a user's slots.
    expect(await slots.inUse('i2', start)).toBe(0);

    // One of alice's two follows ends: she is still followed.
    await slots.removeFollow('i1:1:alice');
    await slots.removeFollow('i1:1:alice');
    expect(await slots.followed(start)).toEqual(new Set(['alice', 'bob']));
    // Instance i2 renews only its alice (its bob's connection went): past the first lease only alice is left.
    await slots.putFollows([{ id: 'i2:7:alice', wallet: 'alice' }], leaseMs, start + leaseMs - 1);
    expect(await slots.followed(start + leaseMs)).toEqual(new Set(['alice']));
    // Instance i2 dies: nothing renews its follows, and they fade with their lease.
    expect(await slots.followed(start + 2 * leaseMs - 1)).toEqual(new Set());
    // A follow whose lease ran out (its store was away) is written back by the next renewal.
    await slots.putFollows([{ id: 'i2:7:alice', wallet: 'alice' }], leaseMs, start + 3 * leaseMs);
    expect(await slots.followed(start + 3 * leaseMs)).toEqual(new Set(['alice']));
    expect(await fastPathWallets(slots, start + 3 * leaseMs)).toEqual(['alice']);
    await slots.acquire({ userId: 'u', slotId: 'w', cap, leaseMs, nowMs: start + 3 * leaseMs, trader: 'carol' });
    await slots.putFollows([{ id: 'i3:1:carol', wallet: 'carol' }], leaseMs, start + 3 * leaseMs);
    expect((await fastPathWallets(slots, start + 3 * leaseMs)).sort()).toEqual(['alice', 'carol']);
  });
});
