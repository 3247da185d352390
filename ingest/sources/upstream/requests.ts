/**
 * How a wallet a client asked about reaches the poller without the read API writing to ClickHouse: the
 * API adds the wallet to a Redis sorted set (`UPSTREAM_REQUESTED_WALLETS_KEY`, score = the request's
 * epoch seconds, a later request raising it); the poller reads the members requested within
 * `upstream.requestTtlSeconds` and trims the older ones. Redis is already every API instance's shared store
 * (the gates); one ZADD per wallet and minute per API process is all it costs. Without Redis (a single
 * process), the in-memory log does the same.
 */
import type { Redis } from 'ioredis';

export interface RequestedWallets {
  /** Wallets requested at or after `sinceSeconds`, most recent first, at most `limit`; older ones are forgotten. */
  recent(sinceSeconds: number, limit: number): Promise<string[]>;
}

export class RedisRequestedWallets implements RequestedWallets {
  constructor(
    private readonly redis: Redis,
    private readonly key: string,
  ) {}

  async recent(sinceSeconds: number, limit: number): Promise<string[]> {
    await this.redis.zremrangebyscore(this.key, '-inf', `(${sinceSeconds}`);
    return this.redis.zrevrangebyscore(this.key, '+inf', sinceSeconds, 'LIMIT', 0, limit);
  }
}

/** Process memory: the poller and the API in one process, or tests. */
export class MemoryRequestedWallets implements RequestedWallets {
  private readonly requested = new Map<string, number>();

  note(wallet: string, atSeconds: number): void {
    this.requested.set(wallet.toLowerCase(), Math.max(atSeconds, this.requested.get(wallet.toLowerCase()) ?? 0));
  }

  async recent(sinceSeconds: number, limit: number): Promise<string[]> {
    for (const [wallet, at] of this.requested) if (at < sinceSeconds) this.requested.delete(wallet);
    return [...this.requested.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([wallet]) => wallet);
  }
}
