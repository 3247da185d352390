/**
 * Every market of a wallet as one answer: each market's newest trader_markets_v2 row (every column the
 * career, top-markets, the markets list and a market summary build from) and the marks of its open
 * markets. The career and top-markets fold it; the markets list pages it and a summary takes its row of
 * the market from it when it is at hand.
 *
 * Why one answer: an agent investigating a trader asks for the card, then top-markets, then the list,
 * milliseconds apart (crack_this_trader), and each read the same rows of the wallet (a bundle whose
 * cost on the embedded store is mostly the engine's fixed cost per part). Read once and kept with the
 * trader's answers (read-cache.ts: until the trader changes, at most `traderAnswerSeconds`, as the marks
 * in it may lag that much), the second and third calls fold rows already in memory.
 */
import { bundle, readBundle } from './bundle.ts';
import { marksOfOpenMarketsPart } from './market-parts.ts';
import { keptForTrader, readForTrader } from './cached-reads.ts';
import type { MarketMark } from './read-cache.ts';
import type { Store } from './store.ts';

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

/** TradeBreakdown's columns, for a summary that reads its own row (the wallet's rows carry them in `wallet_row`). */
export const TRADE_BREAKDOWN_COLUMNS = `buy_count, sell_count, buy_up_price_tokens,
           side1_buy_count, side1_sell_count, side1_buy_usd, side1_sell_usd, side1_buy_tokens,
           side2_buy_count, side2_sell_count, side2_buy_usd, side2_sell_usd, side2_buy_tokens`;

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
  last_action: string;
  last_price: number | null;
  net_tokens1: number;
  net_tokens2: number;
  cash_flow_usd: number;
  era: string;
}

/** An open market's mark (its last trade in UP space, and when it was), by market. */
interface WalletMark extends MarketMark {
  condition_id: string;
}

export interface WalletMarkets {
  markets: WalletMarketRow[];
  /** Marks of the markets open in some version (a superset of the open ones); an open market without a trade has none. */
  marks: WalletMark[];
}

/**
 * WalletMarketRow's fields, in the order of the `wallet_row` column that serializes them (migration 0012);
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
] as const satisfies readonly (keyof WalletMarketRow)[];
// Compile-time: every field of WalletMarketRow is in the list (a field added to one and not the other fails here).
const everyFieldListed: [Exclude<keyof WalletMarketRow, (typeof WALLET_MARKET_FIELDS)[number]>] extends [never]
  ? true
  : never = true;
void everyFieldListed;

/**
 * Each market's newest row, by the wallet prefix of the key (ORDER BY version DESC LIMIT 1 BY:
 * ReplacingMergeTree's rule, without FINAL), as its one-column serialization `wallet_row` (migration 0012:
 * a point read on the embedded engine pays per column read: this one costs a fraction of the thirty).
 */
const WALLET_MARKET_ROWS = `
    SELECT wallet_row
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet = {wallet:String}
    ORDER BY version DESC
    LIMIT 1 BY condition_id`;

interface SerializedWalletMarketRow {
  wallet_row: string;
}

/** The rows of WALLET_MARKET_ROWS, parsed. */
function parsedRows(rows: readonly SerializedWalletMarketRow[]): WalletMarketRow[] {
  return rows.map((row) => JSON.parse(row.wallet_row) as WalletMarketRow);
}

/** The rows and the marks with their times (market-parts.ts) in one statement (a bundle, projections/bundle.ts). */
const READ_WALLET_MARKETS = bundle<{ markets: SerializedWalletMarketRow; marks: WalletMark }>({
  markets: WALLET_MARKET_ROWS,
  marks: marksOfOpenMarketsPart('argMaxMerge(last_up_price) AS mark, max(last_ts) AS marked_at'),
});

/** Marks of some markets by primary key (a market without a trade has no row). */
const READ_MARKS = `
SELECT condition_id, argMaxMerge(last_up_price) AS mark, max(last_ts) AS marked_at
FROM {db:Identifier}.market_marks_v2
WHERE condition_id IN {condition_ids:Array(String)}
GROUP BY condition_id`;

/**
 * While the read caches keep marks (this process's worker reports each market's trades), the rows
 * alone, then the marks of the open ones from the cache, the rest in one more read (kept until their
 * market trades again); else the bundle. Why: the bundle's marks part finds the open markets by a
 * second read of trader_markets_v2, which costs about as much again as the rows alone on the embedded
 * store, and the open markets of traders who share markets are mostly marked already (one more, smaller
 * read when they are not).
 */
export async function readWalletMarketsFromStore(store: Store, wallet: string): Promise<WalletMarkets> {
  const caches = store.caches;
  if (!caches || caches.marksReadStart() === null) {
    const parts = await readBundle(store, READ_WALLET_MARKETS, { wallet });
    return { markets: parsedRows(parts.markets), marks: parts.marks };
  }
  const markets = parsedRows(await store.query<SerializedWalletMarketRow>(WALLET_MARKET_ROWS, { wallet }));
  const marks: WalletMark[] = [];
  const missing: string[] = [];
  for (const row of markets) {
    if (row.resolved) continue;
    const kept = caches.mark(row.condition_id);
    if (kept === undefined) missing.push(row.condition_id);
    else if (kept !== null) marks.push({ condition_id: row.condition_id, ...kept });
  }
  if (missing.length === 0) return { markets, marks };
  const readStart = caches.marksReadStart();
  const found = new Map(
    (await store.query<WalletMark>(READ_MARKS, { condition_ids: missing })).map((row) => [row.condition_id, row]),
  );
  for (const conditionId of missing) {
    const row = found.get(conditionId);
    caches.keepMark(conditionId, row ? { mark: row.mark, marked_at: row.marked_at } : null, readStart);
    if (row) marks.push(row);
  }
  return { markets, marks };
}

const KIND = 'wallet_markets';

/** Every market of the wallet and its open markets' marks: kept, being read, or read now. */
export function readWalletMarkets(store: Store, wallet: string): Promise<WalletMarkets> {
  return readForTrader(store, KIND, wallet, null, () => readWalletMarketsFromStore(store, wallet));
}

/** The same answer if this process has it or is reading it (a caller that needs less reads less otherwise). */
export function keptWalletMarkets(store: Store, wallet: string): Promise<WalletMarkets> | undefined {
  return keptForTrader<WalletMarkets>(store, KIND, wallet, null);
}
