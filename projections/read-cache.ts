/**
 * Short in-process caches of reads whose answers change rarely or never, so that a request does not
 * pay a statement for them: a trader's display name by wallet, a market's names and mark by condition_id, the upstream's latest report, the whale
 * ranking of the current second, and the answers about resolved markets (summaries, charts, tapes),
 * which never change once the market has resolved (they carry immutable strong ETags).
 *
 * Bounded: each cache is an LRU (lru-cache) with an entry or byte budget. Correct: a resolved market's
 * answer is immutable by contract; an open market's answer is kept at most `openMarketSeconds` (no
 * longer than its own `Cache-Control: max-age`); names and the upstream report at most their TTL.
 *
 * A store carries its caches (`withReadCaches`, cached-reads.ts); a store without caches reads every time
 * (the projection tests use such stores, so they always see what they just wrote).
 */
import { LRUCache } from 'lru-cache';
import { changesOf, type StoreChanges } from './changes.ts';

/**
 * What watches the caches answer: the role installs one (roles/http-server.ts counts the lookups in the
 * metrics registry); none by default. projections/ imports no metrics.
 */
export interface ReadObserver {
  /** A lookup of a kept answer: `cache` names it (an answer kind: career, fills, …; trader_name: a display name). */
  cacheLookup(cache: string, outcome: 'hit' | 'miss'): void;
}

let readObserver: ReadObserver | null = null;

/** Installs the observer of every read cache of this process (one, like the metrics registry it feeds); null removes it. */
export function observeReads(observer: ReadObserver | null): void {
  readObserver = observer;
}

/** A market's mark: its last trade in UP space, and when (projections/wallet-markets.ts). */
export interface MarketMark {
  mark: number;
  marked_at: number;
}

/** A market's names as the lists show them (projections/market-names.ts). */
export interface MarketNames {
  title: string;
  outcome1: string;
  outcome2: string;
  /** The start the title names (metadata like the names, kept with them): a chart's default window starts there. */
  title_start_ts: number | null;
}

/** A market without metadata: the lists show '' for its title and outcome names. */
export const NO_MARKET_NAMES: Readonly<MarketNames> = Object.freeze({
  title: '',
  outcome1: '',
  outcome2: '',
  title_start_ts: null,
});

/** The upstream answers' share of the trader answers' memory (traderAnswerBytes ÷ this): each wallet's profile and equity history. */
const UPSTREAM_SHARE_OF_TRADER_BYTES = 8;
/** The fills pages' share of the trader answers' memory (traderAnswerBytes ÷ this). */
const FILLS_SHARE_OF_TRADER_BYTES = 4;

/**
 * What a kept answer about a trader follows: any of the trader's data ('trader'), only its upstream
 * provider rows ('upstream'), or only its fill rows ('fills': a fills page over all its markets, read
 * from fills_v2 alone, which neither its other rows nor the rollup refreshes change).
 */
export type TraderAnswerFollows = 'trader' | 'upstream' | 'fills';

