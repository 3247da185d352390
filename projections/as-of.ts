/**
 * A wallet's markets as the service knew them at a past instant (`as_of`): every row computed only from the
 * fills, legs and resolutions stamped at or before it, and open markets marked at their last trade before
 * it. The card, the markets list, top-markets and the skill answer fold these rows as they fold today's.
 *
 * The rows are the rollup's own formulas: the query is derived from refresh_trader_markets.sql (the one
 * place a market row is defined), its sources filtered to one wallet and to `as_of` instead of the staged
 * pairs; each replaced filter must occur exactly as often as stated, or the module refuses to load.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bundle, readBundle } from './bundle.ts';
import type { ReadSources } from './sources.ts';
import type { Store } from './store.ts';
import type { EquityPoint, UpstreamHistory } from './upstream-history.ts';
import { WALLET_MARKET_FIELDS, type WalletMarketRow, type WalletMarkets } from './wallet-markets.ts';

const ROLLUP = readFileSync(path.join(import.meta.dirname, 'rollups', 'refresh_trader_markets.sql'), 'utf8');

/** `sql` with each `from` replaced by `to`, which must occur exactly `times` times. */
function derived(sql: string, replacements: ReadonlyArray<readonly [string, string, number]>): string {
  let out = sql;
  for (const [from, to, times] of replacements) {
    const found = out.split(from).length - 1;
    if (found !== times)
      throw new Error(`as-of rows: the rollup's SQL holds ${found} of ${JSON.stringify(from)}, expected ${times}`);
    out = out.replaceAll(from, to);
  }
  return out;
}

const STAGED_PAIRS = `WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
              AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})`;
const STAGED_MARKETS = `WHERE condition_id IN (SELECT condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})`;

/** The wallet's market rows as of `{as_of}`: the rollup's SELECT, every output column named as its table's. */
const ROWS_AS_OF = derived(ROLLUP, [
  ['INSERT INTO {db:Identifier}.trader_markets_v2\n', '', 1],
  [STAGED_PAIRS, 'WHERE wallet = {wallet:String} AND ts <= {as_of:UInt32}', 2],
  [
    STAGED_MARKETS,
    'WHERE ts <= {as_of:UInt32} AND condition_id IN (SELECT condition_id FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String})',
    1,
  ],
]);

/** The rollup's row, serialized as trader_markets_v2's `wallet_row` is (wallet-markets.ts, WALLET_MARKET_FIELDS). */
const WALLET_ROWS_AS_OF = `
SELECT formatRowNoNewline('JSONEachRow', ${WALLET_MARKET_FIELDS.join(', ')}) AS wallet_row
FROM (${ROWS_AS_OF})`;

/** Each market's last print at or before `as_of`, in UP space: the mark of a market open then. */
const MARKS_AS_OF = `
SELECT condition_id, argMax(up_price, (ts, seq)) AS mark, max(ts) AS marked_at
FROM {db:Identifier}.trades
WHERE condition_id IN {markets:Array(String)} AND ts <= {as_of:UInt32}
GROUP BY condition_id`;

/** The wallet's markets and the marks of those open, as known at `asOf` (epoch seconds). */
export async function readWalletMarketsAsOf(store: Store, wallet: string, asOf: number): Promise<WalletMarkets> {
  const rows = await store.query<{ wallet_row: string }>(WALLET_ROWS_AS_OF, { wallet, as_of: asOf });
  const markets = rows.map((row) => {
    const market = JSON.parse(row.wallet_row) as WalletMarketRow;
    // The stored row's `resolved` is a Bool column; the derived query's an integer expression.
    market.resolved = Boolean(market.resolved);
    return market;
  });
  const open = markets.filter((row) => !row.resolved).map((row) => row.condition_id);
  const marks =
    open.length === 0
      ? []
      : await store.query<{ condition_id: string; mark: number; marked_at: number }>(MARKS_AS_OF, {
          markets: open,
          as_of: asOf,
        });
  return { markets, marks };
}

const READ_UPSTREAM_HISTORY_AS_OF = bundle<{
  profile: NonNullable<UpstreamHistory['profile']>;
  equity: { ts: number; pnl_usd: number };
}>({
  profile: `
    SELECT as_of, pnl, pnl_realized, pnl_unrealized, portfolio_value, profile_image
    FROM {db:Identifier}.upstream_profiles
    WHERE wallet = {wallet:String} AND as_of <= {as_of:UInt32}
    ORDER BY as_of DESC
    LIMIT 1`,
  equity: `
    SELECT ts, pnl_usd
    FROM {db:Identifier}.upstream_equity FINAL
    WHERE wallet = {wallet:String} AND ts <= {as_of:UInt32}`,
});

/** The provider's last profile of the wallet reported at or before `asOf`, and its equity points up to it. */
export async function readUpstreamHistoryAsOf(store: Store, wallet: string, asOf: number): Promise<UpstreamHistory> {
  const parts = await readBundle(store, READ_UPSTREAM_HISTORY_AS_OF, { wallet, as_of: asOf });
  const points = parts.equity.map((row): EquityPoint => [row.ts, row.pnl_usd]).sort((a, b) => a[0] - b[0]);
  return { profile: parts.profile[0] ?? null, points };
}

/** The two reads about one wallet as of a past instant (the reader keeps both: an as-of answer never changes). */
export interface AsOfReads {
  /** Its markets and marks then (readWalletMarketsAsOf). */
  markets(): Promise<WalletMarkets>;
  /** The provider's profile as reported by then, and its equity points up to then (readUpstreamHistoryAsOf). */
  upstreamHistory(): Promise<UpstreamHistory>;
}

/**
 * The sources of one wallet's reads as of `asOf`: its markets and marks then (held for the call: the card
 * reads them twice), the provider's profile as reported by then (the provider counts as online then when it
 * had reported one; without one the card answers the offline form), everything else as `base` has it
 * (market names, the archive's coverage).
 */
export function asOfSources(base: ReadSources, asOf: number, reads: AsOfReads): ReadSources {
  let markets: Promise<WalletMarkets> | undefined;
  const marketsAsOf = () => (markets ??= reads.markets());
  return {
    ...base,
    walletMarkets: marketsAsOf,
    walletMarketsAtHand: marketsAsOf,
    upstreamHistory: () => reads.upstreamHistory(),
    upstreamReport: async () => ({ state: 'online', ts: asOf }),
  };
}
