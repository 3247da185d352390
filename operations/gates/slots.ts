/**
 * Live slots (read-api.md, plan ladder: Basic 1, Pro 3, Max 5): one count per user across all of the
 * user's keys, OAuth sessions, connections and API instances. A slot is taken atomically when a watch
 * starts and given back when it ends or its connection closes. Each slot is leased: the instance that
 * holds it renews the lease every heartbeat, so a slot of an instance that died frees itself when its
 * lease runs out (as the admission lane's heavy-read slots do: store.ts, step 4).
 *
 * Two implementations with the same behaviour, like the gates: Redis (a Lua script per step, what several
 * instances share; slots-redis.ts) and process memory (the embedded default, below). Time is
 * milliseconds since the epoch; `nowMs` null is the store's own clock (Redis TIME in production).
 */

export interface SlotRequest {
  userId: string;
  /** Unique per watch: instance, connection and subscription. */
  slotId: string;
  /** The plan's live slots. */
  cap: number;
  leaseMs: number;
  nowMs: number | null;
}

/** `held`: the slot was this watch's already (its lease is renewed, nothing more is taken). */
export type SlotVerdict = { kind: 'acquired' | 'held'; inUse: number } | { kind: 'full'; inUse: number; cap: number };

export interface SlotStore {
  readonly kind: 'redis' | 'memory';
  acquire(request: SlotRequest): Promise<SlotVerdict>;
  /**
   * Extends the leases of slots this instance holds; answers the ids that were no longer held (their
   * lease ran out first: the slot may be someone else's now).
   */
  renew(userId: string, slotIds: readonly string[], leaseMs: number, nowMs: number | null): Promise<string[]>;
  /** Gives a slot back (idempotent). */
  release(userId: string, slotId: string): Promise<void>;
  /** Slots of a user whose lease has not run out. */
  inUse(userId: string, nowMs: number | null): Promise<number>;
  close(): Promise<void>;
}

/** The slots in process memory: each call runs to completion without yielding, as atomic as the script. */
export class MemorySlots implements SlotStore {
  readonly kind = 'memory';
  /** user → slot id → lease expiry */
  readonly #users = new Map<string, Map<string, number>>();

  constructor(private readonly clockMs: () => number = Date.now) {}

  #live(userId: string, now: number): Map<string, number> {
    const slots = this.#users.get(userId) ?? new Map<string, number>();
    for (const [id, expiresAt] of slots) if (expiresAt <= now) slots.delete(id);
    return slots;
  }

  acquire(request: SlotRequest): Promise<SlotVerdict> {
    const now = request.nowMs ?? this.clockMs();
    const slots = this.#live(request.userId, now);
    if (slots.has(request.slotId)) {
      slots.set(request.slotId, now + request.leaseMs);
      return Promise.resolve({ kind: 'held', inUse: slots.size });
    }
    if (slots.size >= request.cap) return Promise.resolve({ kind: 'full', inUse: slots.size, cap: request.cap });
    slots.set(request.slotId, now + request.leaseMs);
    this.#users.set(request.userId, slots);
    return Promise.resolve({ kind: 'acquired', inUse: slots.size });
  }

  renew(userId: string, slotIds: readonly string[], leaseMs: number, nowMs: number | null): Promise<string[]> {
    const now = nowMs ?? this.clockMs();
    const slots = this.#live(userId, now);
    const lost: string[] = [];
    for (const id of slotIds) {
      if (slots.has(id)) slots.set(id, now + leaseMs);
      else lost.push(id);
    }
    return Promise.resolve(lost);
  }

  release(userId: string, slotId: string): Promise<void> {
    const slots = this.#users.get(userId);
    slots?.delete(slotId);
    if (slots?.size === 0) this.#users.delete(userId);
    return Promise.resolve();
  }

  inUse(userId: string, nowMs: number | null): Promise<number> {
    return Promise.resolve(this.#live(userId, nowMs ?? this.clockMs()).size);
  }

  close(): Promise<void> {
    this.#users.clear();
    return Promise.resolve();
  }
}
