/**
 * Reads through a store's caches (read-cache.ts): a store given its caches, an answer about a trader read
 * through them, and a bundle with a market's names unless they hold them (a store without caches reads
 * every time). Plumbing, like bundle.ts: the store-latency metric names a statement after the read
 * function that calls these (metrics/store.ts).
 */
import { readBundle, type Bundle } from './bundle.ts';
import {
  NO_MARKET_NAMES,
  ReadCaches,
  type CacheClock,
  type MarketNames,
  type ReadCacheSettings,
  type TraderAnswerFollows,
} from './read-cache.ts';
import type { QueryParams, Store } from './store.ts';

/**
 * `read` of an answer about `wallet`, through the store's trader cache when it has one (`kind` names the
 * read, `args` the rest of what the answer depends on; both form the key).
 */
export function readForTrader<T>(
  store: Store,
  kind: string,
  wallet: string,
  args: unknown,
  read: () => Promise<T>,
  follows: TraderAnswerFollows = 'trader',
): Promise<T> {
  return store.caches ? store.caches.trader(kind, wallet, JSON.stringify(args) ?? '', read, follows) : read();
}

/** What readForTrader would answer without reading (ReadCaches.keptTrader); undefined without it or without caches. */
export function keptForTrader<T>(store: Store, kind: string, wallet: string, args: unknown): Promise<T> | undefined {
  return store.caches?.keptTrader<T>(kind, wallet, JSON.stringify(args) ?? '');
}

/** The same store, its reads served from these caches where a read function uses them. */
export function withReadCaches(store: Store, settings: ReadCacheSettings, clock?: CacheClock): Store {
  return Object.freeze({
    ...store,
    database: store.database,
    kind: store.kind,
    caches: new ReadCaches(settings, clock, store),
  });
}

/**
 * A bundle with the market's names unless the read caches hold them; the names found are kept.
 * `named` is the same bundle without its `names` part. Plumbing, like readBundle: the store-latency
 * metric names a statement after the read function that calls this (metrics/store.ts).
 */
export async function readWithMarketNames<Parts extends object>(
  store: Store,
  conditionId: string,
  withNames: Bundle<Parts & { names: MarketNames }>,
  named: Bundle<Parts>,
  params: QueryParams,
): Promise<{ parts: { [Name in keyof Parts]: Parts[Name][] }; names: MarketNames }> {
  const caches = store.caches;
  const cached = caches?.marketNames(conditionId);
  if (cached) return { parts: await readBundle(store, named, params), names: cached };
  const readStart = caches?.marketNamesReadStart() ?? null;
  const parts = await readBundle(store, withNames, params);
  const [meta] = parts.names;
  if (!meta) {
    caches?.keepMarketNames(conditionId, null, readStart);
    return { parts, names: NO_MARKET_NAMES };
  }
  const names: MarketNames = {
    title: meta.title,
    outcome1: meta.outcome1,
    outcome2: meta.outcome2,
    title_start_ts: meta.title_start_ts,
  };
  caches?.keepMarketNames(conditionId, names, readStart);
  return { parts, names };
}
