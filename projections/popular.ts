/** The popular shelf: the provider's leaderboard and the traders with live watchers, most watched first. */
import { z } from 'zod';
import type { Store } from './store.ts';

export const popularTraderSchema = z.object({
  wallet: z.string(),
  name: z.string(),
  watching: z.int().min(0).meta({ description: 'Live-plane sessions watching this trader now, on every instance.' }),
});
export type PopularTrader = z.infer<typeof popularTraderSchema>;

/**
 * The shelf's members: the traders of the provider's latest leaderboard read (upstream.leaderboard: the
 * board the poller is configured with, its most recent `as_of`) and every trader with live watchers.
 * The watcher counts are not in the store: they are the live plane's sessions now (the slot store's
 * watches, passed in as parameters; 0 when nobody watches). The shelf is ranked by watchers, then by
 * leaderboard rank (traders off the board after those on it), then wallet. Without any leaderboard read
 * it is the watched traders, most watched first.
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
            SELECT tupleElement(pair, 1) AS wallet, tupleElement(pair, 2) AS watching, toUInt32(4294967295) AS rank
            FROM (SELECT arrayJoin(arrayZip({watched:Array(String)}, {counts:Array(UInt32)})) AS pair)
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

/**
 * At most `limit` traders of the shelf, most watched first (then leaderboard rank, then wallet);
 * `watching` is each watched trader's live watcher count (wallets in lower case).
 */
export async function readPopularTraders(
  store: Store,
  limit: number,
  watching: ReadonlyMap<string, number>,
): Promise<PopularTrader[]> {
  if (limit < 1) return [];
  const watched = [...watching].filter(([, count]) => count > 0);
  // Unnamed traders join as '' (join_use_nulls is off).
  return store.query<PopularTrader>(READ_POPULAR, {
    limit: Math.trunc(limit),
    watched: watched.map(([wallet]) => wallet),
    counts: watched.map(([, count]) => Math.trunc(count)),
  });
}
