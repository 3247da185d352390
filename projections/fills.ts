/**
 * A trader's fills across markets, in chronological order: the monitoring primitive. Keyset-paged on
 * (ts, condition_id, fill_id); `since` positions the first page (inclusive: a poll that passes the last
 * fill's `ts` sees that second again, so fills of the same second that landed late are not missed).
 */
import { z } from 'zod';
import { NO_MARKET_NAMES } from './market-names.ts';
import { type DepthOption, historyDepthParam, MARKETS_WITHIN_DEPTH } from './market-rows.ts';
import { clampEpochSeconds, epochLowerBound } from './params.ts';
import { TOP_FILL_SOURCE_RANK } from './vocabulary.ts';
import { traderMarketFillOf, type TraderMarketFillRowSerialized } from './market-parts.ts';
import { plainSources, type ReadSources } from './sources.ts';
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
 * One page of the wallet's fills read over all its copies (the wallet is the primary-key prefix of
 * `fills_v2`, index granularity 256): each fill's copy with the highest source_rank (ORDER BY source_rank
 * DESC LIMIT 1 BY: the rule ReplacingMergeTree(source_rank) applies, without FINAL), in (ts, condition_id,
 * fill_id) order, optionally narrowed to some of its markets (`markets`: a static SQL condition on the key).
 * The filters on ts apply to the kept copy, as they did after FINAL (two copies of a fill may differ in ts).
 * It reads every fill of the wallet whatever the page: the fallback of the time-ordered read below, and
 * the reference the tests compare it with.
 */
const allCopiesQuery = (markets: string) => `
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

/**
 * One page read in time order (migration 0014: `fills_by_time`, sorted by (wallet, ts, condition_id,
 * fill_id)): the first `candidates` copies of the window, read in key order and no further, whatever the
 * wallet's history. A candidate is on the page only if it is its fill's kept copy over all the fill's
 * copies, so that a fill whose copies disagree on ts shows once, at the kept copy's ts, as in the read over
 * all copies. Copies of one position (the same fill from two sources at the same ts, or landed twice) come
 * out side by side, in no order (sorting them by rank as well would stop the read from ending early).
 * A copy of the top source rank (the archive's) is kept as it is: no copy outranks it. A position without
 * one is looked up (READ_KEPT_COPIES): the fill's archive copy may sit at another ts, or not exist.
 */
const timeOrderedQuery = (markets: string) => `
SELECT ts, condition_id, fill_id, source_rank, fill_row
FROM {db:Identifier}.fills_by_time
WHERE wallet = {wallet:String}
  AND ts >= {since:UInt32}
  AND ({has_after:UInt8} = 0 OR (ts, condition_id, fill_id) > ({after_ts:UInt32}, {after_condition_id:String}, {after_fill_id:String}))${markets}
ORDER BY ts, condition_id, fill_id
LIMIT {candidates:UInt32}`;

/**
 * The kept copy (the highest source_rank, and that copy's ts) of each of some fills of the wallet, by
 * primary key in fills_v2, for keptCopiesOf. The markets and fill ids are two lists (a pair may match that
 * was not asked for: the caller looks pairs up).
 */
const READ_KEPT_COPIES = `
SELECT condition_id, fill_id, max(source_rank) AS kept_rank, argMax(ts, source_rank) AS kept_ts
FROM {db:Identifier}.fills_v2
WHERE wallet = {wallet:String}
  AND condition_id IN {condition_ids:Array(String)}
  AND fill_id IN {fill_ids:Array(String)}
