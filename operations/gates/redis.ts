/**
 * The gates in Redis: one Lua script per call (admit.lua), so every check and every consumption of a
 * call is one atomic round trip shared by all API instances. A user's keys share the hash tag
 * `{u:<user>}`; the address block is read in the same script (standalone Redis or Sentinel; a Redis
 * Cluster would need the block key in the user's slot).
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import {
  utcPeriods,
  type AuthFailureRequest,
  type AuthFailureVerdict,
  type GateRequest,
  type GateStore,
  type GateUsage,
  type GateVerdict,
  type RefundRequest,
} from './store.ts';

/** The scripts' shared clock (`now`), prepended to those that read it. */
export const NOW_LUA = readFileSync(new URL('./now.lua', import.meta.url), 'utf8');
const ADMIT_LUA = NOW_LUA + readFileSync(new URL('./admit.lua', import.meta.url), 'utf8');
const REFUND_LUA = readFileSync(new URL('./refund.lua', import.meta.url), 'utf8');
const AUTH_FAILURE_LUA = NOW_LUA + readFileSync(new URL('./auth-failure.lua', import.meta.url), 'utf8');
/** The block's remaining ms on the shared clock (Redis TIME, or the test's): KEYS 1 block; ARGV 1 now ms or ''. */
const BLOCKED_FOR_LUA = `${NOW_LUA}
local remaining = tonumber(redis.call('GET', KEYS[1]) or '0') - now
if remaining > 0 then return tostring(remaining) end
return '0'`;

type Reply = (string | number)[];

interface GateCommands {
  taAdmit(...args: (string | number)[]): Promise<Reply>;
  taAuthFailure(...args: (string | number)[]): Promise<Reply>;
  taRefund(...args: (string | number)[]): Promise<number>;
  taBlockedFor(...args: (string | number)[]): Promise<string>;
}

export class RedisGates implements GateStore {
  readonly kind = 'redis';
  readonly #redis: Redis & GateCommands;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
  ) {
    // defineCommand: EVALSHA, falling back to EVAL once when the script cache is cold (a Redis restart).
    redis.defineCommand('taAdmit', { numberOfKeys: 5, lua: ADMIT_LUA });
    redis.defineCommand('taRefund', { numberOfKeys: 4, lua: REFUND_LUA });
    redis.defineCommand('taAuthFailure', { numberOfKeys: 2, lua: AUTH_FAILURE_LUA });
    redis.defineCommand('taBlockedFor', { numberOfKeys: 1, lua: BLOCKED_FOR_LUA });
    this.#redis = redis as Redis & GateCommands;
  }

  #userKey(userId: string, part: string): string {
    return `${this.keyPrefix}{u:${userId}}:${part}`;
  }

  #addressKey(address: string, part: string): string {
    return `${this.keyPrefix}{a:${address}}:${part}`;
  }

  async admit(request: GateRequest): Promise<GateVerdict> {
    const reply = await this.#redis.taAdmit(
      this.#userKey(request.userId, 'state'),
      this.#userKey(request.userId, 'minute'),
      this.#userKey(request.userId, 'wallets'),
      this.#userKey(request.userId, 'lane'),
      this.#addressKey(request.address, 'block'),
      request.nowMs === null ? '' : String(request.nowMs),
      String(request.emissionIntervalMs),
      request.burst,
      request.rpm,
      request.rpmWindowMs,
      request.dailyCap,
      request.monthlyCap,
      request.wallet ?? '',
      request.walletCap,
      request.heavy ? '1' : '0',
      request.laneCap,
      request.leaseMs,
      request.requestId,
    );
    return parseAdmitReply(reply);
  }

  async release(userId: string, requestId: string): Promise<void> {
    await this.#redis.zrem(this.#userKey(userId, 'lane'), requestId);
  }

  async refund(request: RefundRequest): Promise<void> {
    const { day, month } = utcPeriods(request.atMs);
    await this.#redis.taRefund(
      this.#userKey(request.userId, 'state'),
      this.#userKey(request.userId, 'minute'),
      this.#userKey(request.userId, 'wallets'),
      this.#userKey(request.userId, 'lane'),
      request.requestId,
      String(request.emissionIntervalMs),
      day,
      month,
      request.daily ? '1' : '0',
      request.monthly ? '1' : '0',
      request.wallet ?? '',
    );
  }

  async authFailure(request: AuthFailureRequest): Promise<AuthFailureVerdict> {
    const reply = await this.#redis.taAuthFailure(
      this.#addressKey(request.address, 'failures'),
      this.#addressKey(request.address, 'block'),
      request.nowMs === null ? '' : String(request.nowMs),
      request.limit,
      request.windowMs,
      request.blockMs,
      request.failureId,
    );
    if (reply[0] === 'blocked') return { kind: 'blocked', retryAfterMs: Number(reply[1]) };
    return { kind: 'recorded', failures: Number(reply[1]), nowBlocked: Number(reply[2]) === 1 };
  }

  async blockedFor(address: string, nowMs: number | null): Promise<number> {
    return Number(
      await this.#redis.taBlockedFor(this.#addressKey(address, 'block'), nowMs === null ? '' : String(nowMs)),
    );
  }

  async close(): Promise<void> {
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }
}

function usageOf(reply: Reply): GateUsage {
  return {
    tokensRemaining: Number(reply[1]),
    rpmUsed: Number(reply[2]),
    dayRequests: Number(reply[3]),
    monthRequests: Number(reply[4]),
  };
}

function parseAdmitReply(reply: Reply): GateVerdict {
  switch (reply[0]) {
    case 'admitted':
      return {
        kind: 'admitted',
        usage: usageOf(reply),
        wallet: reply[5] as 'free' | 'counted' | 'none',
        atMs: Number(reply[6]),
      };
    case 'wallet_quota':
      return {
        kind: 'wallet_quota',
        usage: usageOf(reply),
        used: Number(reply[5]),
        limit: Number(reply[6]),
        resetsAtMs: Number(reply[7]),
      };
    case 'rate_limited':
    case 'daily_limit':
    case 'monthly_limit':
    case 'address_blocked':
      return { kind: reply[0], retryAfterMs: Number(reply[1]) };
    case 'busy':
      return { kind: 'busy' };
    default:
      throw new Error(`unexpected reply of the gate script: ${JSON.stringify(reply)}`);
  }
}

/** A Redis connection for the gates: commands time out (a hung Redis must not hang requests) and fail fast while disconnected. */
export function connectGateRedis(url: string, commandTimeoutMs: number): Redis {
  return new Redis(url, {
    commandTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    lazyConnect: false,
  });
}
