/**
 * One market of a trader, its header: the wallet's newest row of the market with the market's names
 * (title, outcome names, winner, the trader's result or cash flow). The summary and the price reads
 * (chart, tape) start from it.
 */
import { bundle } from './bundle.ts';
import { marketMetaPart } from './market-parts.ts';
import { winnerName } from './market-rows.ts';
import { resolutionSourceOf, type MarketHeader } from './market-schemas.ts';
import type { MarketNames } from './market-names.ts';
import { plainSources, readBundleNamed, type ReadSources } from './sources.ts';
import type { Store } from './store.ts';
import type { WalletMarketRow } from './wallet-markets.ts';

/** The wallet's newest row of one market (ORDER BY version DESC LIMIT 1: ReplacingMergeTree's own rule, without FINAL). */
const newestTraderMarket = (columns: string) => `
    SELECT ${columns}
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}
    ORDER BY version DESC
    LIMIT 1`;

/**
 * The trader's part of a bundle: the wallet's newest row of the market as its one-column serialization
 * `wallet_row` (migration 0012), the fields a header and a summary fold. On this engine a point read pays
 * per column read: the summary's two dozen columns cost about twice the one (test/bench/RESULTS.md).
 */
export const TRADER_MARKET_ROW_PART = newestTraderMarket('wallet_row');

/** A row of TRADER_MARKET_ROW_PART. */
export interface SerializedTraderMarketRow {
  wallet_row: string;
}

/** The trader's row of the market from its part's rows (none: never traded). */
export function traderMarketRowOf(rows: readonly SerializedTraderMarketRow[]): WalletMarketRow | undefined {
  const [row] = rows;
  return row ? (JSON.parse(row.wallet_row) as WalletMarketRow) : undefined;
}

/**
 * Point lookups by primary key, as one bundle of plain parts (projections/bundle.ts): the wallet's row of
 * the market and, unless they are at hand, the market's names (its metadata).
 */
export const MARKET_NAMES_PART = marketMetaPart('title, outcome1, outcome2, title_start_ts');
const READ_MARKET_HEADER = bundle<{ tm: SerializedTraderMarketRow; names: MarketNames }>({
  tm: TRADER_MARKET_ROW_PART,
  names: MARKET_NAMES_PART,
});
const READ_MARKET_HEADER_NAMED = bundle<{ tm: SerializedTraderMarketRow }>({ tm: TRADER_MARKET_ROW_PART });

export interface TraderMarketHeaderRow {
  condition_id: string;
  resolved: boolean;
  winner_token_side: number;
  /** What one token 1 paid at the resolution (1, 0, or a split's share); null while open. */
  up_payout: number | null;
  pnl_usd: number;
  /** Who said it resolved ('' while open); absent from a serialized row written before migration 0026. */
  resolution_source?: string;
}

/** A header's row: the wallet's row of the market and the market's names. */
type HeaderRow = TraderMarketHeaderRow & Pick<MarketNames, 'title' | 'outcome1' | 'outcome2'>;

export function toHeader(row: HeaderRow): MarketHeader {
  const header: MarketHeader = {
    condition_id: row.condition_id,
    title: row.title,
    outcome: row.outcome1,
    outcome2: row.outcome2,
    resolved: row.resolved,
    winner: winnerName(row),
    pnl_usd: row.pnl_usd,
    open: !row.resolved,
  };
  if (row.resolved) header.resolution_source = resolutionSourceOf(row);
  return header;
}

/** The header alone (sampled chart, tape): null when the trader never traded the market. */
export async function readMarketHeader(
  store: Store,
  wallet: string,
  conditionId: string,
  sources: ReadSources = plainSources(store),
): Promise<MarketHeader | null> {
  const { parts, names } = await readBundleNamed(
    store,
    sources,
    conditionId,
    READ_MARKET_HEADER,
    READ_MARKET_HEADER_NAMED,
    { wallet, condition_id: conditionId },
  );
  const tm = traderMarketRowOf(parts.tm);
  return tm ? toHeader({ ...tm, ...names }) : null;
}