export interface ReadCacheSettings {
  /** A display name is reused this long (a rename shows within it). 0: off. */
  traderNameSeconds: number;
  /** A market's title and outcome names are reused this long (a retitled market shows within it). 0: off. */
  marketNameSeconds: number;
  /** Market names kept at most. */
  marketNameEntries: number;
  /**
   * While the ingest worker of this process reports changes (changes.ts), a market's names are reused
   * until its metadata changes, at most this long. 0: only `marketNameSeconds`.
   */
  marketNameWatchedSeconds: number;
  /** The upstream's latest report is reused this long. 0: off. */
  upstreamStateSeconds: number;
  /**
   * A whale ranking is computed once per request shape and second; one up to this many seconds older is
   * served while the current one is computed (RefreshAhead). 0: off.
   */
  whaleFlowSeconds: number;
  /** An open market's summary or chart is reused this long (at most its Cache-Control max-age). 0: off. */
  openMarketSeconds: number;
  /** Memory for the answers about markets (resolved and open), in bytes of their JSON. 0: off. */
  marketAnswerBytes: number;
  /** Names kept at most. */
  traderNameEntries: number;
  /**
   * While the ingest worker of this process reports changes (changes.ts), a display name is reused until
   * a row carrying a name for its wallet lands, at most this long. 0: only `traderNameSeconds`.
   */
  traderNameWatchedSeconds: number;
  /**
   * An answer about a trader (the wallet's markets, upstream profile, markets list, fills) is reused until
   * that trader's data changes (changes.ts), and at most this long: what other traders do moves the
   * marks of its open markets, which may lag this much, as an open market's answer may. 0: off.
   */
  traderAnswerSeconds: number;
  /**
   * The upstream profile and equity curve (built from the provider's rows of the wallet alone: none of its
   * fills, nothing of other traders, no market titles) are reused until the provider's rows of that wallet change, at
   * most this long (at least `traderAnswerSeconds`); off with `traderAnswerSeconds`.
   */
  traderOwnAnswerSeconds: number;
  /** Memory for the answers about traders, in bytes of their JSON (an eighth of it for the upstream profiles and equity curves, a quarter for the fills pages). 0: off. */
  traderAnswerBytes: number;
}

/** What the caches need to know of their store (projections/store.ts, Store): an embedded store's changes are followed (changes.ts). */
export interface CachedStoreKind {
  readonly database: string;
  readonly kind: 'embedded' | 'server';
}

/** The clock the caches age entries by, in milliseconds (tests pass their own). */
export interface CacheClock {
  now(): number;
}

/** Something cached with how long it lives; `ttlMs` 0 means do not cache. */
type Ttl = number;

class MarketAnswers {
  readonly #cache: LRUCache<string, { value: unknown }>;

  constructor(maxBytes: number, perf: CacheClock | undefined) {
    this.#cache = new LRUCache<string, { value: unknown }>({
      ttlResolution: 0,
      ...(perf ? { perf } : {}),
      maxSize: Math.max(1, maxBytes),
      // JSON length approximates the memory of the parsed answer (strings and numbers dominate).
      sizeCalculation: (entry) => Math.max(1, JSON.stringify(entry.value)?.length ?? 1),
      ttlAutopurge: false,
    });
  }

  get<T>(key: string): T | undefined {
    return this.#cache.get(key)?.value as T | undefined;
  }

  /** Resolved answers live until evicted; open ones `openTtlMs`. */
  set(key: string, value: unknown, resolved: boolean, openTtlMs: Ttl): void {
    if (resolved) this.#cache.set(key, { value }, { ttl: 0 });
    else if (openTtlMs > 0) this.#cache.set(key, { value }, { ttl: openTtlMs });
  }
}

/** How long an entry of a KeptUntilChanged lives: read while no worker reports changes, or while one does. 0: not kept. */
interface ChangeTtlMs {
  unwatched: number;
  watched: number;
}

/**
 * Entries kept with the point of the store's changes they were read from (`StoreChanges.latest`, taken
 * before the read), current while the version of what they depend on (`versionOf`) is not above it: a
 * change that lands during or after the read makes them stale. An entry read while no worker reported
 * changes (`readAt` null) is current for its own short TTL, which the LRU enforces; one read while a
 * worker reported is no longer current once none does.
 */
class KeptUntilChanged<V> {
  readonly #cache: LRUCache<string, { value: V; readAt: number | null }>;

