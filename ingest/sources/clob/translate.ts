/**
 * Market-channel messages → events of our topics, in the contract's terms:
 *
 * - `book` and `price_change` keep each subscribed token's order book (book.ts); when a market's top of
 *   book moves, one `book` tick in UP space: token 1's best bid and ask as they are, or — while only token
 *   2's book is known — `1 - ask` and `1 - bid` of token 2's (a binary market's two books mirror each other).
 *   Until a token's first snapshot arrives (the venue may not send one) its top is the `best_bid` /
 *   `best_ask` the venue states on each change;
 * - `last_trade_price` → a `trades` print in the token's own frame (the topic's convention: it lands,
 *   and reaches the live plane, UP-normalized), identified by its transaction like every source's prints;
 * - `new_market` → the market's metadata and its two tokens; `market_resolved` → its resolution.
 *
 * Timestamps are the venue's (milliseconds → epoch seconds). A book tick's `seq` is the millisecond
 * timestamp × 1000, kept increasing per market, so ticks of one millisecond stay apart and in order.
 */
import { upNormalizedPrice, type TokenSide } from '../../contract/primitives.ts';
import type { EventInputOf } from '../../contract/topics.ts';
import { marketMetadata } from '../polymarket/markets.ts';
import { OrderBook, type TopOfBook } from './book.ts';
import type {
  BookMessage,
  ClobMessage,
  LastTradeMessage,
  MarketResolvedMessage,
  NewMarketMessage,
  PriceChangeMessage,
} from './protocol.ts';

/** A market and its two outcome tokens (token 1: the first outcome, the UP side). */
export interface MarketTokens {
  conditionId: string;
  token1: string;
  token2: string;
}

export type ClobOutput =
  | { topic: 'book'; event: EventInputOf<'book'> }
  | { topic: 'trades'; event: EventInputOf<'trades'> }
  | { topic: 'markets'; event: EventInputOf<'markets'> };

export interface Translation {
  outputs: ClobOutput[];
  /** Messages that name something the contract cannot carry (a print without its transaction…). */
  rejected: { message: ClobMessage; reason: string }[];
  /** Messages of tokens this source does not track (an unsubscribe in flight). */
  untracked: number;
}

interface TokenState {
  conditionId: string;
  side: TokenSide;
  book: OrderBook;
  /** Whether a full book arrived: until then the venue's stated best prices stand in. */
  snapshot: boolean;
  stated: TopOfBook;
}

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const MICRO = 1e6;

const seconds = (ms: number) => Math.floor(ms / 1000);

export class ClobTranslator {
  readonly #tokens = new Map<string, TokenState>();
  readonly #markets = new Map<string, MarketTokens>();
  /** The last tick of each market; `unpublished`: it never reached the log, so the same top goes out again. */
  readonly #lastTick = new Map<string, { bid: number | null; ask: number | null; seq: number; unpublished: boolean }>();

