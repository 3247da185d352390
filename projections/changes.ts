/**
 * What changed in an embedded store, as the ingest worker of this process tells it: one notice after each
 * write is readable (before its offsets are committed) and one after each rollup refresh. The API's read
 * cache (operations/read-cache.ts) listens, and keeps an answer about a trader or a market until a notice
 * names what the answer was read from.
 *
 * Only an embedded store has a feed that tells everything: chDB binds its data directory to one process, so
 * that process's worker sees every write. A ClickHouse server is written by other processes too, so its
 * readers keep answers for their short lifetimes only.
 */

/** Keys that changed, or all of them (the worker cannot tell which). */
export type Changed = ReadonlySet<string> | 'all';

export interface StoreChanged {
  /** Wallets with a landed row, their rollups recomputed, or holding a market that resolved. */
  wallets: Changed;
  /** Markets whose metadata rows landed (titles, outcome names, the start the title names). */
  markets?: Changed;
  /** Of `wallets`: the ones whose rows carry a display name (the only rows trader_names is fed from). */
  named?: Changed;
  /** Of `wallets`: the ones with upstream profile or equity rows (what the card's upstream block is read from). */
  upstream?: Changed;
}

export const EVERYTHING_CHANGED: Readonly<StoreChanged> = Object.freeze({
  wallets: 'all',
  markets: 'all',
  named: 'all',
  upstream: 'all',
});

export interface ChangeListener {
  changed(notice: StoreChanged): void;
}

/** One database's notices in this process: workers report, read caches listen. */
export class StoreChangeFeed {
  #reporters = 0;
  readonly #listeners = new Set<ChangeListener>();

  /** True while at least one worker of this process reports its writes here. */
  get reported(): boolean {
    return this.#reporters > 0;
  }

  /** A worker starts reporting; returns its stop. Both ends tell everything changed (nothing read meanwhile was told). */
  report(): () => void {
    this.#reporters += 1;
    this.changed(EVERYTHING_CHANGED);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      this.#reporters -= 1;
      this.changed(EVERYTHING_CHANGED);
    };
  }

  listen(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  changed(notice: StoreChanged): void {
    for (const listener of this.#listeners) listener.changed(notice);
  }
}

const feeds = new Map<string, StoreChangeFeed>();

/** The feed of one database in this process. */
export function changeFeedOf(database: string): StoreChangeFeed {
  let feed = feeds.get(database);
  if (!feed) feeds.set(database, (feed = new StoreChangeFeed()));
  return feed;
}
