/**
 * Every market of a wallet as one answer: each market's newest trader_markets_v2 row (every column the
 * career, top-markets and the markets list build from) and the marks of its open markets. The career
 * and top-markets fold it; the markets list pages it when it is at hand.
 *
 * Why one answer: an agent investigating a trader asks for the card, then top-markets, then the list,
 * milliseconds apart (crack_this_trader), and each read the same rows of the wallet (a bundle of ~9 ms
 * on the embedded store, most of it the engine's fixed cost per part). Read once and kept with the
 * trader's answers (read-cache.ts: until the trader changes, at most READ_CACHE_TRADER_S, as the marks
 * in it may lag that much), the second and third calls fold rows already in memory.
 */
import { bundle, readBundle } from './bundle.ts';
import { marksOfOpenMarketsPart } from './market-parts.ts';
import { keptForTrader, readForTrader } from './read-cache.ts';
import type { Store } from './store.ts';

/** A wallet's newest row of one market: the columns its readers fold (the era filters the card's statistics). */
export interface WalletMarketRow {
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

/** An open market's mark: its last trade in UP space, and when it was. */
export interface WalletMark {
  condition_id: string;
  mark: number;
  marked_at: number;
}

export interface WalletMarkets {
  markets: WalletMarketRow[];
  /** Marks of the markets open in some version (a superset of the open ones); an open market without a trade has none. */
  marks: WalletMark[];
}

/**
 * Plain reads by the wallet prefix of the keys (a bundle, projections/bundle.ts): each market's newest
 * row (ORDER BY version DESC LIMIT 1 BY: ReplacingMergeTree's rule, without FINAL) and the marks with
 * their times (market-parts.ts).
 */
const READ_WALLET_MARKETS = bundle<{ markets: WalletMarketRow; marks: WalletMark }>({
  markets: `
    SELECT condition_id, resolved, winner_token_side, up_payout, pnl_usd, buy_usd, sell_usd, buy_tokens, fills_count,
           first_ts, last_ts, last_action, last_price, net_tokens1, net_tokens2, cash_flow_usd, era
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet = {wallet:String}
    ORDER BY version DESC
    LIMIT 1 BY condition_id`,
  marks: marksOfOpenMarketsPart('argMaxMerge(last_up_price) AS mark, max(last_ts) AS marked_at'),
});

const KIND = 'wallet_markets';

/** Every market of the wallet and its open markets' marks: kept, being read, or read now. */
export function readWalletMarkets(store: Store, wallet: string): Promise<WalletMarkets> {
  return readForTrader(store, KIND, wallet, null, () => readBundle(store, READ_WALLET_MARKETS, { wallet }));
}

/** The same answer if this process has it or is reading it (a caller that needs less reads less otherwise). */
export function keptWalletMarkets(store: Store, wallet: string): Promise<WalletMarkets> | undefined {
  return keptForTrader<WalletMarkets>(store, KIND, wallet, null);
}
