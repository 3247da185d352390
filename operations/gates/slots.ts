/**
 * Live slots (read-api.md, plan ladder: Basic 1, Pro 3, Max 5): one count per user across all of the
 * user's keys, OAuth sessions, connections and API instances. A slot is taken atomically when a watch
 * starts and given back when it ends or its connection closes. Each slot is leased: the instance that
 * holds it renews the lease every heartbeat, so a slot of an instance that died frees itself when its
 * lease runs out (as the admission lane's heavy-read slots do: store.ts, step 4).
 *
 * A watch's slot names the trader it watches: the slots held now, on every instance, give each trader's
 * live watcher count (the popular shelf's `watching`), under the same leases, so a watch of an instance
 * that died stops counting when its slot frees itself.
 *
 * A watch's slot also names its market: the markets watched now, on every instance, are what the `clob`
 * source keeps subscribed on the venue's book channel (ingest/sources/clob/), under the same leases.
 *
 * A follow holds no slot, but the wallets followed now, on every instance, are indexed beside the watches
 * under leases of their own (renewed every heartbeat by the plane that holds them, so a dead plane's
 * follows fade): the `upstream` role's fast path polls the wallets watched or followed now.
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
  /** The watched trader's wallet: while the slot is held it counts among the trader's watchers. */
  trader?: string;
  /** The watched market: while the slot is held the `clob` source keeps its book subscribed. */
  market?: string;
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
  /** Watchers of each watched trader now (slots naming a trader whose lease has not run out), every user's. */
  watching(nowMs: number | null): Promise<Map<string, number>>;
  /** The markets watched now (slots naming a market whose lease has not run out), every user's. */
  watchedMarkets(nowMs: number | null): Promise<Set<string>>;
  /**
   * Writes follows (`id` unique per follow: instance, connection and wallet) under a lease from now: a new
   * one is added, a held one renewed, one whose lease ran out is back. Idempotent.
   */
  putFollows(follows: readonly Follow[], leaseMs: number, nowMs: number | null): Promise<void>;
  /** Drops a follow (idempotent). */
  removeFollow(id: string): Promise<void>;
  /** The wallets followed now (follows whose lease has not run out), every user's. */
  followed(nowMs: number | null): Promise<Set<string>>;
  close(): Promise<void>;
}

export interface Follow {
  id: string;
  wallet: string;
}

/** The wallets the upstream fast path polls: watched or followed now, on every instance. */
export async function fastPathWallets(slots: SlotStore, nowMs: number | null): Promise<string[]> {
  const [watched, followed] = await Promise.all([slots.watching(nowMs), slots.followed(nowMs)]);
  return [...new Set([...watched.keys(), ...followed])];
}

interface Lease {
  expiresAt: number;
  trader: string | null;
  market: string | null;
}

/** The slots in process memory: each call runs to completion without yielding, as atomic as the script. */
export class MemorySlots implements SlotStore {
  readonly kind = 'memory';
  /** user → slot id → lease */
  readonly #users = new Map<string, Map<string, Lease>>();
  /** follow id → its wallet and lease expiry */
  readonly #follows = new Map<string, { wallet: string; expiresAt: number }>();

  constructor(private readonly clockMs: () => number = Date.now) {}

  #live(userId: string, now: number): Map<string, Lease> {
    const slots = this.#users.get(userId) ?? new Map<string, Lease>();
    for (const [id, lease] of slots) if (lease.expiresAt <= now) slots.delete(id);
    return slots;
  }

  acquire(request: SlotRequest): Promise<SlotVerdict> {
    const now = request.nowMs ?? this.clockMs();
    const slots = this.#live(request.userId, now);
    const lease = { expiresAt: now + request.leaseMs, trader: request.trader ?? null, market: request.market ?? null };
    if (slots.has(request.slotId)) {
      slots.set(request.slotId, lease);
      return Promise.resolve({ kind: 'held', inUse: slots.size });
    }
    if (slots.size >= request.cap) return Promise.resolve({ kind: 'full', inUse: slots.size, cap: request.cap });
    slots.set(request.slotId, lease);
    this.#users.set(request.userId, slots);
    return Promise.resolve({ kind: 'acquired', inUse: slots.size });
  }

  renew(userId: string, slotIds: readonly string[], leaseMs: number, nowMs: number | null): Promise<string[]> {
    const now = nowMs ?? this.clockMs();
    const slots = this.#live(userId, now);
    const lost: string[] = [];
    for (const id of slotIds) {
      const lease = slots.get(id);
      if (lease) lease.expiresAt = now + leaseMs;
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

  watching(nowMs: number | null): Promise<Map<string, number>> {
    const now = nowMs ?? this.clockMs();
    const counts = new Map<string, number>();
    for (const [userId, slots] of this.#users) {
      for (const [id, lease] of slots) {
        if (lease.expiresAt <= now) slots.delete(id);
        else if (lease.trader !== null) counts.set(lease.trader, (counts.get(lease.trader) ?? 0) + 1);
      }
      if (slots.size === 0) this.#users.delete(userId);
    }
    return Promise.resolve(counts);
  }

  watchedMarkets(nowMs: number | null): Promise<Set<string>> {
    const now = nowMs ?? this.clockMs();
    const markets = new Set<string>();
    for (const slots of this.#users.values())
      for (const lease of slots.values()) if (lease.expiresAt > now && lease.market !== null) markets.add(lease.market);
    return Promise.resolve(markets);
  }

  putFollows(follows: readonly Follow[], leaseMs: number, nowMs: number | null): Promise<void> {
    const expiresAt = (nowMs ?? this.clockMs()) + leaseMs;
    for (const { id, wallet } of follows) this.#follows.set(id, { wallet, expiresAt });
    return Promise.resolve();
  }

  removeFollow(id: string): Promise<void> {
    this.#follows.delete(id);
    return Promise.resolve();
  }

  followed(nowMs: number | null): Promise<Set<string>> {
    const now = nowMs ?? this.clockMs();
    const wallets = new Set<string>();
    for (const [id, follow] of this.#follows)
      if (follow.expiresAt <= now) this.#follows.delete(id);
      else wallets.add(follow.wallet);
    return Promise.resolve(wallets);
  }

  close(): Promise<void> {
    this.#users.clear();
    this.#follows.clear();
    return Promise.resolve();
  }
}
