/**
 * The upstream provider's own statistics of a trader (its profile, and peak / low / worst drawdown of
 * its full equity history), for the card's `upstream` block.
 */
import { z } from 'zod';
import { drawdownStats, type EquityPoint } from './equity.ts';
import { bundle, readBundle } from './bundle.ts';
import { readForTrader } from './read-cache.ts';
import type { Store } from './store.ts';

export const upstreamProfileSchema = z.object({
  pnl: z.number().meta({ description: "The headline profit to quote: the provider's model, realized plus unrealized, full account history." }),
  pnl_realized: z.number(),
  pnl_unrealized: z.number(),
  portfolio_value: z.number(),
  peak: z.number().meta({ description: 'Highest point of the equity (profit) history; 0 without history.' }),
  low: z.number().meta({ description: 'Lowest point of the equity history; 0 without history.' }),
  max_drawdown: z.number().min(0).meta({ description: 'Worst fall from a running peak, as a positive magnitude.' }),
  profile_image: z.string(),
  as_of: z.int().min(0).meta({ description: 'When the provider computed these figures (epoch seconds).' }),
});
export type UpstreamProfile = z.infer<typeof upstreamProfileSchema>;

/**
 * The parts of the upstream's profile of a wallet, plain reads by the wallet prefix of their keys (a
 * bundle, projections/bundle.ts): the latest profile (ReplacingMergeTree on as_of: its newest version,
 * without FINAL) and the full equity history (FINAL: the table has no version column, so only a merge
 * says which copy of a point is the last one). Peak, low and the worst fall from the running peak are
 * folded in profileOf (drawdownStats), not in SQL: a window function over a join costs the engine more
 * to plan than these few hundred points cost to send.
 */
const UPSTREAM_PROFILE_PARTS = {
  profile: `
    SELECT as_of, pnl, pnl_realized, pnl_unrealized, portfolio_value, profile_image
    FROM {db:Identifier}.upstream_profiles
    WHERE wallet = {wallet:String}
    ORDER BY as_of DESC
    LIMIT 1`,
  equity: `
    SELECT ts, pnl_usd
    FROM {db:Identifier}.upstream_equity FINAL
    WHERE wallet = {wallet:String}`,
};

interface UpstreamProfileParts {
  profile: Omit<UpstreamProfile, 'peak' | 'low' | 'max_drawdown'>;
  equity: { ts: number; pnl_usd: number };
}

const READ_UPSTREAM_PROFILE = bundle<UpstreamProfileParts>(UPSTREAM_PROFILE_PARTS);

/** The wallet's latest upstream profile with its equity extremes (0 without history); null when the provider never reported it. */
export async function readUpstreamProfile(store: Store, wallet: string): Promise<UpstreamProfile | null> {
  // Built from the wallet's upstream rows only (no fills, marks or titles): kept until the provider reports on the wallet again.
  return readForTrader(store, 'upstream_profile', wallet, null, async () => profileOf(await readBundle(store, READ_UPSTREAM_PROFILE, { wallet })), 'upstream');
}

/** The profile from its parts (UPSTREAM_PROFILE_PARTS); null without a profile row. */
function profileOf(parts: { profile: readonly UpstreamProfileParts['profile'][]; equity: readonly UpstreamProfileParts['equity'][] }): UpstreamProfile | null {
  const [profile] = parts.profile;
  if (!profile) return null;
  const points = parts.equity.map((row): EquityPoint => [row.ts, row.pnl_usd]).sort((a, b) => a[0] - b[0]);
  const extremes = drawdownStats(points);
  return {
    pnl: profile.pnl,
    pnl_realized: profile.pnl_realized,
    pnl_unrealized: profile.pnl_unrealized,
    portfolio_value: profile.portfolio_value,
    peak: extremes.peak ?? 0,
    low: extremes.low ?? 0,
    max_drawdown: extremes.max_drawdown,
    profile_image: profile.profile_image,
    as_of: profile.as_of,
  };
}

/** Wallets with archive fills (source rank 2: the chain, not the upstream's own copies) since a time, most recent first. */
const READ_RECENT_ARCHIVE_WALLETS = `
SELECT wallet
FROM {db:Identifier}.fills
WHERE source_rank = 2 AND ts >= {since:UInt32}
GROUP BY wallet
ORDER BY max(ts) DESC, wallet
LIMIT {limit:UInt32}`;

/** The wallets the upstream poller tracks for their recent archive activity. */
export async function readRecentArchiveWallets(store: Store, sinceSeconds: number, limit: number): Promise<string[]> {
  const rows = await store.query<{ wallet: string }>(READ_RECENT_ARCHIVE_WALLETS, { since: Math.max(0, Math.trunc(sinceSeconds)), limit: Math.max(1, Math.trunc(limit)) });
  return rows.map((row) => row.wallet);
}
