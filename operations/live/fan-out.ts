/**
 * The plane's fan-out: what the log brings (live-input.ts), in the order published, to the subscriptions
 * that want it, as StreamEvents. Watches are indexed by market (book, trades, resolution) and every
 * subscription by wallet (fills). A fill or resolution waits for its market's names (the read cache's,
 * operations/reads.ts: the plane keeps no cache of its own), and what comes after it waits behind it.
 * Provisional events are marked and remembered until their block ends (provisional.ts); a resumed ref
 * waits for its block's end (resume.ts).
 */
import type { Caller } from '../auth.ts';
import type { RouteContext } from '../context.ts';
import type { StoreSlot } from '../gates/store-slot.ts';
import type { LiveInput, MarkState } from '../../live-input.ts';
import { liveSubscriptions, recordFreshness } from '../../metrics/registry.ts';
import { readHeadBlockEnds } from '../../projections/head-blocks.ts';
import { NO_MARKET_NAMES, type MarketNames } from '../../projections/market-names.ts';
import { RESUMED_AT_MOST, type ServerMessage, type StreamEvent } from './messages.ts';
import { ProvisionalLedger } from './provisional.ts';
import { blockKeyOf, refBlockOf, ResumeBook } from './resume.ts';
import { Refusal, type Subscription } from './subscription.ts';

/** What a resume asks of the connection it answers. */
export interface ResumingConnection {
  readonly caller: Caller;
  readonly state: { closed: boolean };
  send(message: ServerMessage): void;
}

function addTo<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(value);
}

function removeFrom<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) index.delete(key);
}

export class FanOut {
  readonly #context: RouteContext;
  readonly #slotsInUse: (userId: string) => Promise<number>;
  /** Watches by market (book, trades, resolution) and subscriptions by wallet (fills). */
  readonly #byMarket = new Map<string, Set<Subscription>>();
  readonly #byWallet = new Map<string, Set<Subscription>>();
  /** Inputs waiting behind a market-name lookup: later inputs queue behind them, so the order holds. */
  readonly #backlog: Exclude<LiveInput, { kind: 'names' }>[] = [];
  /** Which subscriptions hold which provisional events, until each ends final or retracted. */
  readonly provisional = new ProvisionalLedger<Subscription>();
  /** Refs resumed by connections (resume.ts), waiting for their block's mark. */
  readonly #resumes = new ResumeBook<ResumingConnection>();
  #draining = false;

  constructor(context: RouteContext, slotsInUse: (userId: string) => Promise<number>) {
    this.#context = context;
    this.#slotsInUse = slotsInUse;
  }

  /** Whether the plane has a subscriber for a log message's key (a market or a wallet): the feed parses only those. */
  wantsMarket(market: string): boolean {
    return this.#byMarket.has(market);
  }

  wantsWallet(wallet: string): boolean {
    return this.#byWallet.has(wallet);
  }

