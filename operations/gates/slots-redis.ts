/**
 * Live slots in Redis (slots.ts has the rules): a sorted set per user under the user's hash tag
 * `{u:<user>}` (beside the gates' keys), member = slot id, score = lease expiry. Every step is one Lua
 * script, so that taking the last free slot is atomic across connections and instances.
 *
 * The watches among them are also indexed under one hash tag of their own, `{live}` (a script touches the
 * keys of one tag only, so the index cannot share the user's script): a sorted set of watches by lease
 * expiry and two hashes naming each watch's trader and market, all written with the slot and under the
 * same lease. The index is what every user's watches have in common: each trader's watcher count in one
 * read, and the markets watched now (what the `clob` source subscribes, from its own process). The follows
 * are indexed under the same tag: a sorted set of follows by lease expiry and a hash naming each one's
 * wallet (what the `upstream` role's fast path polls, beside the watched traders).
 */
import type { Redis } from 'ioredis';
import { NOW_LUA } from './redis.ts';
import type { Follow, SlotRequest, SlotStore, SlotVerdict } from './slots.ts';

/** Redis TIME in ms, or the caller's clock (tests): the gates' shared clock. */
const NOW = `${NOW_LUA}
-- The key's TTL only collects an idle user's set; the scores decide.
local GC_MS = 3600000
`;

/** KEYS 1 slots; ARGV 1 now ms or '', 2 cap, 3 lease ms, 4 slot id. Returns {verdict, in use}. */
const ACQUIRE_LUA = `${NOW}
local cap = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[4]) then
  redis.call('ZADD', KEYS[1], now + lease, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], lease + GC_MS)
  return {'held', redis.call('ZCARD', KEYS[1])}
end
local used = redis.call('ZCARD', KEYS[1])
if used >= cap then return {'full', used} end
redis.call('ZADD', KEYS[1], now + lease, ARGV[4])
redis.call('PEXPIRE', KEYS[1], lease + GC_MS)
return {'acquired', used + 1}`;

/** KEYS 1 slots; ARGV 1 now ms or '', 2 lease ms, 3.. slot ids. Returns the ids no longer held. */
const RENEW_LUA = `${NOW}
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local lost = {}
for index = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[index]) then
    redis.call('ZADD', KEYS[1], now + lease, ARGV[index])
  else
    table.insert(lost, ARGV[index])
  end
end
redis.call('PEXPIRE', KEYS[1], lease + GC_MS)
return lost`;

/** KEYS 1 slots; ARGV 1 now ms or ''. Returns the slots whose lease has not run out. */
const IN_USE_LUA = `${NOW}
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')`;

/** KEYS 1 watches, 2 their traders, 3 their markets; ARGV 1 now ms or '', 2 lease ms, 3 watch, 4 trader, 5 market or ''. */
const WATCH_ADD_LUA = `${NOW}
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], ARGV[3], ARGV[5]) end
for index = 1, 3 do redis.call('PEXPIRE', KEYS[index], lease + GC_MS) end
return 1`;

/** KEYS 1 watches, 2 their traders, 3 their markets; ARGV 1 now ms or '', 2 lease ms, 3.. watches still held (others are no-ops). */
const WATCH_RENEW_LUA = `${NOW}
local lease = tonumber(ARGV[2])
local renewed = 0
for index = 3, #ARGV do
  if redis.call('HEXISTS', KEYS[2], ARGV[index]) == 1 then
    redis.call('ZADD', KEYS[1], now + lease, ARGV[index])
    renewed = renewed + 1
  end
end
if renewed > 0 then
  for index = 1, 3 do redis.call('PEXPIRE', KEYS[index], lease + GC_MS) end
end
return renewed`;

/** KEYS 1 watches, 2 their traders, 3 their markets; ARGV the watches to drop. */
const WATCH_REMOVE_LUA = `
for index = 1, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[index])
  redis.call('HDEL', KEYS[2], ARGV[index])
  redis.call('HDEL', KEYS[3], ARGV[index])
end
return #ARGV`;

/** Drops the expired watches of KEYS 1 (watches), 2 (their traders), 3 (their markets). */
const DROP_EXPIRED_WATCHES = `
for _, watch in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('HDEL', KEYS[2], watch)
  redis.call('HDEL', KEYS[3], watch)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)`;

