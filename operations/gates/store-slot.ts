/**
 * A call's slot of the store's work (in-flight.ts), taken at its first store read, not at its arrival:
 * a call answered from memory (the read caches) never takes one and is never shed, and a call the plan's
 * gates refuse never reaches the limiter at all.
 *
 * The call's reads find their call through AsyncLocalStorage: the API's store is wrapped (`storeWithSlots`)
 * so that a read inside a call first takes that call's slot (once; every later read of the call uses it)
 * and a read outside any call (the key lookup, ingest) runs as before. The slot is held until the call
 * ends (its answer sent, or its caller gone).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Store } from '../../projections/store.ts';
import type { InFlightLimiter, Slot } from './in-flight.ts';

export class StoreSlot {
  #acquiring: Promise<Slot | null> | null = null;
  #release: Slot | null = null;
  #done = false;

  constructor(
    private readonly limiter: Pick<InFlightLimiter, 'acquire'>,
    private readonly user: string,
    /** The refusal to answer with (503 overloaded, or 429 busy for a heavy read). */
    private readonly refusal: () => Error,
    private readonly signal: AbortSignal | undefined,
    /** Told once when the call is refused (the admitted call gives back what it consumed), awaited before the refusal is answered. */
    public onRefused: () => Promise<void> = () => Promise.resolve(),
  ) {}

  /**
   * Before a store read of this call: its slot, taken once; throws the call's refusal when it is shed,
   * marked as the caller's own (a call that waited for the same shared read reads again itself:
   * operations/read-cache.ts).
   */
  async enter(): Promise<void> {
    if (this.#done) return;
    this.#acquiring ??= this.limiter.acquire(this.user, this.signal).then(async (slot) => {
      if (slot === null) await this.onRefused();
      else if (this.#done) slot();
      else this.#release = slot;
      return slot;
    });
    if ((await this.#acquiring) === null) throw Object.assign(this.refusal(), { ownedByCaller: true });
  }

  /** The call ended: its slot (if it took one) comes back; idempotent. */
  release(): void {
    this.#done = true;
    this.#release?.();
    this.#release = null;
  }

  /** Runs `work` as this call: its store reads take this slot. */
  run<T>(work: () => T): T {
    return current.run(this, work);
  }
}

const current = new AsyncLocalStorage<StoreSlot>();

/** Whether the current work is a call's (its store reads take the call's slot). */
export function insideCall(): boolean {
  return current.getStore() !== undefined;
}

/**
 * Runs `work` outside any call: its store reads take no slot and are never shed. Only for a small read
 * that must answer under overload (`/me`'s library figure: an agent asks /me to learn its budget).
 */
export function outsideSlots<T>(work: () => T): T {
  return current.exit(work);
}

/** The same store; a read inside a call (StoreSlot.run) first takes the call's slot. */
export function storeWithSlots(store: Store): Store {
  return Object.freeze({
    ...store,
    database: store.database,
    kind: store.kind,
    async query<Row>(
      sql: string,
      params?: Parameters<Store['query']>[1],
      options?: Parameters<Store['query']>[2],
    ): Promise<Row[]> {
      await current.getStore()?.enter();
      return store.query<Row>(sql, params, options);
    },
  });
}
