/**
 * A trader's fills across markets, in chronological order: the monitoring primitive. Keyset-paged on
 * (ts, condition_id, fill_id); `since` positions the first page (inclusive: a poll that passes the last
 * fill's `ts` sees that second again, so fills of the same second that landed late are not missed).
 */
import { z } from 'zod';
import { historyDepthParam, MARKETS_WITHIN_DEPTH, readMarketNames, type DepthOption } from './markets.ts';
import { clampEpochSeconds, epochLowerBound } from './params.ts';
import { traderMarketFillOf, type TraderMarketFillRowSerialized } from './market-parts.ts';
import { NO_MARKET_NAMES, readForTrader } from './read-cache.ts';
import type { Store } from './store.ts';

export const traderFillSchema = z.object({
  ts: z.int().min(0).meta({ description: 'Epoch seconds.' }),
  condition_id: z.string(),
  title: z.string(),
  side: z.enum(['BUY', 'SELL']),
  price: z.number().meta({ description: 'UP space: for a token-2 fill, 1 − the price paid.' }),
  token_side: z.union([z.literal(1), z.literal(2)]),
  outcome: z.string().meta({ description: 'Name of the token traded.' }),
  size_tokens: z.number(),
  usd: z.number(),
});
export type TraderFill = z.infer<typeof traderFillSchema>;

export interface FillPosition {
  ts: number;
  conditionId: string;
  fillId: string;
}

/**
 * One page of the wallet's fills (the wallet is the primary-key prefix of `fills_v2`, index granularity
 * 256), each fill's copy with the highest source_rank (ORDER BY source_rank DESC LIMIT 1 BY: the rule
 * ReplacingMergeTree(source_rank) applies, without FINAL), in (ts, condition_id, fill_id) order,
 * optionally narrowed to some of its markets (`markets`: a static SQL condition on the key). The filters
 * on ts apply to the kept copy, as they did after FINAL (two copies of a fill may differ in ts). The
 * page reads its keys and `fill_row`, the other fields serialized in one column (migration 0013: a point
 * read on the embedded engine pays per column read, ~7.3 ms for the eight columns, ~5.5 for these four).
 * Titles and outcome names come after, by primary key, for the page's markets only; a market without
 * metadata gives '' for both.
 */
const traderFillsQuery = (markets: string) => `
SELECT ts, condition_id, fill_id, fill_row
FROM
(
    SELECT ts, condition_id, fill_id, fill_row
    FROM {db:Identifier}.fills_v2
    WHERE wallet = {wallet:String}${markets}
    ORDER BY source_rank DESC
    LIMIT 1 BY condition_id, fill_id
)
WHERE ts >= {since:UInt32}
  AND ({has_after:UInt8} = 0 OR (ts, condition_id, fill_id) > ({after_ts:UInt32}, {after_condition_id:String}, {after_fill_id:String}))
ORDER BY ts, condition_id, fill_id
LIMIT {limit:UInt32}`;

/** Unlimited depth: every fill of the wallet. */
const READ_TRADER_FILLS = traderFillsQuery('');

/**
 * Within a history depth: only the fills of the wallet's visible markets (the `history_depth` most
 * recent, the markets list's order). The keyset is unchanged: the narrowing is a fixed set of markets.
 */
const READ_TRADER_FILLS_WITHIN_DEPTH = traderFillsQuery(`
  AND condition_id IN (${MARKETS_WITHIN_DEPTH}
  )`);

/** A page row: the fill's market beside the columns a trader's fills in one market have (market-parts.ts). */
interface FillRow extends TraderMarketFillRowSerialized {
  condition_id: string;
}

/**
 * Fills with ts >= since (0 when absent), strictly after `after`, oldest first. With a history depth
 * ≥ 0, only the fills of the trader's `historyDepth` most recent markets.
 */
export async function readTraderFills(
  store: Store,
  wallet: string,
  page: { since?: number | undefined; after?: FillPosition | undefined; limit: number } & DepthOption,
): Promise<{ fills: TraderFill[]; next: FillPosition | null }> {
  const depth = page.historyDepth ?? -1;
  const args = [page.since ?? null, page.after ?? null, page.limit, depth];
  // Over all the wallet's markets the page is read from fills_v2 alone: it follows the wallet's fills.
  // Within a history depth the visible markets come from trader_markets_v2 (its rollups): it follows all.
  return readForTrader(store, 'fills', wallet, args, () => readTraderFillsFromStore(store, wallet, page), depth < 0 ? 'fills' : 'trader');
}

async function readTraderFillsFromStore(
  store: Store,
  wallet: string,
  page: { since?: number | undefined; after?: FillPosition | undefined; limit: number } & DepthOption,
): Promise<{ fills: TraderFill[]; next: FillPosition | null }> {
  const limit = Math.max(1, Math.trunc(page.limit));
  const after = page.after;
  const since = epochLowerBound(page.since ?? 0);
  // Past the last second the store holds: no fill is that late.
  if (since === null) return { fills: [], next: null };
  const params = {
    wallet,
    since,
    has_after: after ? 1 : 0,
    after_ts: clampEpochSeconds(after?.ts ?? 0),
    after_condition_id: after?.conditionId ?? '',
    after_fill_id: after?.fillId ?? '',
    // One row more than asked tells whether a next page exists.
    limit: limit + 1,
  };
  const depth = page.historyDepth ?? -1;
  const rows =
    depth >= 0
      ? await store.query<FillRow>(READ_TRADER_FILLS_WITHIN_DEPTH, { ...params, history_depth: historyDepthParam(depth) })
      : await store.query<FillRow>(READ_TRADER_FILLS, params);
  const pageRows = rows.slice(0, limit);
  const lastRow = pageRows[pageRows.length - 1];
  const names = await readMarketNames(store, pageRows.map((row) => row.condition_id));
  return {
    fills: pageRows.map((row) => {
      const market = names.get(row.condition_id) ?? NO_MARKET_NAMES;
      const fill = traderMarketFillOf(row);
      return {
        ts: fill.ts,
        condition_id: row.condition_id,
        title: market.title,
        side: fill.side,
        price: fill.price,
        token_side: fill.token_side,
        outcome: fill.token_side === 1 ? market.outcome1 : market.outcome2,
        size_tokens: fill.size_tokens,
        usd: fill.usd,
      };
    }),
    next: rows.length > limit && lastRow ? { ts: lastRow.ts, conditionId: lastRow.condition_id, fillId: lastRow.fill_id } : null,
  };
}
