/**
 * What passes between the log and the live plane: the events the feed reads from the log (ingest/live-feed.ts)
 * and hands the plane (operations/live/plane.ts), and the sink the plane's recordings go back through.
 * `ingest/` and `operations/` never import each other, so this contract lives below both; the roles join
 * the feed to the plane.
 */

/** Where a provisional event comes from: its block, and its name until resolved. */
export interface ProvisionalTag {
  ref: string;
  block: number;
  hash: string;
  /** The block's time (epoch s) and when the archive saw it (epoch ms): freshness is measured from them. */
  blockTs: number;
  seenMs: number;
}

/** How a block above the final one ended: kept on the chain, or replaced by a reorganisation. */
export type MarkState = 'final' | 'retracted';

/**
 * What the log brings, prices already in UP space (ingest/live-feed.ts builds these, the plane receives
 * them). A fill or trade carries `key`, the identity its copies share (the topic's event id), and a
 * `provisional` tag when it comes from a block above the chain's final one; a `mark` ends such a block.
 */
export type LiveInput =
  | { kind: 'book'; market: string; ts: number; bid: number | null; ask: number | null }
  | {
      kind: 'trade';
      market: string;
      ts: number;
      price: number;
      size_tokens: number;
      usd: number;
      token_side: 1 | 2;
      key?: string;
      provisional?: ProvisionalTag;
    }
  | {
      kind: 'fill';
      market: string;
      wallet: string;
      ts: number;
      side: 'BUY' | 'SELL';
      price: number;
      token_side: 1 | 2;
      size_tokens: number;
      usd: number;
      key?: string;
      provisional?: ProvisionalTag;
    }
  | { kind: 'resolution'; market: string; ts: number; winnerTokenSide: 1 | 2 | null }
  | { kind: 'names'; market: string; outcome1: string; outcome2: string; title: string }
  | { kind: 'mark'; block: number; hash: string; state: MarkState; blockTs: number };

/**
 * Where the plane's recordings go: a recording's next events, then its metadata so far. The plane names
 * its tape and event types (operations/live/recording.ts), the feed publishes the log's (ingest/live-feed.ts);
 * where the role joins them, the compiler checks that what the plane records is what the log takes.
 * A property, not a method, so that the check is strict in the tape and the events.
 */
export interface RecordingSink<Tape, Event> {
  publish: (tape: Tape, events: readonly Event[]) => Promise<void>;
}
