/**
 * The read cache's mechanism: answers kept by policy (operations/reads.ts holds the policies and the
 * cached reads; nothing else keeps answers). An answer is kept under its policy and arguments, for the
 * lifetime the policy gives it:
 *   - a resolved market's answer until evicted (it never changes: immutable, strong ETag);
 *   - an open one, a name, the upstream's report: a short TTL (at most the answer's Cache-Control max-age);
 *   - an answer about a trader, while the store's changes are followed (an embedded store whose worker
 *     runs in this process, projections/changes.ts): until a notice names its trader, at most its TTL.
 *
 * A call that asks for an answer another call is reading waits for that read instead of reading again
 * (an agent's card and top-markets of one trader arrive milliseconds apart; a hundred calls name one
 * trader at once): a followed answer while nothing it depends on changed since that read started, any
 * other while the read runs. Bounded: two LRUs by the bytes of their JSON (answers about traders,
 * answers about markets) and one by entries (names, marks, the upstream's report).
 */
import { LRUCache } from 'lru-cache';
import type { Changed, ChangeListener, StoreChanged, StoreChangeFeed } from '../projections/changes.ts';

/** What a followed answer depends on: a notice's set (projections/changes.ts, StoreChanged). */
type Dependency = 'wallets' | 'markets' | 'named' | 'upstream';

export interface Policy<T> {
  /** The answer kind: the key's prefix and the metric's label. */
  readonly name: string;
  readonly memory: 'traders' | 'markets' | 'small';
  /**
   * Kept while the store's changes are followed, until a notice names the first argument in this set,
   * at most `followedMs`. Without `ttlMs`, not kept at all while they are not followed.
   */
  readonly follows?: Dependency;
  readonly followedMs?: number;
  /** Kept this long otherwise (an open market's answer, a name without a feed); 0 or absent: not kept. */
  readonly ttlMs?: number;
  /** A market answer that is resolved (by the answer, or by what was asked) lives until evicted. */
  readonly resolved?: (value: T, args: readonly unknown[]) => boolean;
  /** Null is an answer worth keeping (a wallet without an upstream profile); by default it is not kept. */
  readonly keepsNull?: boolean;
}

/** Any policy, whatever its answer (the mechanism below never looks inside an answer but through its policy). */
type AnyPolicy = Policy<never>;

export interface ReadCacheSettings {
  /** Memory for the answers about traders and, as much again, about markets (bytes of their JSON). */
  bytes: number;
  /** Names, marks and reports kept at most. */
  smallEntries: number;
}

export interface ReadCacheOptions {
  /** The embedded store's feed (absent: a server store, which other processes write too). */
  changes?: StoreChangeFeed | undefined;
  /** Told every lookup: the role counts them in the metrics registry. */
  observe?: (answer: string, outcome: 'hit' | 'miss') => void;
  /** The clock entries age by, in milliseconds (tests pass their own). */
  clock?: { now(): number };
}

/** Where a read started in the notices' order (null: not followed); a kept answer is current while nothing it depends on changed since. */
export type ReadToken = number | null;

/** Keys remembered one by one at most, per set; beyond, everything in the set counts as changed. */
const MAX_TRACKED_KEYS = 200_000;

/** The version of every key named by a notice, from one counter that only grows. */
class Versions {
  #last = 0;
  readonly #sets = new Map<Dependency, { all: number; keys: Map<string, number> }>(
    (['wallets', 'markets', 'named', 'upstream'] as const).map((set) => [set, { all: 0, keys: new Map() }]),
  );

  get latest(): number {
    return this.#last;
  }

  of(set: Dependency, key: string): number {
    const versions = this.#sets.get(set)!;
    return versions.keys.get(key) ?? versions.all;
  }

  apply(notice: StoreChanged): void {
    const version = ++this.#last;
    for (const [set, changed] of Object.entries(notice) as [Dependency, Changed | undefined][]) {
      const versions = this.#sets.get(set);
      if (!versions || changed === undefined) continue;
      if (changed === 'all' || versions.keys.size + changed.size > MAX_TRACKED_KEYS) {
        versions.all = version;
        versions.keys.clear();
      } else for (const key of changed) versions.keys.set(key, version);
    }
  }
}

interface Entry {
  value: unknown;
  token: ReadToken;
}

function lruOf(size: { bytes: number } | { entries: number }, clock: { now(): number } | undefined) {
  return new LRUCache<string, Entry>({
    // Every lookup reads the clock (no cached "now" between timer ticks).
    ttlResolution: 0,
    ttlAutopurge: false,
    ...(clock ? { perf: clock } : {}),
    ...('entries' in size
      ? { max: Math.max(1, size.entries) }
      : {
          maxSize: Math.max(1, size.bytes),
          // JSON length approximates the memory of the parsed answer (strings and numbers dominate).
          sizeCalculation: (entry: Entry) => Math.max(1, JSON.stringify(entry.value)?.length ?? 1),
        }),
  });
}

