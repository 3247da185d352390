/** The gate store a deployment uses: Redis when REDIS_URL is set (shared by every API instance), else process memory. */
import type { Config } from '../../config.ts';
import type { Logger } from '../../log.ts';
import { MemoryGates } from './memory.ts';
import { connectGateRedis, RedisGates } from './redis.ts';
import type { GateStore } from './store.ts';
import { MemorySlots, type SlotStore } from './slots.ts';
import { RedisSlots } from './slots-redis.ts';

export function openGateStore(config: Config, log: Logger): GateStore {
  if (!config.redis.url) {
    log.info('REDIS_URL is not set: the gates run in process memory (one API instance; budgets restart with it)');
    return new MemoryGates();
  }
  const redis = connectGateRedis(config.redis.url, config.redis.commandTimeoutMs);
  // ioredis reconnects by itself; the gates fail open meanwhile (budget.ts), so an error is logged, never thrown.
  redis.on('error', (error: Error) => log.warn({ err: { message: error.message } }, 'redis connection error'));
  return new RedisGates(redis, config.redis.keyPrefix);
}

/** The live slots of a deployment: in Redis when REDIS_URL is set (one count per user across instances), else in process memory. */
export function openSlotStore(config: Config, log: Logger): SlotStore {
  if (!config.redis.url) return new MemorySlots();
  const redis = connectGateRedis(config.redis.url, config.redis.commandTimeoutMs);
  redis.on('error', (error: Error) => log.warn({ err: { message: error.message } }, 'redis connection error (slots)'));
  return new RedisSlots(redis, config.redis.keyPrefix);
}
