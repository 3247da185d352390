/**
 * The upstream provider's own statistics of a trader (its profile, and peak / low / worst drawdown of
 * its full equity history), for the card's `upstream` block.
 */
import { z } from 'zod';
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
 * One statement, both parts by the wallet prefix of their keys: the latest profile (ReplacingMergeTree on
 * as_of: its newest version, without FINAL) and, over the full equity history in time order, peak, low and the worst fall from
 * the running peak (a window running max). Aggregates over no points are 0; no profile row, no result.
 */
export const READ_UPSTREAM_PROFILE = `
SELECT
    p.pnl AS pnl,
    p.pnl_realized AS pnl_realized,
    p.pnl_unrealized AS pnl_unrealized,
    p.portfolio_value AS portfolio_value,
    e.peak AS peak,
    e.low AS low,
    e.max_drawdown AS max_drawdown,
    p.profile_image AS profile_image,
    p.as_of AS as_of
FROM
(
    SELECT pnl, pnl_realized, pnl_unrealized, portfolio_value, profile_image, as_of
    FROM {db:Identifier}.upstream_profiles
    WHERE wallet = {wallet:String}
    ORDER BY as_of DESC
    LIMIT 1
) AS p
CROSS JOIN
(
    SELECT
        if(count() = 0, 0, max(pnl_usd)) AS peak,
        if(count() = 0, 0, min(pnl_usd)) AS low,
        if(count() = 0, 0, max(running_max - pnl_usd)) AS max_drawdown
    FROM
    (
        SELECT
            pnl_usd,
            max(pnl_usd) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_max
        FROM {db:Identifier}.upstream_equity FINAL
        WHERE wallet = {wallet:String}
    )
) AS e`;

/** The wallet's latest upstream profile with its equity extremes; null when the provider never reported it. */
export async function readUpstreamProfile(store: Store, wallet: string): Promise<UpstreamProfile | null> {
  const [row] = await store.query<UpstreamProfile>(READ_UPSTREAM_PROFILE, { wallet });
  return row ?? null;
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