GROUP BY condition_id, fill_id`;

/** Within a history depth: only the fills of the wallet's visible markets (the `history_depth` most recent, the markets list's order). */
const WITHIN_DEPTH = `
  AND condition_id IN (${MARKETS_WITHIN_DEPTH}
  )`;

/** Unlimited depth: every fill of the wallet. */
const READ_TRADER_FILLS = timeOrderedQuery('');
const READ_TRADER_FILLS_ALL_COPIES = allCopiesQuery('');

/**
 * Within a history depth: only the fills of the wallet's visible markets. The keyset is unchanged: the
 * narrowing is a fixed set of markets.
 */
const READ_TRADER_FILLS_WITHIN_DEPTH = timeOrderedQuery(WITHIN_DEPTH);
const READ_TRADER_FILLS_WITHIN_DEPTH_ALL_COPIES = allCopiesQuery(WITHIN_DEPTH);

/**
 * The time-ordered read takes room for every fill of the page in two copies (the archive's and the
 * upstream's at the same ts), and this many more. Past that (copies that are not kept took the room of
 * fills further on) the page is read over all copies.
 */
const EXTRA_CANDIDATES = 16;

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
  sources: ReadSources = plainSources(store),
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
  const within = depth >= 0 ? { history_depth: historyDepthParam(depth) } : {};
  const candidates = 2 * (limit + 1) + EXTRA_CANDIDATES;
  const read = await store.query<Candidate>(depth >= 0 ? READ_TRADER_FILLS_WITHIN_DEPTH : READ_TRADER_FILLS, {
    ...params,
    ...within,
    candidates,
  });
  let rows: FillRow[] = await keptCopiesOf(store, wallet, read);
  // Candidates that were not their fill's kept copy took room: past the last candidate there may be fills
  // that belong on this page. Rare (copies of a fill that disagree on ts); read over all copies instead.
  if (rows.length <= limit && read.length === candidates) {
    rows = await store.query<FillRow>(
      depth >= 0 ? READ_TRADER_FILLS_WITHIN_DEPTH_ALL_COPIES : READ_TRADER_FILLS_ALL_COPIES,
      { ...params, ...within },
    );
  }
  const pageRows = rows.slice(0, limit);
  const lastRow = pageRows[pageRows.length - 1];
  const names = await sources.marketNames(pageRows.map((row) => row.condition_id));
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
    next:
      rows.length > limit && lastRow
        ? { ts: lastRow.ts, conditionId: lastRow.condition_id, fillId: lastRow.fill_id }
        : null,
  };
}

/** A copy read in time order: a page row and its source rank. */
interface Candidate extends FillRow {
  source_rank: number;
}

/**
 * The candidates that are their fill's kept copy, one per position, in order. A position (ts, market,
 * fill id) with a copy of the top rank keeps that copy; the others are looked up in fills_v2, in one
 * statement, only when there are any (the embedded engine pays for planning it even when it finds
 * nothing): their fill's kept copy must be this copy, at this ts.
 */
async function keptCopiesOf(store: Store, wallet: string, candidates: readonly Candidate[]): Promise<Candidate[]> {
  const positions: Candidate[][] = [];
  for (const candidate of candidates) {
    const last = positions.at(-1)?.[0];
    if (
      last &&
      last.ts === candidate.ts &&
      last.condition_id === candidate.condition_id &&
      last.fill_id === candidate.fill_id
    )
      positions.at(-1)!.push(candidate);
    else positions.push([candidate]);
  }
  const best = positions.map((copies) =>
    copies.reduce((kept, copy) => (copy.source_rank > kept.source_rank ? copy : kept)),
  );
  const lower = best.filter((copy) => copy.source_rank < TOP_FILL_SOURCE_RANK);
  if (lower.length === 0) return best;
  const rows = await store.query<{ condition_id: string; fill_id: string; kept_rank: number; kept_ts: number }>(
    READ_KEPT_COPIES,
    {
      wallet,
      condition_ids: [...new Set(lower.map((copy) => copy.condition_id))],
      fill_ids: [...new Set(lower.map((copy) => copy.fill_id))],
    },
  );
  const keptCopy = new Map(rows.map((row) => [`${row.condition_id}|${row.fill_id}`, row]));
  return best.filter((copy) => {
    if (copy.source_rank >= TOP_FILL_SOURCE_RANK) return true;
    const kept = keptCopy.get(`${copy.condition_id}|${copy.fill_id}`);
    return kept !== undefined && kept.kept_rank === copy.source_rank && kept.kept_ts === copy.ts;
  });
}
