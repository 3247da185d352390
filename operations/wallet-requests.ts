/**
 * Wallets clients ask about, handed to the upstream poller without the read API writing to ClickHouse:
 * each trader-scoped call adds its wallet to a Redis sorted set (`config.upstream.requestedWalletsKey`,
 * score = epoch seconds of the request; ZADD keeps the latest). The `upstream` role reads the set
 * (ingest/sources/upstream/requests.ts) and tracks those wallets for `upstream.requestTtlSeconds`.
 *
 * Fire and forget: a call never waits for it, and a Redis error is logged, never the caller's problem.
 * Each process notes a wallet at most once a minute, so a busy wallet costs one ZADD a minute per process.
 */
import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { connectGateRedis } from './gates/redis.ts';

export interface WalletRequestLog {
  note(wallet: string, atSeconds: number): void;
  close(): Promise<void>;
}

/** A wallet noted within this many seconds is not noted again by this process. */
const RENOTE_AFTER_S = 60;
/** Bound of the per-process memory of recent notes (cleared when full: the worst case is one extra ZADD). */
const MAX_REMEMBERED = 50_000;

export class RedisWalletRequestLog implements WalletRequestLog {
  private readonly notedAt = new Map<string, number>();

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly log: Logger,
    private readonly ownsConnection = false,
  ) {}

  note(wallet: string, atSeconds: number): void {
    const last = this.notedAt.get(wallet);
    if (last !== undefined && atSeconds - last < RENOTE_AFTER_S) return;
    if (this.notedAt.size >= MAX_REMEMBERED) this.notedAt.clear();
    this.notedAt.set(wallet, atSeconds);
    this.redis.zadd(this.key, atSeconds, wallet).catch((error: unknown) => {
      this.notedAt.delete(wallet);
      this.log.warn(
        { err: { message: (error as Error).message }, wallet },
        'could not note a requested wallet for the upstream poller',
      );
    });
  }

  async close(): Promise<void> {
    if (this.ownsConnection) await this.redis.quit().catch(() => undefined);
  }
}

/** The deployment's request log: Redis when REDIS_URL is set; none otherwise (no poller could read it). */
export function openWalletRequestLog(config: Config, log: Logger): WalletRequestLog | undefined {
  if (!config.redis.url) return undefined;
  const redis = connectGateRedis(config.redis.url, config.redis.commandTimeoutMs);
  redis.on('error', (error: Error) =>
    log.warn({ err: { message: error.message } }, 'redis connection error (requested wallets)'),
  );
  return new RedisWalletRequestLog(redis, config.upstream.requestedWalletsKey, log, true);
}
