/**
 * The clob source: Polymarket's CLOB market channel → the `book`, `trades` and `markets` topics, for the
 * markets someone cares about now (docs/clob.md). Every refresh it asks its interest which markets (and
 * their tokens) to keep subscribed and hands the difference to the connection; every frame it reads is
 * translated in arrival order and published in that order. What cannot be read, or cannot become an
 * event of the contract, is dead-lettered with its reason and counted; nothing the venue sends stops it.
 * A token whose book the channel has not sent a while after its subscribe (a resubscribe may bring none)
 * gets its book over REST, through the same translation.
 */
import type { ClobConfig } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import { watchLoop } from '../../../metrics/progress.ts';
import { clobMessages, clobReconnects, clobSubscribedMarkets } from '../../../metrics/registry.ts';
import { TOPICS } from '../../contract/topics.ts';
import { describeZodError } from '../../decode.ts';
import type { EventSink } from '../../publisher.ts';
import { sleepUnlessAborted } from '../../sleep.ts';
import { ClobConnection } from './connection.ts';
import { decodeFrame, decodeRestBook, type ClobMessage } from './protocol.ts';
import { ClobTranslator, type ClobOutput, type MarketTokens } from './translate.ts';

export type { MarketTokens } from './translate.ts';

/** Which markets to keep subscribed, with their tokens. */
export interface ClobInterest {
  markets(): Promise<MarketTokens[]>;
}

export interface ClobSourceOptions {
  config: ClobConfig;
  interest: ClobInterest;
  sink: EventSink;
  /** Dead-letters what could not be read or published: the original text and why. */
  reject(raw: string, reason: string): Promise<void>;
  log: Logger;
  random?: () => number;
  /** A token's book over REST (`GET /book?token_id=`), as the body reads; none: only the channel's books. */
  fetchBook?: (tokenId: string, signal: AbortSignal) => Promise<unknown>;
}

/** Loops that have not advanced for this many refresh periods make /healthz unhealthy. */
const STALLED_AFTER_REFRESHES = 12;

export class ClobSource {
  readonly #options: ClobSourceOptions;
  readonly #translator = new ClobTranslator();
  readonly #connection: ClobConnection;
  /** Markets subscribed now, by condition id. */
  #markets = new Map<string, MarketTokens>();
  /** Publishing, in the order frames arrived. */
  #chain: Promise<void> = Promise.resolve();
  #pending = 0;
  #lastDropLog = 0;
  /** Tokens subscribed whose book has not come: when to read it over REST if it still has not. */
  readonly #snapshotDue = new Map<string, number>();
  readonly #snapshotTimers = new Set<NodeJS.Timeout>();
  /** REST reads, one after another. */
  #fetching: Promise<void> = Promise.resolve();
  #signal: AbortSignal | null = null;