  constructor(
    size: { entries: number } | { bytes: number },
    private readonly ttlMs: ChangeTtlMs,
    private readonly changes: StoreChanges | null,
    private readonly versionOf: (changes: StoreChanges, key: string) => number,
    perf: CacheClock | undefined,
  ) {
    this.#cache = new LRUCache<string, { value: V; readAt: number | null }>({
      ttl: Math.max(1, ttlMs.unwatched, ttlMs.watched),
      ttlResolution: 0,
      ...(perf ? { perf } : {}),
      ...('entries' in size
        ? { max: Math.max(1, size.entries) }
        : {
            maxSize: Math.max(1, size.bytes),
            sizeCalculation: (entry: { value: V }) => Math.max(1, JSON.stringify(entry.value)?.length ?? 1),
          }),
      ttlAutopurge: false,
    });
  }

  /** Where a read starts: take it before reading, and keep what it returns with it. */
  readStart(): number | null {
    return this.changes?.watched ? this.changes.latest : null;
  }

  /** The entry under `key` while current; `dependsOn` is the key of the versions it follows (default: `key`). */
  get(key: string, dependsOn = key): { value: V } | undefined {
    const entry = this.#cache.get(key);
    if (entry === undefined) return undefined;
    const changes = this.changes;
    if (entry.readAt === null || (changes?.watched && this.versionOf(changes, dependsOn) <= entry.readAt)) return entry;
    this.#cache.delete(key);
    return undefined;
  }

  /** Nothing that `key` depends on changed since `readAt` (a read started then is still current). */
  unchangedSince(readAt: number, dependsOn: string): boolean {
    const changes = this.changes;
    return changes?.watched === true && this.versionOf(changes, dependsOn) <= readAt;
  }

  /** Keeps `value` read from `readAt` on; `watchedTtlMs` overrides the watched lifetime of this entry. */
  keep(key: string, value: V, readAt: number | null, watchedTtlMs = this.ttlMs.watched): void {
    const ttl = readAt === null ? this.ttlMs.unwatched : watchedTtlMs;
    if (ttl > 0) this.#cache.set(key, { value, readAt }, { ttl });
  }
}

/**
 * Answers computed for a second (`at`: a ranking whose window ends now), by request shape. A caller
 * gets the answer for its second; while that one is computed, an answer at most `maxAgeSeconds` older
 * is served at once and the new one computed in the background, and callers that need the same
 * computation share it (never two of the same key and second at once).
 *
 * Why: a key per second made every new second a miss for every caller at once: under load all API
 * slots waited on the same ranking and the calls behind them were refused (bench:api's whales), while
 * the previous second's ranking was at hand.
 */
export class RefreshAhead<V> {
  readonly #answers: LRUCache<string, { at: number; value: V }>;
  readonly #computing = new Map<string, Promise<V>>();

  constructor(
    entries: number,
    readonly maxAgeSeconds: number,
  ) {
    this.#answers = new LRUCache({ max: entries });
  }

  async get(key: string, at: number, compute: () => Promise<V>): Promise<V> {
    const kept = this.#answers.get(key);
    if (kept && kept.at === at) return kept.value;
    if (kept && Math.abs(at - kept.at) <= this.maxAgeSeconds) {
      // A failed background computation is retried by the next caller; the answer at hand stands.
      this.#compute(key, at, compute).catch(() => {});
      return kept.value;
    }
    return this.#compute(key, at, compute);
  }

  #compute(key: string, at: number, compute: () => Promise<V>): Promise<V> {
    const id = `${at}|${key}`;
    let computing = this.#computing.get(id);
    if (!computing) {
      computing = compute()
        .then((value) => {
          const kept = this.#answers.get(key);
          if (!kept || kept.at <= at) this.#answers.set(key, { at, value });
          return value;
        })
        .finally(() => this.#computing.delete(id));
      this.#computing.set(id, computing);
    }
    return computing;
  }
}