  /** One input from the log, delivered in the order published. */
  publish(input: LiveInput): void {
    if (input.kind === 'names') {
      this.#context.reader.keepMarketNames(input.market, {
        title: input.title,
        outcome1: input.outcome1,
        outcome2: input.outcome2,
        title_start_ts: null,
      });
      return;
    }
    // Nobody subscribed (a resolution of any market, a fill the feed let through before an unfollow):
    // dropped before it could cost a name lookup. Every mark is taken (a provisional event may come after it).
    const wanted =
      input.kind === 'mark' ||
      (input.kind === 'fill' ? this.#byWallet.has(input.wallet) : this.#byMarket.has(input.market));
    if (!wanted) return;
    if (this.#backlog.length > 0 || this.#needsNames(input)) {
      this.#backlog.push(input);
      void this.#drain();
      return;
    }
    this.#deliver(input);
  }

  #needsNames(input: LiveInput): boolean {
    return (
      (input.kind === 'fill' || input.kind === 'resolution') &&
      this.#context.reader.marketNamesKept(input.market) === undefined
    );
  }

  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#backlog.length > 0) {
        const next = this.#backlog[0]!;
        if (next.kind !== 'mark' && this.#needsNames(next)) await this.marketNames(next.market).catch(() => null);
        this.#backlog.shift();
        this.#deliver(next);
      }
    } finally {
      this.#draining = false;
    }
  }

  /** A market's names through the read cache (kept from the log, or read), or null for a market without metadata. */
  async marketNames(market: string): Promise<MarketNames | null> {
    const names = (await this.#context.reader.marketNames([market])).get(market) ?? null;
    // The read cache keeps "no metadata" as its own value (while a feed follows the market).
    return names === null || names === NO_MARKET_NAMES ? null : names;
  }

  #deliver(input: Exclude<LiveInput, { kind: 'names' }>): void {
    if (input.kind === 'mark') {
      this.#mark(input);
      return;
    }
    const names = this.#context.reader.marketNamesKept(input.market) ?? undefined;
    switch (input.kind) {
      case 'book': {
        const { kind, market: _market, ...payload } = input;
        const event = { type: kind, ...payload } as StreamEvent;
        for (const subscription of this.#byMarket.get(input.market) ?? [])
          subscription.connection.deliver(subscription, event);
        return;
      }
      case 'trade': {
        const { ts, price, size_tokens, usd, token_side } = input;
        const event: StreamEvent = { type: 'trade', ts, price, size_tokens, usd, token_side };
        this.#fanOut(input, event, [...(this.#byMarket.get(input.market) ?? [])]);
        return;
      }
      case 'fill': {
        const { market, ts, side, price, token_side, size_tokens, usd } = input;
        const outcome = (token_side === 1 ? names?.outcome1 : names?.outcome2) ?? '';
        const event: StreamEvent = { type: 'fill', ts, side, price, token_side, outcome, size_tokens, usd };
        const targets = [...(this.#byWallet.get(input.wallet) ?? [])].filter(
          (subscription) => subscription.market === null || subscription.market === market,
        );
        this.#fanOut(input, event, targets);
        return;
      }
      case 'resolution': {
        const watches = [...(this.#byMarket.get(input.market) ?? [])];
        // A split payout (no single winner) has no level in the vocabulary: the market is not pinned.
        if (input.winnerTokenSide !== null) {
          const winner = (input.winnerTokenSide === 1 ? names?.outcome1 : names?.outcome2) ?? '';
          const event: StreamEvent = {
            type: 'resolution',
            ts: input.ts,
            winner,
            level: input.winnerTokenSide === 1 ? 1 : 0,
          };
          for (const subscription of watches) subscription.connection.deliver(subscription, event);
        }
        // Nothing happens in a resolved market any more: its watches end (and their recordings are saved).
        for (const subscription of watches) void subscription.connection.endWatch(subscription, 'resolved');
        return;
      }
    }
  }

  /**
   * A fill or print to its subscriptions: a provisional one marked and remembered until its block ends; a
   * final copy of one a subscription holds provisionally resolves it (`final`), one it holds is not sent again.
   */
  #fanOut(
    input: Extract<LiveInput, { kind: 'fill' | 'trade' }>,
    event: Extract<StreamEvent, { type: 'fill' | 'trade' }>,
    targets: readonly Subscription[],
  ): void {
    const { market, key, provisional } = input;
    if (provisional === undefined) {
      for (const subscription of targets) {
        const copy = key === undefined ? ({ kind: 'send' } as const) : this.provisional.finalCopy(key, subscription);
        if (copy.kind === 'send') subscription.connection.deliver(subscription, event, market);
        else if (copy.kind === 'resolve')
          subscription.connection.deliver(
            subscription,
            { type: 'final', ts: this.#context.now(), ref: copy.ref },
            market,
          );
      }
      return;
    }
    const verdict = this.provisional.admit(provisional);
    if (verdict === 'drop') return;
    const identity = key ?? provisional.ref;
    let sent = 0;
    for (const subscription of targets) {
      if (this.provisional.holds(identity, subscription)) continue;
      sent++;
      if (verdict === 'final') {
        this.provisional.deliveredFinal(identity, subscription);
        subscription.connection.deliver(subscription, event, market);
      } else {
        this.provisional.sentProvisional(provisional, identity, market, subscription);
        subscription.connection.deliver(subscription, { ...event, provisional: true, ref: provisional.ref }, market);
      }
    }
    if (sent > 0) recordFreshness('sent', verdict, provisional.blockTs);
  }

  /** A block above the final one ended: each subscription sent one of its events is told how. */
  #mark(input: Extract<LiveInput, { kind: 'mark' }>): void {
    const told = this.provisional.mark(input.block, input.hash, input.state);
    const ts = this.#context.now();
    for (const { subscription, ref, market } of told)
      if (!subscription.ended) subscription.connection.deliver(subscription, { type: input.state, ts, ref }, market);
    if (told.length > 0 && input.state === 'final') recordFreshness('sent', 'final', input.blockTs);
    for (const { connection, ref } of this.#resumes.end(blockKeyOf(input.block, input.hash)))
      connection.send({ type: 'resolved', ref, state: input.state, ts });
  }

  /**
   * Refs a connection resumes: each answered once (`resolved`), from the marks this plane saw, else from
   * the store's head blocks, else when its block's mark comes. A ref whose block the store does not hold
   * was never published by an archive of this deployment: retracted.
   */
  async resume(
    connection: ResumingConnection,
    id: string | undefined,
    refs: readonly string[],
    slot: StoreSlot,
  ): Promise<void> {
    const unique = [...new Set(refs)];
    if (this.#resumes.waiting(connection) + unique.length > RESUMED_AT_MOST)
      throw new Refusal(
        'too_many_refs',
        `A connection waits on at most ${RESUMED_AT_MOST} resumed refs at once: resume fewer, or wait for the ones pending to end.`,
      );
    const named = unique.map((ref) => ({ ref, key: refBlockOf(ref)!.key, block: refBlockOf(ref)!.block }));
    const unseen = new Set(named.filter(({ ref }) => this.provisional.endOf(ref) === undefined).map(({ ref }) => ref));
    /** Block key → its end in the store (null: open). */
    const stored = new Map<string, MarkState | null>();
    if (unseen.size > 0) {
      await slot.enter();
      const blocks = named.filter(({ ref }) => unseen.has(ref)).map(({ block }) => block);
      for (const end of await readHeadBlockEnds(this.#context.store, blocks))
        stored.set(blockKeyOf(end.block, end.hash), end.state);
    }
    const slotsInUse = await this.#slotsInUse(connection.caller.accountId);
    if (connection.state.closed) return;
    // From the ack to the last answer nothing awaits: a mark the plane takes meanwhile is either among the
    // ledger's ends already or finds its ref waiting.
    connection.send({ type: 'ack', ...(id === undefined ? {} : { id }), of: 'resume', slots_in_use: slotsInUse });
    const ts = this.#context.now();
    for (const { ref, key } of named) {
      const state =
        this.provisional.endOf(ref) ?? (stored.has(key) ? stored.get(key)! : unseen.has(ref) ? 'retracted' : null);
      if (state === null) this.#resumes.wait(connection, key, ref);
      else connection.send({ type: 'resolved', ref, state, ts });
    }
  }

  /** The connection is gone: its resumed refs wait no more. */
  dropResumes(connection: ResumingConnection): void {
    this.#resumes.drop(connection);
  }

  index(subscription: Subscription): void {
    liveSubscriptions.inc({ kind: subscription.kind });
    if (subscription.market !== null) addTo(this.#byMarket, subscription.market, subscription);
    addTo(this.#byWallet, subscription.wallet, subscription);
  }

  unindex(subscription: Subscription): void {
    subscription.ended = true;
    liveSubscriptions.dec({ kind: subscription.kind });
    if (subscription.market !== null) removeFrom(this.#byMarket, subscription.market, subscription);
    removeFrom(this.#byWallet, subscription.wallet, subscription);
  }
}