export class ReadCache implements ChangeListener {
  readonly #versions = new Versions();
  readonly #memory: Record<AnyPolicy['memory'], LRUCache<string, Entry>>;
  /** Reads under way, by key, with where each started. */
  readonly #reading = new Map<string, { token: ReadToken; value: Promise<unknown> }>();
  readonly #stopListening: () => void;
  #closed = false;

  constructor(
    private readonly settings: ReadCacheSettings,
    private readonly options: ReadCacheOptions = {},
  ) {
    this.#memory = {
      traders: lruOf({ bytes: settings.bytes }, options.clock),
      markets: lruOf({ bytes: settings.bytes }, options.clock),
      small: lruOf({ entries: settings.smallEntries }, options.clock),
    };
    this.#stopListening = options.changes?.listen(this) ?? (() => {});
  }

  /** True while a worker of this process tells every change of the store. */
  get following(): boolean {
    return !this.#closed && (this.options.changes?.reported ?? false);
  }

  changed(notice: StoreChanged): void {
    this.#versions.apply(notice);
  }

  /** Stops listening to the store's changes (the server closes). */
  close(): void {
    this.#closed = true;
    this.#stopListening();
  }

  /** The answer: kept, being read by another call, or read now and kept. */
  through<T>(policy: Policy<T>, args: readonly unknown[], read: () => Promise<T>): Promise<T> {
    const key = keyOf(policy, args);
    const kept = this.#current(policy, key, args);
    this.options.observe?.(policy.name, kept ? 'hit' : 'miss');
    if (kept) return Promise.resolve(kept.value as T);
    const running = this.#running<T>(policy, key, args);
    // A shared read that failed for its caller's own reason (that call was shed before it read) says
    // nothing about the answer: this call reads it itself.
    if (running) return running.catch((failure: unknown) => (isCallersOwn(failure) ? read() : Promise.reject(failure)));
    const token = this.begin(policy);
    const reading = this.#keeps(policy, token)
      ? read().then((value) => {
          this.keep(policy, args, value, token);
          return value;
        })
      : read();
    const entry = { token, value: reading };
    this.#reading.set(key, entry);
    const forget = () => {
      if (this.#reading.get(key) === entry) this.#reading.delete(key);
    };
    reading.then(forget, forget);
    return reading;
  }

  /** A fact about the whole store, kept by this cache's clock, its lookups counted under `name`. */
  fact<V>(name: string, lifetimeMs: number, read: () => Promise<V>): KeptFact<V> {
    return new KeptFact(lifetimeMs, read, {
      ...(this.options.clock ? { clock: this.options.clock } : {}),
      observe: (outcome) => this.options.observe?.(name, outcome),
    });
  }

  /** The answer if kept or being read, without reading it (a caller that can do with less reads less otherwise). */
  peek<T>(policy: Policy<T>, args: readonly unknown[]): Promise<T> | undefined {
    const key = keyOf(policy, args);
    const kept = this.#current(policy, key, args);
    // A look that finds nothing reads nothing of this kind: only what it finds counts (as a hit).
    if (kept) {
      this.options.observe?.(policy.name, 'hit');
      return Promise.resolve(kept.value as T);
    }
    return this.#running<T>(policy, key, args);
  }

  /** The kept answer, not counted (batch reads count one lookup per batch). */
  lookup<T>(policy: Policy<T>, args: readonly unknown[]): { value: T } | undefined {
    const kept = this.#current(policy, keyOf(policy, args), args);
    return kept ? { value: kept.value as T } : undefined;
  }

  /** Counts one lookup of a batch. */
  observe(policy: AnyPolicy, outcome: 'hit' | 'miss'): void {
    this.options.observe?.(policy.name, outcome);
  }

  /** Where a read of `policy` starts: take it before the read and keep what it returns with it. */
  begin(policy: AnyPolicy): ReadToken {
    return policy.follows && this.following ? this.#versions.latest : null;
  }

  /** Keeps an answer read from `token` on (an answer read along with another one, or a batch's). */
  keep<T>(policy: Policy<T>, args: readonly unknown[], value: T, token: ReadToken): void {
    if (value === undefined || (value === null && !policy.keepsNull) || !this.#keeps(policy, token)) return;
    // A resolved answer lives until evicted (no TTL).
    const resolved = policy.resolved?.(value, args) === true;
    const ttlMs = resolved ? 0 : token !== null ? (policy.followedMs ?? 0) : (policy.ttlMs ?? 0);
    if (!resolved && ttlMs <= 0) return;
    this.#memory[policy.memory].set(keyOf(policy, args), { value, token }, { ttl: ttlMs });
  }

  #keeps(policy: AnyPolicy, token: ReadToken): boolean {
    if (policy.memory !== 'small' && this.settings.bytes <= 0) return false;
    return token !== null || (policy.ttlMs ?? 0) > 0 || policy.resolved !== undefined;
  }

  #current(policy: AnyPolicy, key: string, args: readonly unknown[]): Entry | undefined {
    const memory = this.#memory[policy.memory];
    const entry = memory.get(key);
    if (entry === undefined) return undefined;
    if (entry.token === null || this.#unchangedSince(policy, entry.token, args)) return entry;
    memory.delete(key);
    return undefined;
  }

  /**
   * A read under way of the same answer: a followed one while nothing its key depends on changed since it
   * started; any other (an answer kept on a lifetime, or not kept at all) while it runs: its answer is no
   * older than the read, younger than any lifetime, and a name or a market answer asked for by a hundred
   * callers at once is read once, not a hundred times.
   */
  #running<T>(policy: AnyPolicy, key: string, args: readonly unknown[]): Promise<T> | undefined {
    const running = this.#reading.get(key);
    if (!running || (running.token !== null && !this.#unchangedSince(policy, running.token, args))) return undefined;
    return running.value as Promise<T>;
  }

  #unchangedSince(policy: AnyPolicy, token: number, args: readonly unknown[]): boolean {
    return (
      policy.follows !== undefined && this.following && this.#versions.of(policy.follows, String(args[0])) <= token
    );
  }
}