  /** Starts tracking markets (their tokens' books begin empty until the venue states them). */
  track(markets: readonly MarketTokens[]): void {
    for (const market of markets) {
      const conditionId = market.conditionId.toLowerCase();
      this.#markets.set(conditionId, { ...market, conditionId });
      for (const [token, side] of [
        [market.token1, 1],
        [market.token2, 2],
      ] as const) {
        if (this.#tokens.get(token)?.conditionId === conditionId) continue;
        this.#tokens.set(token, {
          conditionId,
          side,
          book: new OrderBook(),
          snapshot: false,
          stated: { bid: null, ask: null },
        });
      }
    }
  }

  /** Stops tracking markets: their books are dropped (a later subscribe starts from a fresh snapshot). */
  untrack(conditionIds: readonly string[]): void {
    for (const id of conditionIds) {
      const market = this.#markets.get(id);
      if (!market) continue;
      this.#markets.delete(id);
      this.#tokens.delete(market.token1);
      this.#tokens.delete(market.token2);
      this.#lastTick.delete(id);
    }
  }

  /** A reconnect: every book must come again from its snapshot; what was stated before may be stale. */
  resetBooks(): void {
    for (const state of this.#tokens.values()) {
      state.book.replace([], []);
      state.snapshot = false;
      state.stated = { bid: null, ask: null };
    }
  }

  /** Ticks that were translated but not published: the markets' next tick goes out even at the same top. */
  unpublished(conditionIds: Iterable<string>): void {
    for (const id of conditionIds) {
      const last = this.#lastTick.get(id);
      if (last) last.unpublished = true;
    }
  }

  /** Whether the token is tracked and its book has not come yet. */
  awaitsSnapshot(tokenId: string): boolean {
    const state = this.#tokens.get(tokenId);
    return state !== undefined && !state.snapshot;
  }

  /** The token's book (tests compare it with the venue's next snapshot). */
  bookOf(tokenId: string): OrderBook | undefined {
    return this.#tokens.get(tokenId)?.book;
  }

  translate(messages: readonly ClobMessage[]): Translation {
    const translation: Translation = { outputs: [], rejected: [], untracked: 0 };
    for (const message of messages) {
      switch (message.event_type) {
        case 'book':
          this.#book(message, translation);
          break;
        case 'price_change':
          this.#priceChange(message, translation);
          break;
        case 'last_trade_price':
          this.#trade(message, translation);
          break;
        case 'new_market':
          this.#newMarket(message, translation);
          break;
        case 'market_resolved':
          this.#resolved(message, translation);
          break;
      }
    }
    return translation;
  }

  #book(message: BookMessage, translation: Translation): void {
    const state = this.#tokens.get(message.asset_id);
    if (!state) {
      translation.untracked++;
      return;
    }
    state.book.replace(message.bids, message.asks);
    state.snapshot = true;
    this.#tick(state.conditionId, message.timestamp, translation);
  }

  #priceChange(message: PriceChangeMessage, translation: Translation): void {
    const touched = new Set<string>();
    for (const entry of message.price_changes) {
      const state = this.#tokens.get(entry.asset_id);
      if (!state) {
        translation.untracked++;
        continue;
      }
      state.book.apply(entry);
      state.stated = { bid: entry.best_bid, ask: entry.best_ask };
      touched.add(state.conditionId);
    }
    for (const conditionId of touched) this.#tick(conditionId, message.timestamp, translation);
  }

  /** The market's top of book in UP space, from token 1's book when known, else token 2's mirrored. */
  #upTop(conditionId: string): TopOfBook | null {
    const market = this.#markets.get(conditionId);
    if (!market) return null;
    const topOf = (state: TokenState | undefined): TopOfBook | null => {
      if (!state) return null;
      if (state.snapshot) return state.book.top();
      return state.stated.bid === null && state.stated.ask === null ? null : state.stated;
    };
    const one = topOf(this.#tokens.get(market.token1));
    if (one) return one;
    const two = topOf(this.#tokens.get(market.token2));
    if (!two) return null;
    return {
      bid: two.ask === null ? null : upNormalizedPrice(2, two.ask),
      ask: two.bid === null ? null : upNormalizedPrice(2, two.bid),
    };
  }

  #tick(conditionId: string, timestampMs: number, translation: Translation): void {
    const top = this.#upTop(conditionId);
    if (!top) return;
    const last = this.#lastTick.get(conditionId);
    if (last && !last.unpublished && last.bid === top.bid && last.ask === top.ask) return;
    const seq = Math.max(timestampMs * 1000, (last?.seq ?? -1) + 1);
    this.#lastTick.set(conditionId, { ...top, seq, unpublished: false });
    translation.outputs.push({
      topic: 'book',
      event: { condition_id: conditionId, ts: seconds(timestampMs), seq, bid: top.bid, ask: top.ask },
    });
  }

  #trade(message: LastTradeMessage, translation: Translation): void {
    const state = this.#tokens.get(message.asset_id);
    if (!state) {
      translation.untracked++;
      return;
    }
    if (!message.transaction_hash || !TX_HASH.test(message.transaction_hash)) {
      translation.rejected.push({
        message,
        reason: 'last_trade_price without a transaction_hash: a print is identified by its transaction',
      });
      return;
    }
    translation.outputs.push({
      topic: 'trades',
      event: {
        tx_hash: message.transaction_hash,
        log_index: 0,
        condition_id: state.conditionId,
        token_side: state.side,
        price: message.price,
        size_tokens: message.size,
        usd: Math.round(message.price * message.size * MICRO) / MICRO,
        taker_side: message.side,
        ts: seconds(message.timestamp),
        // No log position: the millisecond within the second orders the venue's prints (below every chain print's).
        seq: message.timestamp % 1000,
      },
    });
  }

  #newMarket(message: NewMarketMessage, translation: Translation): void {
    const conditionId = message.market.toLowerCase();
    const ts = seconds(message.timestamp);
    const [token1, token2] = message.assets_ids as [string, string];
    translation.outputs.push({
      topic: 'markets',
      event: marketMetadata({
        conditionId,
        title: message.question ?? '',
        slug: message.slug ?? '',
        icon: '',
        firstTs: ts,
        lastTs: ts,
        outcomeNames: [message.outcomes?.[0], message.outcomes?.[1]],
      }),
    });
    translation.outputs.push({
      topic: 'markets',
      event: { type: 'tokens', condition_id: conditionId, token1_id: token1, token2_id: token2 },
    });
  }

  #resolved(message: MarketResolvedMessage, translation: Translation): void {
    const conditionId = message.market.toLowerCase();
    const known = this.#tokens.get(message.winning_asset_id);
    const listed = message.assets_ids?.indexOf(message.winning_asset_id) ?? -1;
    const side: TokenSide | null =
      known?.conditionId === conditionId ? known.side : listed === 0 ? 1 : listed === 1 ? 2 : null;
    if (side === null) {
      translation.rejected.push({ message, reason: 'market_resolved names a winning token of no known side' });
      return;
    }
    translation.outputs.push({
      topic: 'markets',
      event: {
        type: 'resolution',
        condition_id: conditionId,
        winner_token_side: side,
        ts: seconds(message.timestamp),
        source: 'clob',
      },
    });
  }
}