/** KEYS 1 watches, 2 their traders, 3 their markets; ARGV 1 now ms or ''. Drops the expired; returns {trader, count, ...}. */
const WATCHING_LUA = `${NOW}
${DROP_EXPIRED_WATCHES}
local counts = {}
local order = {}
for _, watch in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local trader = redis.call('HGET', KEYS[2], watch)
  if trader then
    if not counts[trader] then
      counts[trader] = 0
      table.insert(order, trader)
    end
    counts[trader] = counts[trader] + 1
  end
end
local reply = {}
for _, trader in ipairs(order) do
  table.insert(reply, trader)
  table.insert(reply, counts[trader])
end
return reply`;

/** KEYS 1 watches, 2 their traders, 3 their markets; ARGV 1 now ms or ''. Drops the expired; returns the distinct markets. */
const WATCHED_MARKETS_LUA = `${NOW}
${DROP_EXPIRED_WATCHES}
local seen = {}
local reply = {}
for _, watch in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local market = redis.call('HGET', KEYS[3], watch)
  if market and not seen[market] then
    seen[market] = true
    table.insert(reply, market)
  end
end
return reply`;

/** KEYS 1 follows, 2 their wallets; ARGV 1 now ms or '', 2 lease ms, then id, wallet pairs. */
const FOLLOW_PUT_LUA = `${NOW}
local lease = tonumber(ARGV[2])
for index = 3, #ARGV - 1, 2 do
  redis.call('ZADD', KEYS[1], now + lease, ARGV[index])
  redis.call('HSET', KEYS[2], ARGV[index], ARGV[index + 1])
end
for index = 1, 2 do redis.call('PEXPIRE', KEYS[index], lease + GC_MS) end
return 1`;

/** KEYS 1 follows, 2 their wallets; ARGV the follow to drop. */
const FOLLOW_REMOVE_LUA = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1`;

/** KEYS 1 follows, 2 their wallets; ARGV 1 now ms or ''. Drops the expired; returns the distinct wallets. */
const FOLLOWED_LUA = `${NOW}
for _, follow in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('HDEL', KEYS[2], follow)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local seen = {}
local reply = {}
for _, wallet in ipairs(redis.call('HVALS', KEYS[2])) do
  if not seen[wallet] then
    seen[wallet] = true
    table.insert(reply, wallet)
  end
