/** Redis cleanup shared by the tests and benchmarks (each writes under a key prefix of its own). */
import type { Redis } from 'ioredis';

/** Deletes every key that starts with `prefix` (SCAN, so a large keyspace is never blocked). */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}
