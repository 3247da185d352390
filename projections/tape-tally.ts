/**
 * What a tape's metadata says about its events, one rule for every recorder (the live plane's recordings,
 * the simulator's demo sessions): the counts, the size in the library, the taped profit and the grade.
 * Fed one StreamEvent at a time, in replay order, so a recorder that publishes as it goes never keeps
 * the events it already published.
 */
import { TAPE_GRADES, type TapeGrade } from './vocabulary.ts';
import type { StreamEvent } from './tapes.ts';

/** Bytes an event takes in the library: its JSON line as the tape's download holds it (UTF-8, before gzip). */
export function tapeEventBytes(event: StreamEvent): number {
  return Buffer.byteLength(JSON.stringify(event)) + 1;
}

/** The grade of a taped profit: A above 400 USD, one grade lower per 200 USD less, F at −400 and below. */
function tapeGrade(pnlTapedUsd: number): TapeGrade {
  const index = Math.min(TAPE_GRADES.length - 1, Math.max(0, Math.floor(3 - pnlTapedUsd / 200)));
  return TAPE_GRADES[index]!;
}

export interface TapeSummary {
  grade: TapeGrade;
  pnl_taped_usd: number;
  outcome: string;
  tick_count: number;
  fill_count: number;
  event_count: number;
  size_bytes: number;
}

export class TapeTally {
  ticks = 0;
  fills = 0;
  events = 0;
  bytes = 0;
  #cash = 0;
  /** Tokens of each side the trader bought (less sold) during the recording. */
  #tokens1 = 0;
  #tokens2 = 0;
  /** The last UP-space level seen (a trade, a book's mid, a fill, the resolution's level). */
  #mark: number | null = null;
  #outcome = '';
  /** Provisional fills and prints, by ref: counted once their `final` comes, never once `retracted`. */
  readonly #provisional = new Map<string, Extract<StreamEvent, { type: 'fill' | 'trade' }>>();

  /** Counts one event; returns its bytes. */
  add(event: StreamEvent, bytes = tapeEventBytes(event)): number {
    this.events += 1;
    this.bytes += bytes;
    if ((event.type === 'fill' || event.type === 'trade') && event.provisional && event.ref !== undefined) {
      this.#provisional.set(event.ref, event);
      return bytes;
    }
    this.#count(event);
    return bytes;
  }

  /** What an event moves: the price line, the fills' cash and tokens, the outcome. */
  #count(event: StreamEvent): void {
    switch (event.type) {
      case 'book':
        this.ticks += 1;
        if (event.bid !== null && event.ask !== null) this.#mark = (event.bid + event.ask) / 2;
        break;
      case 'trade':
        this.ticks += 1;
        this.#mark = event.price;
        break;
      case 'fill': {
        this.fills += 1;
        this.#cash += event.side === 'SELL' ? event.usd : -event.usd;
        const tokens = event.side === 'BUY' ? event.size_tokens : -event.size_tokens;
        if (event.token_side === 1) this.#tokens1 += tokens;
        else this.#tokens2 += tokens;
        this.#mark = event.price;
        break;
      }
      case 'resolution':
        this.#mark = event.level;
        this.#outcome = event.winner;
        break;
      case 'session':
        break;
      case 'final': {
        const settled = this.#provisional.get(event.ref);
        this.#provisional.delete(event.ref);
        if (settled) this.#count(settled);
        break;
      }
      case 'retracted':
        this.#provisional.delete(event.ref);
        break;
    }
  }

  /**
   * Profit observed during the recording: the cash the trader's fills moved, plus the tokens they left,
   * valued at the last level seen (token 1 at the level, token 2 at 1 − level; at a resolution, its payout).
   */
  get pnlTapedUsd(): number {
    const mark = this.#mark ?? 0;
    const value = this.#cash + this.#tokens1 * mark + this.#tokens2 * (1 - mark);
    return Math.round(value * 100) / 100 || 0;
  }

  summary(): TapeSummary {
    const pnl = this.pnlTapedUsd;
    return {
      grade: tapeGrade(pnl),
      pnl_taped_usd: pnl,
      outcome: this.#outcome,
      tick_count: this.ticks,
      fill_count: this.fills,
      event_count: this.events,
      size_bytes: this.bytes,
    };
  }
}
