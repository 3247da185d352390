/**
 * Test tools for the gates: gate stores of both kinds on the machine's Redis (each under its own key
 * prefix, deleted afterwards), a gate store that can be swapped under a running app and reports its
 * releases, and a store wrapper that holds reads until the test lets them go (heavy reads in flight).
 */
import { Redis } from 'ioredis';
import { MemoryGates } from '../../operations/gates/memory.ts';
import { RedisGates } from '../../operations/gates/redis.ts';
import { insideCall } from '../../operations/gates/store-slot.ts';
import type { AuthFailureRequest, GateRequest, GateStore, RefundRequest } from '../../operations/gates/store.ts';
import type { Store } from '../../projections/store.ts';
import { uniqueId } from './context.ts';
import { deleteKeysWithPrefix } from './redis.ts';

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const GATE_KINDS = ['memory', 'redis'] as const;
export type GateKind = (typeof GATE_KINDS)[number];

/** Makes gate stores of one kind; `cleanup` closes them and deletes every Redis key they wrote. */
export function gateStoreFactory(label: string): { open(kind: GateKind): GateStore; cleanup(): Promise<void> } {
  const prefix = `test:${uniqueId(label)}:`;
  const opened: GateStore[] = [];
  let serial = 0;
  return {
    open(kind) {
      const store =
        kind === 'memory' ? new MemoryGates() : new RedisGates(new Redis(TEST_REDIS_URL), `${prefix}${++serial}:`);
      opened.push(store);
      return store;
    },
    async cleanup() {
      await Promise.all(opened.map((store) => store.close()));
      const redis = new Redis(TEST_REDIS_URL);
      try {
        await deleteKeysWithPrefix(redis, prefix);
      } finally {
        await redis.quit();
      }
    },
  };
}

/** A gate store whose target can be replaced between runs, and whose releases can be awaited. */
export class SwitchableGates implements GateStore {
  readonly kind: 'memory' | 'redis';
  #releaseWaiters: (() => void)[] = [];
  releases = 0;

  constructor(public target: GateStore) {
    this.kind = target.kind;
  }

  admit(request: GateRequest) {
    return this.target.admit(request);
  }

  async release(userId: string, requestId: string): Promise<void> {
    await this.target.release(userId, requestId);
    this.releases += 1;
    for (const wake of this.#releaseWaiters.splice(0)) wake();
  }

  refund(request: RefundRequest): Promise<void> {
    return this.target.refund(request);
  }

  /** Resolves at the next release of a heavy-read slot. */
  nextRelease(): Promise<void> {
    return new Promise((resolve) => this.#releaseWaiters.push(resolve));
  }

  authFailure(request: AuthFailureRequest) {
    return this.target.authFailure(request);
  }

  blockedFor(address: string, nowMs: number | null) {
    return this.target.blockedFor(address, nowMs);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface HeldQuery {
  resume(): void;
  fail(error: Error): void;
}

/** Holds every call's read while `holding` is on, so that a test controls when reads in flight end. */
export class QueryHold {
  holding = false;
  readonly held: HeldQuery[] = [];
  #waiters: { count: number; wake: () => void }[] = [];

  wrap(store: Store): Store {
    return Object.freeze({
      ...store,
      database: store.database,
      kind: store.kind,
      query: async <Row>(...args: Parameters<Store['query']>): Promise<Row[]> => {
        // Only a call's reads (those that hold its slot): key lookups and other reads outside any call
        // (a background refresh, /me's library figure) pass, as they would past a busy store.
        if (this.holding && insideCall()) {
          await new Promise<void>((resume, fail) => {
            this.held.push({ resume, fail });
            this.#wake();
          });
        }
        return store.query<Row>(...args);
      },
    });
  }

  /** Resolves once `count` reads are held. */
  heldCount(count: number): Promise<void> {
    if (this.held.length >= count) return Promise.resolve();
    return new Promise((wake) => this.#waiters.push({ count, wake }));
  }

  resumeAll(): void {
    for (const query of this.held.splice(0)) query.resume();
  }

  failAll(error: Error): void {
    for (const query of this.held.splice(0)) query.fail(error);
  }

  #wake(): void {
    this.#waiters = this.#waiters.filter((waiter) => {
      if (this.held.length < waiter.count) return true;
      waiter.wake();
      return false;
    });
  }
}