end
return reply`;

interface SlotCommands {
  taSlotAcquire(...args: (string | number)[]): Promise<[string, number]>;
  taSlotRenew(...args: (string | number)[]): Promise<string[]>;
  taSlotsInUse(...args: (string | number)[]): Promise<number>;
  taWatchAdd(...args: (string | number)[]): Promise<number>;
  taWatchRenew(...args: (string | number)[]): Promise<number>;
  taWatchRemove(...args: (string | number)[]): Promise<number>;
  taWatching(...args: (string | number)[]): Promise<(string | number)[]>;
  taWatchedMarkets(...args: (string | number)[]): Promise<string[]>;
  taFollowPut(...args: (string | number)[]): Promise<number>;
  taFollowRemove(...args: (string | number)[]): Promise<number>;
  taFollowed(...args: (string | number)[]): Promise<string[]>;
}

export class RedisSlots implements SlotStore {
  readonly kind = 'redis';
  readonly #redis: Redis & SlotCommands;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
  ) {
    redis.defineCommand('taSlotAcquire', { numberOfKeys: 1, lua: ACQUIRE_LUA });
    redis.defineCommand('taSlotRenew', { numberOfKeys: 1, lua: RENEW_LUA });
    redis.defineCommand('taSlotsInUse', { numberOfKeys: 1, lua: IN_USE_LUA });
    redis.defineCommand('taWatchAdd', { numberOfKeys: 3, lua: WATCH_ADD_LUA });
    redis.defineCommand('taWatchRenew', { numberOfKeys: 3, lua: WATCH_RENEW_LUA });
    redis.defineCommand('taWatchRemove', { numberOfKeys: 3, lua: WATCH_REMOVE_LUA });
    redis.defineCommand('taWatching', { numberOfKeys: 3, lua: WATCHING_LUA });
    redis.defineCommand('taWatchedMarkets', { numberOfKeys: 3, lua: WATCHED_MARKETS_LUA });
    redis.defineCommand('taFollowPut', { numberOfKeys: 2, lua: FOLLOW_PUT_LUA });
    redis.defineCommand('taFollowRemove', { numberOfKeys: 2, lua: FOLLOW_REMOVE_LUA });
    redis.defineCommand('taFollowed', { numberOfKeys: 2, lua: FOLLOWED_LUA });
    this.#redis = redis as Redis & SlotCommands;
  }

  #key(userId: string): string {
    return `${this.keyPrefix}{u:${userId}}:slots`;
  }

  /** The watch index's keys: the watches by lease expiry, each watch's trader, each watch's market. */
  #watchKeys(): [string, string, string] {
    return [
      `${this.keyPrefix}{live}:watches`,
      `${this.keyPrefix}{live}:watch-traders`,
      `${this.keyPrefix}{live}:watch-markets`,
    ];
  }

  /** The follow index's keys: the follows by lease expiry, each follow's wallet. */
  #followKeys(): [string, string] {
    return [`${this.keyPrefix}{live}:follows`, `${this.keyPrefix}{live}:follow-wallets`];
  }

  /** A slot's name in the watch index: slot ids are unique per user only. */
  #watch(userId: string, slotId: string): string {
    return JSON.stringify([userId, slotId]);
  }

  async acquire(request: SlotRequest): Promise<SlotVerdict> {
    const [verdict, inUse] = await this.#redis.taSlotAcquire(
      this.#key(request.userId),
      request.nowMs === null ? '' : String(request.nowMs),
      request.cap,
      request.leaseMs,
      request.slotId,
    );
    if (verdict === 'full') return { kind: 'full', inUse: Number(inUse), cap: request.cap };
    if (verdict !== 'acquired' && verdict !== 'held')
      throw new Error(`unexpected reply of the slot script: ${verdict}`);
    if (request.trader !== undefined)
      await this.#redis.taWatchAdd(
        ...this.#watchKeys(),
        request.nowMs === null ? '' : String(request.nowMs),
        request.leaseMs,
        this.#watch(request.userId, request.slotId),
        request.trader,
        request.market ?? '',
      );
    return { kind: verdict, inUse: Number(inUse) };
  }

  async renew(userId: string, slotIds: readonly string[], leaseMs: number, nowMs: number | null): Promise<string[]> {
    if (slotIds.length === 0) return [];
    const now = nowMs === null ? '' : String(nowMs);
    const lost = await this.#redis.taSlotRenew(this.#key(userId), now, leaseMs, ...slotIds);
    const gone = new Set(lost);
    const kept = slotIds.filter((id) => !gone.has(id)).map((id) => this.#watch(userId, id));
    // A watch whose slot ran out stops counting with it, even if its own lease has not run out yet.
    await Promise.all([
      kept.length > 0 ? this.#redis.taWatchRenew(...this.#watchKeys(), now, leaseMs, ...kept) : null,
      lost.length > 0
        ? this.#redis.taWatchRemove(...this.#watchKeys(), ...lost.map((id) => this.#watch(userId, id)))
        : null,
    ]);
    return lost;
  }

  async release(userId: string, slotId: string): Promise<void> {
    await Promise.all([
      this.#redis.zrem(this.#key(userId), slotId),
      this.#redis.taWatchRemove(...this.#watchKeys(), this.#watch(userId, slotId)),
    ]);
  }

  async watching(nowMs: number | null): Promise<Map<string, number>> {
    const reply = await this.#redis.taWatching(...this.#watchKeys(), nowMs === null ? '' : String(nowMs));
    const counts = new Map<string, number>();
    for (let index = 0; index + 1 < reply.length; index += 2)
      counts.set(String(reply[index]), Number(reply[index + 1]));
    return counts;
  }

  async watchedMarkets(nowMs: number | null): Promise<Set<string>> {
    return new Set(await this.#redis.taWatchedMarkets(...this.#watchKeys(), nowMs === null ? '' : String(nowMs)));
  }

  async putFollows(follows: readonly Follow[], leaseMs: number, nowMs: number | null): Promise<void> {
    if (follows.length === 0) return;
    await this.#redis.taFollowPut(
      ...this.#followKeys(),
      nowMs === null ? '' : String(nowMs),
      leaseMs,
      ...follows.flatMap(({ id, wallet }) => [id, wallet]),
    );
  }

  async removeFollow(id: string): Promise<void> {
    await this.#redis.taFollowRemove(...this.#followKeys(), id);
  }

  async followed(nowMs: number | null): Promise<Set<string>> {
    return new Set(await this.#redis.taFollowed(...this.#followKeys(), nowMs === null ? '' : String(nowMs)));
  }

  async inUse(userId: string, nowMs: number | null): Promise<number> {
    return Number(await this.#redis.taSlotsInUse(this.#key(userId), nowMs === null ? '' : String(nowMs)));
  }

  async close(): Promise<void> {
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }
}