/** A failure of one call's own (operations/gates/store-slot.ts: a call refused a store slot). */
function isCallersOwn(failure: unknown): boolean {
  return (
    typeof failure === 'object' && failure !== null && (failure as { ownedByCaller?: unknown }).ownedByCaller === true
  );
}

function keyOf(policy: AnyPolicy, args: readonly unknown[]): string {
  return `${policy.name}|${JSON.stringify(args)}`;
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

/**
 * Lookups kept by key and read again behind the calls (an API key's caller by its hash, an OAuth
 * subject's account): each served while younger than its lifetime (counted from the start of its read),
 * and in the second half of it the next call of the key starts the next read in the background and is
 * answered at once. A call waits for the store only for a key's first read, or after no call asked for it
 * during a whole lifetime; concurrent callers of a key share one read. So a change to what is looked up (a
 * revoked key, a new plan) shows within one lifetime, and a key in use never waits. At most `entries`
 * keys are kept, the least recently used dropped first.
 */
export class KeptLookups<V> {
  readonly #kept: LRUCache<string, { value: V; readAt: number }>;
  readonly #reading = new Map<string, Promise<V>>();

  constructor(
    entries: number,
    private readonly lifetimeMs: number,
    private readonly read: (key: string) => Promise<V>,
    private readonly options: { clock?: { now(): number }; observe?: (outcome: 'hit' | 'miss') => void } = {},
  ) {
    this.#kept = new LRUCache({ max: entries });
  }

  get(key: string): Promise<V> {
    const now = this.options.clock?.now() ?? Date.now();
    const kept = this.#kept.get(key);
    const age = kept ? now - kept.readAt : Number.POSITIVE_INFINITY;
    if (kept && age < this.lifetimeMs) {
      this.options.observe?.('hit');
      if (age >= this.lifetimeMs / 2) this.#readAgain(key, now).catch(() => {});
      return Promise.resolve(kept.value);
    }
    this.options.observe?.('miss');
    return this.#readAgain(key, now);
  }

  #readAgain(key: string, startedAt: number): Promise<V> {
    let reading = this.#reading.get(key);
    if (!reading) {
      reading = this.read(key)
        .then((value) => {
          const kept = this.#kept.get(key);
          if (!kept || kept.readAt <= startedAt) this.#kept.set(key, { value, readAt: startedAt });
          return value;
        })
        .finally(() => this.#reading.delete(key));
      this.#reading.set(key, reading);
    }
    return reading;
  }
}

/**
 * A fact about the whole store that every call of some kind needs (the upstream's latest report, the
 * archive's ranges), kept in memory and read again behind the calls, as KeptLookups keeps a key's.
 */
export class KeptFact<V> {
  readonly #lookups: KeptLookups<V>;

  constructor(
    lifetimeMs: number,
    read: () => Promise<V>,
    options: { clock?: { now(): number }; observe?: (outcome: 'hit' | 'miss') => void } = {},
  ) {
    this.#lookups = new KeptLookups(1, lifetimeMs, read, options);
  }

  get(): Promise<V> {
    return this.#lookups.get('');
  }
}
