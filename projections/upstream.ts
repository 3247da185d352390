/**
 * The upstream provider's own statistics of a trader (its profile, and peak / low / worst drawdown of
 * its full equity history), for the card's `upstream` block: folded from the wallet's upstream history
 * (upstream-history.ts), the read the pnl-series shares.
 */
import { z } from 'zod';
import { drawdownStats } from './equity.ts';
import type { Store } from './store.ts';
import { plainSources, type ReadSources } from './sources.ts';
import type { UpstreamHistory } from './upstream-history.ts';

export const upstreamProfileSchema = z.object({
  pnl: z.number().meta({
    description: "The headline profit to quote: the provider's model, realized plus unrealized, full account history.",
  }),
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

/** The wallet's latest upstream profile with its equity extremes (0 without history); null when the provider never reported it. */
export async function readUpstreamProfile(
  store: Store,
  wallet: string,
  sources: ReadSources = plainSources(store),
): Promise<UpstreamProfile | null> {
  return upstreamProfileOf(await sources.upstreamHistory(wallet));
}

/** The profile block of a wallet's upstream history (readUpstreamProfile, from a history already read). */
export function upstreamProfileOf({ profile, points }: UpstreamHistory): UpstreamProfile | null {
  if (!profile) return null;
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

/**
 * Wallets with archive fills (source rank 2: the chain, not the upstream's own copies) since a time, most
 * recent first: the key range of the window's days in archive_wallet_days (migration 0022), a row per
 * wallet and day, never the fills themselves.
 */
const READ_RECENT_ARCHIVE_WALLETS = `
SELECT wallet
FROM {db:Identifier}.archive_wallet_days
WHERE day >= toDate(toDateTime({since:UInt32})) AND last_ts >= {since:UInt32}
GROUP BY wallet
ORDER BY max(last_ts) DESC, wallet
LIMIT {limit:UInt32}`;

/** The wallets the upstream poller tracks for their recent archive activity. */
export async function readRecentArchiveWallets(store: Store, sinceSeconds: number, limit: number): Promise<string[]> {
  const rows = await store.query<{ wallet: string }>(READ_RECENT_ARCHIVE_WALLETS, {
    since: Math.max(0, Math.trunc(sinceSeconds)),
    limit: Math.max(1, Math.trunc(limit)),
  });
  return rows.map((row) => row.wallet);
}
