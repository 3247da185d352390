/** The popular shelf: the traders with the most live watchers. */
import { z } from 'zod';
import type { Store } from './store.ts';

export const popularTraderSchema = z.object({
  wallet: z.string(),
  name: z.string(),
  watching: z.int().min(0).meta({ description: 'Live watchers of this trader now.' }),
});
export type PopularTrader = z.infer<typeof popularTraderSchema>;

/**
 * The latest count per wallet (watchers FINAL; the `watching > 0` filter applies after FINAL, so a
 * trader whose watchers left drops out), ranked; names looked up for the shelf's wallets only.
 */
const READ_POPULAR = `
WITH shelf AS
(
    SELECT wallet, watching
    FROM {db:Identifier}.watchers FINAL
    WHERE watching > 0
    ORDER BY watching DESC, wallet
    LIMIT {limit:UInt32}
)
SELECT s.wallet AS wallet, n.name AS name, s.watching AS watching
FROM shelf AS s
LEFT JOIN
(
    SELECT wallet, name FROM {db:Identifier}.trader_names FINAL
    WHERE wallet IN (SELECT wallet FROM shelf)
) AS n ON n.wallet = s.wallet
ORDER BY watching DESC, wallet`;

/** At most `limit` traders with at least one watcher, most watched first (then wallet). */
export async function readPopularTraders(store: Store, limit: number): Promise<PopularTrader[]> {
  if (limit < 1) return [];
  // Unnamed traders join as '' (join_use_nulls is off).
  return store.query<PopularTrader>(READ_POPULAR, { limit: Math.trunc(limit) });
}
