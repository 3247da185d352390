/** The popular shelf: the provider's leaderboard and the traders with live watchers, most watched first. */
import { z } from 'zod';
import type { Store } from './store.ts';

export const popularTraderSchema = z.object({
  wallet: z.string(),
  name: z.string(),
  watching: z.int().min(0).meta({ description: 'Live watchers of this trader now.' }),
});
export type PopularTrader = z.infer<typeof popularTraderSchema>;

/**
 * The shelf's members: the traders of the provider's latest leaderboard read (upstream.leaderboard: the
 * board the poller is configured with, its most recent `as_of`) and every trader with live watchers.
 * Each carries its live watcher count (watchers FINAL, the latest count; 0 when nobody watches), and the
 * shelf is ranked by watchers, then by leaderboard rank (traders off the board after those on it), then
 * wallet. Without any leaderboard read (the simulator) it is the traders with watchers, most watched first.
 */
const READ_POPULAR = `
WITH
    latest_board AS
    (
        SELECT period, metric, as_of
        FROM {db:Identifier}.upstream_leaderboard
        ORDER BY as_of DESC
        LIMIT 1
    ),
    shelf AS
    (
        SELECT wallet, max(watching) AS watching, min(rank) AS rank
        FROM
        (
            SELECT wallet, watching, toUInt32(4294967295) AS rank
            FROM {db:Identifier}.watchers FINAL
            WHERE watching > 0
            UNION ALL
            SELECT l.wallet AS wallet, toUInt32(0) AS watching, l.rank AS rank
            FROM {db:Identifier}.upstream_leaderboard AS l FINAL
            WHERE (l.period, l.metric, l.as_of) IN (SELECT period, metric, as_of FROM latest_board)
        )
        GROUP BY wallet
        ORDER BY watching DESC, rank, wallet
        LIMIT {limit:UInt32}
    )
SELECT s.wallet AS wallet, n.name AS name, toUInt32(s.watching) AS watching
FROM shelf AS s
LEFT JOIN
(
    SELECT wallet, name FROM {db:Identifier}.trader_names FINAL
    WHERE wallet IN (SELECT wallet FROM shelf)
) AS n ON n.wallet = s.wallet
ORDER BY s.watching DESC, s.rank, s.wallet`;

/** At most `limit` traders of the shelf, most watched first (then leaderboard rank, then wallet). */
export async function readPopularTraders(store: Store, limit: number): Promise<PopularTrader[]> {
  if (limit < 1) return [];
  // Unnamed traders join as '' (join_use_nulls is off).
  return store.query<PopularTrader>(READ_POPULAR, { limit: Math.trunc(limit) });
}
