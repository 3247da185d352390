/**
 * What the reads that combine others read them through: by default the plain reads of this folder; the
 * API passes cached ones (operations/reads.ts), so that the card, top-markets, the markets list and a
 * summary of one trader share one read of the wallet's markets, and every list shares market names.
 */
import { readBundle, type Bundle } from './bundle.ts';
import { readArchiveRanges, type ArchiveRange } from './coverage.ts';
import { NO_MARKET_NAMES, readMarketNames, type MarketNames } from './market-names.ts';
import type { QueryParams, Store } from './store.ts';
import {
  readUpstreamHistory,
  readUpstreamReport,
  type UpstreamHistory,
  type UpstreamReport,
} from './upstream-history.ts';
import { readWalletMarkets, type WalletMarketRow, type WalletMarkets } from './wallet-markets.ts';

export interface ReadSources {
  /**
   * The wallet's markets and their marks. `onRows` is told the rows as soon as they are read, before the
   * marks (the markets list reads its page's names beside them); not told when they are kept or being read
   * by another call.
   */
  walletMarkets(wallet: string, onRows?: (rows: readonly WalletMarketRow[]) => void): Promise<WalletMarkets>;
  /** The wallet's markets when at hand (kept, or being read by another call), without reading them. */
  walletMarketsAtHand(wallet: string): Promise<WalletMarkets> | undefined;
  marketNames(conditionIds: readonly string[]): Promise<Map<string, MarketNames>>;
  /**
   * A market's names when at hand; else where to put the names the caller reads along with its own parts
   * (null: the market has no metadata).
   */
  marketNamesAtHand(conditionId: string): { names: MarketNames } | { keep(names: MarketNames | null): void };
  upstreamHistory(wallet: string): Promise<UpstreamHistory>;
  upstreamReport(): Promise<UpstreamReport | null>;
  /** Every archive source's indexed range (the card's coverage). */
  archiveRanges(): Promise<ArchiveRange[]>;
}

const NOTHING_AT_HAND = Object.freeze({ keep: () => {} });

/** Every source read from the store, nothing at hand. */
export function plainSources(store: Store): ReadSources {
  return {
    walletMarkets: (wallet, onRows) => readWalletMarkets(store, wallet, onRows),
    walletMarketsAtHand: () => undefined,
    marketNames: (conditionIds) => readMarketNames(store, conditionIds),
    marketNamesAtHand: () => NOTHING_AT_HAND,
    upstreamHistory: (wallet) => readUpstreamHistory(store, wallet),
    upstreamReport: () => readUpstreamReport(store),
    archiveRanges: () => readArchiveRanges(store),
  };
}

/**
 * A bundle with the market's names unless the sources have them at hand (`named` is the same bundle
 * without its `names` part); the names read are handed back to the sources. Plumbing, like readBundle:
 * the store-latency metric names a statement after the read function that calls this (metrics/store.ts).
 */
export async function readBundleNamed<Parts extends object>(
  store: Store,
  sources: ReadSources,
  conditionId: string,
  withNames: Bundle<Parts & { names: MarketNames }>,
  named: Bundle<Parts>,
  params: QueryParams,
): Promise<{ parts: { [Name in keyof Parts]: Parts[Name][] }; names: MarketNames }> {
  const atHand = sources.marketNamesAtHand(conditionId);
  if ('names' in atHand) return { parts: await readBundle(store, named, params), names: atHand.names };
  const parts = await readBundle(store, withNames, params);
  const [meta] = parts.names;
  if (!meta) {
    atHand.keep(null);
    return { parts, names: NO_MARKET_NAMES };
  }
  const names: MarketNames = {
    title: meta.title,
    outcome1: meta.outcome1,
    outcome2: meta.outcome2,
    title_start_ts: meta.title_start_ts,
  };
  atHand.keep(names);
  return { parts, names };
}