export class ReadCaches {
  readonly #traderNames: KeptUntilChanged<string> | null;
  readonly #marketNames: KeptUntilChanged<MarketNames> | null;
  /** Marks by market (null: no trade yet), kept until the market trades again; only while a worker reports. */
  readonly #marks: KeptUntilChanged<MarketMark | null> | null;
  readonly upstreamState: LRUCache<'latest', { row: { state: string; ts: number } | null }> | null;
  readonly whaleFlow: RefreshAhead<unknown> | null;
  readonly markets: MarketAnswers | null;
  readonly openMarketTtlMs: number;
  /**
   * Answers about traders, by what each follows (TraderAnswerFollows): all of the trader's data, its
   * upstream provider rows alone (its upstream profile and equity history), its fills alone (its fills pages over all its
   * markets). Null without changes to follow (a server store, which other processes write too) or when off.
   */
  readonly #traders: Record<TraderAnswerFollows, KeptUntilChanged<unknown> | null>;
  /**
   * Reads of answers about traders under way, by full key, with where each started: a caller that asks
   * for the same answer while nothing of the trader changed since joins it instead of reading again
   * (an agent's card and top-markets of one trader arrive milliseconds apart).
   */
  readonly #traderReads = new Map<string, { readAt: number; value: Promise<unknown> }>();

