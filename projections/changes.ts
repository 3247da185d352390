/**
 * Which traders' data and which markets' metadata changed, as the ingest worker of this process writes
 * them, so that the read caches (read-cache.ts) can keep answers about a trader (career, upstream
 * profile, markets list, top-markets, fills, display name) until that trader's data changes, and a
 * market's names (title, outcomes) until its metadata changes, instead of re-reading them on every call.
 *
 * The worker reports, per database:
 *   - at each write, the wallets of the rows it made durable (fills, position legs, upstream profiles,
 *     equity points…: every landing row with a `wallet`);
 *   - after each rollup refresh, the wallets of the batches it recomputed (trader_markets changed);
 *   - everything, when it cannot tell whose data changed (a market resolved: all its holders; batches a
 *     stopped worker left behind; its own start and stop).
 *
 * A version is a number that only grows: an answer read while a wallet's version was v is current as
 * long as the version is still v. Answers are cached only while a worker of this process reports on
 * the database (`watched`) and the store is embedded: chDB binds its data directory to one process, so
 * that worker sees every write. With a ClickHouse server other processes write too, and nothing is kept.
 */

/** Wallets (and markets) remembered one by one at most; beyond, everything counts as changed and the maps start over. */
const MAX_TRACKED_WALLETS = 200_000;

export class StoreChanges {
  /** Last version handed out (every change takes the next). */
  #last = 0;
  /** Everything changed at this version (wallets without their own entry share it). */
  #everything = 0;
  readonly #wallets = new Map<string, number>();
  readonly #markets = new Map<string, number>();
  readonly #names = new Map<string, number>();
  #reporters = 0;

  /** True while at least one worker of this process reports its writes here. */
  get watched(): boolean {
    return this.#reporters > 0;
  }

  /** A worker starts reporting; returns its stop. Both ends count as "everything changed". */
  watch(): () => void {
    this.#reporters += 1;
    this.everythingChanged();
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      this.#reporters -= 1;
      this.everythingChanged();
    };
  }

  /** The wallet's current version: compare with the version an answer was read at. */
  versionOf(wallet: string): number {
    return this.#wallets.get(wallet) ?? this.#everything;
  }

  /**
   * The newest version handed out: an answer read after this call is current while the versions of
   * what it depends on are not above it.
   */
  get latest(): number {
    return this.#last;
  }

  /** The version of the wallet's display name: moved only by rows that carry a name for the wallet. */
  versionOfName(wallet: string): number {
    return this.#names.get(wallet) ?? this.#everything;
  }

  /** Rows that carry a display name for these wallets landed (trader_names is fed by such rows only). */
  namesChanged(wallets: Iterable<string>): void {
    const version = ++this.#last;
    for (const wallet of wallets) this.#names.set(wallet, version);
    if (this.#names.size > MAX_TRACKED_WALLETS) this.everythingChanged();
  }

  /** The market's current version (its metadata). */
  versionOfMarket(conditionId: string): number {
    return this.#markets.get(conditionId) ?? this.#everything;
  }

  marketsChanged(conditionIds: Iterable<string>): void {
    const version = ++this.#last;
    for (const conditionId of conditionIds) this.#markets.set(conditionId, version);
    if (this.#markets.size > MAX_TRACKED_WALLETS) this.everythingChanged();
  }

  changed(wallets: Iterable<string>): void {
    const version = ++this.#last;
    for (const wallet of wallets) this.#wallets.set(wallet, version);
    if (this.#wallets.size > MAX_TRACKED_WALLETS) this.everythingChanged();
  }

  everythingChanged(): void {
    this.#everything = ++this.#last;
    this.#wallets.clear();
    this.#markets.clear();
    this.#names.clear();
  }
}

const byDatabase = new Map<string, StoreChanges>();

/** The changes of one database in this process (the worker reports, the API's caches consult). */
export function changesOf(database: string): StoreChanges {
  let changes = byDatabase.get(database);
  if (!changes) byDatabase.set(database, (changes = new StoreChanges()));
  return changes;
}