  constructor(options: ClobSourceOptions) {
    this.#options = options;
    const { config, log } = options;
    this.#connection = new ClobConnection({
      url: config.url,
      heartbeatMs: config.heartbeatMs,
      pongTimeoutMs: config.pongTimeoutMs,
      stallMs: config.stallMs,
      backoff: config.backoff,
      log,
      ...(options.random ? { random: options.random } : {}),
      onFrame: (text) => this.#frame(text),
      onConnected: () => {
        this.#translator.resetBooks();
        this.#awaitSnapshots([...this.#markets.values()].flatMap((market) => [market.token1, market.token2]));
      },
      onDisconnected: (reason) => clobReconnects.inc({ reason }),
    });
  }

  /** Runs until aborted; resolves once what was read is published. */
  async run(signal: AbortSignal): Promise<void> {
    const { config, log } = this.#options;
    const progress = watchLoop('clob source', STALLED_AFTER_REFRESHES * config.refreshMs);
    this.#signal = signal;
    const connection = this.#connection.run(signal);
    try {
      while (!signal.aborted) {
        await this.refresh();
        progress.advanced();
        await sleepUnlessAborted(config.refreshMs, signal);
      }
    } finally {
      progress.stop();
      for (const timer of this.#snapshotTimers) clearTimeout(timer);
      await connection;
      await this.#fetching;
      await this.#chain;
      log.info('clob source stopped');
    }
  }

  /** Reads the interest once and subscribes its difference (a failed read keeps what is subscribed). */
  async refresh(): Promise<void> {
    let wanted: MarketTokens[];
    try {
      wanted = await this.#options.interest.markets();
    } catch (failure) {
      this.#options.log.warn({ err: failure }, 'clob interest unavailable: the subscriptions stay as they are');
      return;
    }
    const next = new Map(
      wanted.slice(0, this.#options.config.maxMarkets).map((market) => [market.conditionId, market]),
    );
    const gone = [...this.#markets.keys()].filter((id) => !next.has(id));
    const added = [...next.values()].filter((market) => !this.#markets.has(market.conditionId));
    for (const id of gone) {
      const market = this.#markets.get(id);
      if (market) for (const token of [market.token1, market.token2]) this.#snapshotDue.delete(token);
    }
    this.#translator.untrack(gone);
    this.#translator.track([...next.values()]);
    this.#markets = next;
    this.#awaitSnapshots(added.flatMap((market) => [market.token1, market.token2]));
    clobSubscribedMarkets.set(next.size);
    this.#connection.setAssets([...next.values()].flatMap((market) => [market.token1, market.token2]));
  }

  /** Reads the books of `tokens` over REST once `snapshotWaitMs` has passed, unless the channel sent them. */
  #awaitSnapshots(tokens: readonly string[]): void {
    if (!this.#options.fetchBook || tokens.length === 0) return;
    const waitMs = this.#options.config.snapshotWaitMs;
    const due = Date.now() + waitMs;
    for (const token of tokens) this.#snapshotDue.set(token, due);
    const timer = setTimeout(() => {
      this.#snapshotTimers.delete(timer);
      this.#fetching = this.#fetching.then(() => this.#fetchMissingBooks(tokens));
    }, waitMs);
    timer.unref();
    this.#snapshotTimers.add(timer);
  }

  async #fetchMissingBooks(tokens: readonly string[]): Promise<void> {
    const { fetchBook, log } = this.#options;
    for (const token of tokens) {
      const signal = this.#signal;
      if (!fetchBook || !signal || signal.aborted) return;
      const due = this.#snapshotDue.get(token);
      // Subscribed again since (a reconnect): that subscribe's own wait decides.
      if (due === undefined || due > Date.now()) continue;
      this.#snapshotDue.delete(token);
      if (!this.#translator.awaitsSnapshot(token)) continue;
      let body: unknown;
      try {
        body = await fetchBook(token, signal);
      } catch (failure) {
        if (!signal.aborted)
          log.warn({ err: failure, token }, "book over REST unavailable: the venue's stated prices stand in");
        continue;
      }
      const read = decodeRestBook(body, token);
      // The channel's own book came while the REST answer was on its way: it is the newer.
      if ('book' in read && !this.#translator.awaitsSnapshot(token)) continue;
      if ('book' in read) this.#handle([read.book], [], 0);
      else this.#handle([], [read], 0);
    }
  }

  #frame(text: string): void {
    const frame = decodeFrame(text);
    this.#handle(frame.messages, frame.rejected, frame.ignored);
  }

  /** Translates messages read (from a frame, or a REST book) and publishes their events in order. */
  #handle(messages: readonly ClobMessage[], unread: readonly { raw: string; reason: string }[], ignored: number): void {
    const translation = this.#translator.translate(messages);
    clobMessages.inc({ outcome: 'ignored' }, ignored);
    clobMessages.inc({ outcome: 'untracked' }, translation.untracked);
    clobMessages.inc({ outcome: 'rejected' }, unread.length + translation.rejected.length);
    clobMessages.inc({ outcome: 'used' }, messages.length - translation.rejected.length);
    const rejected = [
      ...unread,
      ...translation.rejected.map(({ message, reason }) => ({ raw: JSON.stringify(message), reason })),
    ];
    const valid: ClobOutput[] = [];
    for (const output of translation.outputs) {
      const parsed = TOPICS[output.topic].schema.safeParse(output.event);
      if (parsed.success) valid.push(output);
      else
        rejected.push({
          raw: JSON.stringify(output.event),
          reason: `${TOPICS[output.topic].name}: ${describeZodError(parsed.error)}`,
        });
    }
    // A log that cannot keep up costs bounded memory; the books are kept from every frame regardless, so
    // what is published after a drop is still right.
    if (this.#pending >= this.#options.config.maxPendingFrames) {
      clobMessages.inc({ outcome: 'dropped' }, valid.length + rejected.length);
      this.#translator.unpublished(
        valid.flatMap((output) => (output.topic === 'book' ? [output.event.condition_id] : [])),
      );
      const now = Date.now();
      if (now - this.#lastDropLog > 5_000) {
        this.#lastDropLog = now;
        this.#options.log.warn({ pending: this.#pending }, 'the log does not keep up: clob events dropped');
      }
      return;
    }
    this.#pending++;
    this.#chain = this.#chain.then(async () => {
      await this.#publish(valid, rejected);
      this.#pending--;
    });
  }

  async #publish(outputs: readonly ClobOutput[], rejected: readonly { raw: string; reason: string }[]): Promise<void> {
    const { sink, reject, log } = this.#options;
    try {
      for (const { raw, reason } of rejected) await reject(raw, reason);
      // Each topic keeps the frame's order; topics are ordered apart on the log anyway.
      const books = outputs.flatMap((output) => (output.topic === 'book' ? [output.event] : []));
      const trades = outputs.flatMap((output) => (output.topic === 'trades' ? [output.event] : []));
      const markets = outputs.flatMap((output) => (output.topic === 'markets' ? [output.event] : []));
      if (markets.length > 0) await sink.publish('markets', markets);
      if (trades.length > 0) await sink.publish('trades', trades);
      if (books.length > 0) await sink.publish('book', books);
    } catch (failure) {
      log.error({ err: failure, events: outputs.length }, 'clob events not published');
    }
  }
}
