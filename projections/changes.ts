/**
 * What changed in the store, as the ingest worker of this process writes it, so that the read caches
 * (read-cache.ts) can keep answers about a trader (career, upstream profile, markets list, top-markets,
 * fills) until that trader's data changes, a display name until a row naming its wallet lands, and a
 * market's names (title, outcomes) until its metadata changes, instead of re-reading them on every call.
 *
 * The worker reports, per database:
 *   - at each write: the wallets of the landing rows it made durable (every row with a `wallet`: fills,
 *     position legs, upstream profiles, equity points…), the wallets of those rows that carry a display
 *     name (the only rows that feed trader_names: fills, upstream profiles and leaderboard rows with a
 *     non-empty name), the wallets of the upstream provider's profile and equity rows (the card's
 *     upstream block: a trader who trades all day keeps its profile until the provider reports again),
 *     the wallets of fill rows (a fills page: kept through the wallet's other rows and the rollup
 *     refreshes, which do not change fills_v2),
 *     the markets whose metadata rows landed, the markets whose trades landed (their marks), and a
 *     resolved market's holders;
 *   - after each rollup refresh: the wallets of the batches it recomputed (trader_markets changed);
 *   - everything, when it cannot tell what changed (batches a stopped worker left behind, the restart's
 *     re-derivation, its own start and stop).
 *
 * Versions come from one counter that only grows. An answer read after `latest` was v is current while
 * the version of what it depends on is not above v. Answers are kept only while a worker of this
 * process reports on the database (`watched`) and the store is embedded: chDB binds its data directory
 * to one process, so that worker sees every write. With a ClickHouse server other processes write too.
 */

/** Keys remembered one by one at most, per kind; beyond, everything counts as changed and the maps start over. */
const MAX_TRACKED_KEYS = 200_000;

export class StoreChanges {
  /** Last version handed out (every change takes the next). */
  #last = 0;
  /** Everything changed at this version (keys without their own entry share it). */
  #everything = 0;
  /** Trader data by wallet. */
  readonly #wallets = new Map<string, number>();
  /** Display names by wallet. */
  readonly #names = new Map<string, number>();
  /** Market metadata by condition_id. */
  readonly #markets = new Map<string, number>();
  /** Market marks (the last trade) by condition_id. */
  readonly #marks = new Map<string, number>();
  /** The upstream provider's rows (profile, equity history) by wallet. */
  readonly #upstream = new Map<string, number>();
  /** Fill rows by wallet (what a fills page is read from). */
  readonly #fills = new Map<string, number>();
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

  /** The newest version handed out: take it before a read; what the read returns is current from there on. */
  get latest(): number {
    return this.#last;
  }

  /** The version of the wallet's data. */
  versionOf(wallet: string): number {
    return this.#versionIn(this.#wallets, wallet);
  }

  /** The version of the wallet's display name: moved only by rows that carry a name for the wallet. */
  versionOfName(wallet: string): number {
    return this.#versionIn(this.#names, wallet);
  }

  /** The version of the market's metadata. */
  versionOfMarket(conditionId: string): number {
    return this.#versionIn(this.#markets, conditionId);
  }

  /** The version of the market's mark: moved only by its trades. */
  versionOfMark(conditionId: string): number {
    return this.#versionIn(this.#marks, conditionId);
  }
  /** The version of the wallet's upstream profile: moved only by the provider's profile and equity rows of the wallet. */
  versionOfUpstream(wallet: string): number {
    return this.#versionIn(this.#upstream, wallet);
  }

  /** The version of the wallet's fills: moved only by its fill rows (not by its other rows, nor by rollup refreshes). */
  versionOfFills(wallet: string): number {
    return this.#versionIn(this.#fills, wallet);
  }

  changed(wallets: Iterable<string>): void {
    this.#bump(this.#wallets, wallets);
  }

  /** Rows that carry a display name for these wallets landed (trader_names is fed by such rows only). */
  namesChanged(wallets: Iterable<string>): void {
    this.#bump(this.#names, wallets);
  }

  marketsChanged(conditionIds: Iterable<string>): void {
    this.#bump(this.#markets, conditionIds);
  }

  /** Trades of these markets landed (market_marks_v2 is fed by trades alone). */
  marksChanged(conditionIds: Iterable<string>): void {
    this.#bump(this.#marks, conditionIds);
  }
  /** The provider's profile or equity rows of these wallets landed (the card's upstream block is read from those alone). */
  upstreamChanged(wallets: Iterable<string>): void {
    this.#bump(this.#upstream, wallets);
  }

  /** Fill rows of these wallets landed (a fills page is read from fills_v2, a view on fills alone). */
  fillsChanged(wallets: Iterable<string>): void {
    this.#bump(this.#fills, wallets);
  }

  everythingChanged(): void {
    this.#everything = ++this.#last;
    this.#wallets.clear();
    this.#names.clear();
    this.#markets.clear();
    this.#marks.clear();
    this.#upstream.clear();
    this.#fills.clear();
  }

  #versionIn(versions: ReadonlyMap<string, number>, key: string): number {
    return versions.get(key) ?? this.#everything;
  }

  #bump(versions: Map<string, number>, keys: Iterable<string>): void {
    const version = ++this.#last;
    for (const key of keys) versions.set(key, version);
    if (versions.size > MAX_TRACKED_KEYS) this.everythingChanged();
  }
}

const byDatabase = new Map<string, StoreChanges>();

/** The changes of one database in this process (the worker reports, the API's caches consult). */
export function changesOf(database: string): StoreChanges {
  let changes = byDatabase.get(database);
  if (!changes) byDatabase.set(database, (changes = new StoreChanges()));
  return changes;
}