  constructor(settings: ReadCacheSettings, clock?: CacheClock, store?: CachedStoreKind) {
    // ttlResolution 0: every lookup reads the clock (no cached "now" between timer ticks).
    const perf = { ttlResolution: 0, ...(clock ? { perf: clock } : {}) };
    // Null: the store may change behind this process's back (a server); names then live their short TTL.
    const changes = store?.kind === 'embedded' ? changesOf(store.database) : null;
    const nameTtlMs = {
      unwatched: settings.traderNameSeconds * 1000,
      watched: Math.max(settings.traderNameSeconds, settings.traderNameWatchedSeconds) * 1000,
    };
    this.#traderNames =
      nameTtlMs.watched > 0
        ? new KeptUntilChanged(
            { entries: settings.traderNameEntries },
            nameTtlMs,
            changes,
            (c, wallet) => c.versionOfName(wallet),
            clock,
          )
        : null;
    const marketNameTtlMs = {
      unwatched: settings.marketNameSeconds * 1000,
      watched: Math.max(settings.marketNameSeconds, settings.marketNameWatchedSeconds) * 1000,
    };
    this.#marketNames =
      marketNameTtlMs.watched > 0
        ? new KeptUntilChanged(
            { entries: settings.marketNameEntries },
            marketNameTtlMs,
            changes,
            (c, conditionId) => c.versionOfMarket(conditionId),
            clock,
          )
        : null;
    // A mark moves with every trade of its market: kept only while a worker reports the trades (an
    // unwatched TTL of 0), then until the market trades again, with the names' lifetime and bound.
    this.#marks =
      changes && marketNameTtlMs.watched > 0
        ? new KeptUntilChanged(
            { entries: settings.marketNameEntries },
            { unwatched: 0, watched: marketNameTtlMs.watched },
            changes,
            (c, conditionId) => c.versionOfMark(conditionId),
            clock,
          )
        : null;
    // Answers about traders are kept only while a worker reports (an unwatched TTL of 0). One budget for
    // the three kinds: an eighth for the upstream answers (a wallet's profile and equity history, a few KB), a quarter for the
    // fills pages, the rest for the others.
    const upstreamBytes = Math.max(1, Math.floor(settings.traderAnswerBytes / UPSTREAM_SHARE_OF_TRADER_BYTES));
    const fillsBytes = Math.max(1, Math.floor(settings.traderAnswerBytes / FILLS_SHARE_OF_TRADER_BYTES));
    const answersAboutTraders = (
      bytes: number,
      watchedMs: number,
      versionOf: (c: StoreChanges, wallet: string) => number,
    ) =>
      changes && settings.traderAnswerSeconds > 0 && settings.traderAnswerBytes > 0
        ? new KeptUntilChanged<unknown>(
            { bytes: Math.max(1, bytes) },
            { unwatched: 0, watched: watchedMs },
            changes,
            versionOf,
            clock,
          )
        : null;
    this.#traders = {
      trader: answersAboutTraders(
        settings.traderAnswerBytes - upstreamBytes - fillsBytes,
        settings.traderAnswerSeconds * 1000,
        (c, wallet) => c.versionOf(wallet),
      ),
      // The upstream profile and equity history are the provider's figures: kept until the provider reports on the wallet
      // again, not until the wallet trades (an active trader's card would read it on nearly every call).
      upstream: answersAboutTraders(
        upstreamBytes,
        Math.max(settings.traderAnswerSeconds, settings.traderOwnAnswerSeconds) * 1000,
        (c, wallet) => c.versionOfUpstream(wallet),
      ),
      // A fills page is its fills and their markets' names: kept until the wallet's fills change, not
      // until its rollups are refreshed (every write of its fills was followed by a refresh that dropped
      // the page read in between), with the others' lifetime (the names may lag that much).
      fills: answersAboutTraders(fillsBytes, settings.traderAnswerSeconds * 1000, (c, wallet) =>
        c.versionOfFills(wallet),
      ),
    };
    this.upstreamState =
      settings.upstreamStateSeconds > 0
        ? new LRUCache({ ...perf, max: 1, ttl: settings.upstreamStateSeconds * 1000 })
        : null;
    this.whaleFlow = settings.whaleFlowSeconds > 0 ? new RefreshAhead(256, settings.whaleFlowSeconds) : null;
    this.markets = settings.marketAnswerBytes > 0 ? new MarketAnswers(settings.marketAnswerBytes, clock) : null;
    this.openMarketTtlMs = settings.openMarketSeconds * 1000;
  }

  /** Where a read of market names starts (take it before the read; pass it to keepMarketNames). */
  marketNamesReadStart(): number | null {
    return this.#marketNames?.readStart() ?? null;
  }

  /**
   * A market's names if kept and still current: `marketNameSeconds`; while this process's worker reports
   * changes (embedded store), until the market's metadata changes, at most `marketNameWatchedSeconds`.
   */
  marketNames(conditionId: string): MarketNames | undefined {
    return this.#marketNames?.get(conditionId)?.value;
  }

  /**
   * Keeps a market's names read from `readStart` (marketNamesReadStart) on. `null` (no metadata yet) is
   * kept as NO_MARKET_NAMES only while this process's worker reports changes (readStart not null: the
   * metadata landing ends it), never on the lifetime alone: the names may land any moment. A trader's
   * fills often arrive before their markets' names, and every answer naming them would read them again.
   */
  keepMarketNames(conditionId: string, names: MarketNames | null, readStart: number | null): void {
    if (names !== null) this.#marketNames?.keep(conditionId, names, readStart);
    else if (readStart !== null) this.#marketNames?.keep(conditionId, NO_MARKET_NAMES, readStart);
  }

  /** Where a read of marks starts (pass it to keepMark); null: marks are not kept (no worker reports the trades). */
  marksReadStart(): number | null {
    return this.#marks?.readStart() ?? null;
  }

  /** A market's mark if kept and still current (null: it had no trade); undefined: read it. */
  mark(conditionId: string): MarketMark | null | undefined {
    return this.#marks?.get(conditionId)?.value;
  }

  /** Keeps a market's mark (null: no trade) read from `readStart` (marksReadStart) on. */
  keepMark(conditionId: string, mark: MarketMark | null, readStart: number | null): void {
    this.#marks?.keep(conditionId, mark, readStart);
  }

  /**
   * A wallet's display name: from the cache, or read and kept. Kept `traderNameSeconds`; while this
   * process's worker reports changes (embedded store), until a row carrying a name for the wallet lands,
   * at most `traderNameWatchedSeconds`.
   */
  async traderName(wallet: string, read: () => Promise<string>): Promise<string> {
    const cache = this.#traderNames;
    if (!cache) return read();
    const kept = cache.get(wallet);
    readObserver?.cacheLookup('trader_name', kept ? 'hit' : 'miss');
    if (kept) return kept.value;
    const readAt = cache.readStart();
    const name = await read();
    cache.keep(wallet, name, readAt);
    return name;
  }

  /**
   * An answer about `wallet` (`key` names the read and its arguments): from the cache while the trader's
   * data is unchanged since it was read (and it is younger than the TTL), else read and kept. Kept only
   * while this process's worker reports the changes of the store (changes.ts). `follows: 'upstream'`: the
   * answer is built from the wallet's upstream provider rows alone (its upstream profile), so it is kept
   * until those change (not the wallet's fills), at most `traderOwnAnswerSeconds`. `follows: 'fills'`:
   * built from the wallet's fills alone (a page over all its markets), kept until those change (not its
   * other rows, nor its rollups), at most `traderAnswerSeconds`.
   */
  async trader<T>(
    kind: string,
    wallet: string,
    key: string,
    read: () => Promise<T>,
    follows: TraderAnswerFollows = 'trader',
  ): Promise<T> {
    const cache = this.#traders[follows];
    // Before the read: a change while it runs makes the kept answer stale at once.
    const readAt = cache?.readStart() ?? null;
    if (!cache || readAt === null) return read();
    const fullKey = `${kind}|${wallet}|${key}`;
    const hit = this.#keptTrader<T>(cache, fullKey, wallet);
    readObserver?.cacheLookup(kind, hit ? 'hit' : 'miss');
    if (hit) return hit;
    const reading = read().then((value) => {
      // null is an answer too (a wallet without an upstream profile).
      if (value !== undefined) cache.keep(fullKey, value, readAt);
      return value;
    });
    const entry = { readAt, value: reading };
    this.#traderReads.set(fullKey, entry);
    const forget = () => {
      if (this.#traderReads.get(fullKey) === entry) this.#traderReads.delete(fullKey);
    };
    reading.then(forget, forget);
    return reading;
  }

  /**
   * An answer about `wallet` this process already has or is reading, without reading it: kept and
   * current, or read since the trader last changed. Undefined: it would have to be read. For reads that
   * can answer from a wider answer when it is at hand and read less themselves when it is not.
   */
  keptTrader<T>(kind: string, wallet: string, key: string): Promise<T> | undefined {
    const cache = this.#traders.trader;
    if (!cache || cache.readStart() === null) return undefined;
    const kept = this.#keptTrader<T>(cache, `${kind}|${wallet}|${key}`, wallet);
    // A look that finds nothing reads nothing of this kind: only what it finds counts (as a hit).
    if (kept) readObserver?.cacheLookup(kind, 'hit');
    return kept;
  }

  #keptTrader<T>(cache: KeptUntilChanged<unknown>, fullKey: string, wallet: string): Promise<T> | undefined {
    const kept = cache.get(fullKey, wallet);
    if (kept) return Promise.resolve(kept.value as T);
    const reading = this.#traderReads.get(fullKey);
    if (!reading || !cache.unchangedSince(reading.readAt, wallet)) return undefined;
    // Under way (a settled read leaves the map): the caller waits for another call's work.
    return reading.value as Promise<T>;
  }

  /** Keeps a market answer read along with another one (resolved: until evicted; open: briefly), as market() would have. */
  keepMarket<T>(key: string, value: T, resolved: boolean): void {
    if (this.markets && value !== null && value !== undefined)
      this.markets.set(key, value, resolved, this.openMarketTtlMs);
  }

  /** A market answer: from the cache, or read and kept (resolved: until evicted; open: briefly). */
  async market<T>(key: string, read: () => Promise<T>, isResolved: (value: T) => boolean): Promise<T> {
    if (!this.markets) return read();
    const hit = this.markets.get<T>(key);
    if (hit !== undefined) return hit;
    const value = await read();
    if (value !== null && value !== undefined) this.markets.set(key, value, isResolved(value), this.openMarketTtlMs);
    return value;
  }
}
