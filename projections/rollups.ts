/**
 * Rollups that hold sums (per trader-market, per career) are recomputed for the keys an ingested batch
 * touched, from the deduplicated landing tables. This is what makes a fill that arrives twice (replayed,
 * or from both the archive and the upstream) change nothing: a sum view would count it twice, a
 * recomputation from `FINAL` cannot. The recomputation is idempotent, so a crashed batch that is
 * consumed again recomputes the same rows.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Store } from './store.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const REFRESH_TRADER_MARKETS = readFileSync(path.join(here, 'rollups', 'refresh_trader_markets.sql'), 'utf8');
const REFRESH_CAREERS = readFileSync(path.join(here, 'rollups', 'refresh_careers.sql'), 'utf8');

const WALLETS_OF_MARKETS = `
SELECT DISTINCT condition_id, wallet
FROM {db:Identifier}.market_wallets
WHERE condition_id IN {condition_ids:Array(String)}`;

export interface TraderMarketKey {
  wallet: string;
  condition_id: string;
}

/** Bound on keys per statement: keeps each recomputation's parameter list and memory small. */
const KEYS_PER_STATEMENT = 5_000;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += size) out.push(items.slice(start, start + size));
  return out;
}

export function distinctKeys(keys: Iterable<TraderMarketKey>): TraderMarketKey[] {
  const seen = new Map<string, TraderMarketKey>();
  for (const key of keys) seen.set(`${key.wallet}|${key.condition_id}`, key);
  return [...seen.values()];
}

/** The (wallet, market) pairs of every wallet that holds a position in one of these markets. */
export async function traderMarketsOfMarkets(store: Store, conditionIds: readonly string[]): Promise<TraderMarketKey[]> {
  const found: TraderMarketKey[] = [];
  for (const batch of chunks([...new Set(conditionIds)], KEYS_PER_STATEMENT)) {
    found.push(...(await store.query<TraderMarketKey>(WALLETS_OF_MARKETS, { condition_ids: batch })));
  }
  return found;
}

/** Recomputes trader_markets rows for these pairs; returns the wallets whose careers need recomputing. */
export async function refreshTraderMarkets(store: Store, keys: readonly TraderMarketKey[]): Promise<string[]> {
  const unique = distinctKeys(keys);
  for (const batch of chunks(unique, KEYS_PER_STATEMENT)) {
    await store.command(REFRESH_TRADER_MARKETS, {
      wallets: [...new Set(batch.map((key) => key.wallet))],
      pair_keys: batch.map((key) => `${key.wallet}|${key.condition_id}`),
      condition_ids: [...new Set(batch.map((key) => key.condition_id))],
    });
  }
  return [...new Set(unique.map((key) => key.wallet))];
}

export async function refreshCareers(store: Store, wallets: readonly string[], includeV1: boolean): Promise<void> {
  for (const batch of chunks([...new Set(wallets)], KEYS_PER_STATEMENT)) {
    await store.command(REFRESH_CAREERS, { wallets: batch, include_v1: includeV1 ? 1 : 0 });
  }
}
