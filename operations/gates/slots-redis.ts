/**
 * Live slots in Redis (slots.ts has the rules): a sorted set per user under the user's hash tag
 * `{u:<user>}` (beside the gates' keys), member = slot id, score = lease expiry. Every step is one Lua
 * script, so that taking the last free slot is atomic across connections and instances.
 */
import type { Redis } from 'ioredis';
import type { SlotRequest, SlotStore, SlotVerdict } from './slots.ts';

/** Redis TIME in ms, or the caller's clock (tests). */
const NOW = `
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
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

interface SlotCommands {
  taSlotAcquire(...args: (string | number)[]): Promise<[string, number]>;
  taSlotRenew(...args: (string | number)[]): Promise<string[]>;
  taSlotsInUse(...args: (string | number)[]): Promise<number>;
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
    this.#redis = redis as Redis & SlotCommands;
  }

  #key(userId: string): string {
    return `${this.keyPrefix}{u:${userId}}:slots`;
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
    if (verdict === 'acquired' || verdict === 'held') return { kind: verdict, inUse: Number(inUse) };
    throw new Error(`unexpected reply of the slot script: ${verdict}`);
  }

  async renew(userId: string, slotIds: readonly string[], leaseMs: number, nowMs: number | null): Promise<string[]> {
    if (slotIds.length === 0) return [];
    return this.#redis.taSlotRenew(this.#key(userId), nowMs === null ? '' : String(nowMs), leaseMs, ...slotIds);
  }

  async release(userId: string, slotId: string): Promise<void> {
    await this.#redis.zrem(this.#key(userId), slotId);
  }

  async inUse(userId: string, nowMs: number | null): Promise<number> {
    return Number(await this.#redis.taSlotsInUse(this.#key(userId), nowMs === null ? '' : String(nowMs)));
  }

  async close(): Promise<void> {
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }
}
