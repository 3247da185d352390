/**
 * Every market of a wallet as one answer: each market's newest trader_markets_v2 row (every column the
 * career, top-markets, the markets list and a market summary build from) and the marks of its open
 * markets. The career and top-markets fold it; the markets list pages it and a summary takes its row of
 * the market from it when it is at hand.
 *
 * Why one answer: an agent investigating a trader asks for the card, then top-markets, then the list,
 * milliseconds apart (crack_this_trader), and each read the same rows of the wallet (a bundle whose
 * cost on the embedded store is mostly the engine's fixed cost per part). Read once and kept with the
 * trader's answers (operations/reads.ts), the second and third calls fold rows already in memory.
 */
import type { Store } from './store.ts';

/** A market's mark: its last trade in UP space, and when. */
export interface MarketMark {
  mark: number;
  marked_at: number;
}

/**
 * A market's trades by side and token (a summary's counts and volumes beyond the career's), one column
 * each of trader_markets_v2: the wallet's rows carry them so that a summary asked for after the card (an
 * agent's next call) takes its trader row from here instead of a statement part of its own (about a
 * third of the summary's cost; market-summary.ts, readMarketSummary).
 */
export interface TradeBreakdown {
  buy_count: number;
  sell_count: number;
  buy_up_price_tokens: number;
  side1_buy_count: number;
  side1_sell_count: number;
  side1_buy_usd: number;
  side1_sell_usd: number;
  side1_buy_tokens: number;
  side2_buy_count: number;
  side2_sell_count: number;
  side2_buy_usd: number;
  side2_sell_usd: number;
  side2_buy_tokens: number;
}

/** A wallet's newest row of one market: the columns its readers fold (the era filters the card's statistics). */
export interface WalletMarketRow extends TradeBreakdown {
  condition_id: string;
  resolved: boolean;
  winner_token_side: number;
  /** What one token 1 paid at the resolution (1, 0, or a split's share); null while open. */
  up_payout: number | null;
  pnl_usd: number;
  buy_usd: number;
  sell_usd: number;
  buy_tokens: number;
  fills_count: number;
  first_ts: number;
  last_ts: number;
  last_fill_ts: number | null;
  last_action: string;
  last_price: number | null;
  net_tokens1: number;
  net_tokens2: number;
  cash_flow_usd: number;
  era: string;
  /** Tokens redeemed (any side); absent from a row stored before migration 0019 until it is rewritten. */
  redeem_tokens?: number;
  /** Who said it resolved ('' while open, 'stated' when the source was not named); absent before migration 0026 rewrote the row. */
  resolution_source?: string;
}

/** An open market's mark (its last trade in UP space, and when it was), by market. */
export interface WalletMark extends MarketMark {
  condition_id: string;
}

export interface WalletMarkets {
  markets: WalletMarketRow[];
  /** Marks of the markets open in some version (a superset of the open ones); an open market without a trade has none. */
  marks: WalletMark[];
}

/**
 * WalletMarketRow's fields, in the order of the `wallet_row` column that serializes them (migrations 0012, 0016, 0019, 0026);
 * test/reads-shape.integration.test.ts checks the stored rows against this list and the columns it names.
 */
export const WALLET_MARKET_FIELDS = [
  'condition_id',
  'resolved',
  'winner_token_side',
  'up_payout',
  'pnl_usd',
  'buy_usd',
  'sell_usd',
  'buy_tokens',
  'fills_count',
  'first_ts',
  'last_ts',
  'last_action',
  'last_price',
  'net_tokens1',
  'net_tokens2',
  'cash_flow_usd',
  'era',
  'buy_count',
  'sell_count',
  'buy_up_price_tokens',
  'side1_buy_count',
  'side1_sell_count',
  'side1_buy_usd',
  'side1_sell_usd',
  'side1_buy_tokens',
  'side2_buy_count',
  'side2_sell_count',
  'side2_buy_usd',
  'side2_sell_usd',
  'side2_buy_tokens',
  'last_fill_ts',
  'redeem_tokens',
  'resolution_source',
] as const satisfies readonly (keyof WalletMarketRow)[];
// Compile-time: every field of WalletMarketRow is in the list (a field added to one and not the other fails here).
const everyFieldListed: [Exclude<keyof WalletMarketRow, (typeof WALLET_MARKET_FIELDS)[number]>] extends [never]
  ? true
  : never = true;
