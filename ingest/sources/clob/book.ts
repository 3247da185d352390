/**
 * One outcome token's order book as the market channel states it: a `book` message replaces it whole, a
 * `price_change` entry sets one level's aggregate size (0 removes the level). The best bid is the highest
 * bid and the best ask the lowest ask, whatever order the levels arrive in (real books list the best level
 * last, the docs' example first). A crossed or locked book (bid ≥ ask) is a state the venue passes
 * through between the frames of one match; it is kept as stated, never repaired.
 */
import type { PriceChangeEntry } from './protocol.ts';

export interface Level {
  price: number;
  size: number;
}

export interface TopOfBook {
  bid: number | null;
  ask: number | null;
}

export class OrderBook {
  readonly #bids = new Map<number, number>();
  readonly #asks = new Map<number, number>();

  /** A full snapshot (the initial dump, or the book after a trade). */
  replace(bids: readonly Level[], asks: readonly Level[]): void {
    this.#bids.clear();
    this.#asks.clear();
    for (const { price, size } of bids) if (size > 0) this.#bids.set(price, size);
    for (const { price, size } of asks) if (size > 0) this.#asks.set(price, size);
  }

  /** One level's new aggregate size: a BUY entry is a bid level, a SELL entry an ask level. */
  apply(entry: Pick<PriceChangeEntry, 'price' | 'size' | 'side'>): void {
    const side = entry.side === 'BUY' ? this.#bids : this.#asks;
    if (entry.size > 0) side.set(entry.price, entry.size);
    else side.delete(entry.price);
  }

  top(): TopOfBook {
    let bid: number | null = null;
    let ask: number | null = null;
    for (const price of this.#bids.keys()) if (bid === null || price > bid) bid = price;
    for (const price of this.#asks.keys()) if (ask === null || price < ask) ask = price;
    return { bid, ask };
  }

  /** The levels, best first: bids from the highest, asks from the lowest. */
  levels(): { bids: Level[]; asks: Level[] } {
    const sorted = (side: Map<number, number>, descending: boolean) =>
      [...side]
        .map(([price, size]) => ({ price, size }))
        .sort((a, b) => (descending ? b.price - a.price : a.price - b.price));
    return { bids: sorted(this.#bids, true), asks: sorted(this.#asks, false) };
  }
}