void everyFieldListed;

/**
 * Every stored version of the wallet's rows, by the wallet prefix of the key, as its one-column
 * serialization `wallet_row` (migration 0012: a point read on the embedded engine pays per column read:
 * this one costs a fraction of the thirty), with the key and version that say which is each market's
 * newest. The newest is taken in TypeScript (ReplacingMergeTree's rule, without FINAL): a key holds a
 * version or two between merges, and the engine's `ORDER BY version DESC LIMIT 1 BY condition_id` costs
 * about half the point read again.
 */
const WALLET_MARKET_ROWS = `
    SELECT condition_id, toString(version) AS version, wallet_row
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet = {wallet:String}`;

interface SerializedWalletMarketRow {
  condition_id: string;
  /**
   * UInt64 as its decimal string: the session writes 64-bit integers as JSON numbers, and versions past 2^53
   * (every row of the formula's generation term) differing by a source rank would round to one number.
   */
  version: string;
  wallet_row: string;
}

/**
 * Each market's newest row, parsed, newest version first (the order `ORDER BY version DESC LIMIT 1 BY`
 * gave: the career folds its sums in this order).
 */
function newestRows(rows: readonly SerializedWalletMarketRow[]): WalletMarketRow[] {
  const newest = new Map<string, { version: bigint; row: SerializedWalletMarketRow }>();
  for (const row of rows) {
    const version = BigInt(row.version);
    const kept = newest.get(row.condition_id);
    if (!kept || version > kept.version) newest.set(row.condition_id, { version, row });
  }
  return [...newest.values()]
    .sort((a, b) => (a.version === b.version ? 0 : a.version > b.version ? -1 : 1))
    .map(({ row }) => JSON.parse(row.wallet_row) as WalletMarketRow);
}

/** Marks of some markets by primary key (a market without a trade has no row). */
const READ_MARKS = `
SELECT condition_id, argMaxMerge(last_up_price) AS mark, max(last_ts) AS marked_at
FROM {db:Identifier}.market_marks_v2
WHERE condition_id IN {condition_ids:Array(String)}
GROUP BY condition_id`;

/**
 * Every market of the wallet and its open markets' marks: the rows, then the marks of the open ones by
 * primary key (none when every market is resolved). Two point reads cost less than one statement of both
 * on the embedded engine: its marks part has to find the open markets by reading trader_markets_v2 again.
 * `onRows` is told the rows before the marks are read.
 */
export async function readWalletMarkets(
  store: Store,
  wallet: string,
  onRows?: (rows: readonly WalletMarketRow[]) => void,
): Promise<WalletMarkets> {
  const markets = await readWalletMarketRows(store, wallet);
  onRows?.(markets);
  const marks = await readMarks(
    store,
    markets.filter((row) => !row.resolved).map((row) => row.condition_id),
  );
  return { markets, marks };
}

/** Every market of the wallet without the marks (the read cache keeps marks briefly; readMarks reads the rest). */
export async function readWalletMarketRows(store: Store, wallet: string): Promise<WalletMarketRow[]> {
  return newestRows(await store.query<SerializedWalletMarketRow>(WALLET_MARKET_ROWS, { wallet }));
}

/** The marks of some markets (a market without a trade has none). */
export async function readMarks(store: Store, conditionIds: readonly string[]): Promise<WalletMark[]> {
  if (conditionIds.length === 0) return [];
  // Awaited here, so that this function is on the stack the store's metrics name the statement by.
  return await store.query<WalletMark>(READ_MARKS, { condition_ids: conditionIds });
}
