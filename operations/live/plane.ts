/**
 * The live plane of one instance: its connections, their subscriptions, and the fan-out of what the log
 * brings (trades, book ticks, fills, resolutions) to them as StreamEvents. Transport-free: the WebSocket
 * route (api/routes/live.ts) hands each connection a `LiveTransport`; the role feeds `publish` from the
 * log (ingest/live-feed.ts).
 *
 * - watch (one live slot, slots.ts): the market's book and trades, the trader's fills in it, the
 *   resolution, and session start/stop around them;
 * - follow (no slot): the trader's fills in every market;
 * - popular (no slot): the shelf, now and every heartbeat.
 *
 * Commands of one connection run one after another (their acks come in order). Events of a subscription
 * carry a sequence number from 1 without gaps. What a connection costs is bounded (docs/live.md, Bounds):
 * every byte sent to it (events, replies, errors) counts against one bound of unsent bytes, and a client
 * that cannot keep up is told so and closed, its slots freed; its commands are rate-limited
 * (connection-bounds.ts); the commands that read the store draw on the user's lookup budget and the
 * store's in-flight limit, like REST calls (lookups.ts). Every heartbeat the plane pings its clients
 * (one that did not echo the last ping, which it can only learn by reading, is closed) and renews its
 * slots' leases; every
 * `credentialCheckSeconds` it checks each connection's credential again (a revoked key's streams close,
 * and so do those of a user whose plan changed).
 *
 * A watch ends on unwatch, when its connection closes, when its market resolves, or after the longest
 * watch (config live.maxWatchSeconds); a Pro or Max watch is recorded into the user's library meanwhile
 * (recording.ts): the tape holds exactly the events its client was sent.
 */
import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Caller } from '../auth.ts';
import type { RouteContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import type { Follow, SlotStore } from '../gates/slots.ts';
import type { StoreSlot } from '../gates/store-slot.ts';
import { CommandRate } from './connection-bounds.ts';
import { LiveRefusal, LookupBudget, lookupSlot } from './lookups.ts';
import { Recorder, type Recording, type RecordingRefusal, type RecordingSink } from './recording.ts';
import { ProvisionalLedger } from './provisional.ts';
import type { LiveInput, MarkState } from '../../live-input.ts';
import { blockKeyOf, refBlockOf, ResumeBook } from './resume.ts';
import { readHeadBlockEnds } from '../../projections/head-blocks.ts';
import { parseConditionId } from '../parameters.ts';
import { listPopularTraders } from '../popular.ts';
import { NO_MARKET_NAMES, type MarketNames } from '../../projections/market-names.ts';
import { tapeEventBytes } from '../../projections/tape-tally.ts';
import {
  liveCommands,
  liveConnections,
  liveDisconnects,
  liveEventsSent,
  liveSubscriptions,
  recordFreshness,
} from '../../metrics/registry.ts';
import {
  CLOSE_CODES,
  parseClientMessage,
  RESUMED_AT_MOST,
  type ClientMessage,
  type LiveErrorCode,
  type ServerMessage,
  type StreamEvent,
} from './messages.ts';

/** One client connection as the plane sees it. */
export interface LiveTransport {
  send(text: string): void;
  /** Bytes handed to `send` and not yet written to the network. */
  bufferedBytes(): number;
  /** A ping carrying `payload`; the client's pong echoes it (RFC 6455 §5.5.3). */
  ping(payload: string): void;
  close(code: number, reason: string): void;
}

/** A connection's credential checked again: its caller now, or the ApiError it is refused with now (failures not counted). */
export type CredentialCheck = () => Promise<Caller>;

/** A WebSocket frame's header, as counted in the transport's buffered bytes (RFC 6455 §5.2; the server does not mask). */
function frameBytes(payloadBytes: number): number {
  return payloadBytes + (payloadBytes < 126 ? 2 : payloadBytes < 65_536 ? 4 : 10);
}

export interface LivePlaneOptions {
  context: RouteContext;
  slots: SlotStore;
  /** The slots' clock in ms; tests pin it. Default: the slot store's own (Redis TIME). */
  slotsClockMs?: (() => number) | null;
  /** Where recordings of watches go (the role publishes them on the log); none: nothing is recorded. */
  recordings?: RecordingSink | null;
  /** The clock of the command rate and the lookup budget, ms; tests pin it. Default: Date.now. */
  clockMs?: () => number;
}

interface Subscription {
  kind: 'watch' | 'follow';
  wallet: string;
  /** The watched market (a follow has none). */
  market: string | null;
  seq: number;
  /** The slot's id in the store; null for a follow, or a watch admitted while the slot store was down. */
  slotId: string | null;
  /** A follow's id in the store's follow index (what the upstream fast path polls); null for a watch. */
  followId: string | null;
  connection: LiveConnection;
  /** The watch's recording while it runs (null: a follow, not recorded, or stopped). */
  recording: Recording | null;
  /** The tape the watch is (or was) recorded as. */
  tapeId: string | null;
  /** Ends the watch at its longest. */
  timer: NodeJS.Timeout | null;
  /** Unindexed: nothing more is sent to it (a provisional event's end included). */
  ended?: true;
}

const watchKey = (wallet: string, market: string) => `watch:${wallet}:${market}`;
/** A user's connections are counted and leased like slots, under a count of their own. */
const connectionsOf = (accountId: string) => `${accountId}:connections`;
const followKey = (wallet: string) => `follow:${wallet}`;

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

/** A refusal of a command, sent as an error message (the connection stays open). */
class Refusal extends Error {
  constructor(
    readonly code: LiveErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export class LivePlane {
  readonly instanceId = randomUUID();
  readonly #context: RouteContext;
  readonly #slots: SlotStore;
  readonly #slotsClockMs: (() => number) | null;
  readonly recorder: Recorder;
  readonly #connections = new Set<LiveConnection>();
  /** Watches by market (book, trades, resolution) and subscriptions by wallet (fills). */
  readonly #byMarket = new Map<string, Set<Subscription>>();
  readonly #byWallet = new Map<string, Set<Subscription>>();
  readonly #names: LRUCache<string, MarketNames>;
  /** Inputs waiting behind a market-name lookup: later inputs queue behind them, so the order holds. */
  readonly #backlog: Exclude<LiveInput, { kind: 'names' }>[] = [];
  /** Which subscriptions hold which provisional events, until each ends final or retracted. */
  readonly provisional = new ProvisionalLedger<Subscription>();
  /** Refs resumed by connections (resume.ts), waiting for their block's mark. */
  readonly #resumes = new ResumeBook<LiveConnection>();
  #draining = false;
  #serial = 0;
  readonly #heartbeat: NodeJS.Timeout;
  readonly #credentialChecks: NodeJS.Timeout;
  #checkingCredentials = false;
  #closed = false;
  #lastSlotFailureLog = 0;
  readonly clockMs: () => number;
  /** Every user's store lookups through the plane (lookups.ts). */
  readonly lookups: LookupBudget;

  constructor(options: LivePlaneOptions) {
    this.#context = options.context;
    this.#slots = options.slots;
    this.#slotsClockMs = options.slotsClockMs ?? null;
    this.recorder = new Recorder(
      options.recordings ?? null,
      options.context.store,
      options.context.config.live.recording,
      options.context.now,
      options.context.log,
    );
    this.#names = new LRUCache({ max: options.context.config.live.marketNamesCached });
    this.clockMs = options.clockMs ?? Date.now;
    this.lookups = new LookupBudget(this.clockMs);
    this.#heartbeat = setInterval(() => void this.#beat(), options.context.config.live.heartbeatSeconds * 1000);
    this.#heartbeat.unref();
    this.#credentialChecks = setInterval(
      () => void this.checkCredentials(),
      options.context.config.live.credentialCheckSeconds * 1000,
    );
    this.#credentialChecks.unref();
  }

  get config() {
    return this.#context.config.live;
  }

  get slots(): SlotStore {
    return this.#slots;
  }

  /** The store's clock for slots: null is its own. */
  slotsNow(): number | null {
    return this.#slotsClockMs ? this.#slotsClockMs() : null;
  }

  /** Slots a user holds now, on every instance (what `/me` reports); 0 when the slot store cannot answer. */
  async slotsInUse(userId: string): Promise<number> {
    try {
      return await this.#slots.inUse(userId, this.slotsNow());
    } catch (failure) {
      this.slotStoreFailed(failure, 'inUse');
      return 0;
    }
  }

  /** A connection authenticated as `caller`; `recheck` checks its credential again (none: never rechecked). */
  async connect(
    caller: Caller,
    transport: LiveTransport,
    recheck: CredentialCheck | null = null,
  ): Promise<LiveConnection> {
    const connection = new LiveConnection(this, this.#context, caller, transport, ++this.#serial, recheck);
    if (this.#closed) {
      connection.fail('shutting_down', 'The server is shutting down: connect again.', CLOSE_CODES.shuttingDown);
      return connection;
    }
    const cap = this.config.maxConnectionsPerUser;
    const connectionSlot = `${this.instanceId}:${connection.serial}`;
    try {
      const verdict = await this.#slots.acquire({
        userId: connectionsOf(caller.accountId),
        slotId: connectionSlot,
        cap,
        leaseMs: this.config.slotLeaseSeconds * 1000,
        nowMs: this.slotsNow(),
      });
      if (verdict.kind === 'full') {
        await connection.fail(
          'too_many_connections',
          `A user holds at most ${cap} live connections at once (on every key and instance): close one first. One connection carries many subscriptions.`,
          CLOSE_CODES.tooMany,
        );
        return connection;
      }
      connection.connectionSlot = connectionSlot;
    } catch (failure) {
      this.slotStoreFailed(failure, 'acquire');
    }
    this.#connections.add(connection);
    liveConnections.inc();
    connection.send({
      type: 'ready',
      protocol: this.config.protocol,
      plan: caller.limits.name,
      live_slots: caller.limits.liveSlots,
      slots_in_use: await this.slotsInUse(caller.accountId),
      heartbeat_s: this.config.heartbeatSeconds,
    });
    return connection;
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
      this.#names.set(input.market, {
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
    return (input.kind === 'fill' || input.kind === 'resolution') && !this.#names.has(input.market);
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

  /** A market's names (kept from the log, else the API's cached read), or null for a market without metadata. */
  async marketNames(market: string): Promise<MarketNames | null> {
    const cached = this.#names.get(market);
    if (cached) return cached;
    const names = (await this.#context.reader.marketNames([market])).get(market) ?? null;
    // The read cache keeps "no metadata" as its own value (while a feed follows the market).
    if (names === null || names === NO_MARKET_NAMES) return null;
    this.#names.set(market, names);
    return names;
  }

  #deliver(input: Exclude<LiveInput, { kind: 'names' }>): void {
    if (input.kind === 'mark') {
      this.#mark(input);
      return;
    }
    const names = this.#names.get(input.market);
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
    connection: LiveConnection,
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
    const slotsInUse = await this.slotsInUse(connection.caller.accountId);
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
  dropResumes(connection: LiveConnection): void {
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

  /** The connection is gone (`reason`: client, or the error it was closed with): it holds nothing any more. */
  async forget(connection: LiveConnection, reason: string): Promise<void> {
    if (this.#connections.delete(connection)) liveConnections.dec();
    liveDisconnects.inc({ reason });
    if (connection.connectionSlot === null) return;
    try {
      await this.#slots.release(connectionsOf(connection.caller.accountId), connection.connectionSlot);
    } catch (failure) {
      this.slotStoreFailed(failure, 'release');
    }
  }

  newSlotId(connection: LiveConnection, wallet: string, market: string): string {
    return `${this.instanceId}:${connection.serial}:${wallet}:${market}`;
  }

  slotStoreFailed(failure: unknown, operation: string): void {
    const now = Date.now();
    if (now - this.#lastSlotFailureLog < 5000) return;
    this.#lastSlotFailureLog = now;
    this.#context.log.error(
      { err: failure, operation, store: this.#slots.kind },
      'slot store unavailable: watches are not metered',
    );
  }

  /** Every heartbeat: ping the clients (closing the silent), renew the slots' leases, refresh the shelf. */
  async #beat(): Promise<void> {
    const held = new Map<string, string[]>();
    const follows: Follow[] = [];
    let shelf: ServerMessage | null = null;
    for (const connection of this.#connections) {
      if (!connection.heartbeat()) continue;
      if (connection.connectionSlot !== null) {
        const ids = held.get(connectionsOf(connection.caller.accountId)) ?? [];
        ids.push(connection.connectionSlot);
        held.set(connectionsOf(connection.caller.accountId), ids);
      }
      for (const slotId of connection.slotIds()) {
        const ids = held.get(connection.caller.accountId) ?? [];
        ids.push(slotId);
        held.set(connection.caller.accountId, ids);
      }
      follows.push(...connection.follows());
      if (connection.popular) {
        shelf ??= await this.popularShelf().catch(() => null);
        if (shelf) connection.send(shelf);
      }
    }
    const leaseMs = this.config.slotLeaseSeconds * 1000;
    await Promise.all([
      this.putFollows(follows),
      ...[...held].map(async ([userId, ids]) => {
        try {
          const lost = await this.#slots.renew(userId, ids, leaseMs, this.slotsNow());
          if (lost.length > 0)
            this.#context.log.warn({ userId, lost: lost.length }, 'live slots expired before their renewal');
        } catch (failure) {
          this.slotStoreFailed(failure, 'renew');
        }
      }),
    ]);
  }

  /** Follows into the store's index under a slot's lease (added, renewed, or back after the store was down). */
  async putFollows(follows: readonly Follow[]): Promise<void> {
    if (follows.length === 0) return;
    try {
      await this.#slots.putFollows(follows, this.config.slotLeaseSeconds * 1000, this.slotsNow());
    } catch (failure) {
      this.slotStoreFailed(failure, 'putFollows');
    }
  }

  async popularShelf(): Promise<ServerMessage> {
    return { type: 'popular', ...(await listPopularTraders(this.#context)) };
  }

  /**
   * Every connection's credential checked again (through the key cache: a revocation shows within its
   * window): a refused one is closed with the refusal, and one whose user now has another plan is closed so
   * that the client connects again under the new plan's slots and budgets.
   */
  async checkCredentials(): Promise<void> {
    if (this.#checkingCredentials) return;
    this.#checkingCredentials = true;
    try {
      await Promise.all([...this.#connections].map((connection) => connection.checkCredential()));
    } finally {
      this.#checkingCredentials = false;
    }
  }

  /** Tells every client the server stops, closes them, and gives their slots back. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    clearInterval(this.#credentialChecks);
    await Promise.all(
      [...this.#connections].map((connection) =>
        connection.fail('shutting_down', 'The server is shutting down: connect again.', CLOSE_CODES.shuttingDown),
      ),
    );
  }
}

export class LiveConnection {
  readonly #subscriptions = new Map<string, Subscription>();
  /** Commands run one after another. */
  #commands: Promise<void> = Promise.resolve();
  /** Commands received and not finished yet (bounded: live.commands.maxPending). */
  #pending = 0;
  readonly #rate: CommandRate;
  /** The payload of the last ping, which only a client that read it can echo (null: answered). */
  #unanswered: string | null = null;
  #closed = false;
  /** Why the server closed the connection (an error code); null while open, or when the client left. */
  #closedWith: LiveErrorCode | null = null;
  #released = false;
  /** This connection's place in its user's count of connections (null: not counted, the store was down). */
  connectionSlot: string | null = null;
  popular = false;

  constructor(
    private readonly plane: LivePlane,
    private readonly context: RouteContext,
    readonly caller: Caller,
    private readonly transport: LiveTransport,
    readonly serial: number,
    private readonly recheck: CredentialCheck | null = null,
  ) {
    this.#rate = new CommandRate(plane.config.commands, plane.clockMs);
  }

  /** Whether the connection was closed, and with which error (null: by the client, or still open). */
  get state(): { closed: boolean; closedWith: LiveErrorCode | null; pendingCommands: number } {
    return { closed: this.#closed, closedWith: this.#closedWith, pendingCommands: this.#pending };
  }

  send(message: ServerMessage): void {
    this.#write(JSON.stringify(message));
  }

  /**
   * Every byte sent goes through here, under one bound: a message that would take the unsent bytes past
   * `queueBytes` is not sent, and the connection is closed as too slow (its error is the one message that
   * may pass the bound). False when it was not sent.
   */
  #write(text: string): boolean {
    if (this.#closed) return false;
    const { queueBytes } = this.plane.config;
    const bytes = frameBytes(Buffer.byteLength(text));
    if (this.transport.bufferedBytes() + bytes > queueBytes) {
      void this.fail(
        'too_slow',
        `This connection fell more than ${queueBytes} bytes behind what it was sent (events, replies and errors); it is closed and its slots are free. Read faster, send less, or subscribe to less.`,
        CLOSE_CODES.tooSlow,
      );
      return false;
    }
    this.transport.send(text);
    return true;
  }

  /** A frame from the client: counted against the command rate, then run in its turn. */
  receive(text: string): void {
    if (this.#closed) return;
    const { commands } = this.plane.config;
    const verdict = this.#pending >= commands.maxPending ? this.#rate.refuse() : this.#rate.take();
    if (verdict !== 'admitted') {
      liveCommands.inc({ command: 'unknown', outcome: 'rate_limited' });
      const message = `A connection may send ${commands.perSecond} commands a second (bursts of ${commands.burst}, at most ${commands.maxPending} waiting): this one was not run. ${commands.refusalsBeforeClose} refused in a row close the connection.`;
      if (verdict === 'close')
        void this.fail('rate_limited', `${message} Closed: the commands kept coming.`, CLOSE_CODES.tooMany);
      else this.#error('rate_limited', message, undefined, { retry_after: 1 });
      return;
    }
    const parsed = parseClientMessage(text);
    if (!parsed.ok) {
      liveCommands.inc({ command: 'unknown', outcome: 'bad_message' });
      this.#error('bad_message', `Not a command of the live plane (${parsed.reason}). See docs/live.md.`, parsed.id);
      return;
    }
    this.#pending += 1;
    this.#commands = this.#commands.then(async () => {
      try {
        await this.#run(parsed.message);
      } finally {
        this.#pending -= 1;
      }
    });
  }

  /**
   * A pong shows the client reads only when it echoes the last ping's payload, which it learns by reading
   * the ping (after everything sent before it). Nothing else does: a client may send frames, pongs of its
   * own included, without reading a byte of what it is sent.
   */
  pong(payload: string): void {
    if (payload === this.#unanswered) this.#unanswered = null;
  }

  /**
   * Pings the client; false (and the connection closed) when it did not answer the last ping: it read
   * nothing for a heartbeat, whatever it sent meanwhile.
   */
  heartbeat(): boolean {
    if (this.#closed) return false;
    if (this.#unanswered !== null) {
      void this.fail(
        'no_pong',
        `No answer to the last ping within ${this.plane.config.heartbeatSeconds} s (a client that does not read what it is sent never sees it): the connection is closed and its slots are free.`,
        CLOSE_CODES.silent,
      );
      return false;
    }
    this.#unanswered = randomUUID();
    this.transport.ping(this.#unanswered);
    return true;
  }

  /** The credential checked again (LivePlane.checkCredentials): closed when refused now, or when the plan changed. */
  async checkCredential(): Promise<void> {
    if (this.#closed || this.recheck === null) return;
    let now: Caller;
    try {
      now = await this.recheck();
    } catch (failure) {
      if (!(failure instanceof ApiError) || failure.status >= 500) {
        // The store cannot say now: the connection keeps what it was admitted with until it can.
        this.context.log.warn({ err: failure }, 'live credential check failed');
        return;
      }
      if (failure.code === 'insufficient_scope')
        return this.fail('insufficient_scope', failure.message, CLOSE_CODES.insufficientScope);
      return this.fail(
        'unauthorized',
        'The credential of this connection is no longer valid (a revoked key, or an account that is gone): it is closed and its slots are free.',
        CLOSE_CODES.unauthorized,
      );
    }
    if (now.accountId !== this.caller.accountId || now.planId !== this.caller.planId)
      await this.fail(
        'plan_changed',
        `Your plan is now ${now.limits.name}: connect again to stream under its slots and limits.`,
        CLOSE_CODES.planChanged,
      );
  }

  follows(): Follow[] {
    return [...this.#subscriptions.values()].flatMap((subscription) =>
      subscription.followId === null ? [] : [{ id: subscription.followId, wallet: subscription.wallet }],
    );
  }

  slotIds(): string[] {
    return [...this.#subscriptions.values()].flatMap((subscription) =>
      subscription.slotId === null ? [] : [subscription.slotId],
    );
  }

  /** One event of a subscription: numbered, and sent unless the client is too far behind. */
  deliver(subscription: Subscription, event: StreamEvent, market = subscription.market ?? ''): void {
    if (this.#closed) return;
    subscription.seq += 1;
    const text = JSON.stringify({
      type: 'event',
      market,
      wallet: subscription.wallet,
      seq: subscription.seq,
      event,
    } satisfies ServerMessage);
    if (!this.#write(text)) return;
    liveEventsSent.inc({ type: event.type });
    if (subscription.recording) this.#record(subscription, subscription.recording, event);
  }

  /**
   * An event sent to the client goes into its watch's recording while the library has room for it and the
   * log keeps up; otherwise the recording stops before it and the client is told (the watch goes on).
   */
  #record(subscription: Subscription, recording: Recording, event: StreamEvent): void {
    const { libraryBytes } = this.caller.limits;
    const bytes = tapeEventBytes(event);
    const verdict = this.plane.recorder.admits(recording, bytes, libraryBytes);
    if (verdict === 'admitted') {
      recording.add(event, bytes);
      return;
    }
    subscription.recording = null;
    const throughSeq = subscription.seq - 1;
    const stopped = {
      type: 'recording',
      market: subscription.market ?? '',
      wallet: subscription.wallet,
      tape_id: recording.tapeId,
      state: 'stopped',
      through_seq: throughSeq,
    } as const;
    const saved = this.plane.recorder.end(recording);
    if (verdict === 'unavailable') {
      // Told at once: the tape is saved when the log takes it.
      this.send({
        ...stopped,
        reason: 'unavailable',
        message: `The server cannot save recordings as fast as they come at the moment: this watch's recording stopped before event ${throughSeq + 1} (the tape keeps the events before it) and the watch goes on unrecorded. Watch again later for a new tape.`,
      });
      return;
    }
    // Told once the tape is saved, so that /me counts it (events sent meanwhile carry on; through_seq says where the tape ends).
    void saved.then(() =>
      this.send({
        ...stopped,
        reason: 'library_full',
        message: `Your library is full (${libraryBytes.toLocaleString('en-US')} bytes on ${this.caller.limits.name}): this watch's recording stopped before event ${throughSeq + 1} and the watch goes on unrecorded. Delete tapes in the dashboard or upgrade for more storage.`,
      }),
    );
  }

  /** The server ends a watch (its market resolved, or it reached its longest): a session stop, then `ended`. */
  async endWatch(subscription: Subscription, reason: 'resolved' | 'max_duration'): Promise<void> {
    const key = watchKey(subscription.wallet, subscription.market ?? '');
    if (this.#closed || this.#subscriptions.get(key) !== subscription) return;
    this.deliver(subscription, { type: 'session', ts: this.context.now(), state: 'stop' });
    // Closed as too slow by that very event: the close released everything.
    if (this.#subscriptions.get(key) !== subscription) return;
    this.#subscriptions.delete(key);
    await this.#end(subscription);
    this.send({
      type: 'ended',
      market: subscription.market ?? '',
      wallet: subscription.wallet,
      reason,
      ...(subscription.tapeId === null ? {} : { tape_id: subscription.tapeId }),
      slots_in_use: await this.plane.slotsInUse(this.caller.accountId),
    });
  }

  /** Sends the reason, closes the connection, and gives its slots back. */
  async fail(code: LiveErrorCode, message: string, closeCode: number): Promise<void> {
    if (this.#closed) return;
    // Past every bound: the reason is a few hundred bytes, then the connection closes.
    this.#closed = true;
    this.transport.send(JSON.stringify({ type: 'error', code, message } satisfies ServerMessage));
    this.#closedWith = code;
    this.transport.close(closeCode, code);
    await this.closed();
  }

  /** The transport closed (either side): everything this connection held is released. */
  async closed(): Promise<void> {
    this.#closed = true;
    if (this.#released) return;
    this.#released = true;
    this.plane.dropResumes(this);
    const subscriptions = [...this.#subscriptions.values()];
    this.#subscriptions.clear();
    await Promise.all([
      this.plane.forget(this, this.#closedWith ?? 'client'),
      ...subscriptions.map((subscription) => this.#end(subscription)),
    ]);
  }

  async #end(subscription: Subscription): Promise<void> {
    this.plane.unindex(subscription);
    if (subscription.timer !== null) clearTimeout(subscription.timer);
    const { recording } = subscription;
    subscription.recording = null;
    await Promise.all([recording ? this.plane.recorder.end(recording) : undefined, this.#releaseSlot(subscription)]);
  }

  async #releaseSlot(subscription: Subscription): Promise<void> {
    try {
      if (subscription.slotId !== null) await this.plane.slots.release(this.caller.accountId, subscription.slotId);
      if (subscription.followId !== null) await this.plane.slots.removeFollow(subscription.followId);
    } catch (failure) {
      this.plane.slotStoreFailed(failure, 'release');
    }
  }

  #error(code: LiveErrorCode, message: string, id: string | undefined, extra: Record<string, unknown> = {}): void {
    this.send({ type: 'error', ...(id === undefined ? {} : { id }), code, message, ...extra });
  }

  /** One command, its store reads metered like a REST call's (lookups.ts). */
  async #run(message: ClientMessage): Promise<void> {
    if (this.#closed) return;
    const slot = lookupSlot(this.context.inFlight, this.plane.lookups, this.caller);
    try {
      const outcome = await slot.run(() => this.#outcomeOf(message, slot));
      liveCommands.inc({ command: message.type, outcome });
    } finally {
      slot.release();
    }
  }

  /** Runs one command; `ok`, or the code of the error it was answered with. */
  async #outcomeOf(message: ClientMessage, slot: StoreSlot): Promise<string> {
    try {
      switch (message.type) {
        case 'ping':
          this.send({ type: 'pong', ...(message.id === undefined ? {} : { id: message.id }), ts: this.context.now() });
          break;
        case 'watch':
          await this.#watch(message, slot);
          break;
        case 'unwatch':
          await this.#unwatch(message);
          break;
        case 'follow':
          await this.#follow(message);
          break;
        case 'unfollow':
          await this.#unfollow(message);
          break;
        case 'popular':
          this.popular = true;
          await this.#ack(message.id, 'popular', {});
          this.send(await this.plane.popularShelf());
          break;
        case 'unpopular':
          this.popular = false;
          await this.#ack(message.id, 'unpopular', {});
          break;
        case 'resume':
          await this.plane.resume(this, message.id, message.refs, slot);
          break;
      }
      return 'ok';
    } catch (failure) {
      if (failure instanceof Refusal || failure instanceof LiveRefusal) {
        this.#error(failure.code, failure.message, message.id, failure.extra);
        return failure.code;
      }
      if (failure instanceof ApiError && failure.status < 500) {
        this.#error(failure.code as LiveErrorCode, failure.message, message.id);
        return failure.code;
      }
      this.context.log.error({ err: failure, command: message.type }, 'live command failed');
      this.#error('internal', 'Something went wrong on our side. Try again; if it persists, report it.', message.id);
      return 'internal';
    }
  }

  async #ack(
    id: string | undefined,
    of: Extract<ServerMessage, { type: 'ack' }>['of'],
    about: {
      trader?: { wallet: string; name: string };
      market?: string;
      recording?: Extract<ServerMessage, { type: 'ack' }>['recording'];
    },
  ): Promise<void> {
    const slotsInUse = await this.plane.slotsInUse(this.caller.accountId);
    this.send({ type: 'ack', ...(id === undefined ? {} : { id }), of, ...about, slots_in_use: slotsInUse });
  }

  #roomForOneMore(): void {
    const max = this.plane.config.maxSubscriptions;
    if (this.#subscriptions.size >= max)
      throw new Refusal(
        'too_many_subscriptions',
        `A connection holds at most ${max} subscriptions: end one (unwatch, unfollow) or open another connection.`,
      );
  }

  async #watch(message: Extract<ClientMessage, { type: 'watch' }>, slot: StoreSlot): Promise<void> {
    const market = parseConditionId(message.market);
    const trader = await this.context.resolveTrader(message.trader);
    const key = watchKey(trader.wallet, market);
    if (this.#subscriptions.has(key)) return this.#ack(message.id, 'watch', { trader, market });
    this.#roomForOneMore();
    // A new watch's first fetch (the library's figure of a recorded plan) reads the store: one lookup,
    // drawn before a slot is taken.
    if (this.caller.limits.recordsLive) await slot.enter();
    if (!(await this.plane.marketNames(market)))
      throw new Refusal(
        'unknown_market',
        `Market ${market} is unknown. Market ids come from the markets list or top-markets.`,
      );
    const { limits } = this.caller;
    const slotId = this.plane.newSlotId(this, trader.wallet, market);
    let held: string | null = slotId;
    try {
      const verdict = await this.plane.slots.acquire({
        userId: this.caller.accountId,
        slotId,
        cap: limits.liveSlots,
        leaseMs: this.plane.config.slotLeaseSeconds * 1000,
        nowMs: this.plane.slotsNow(),
        trader: trader.wallet,
        market,
      });
      if (verdict.kind === 'full')
        throw new Refusal(
          'no_free_slot',
          `${limits.name} watches ${limits.liveSlots} trader-market${limits.liveSlots === 1 ? '' : 's'} at once and all are in use (on this or another connection or key). Unwatch one first; following a trader's fills needs no slot.`,
          { slots_in_use: verdict.inUse, live_slots: limits.liveSlots },
        );
    } catch (failure) {
      if (failure instanceof Refusal) throw failure;
      this.plane.slotStoreFailed(failure, 'acquire');
      held = null;
    }
    const recorded = this.#closed
      ? null
      : await this.plane.recorder.start(
          {
            accountId: this.caller.accountId,
            wallet: trader.wallet,
            name: trader.name,
            market,
            title: (await this.plane.marketNames(market).catch(() => null))?.title ?? '',
          },
          limits,
        );
    const recording = recorded && 'recording' in recorded ? recorded.recording : null;
    if (this.#closed) {
      // The connection went away while the slot was taken: give it back at once (the recording holds nothing).
      if (recording) await this.plane.recorder.end(recording);
      if (held !== null) await this.plane.slots.release(this.caller.accountId, held).catch(() => undefined);
      return;
    }
    const subscription: Subscription = {
      kind: 'watch',
      wallet: trader.wallet,
      market,
      seq: 0,
      slotId: held,
      followId: null,
      connection: this,
      recording,
      tapeId: recording?.tapeId ?? null,
      timer: null,
    };
    subscription.timer = setTimeout(
      () => void this.endWatch(subscription, 'max_duration'),
      this.plane.config.maxWatchSeconds * 1000,
    );
    subscription.timer.unref();
    this.#subscriptions.set(key, subscription);
    this.plane.index(subscription);
    const refusal = recorded && 'refused' in recorded ? recorded.refused : 'unavailable';
    await this.#ack(message.id, 'watch', {
      trader,
      market,
      recording: recording
        ? { state: 'on', tape_id: recording.tapeId }
        : { state: 'off', reason: refusal, message: this.#notRecorded(refusal) },
    });
    this.deliver(subscription, { type: 'session', ts: this.context.now(), state: 'start' });
  }

  #notRecorded(reason: RecordingRefusal): string {
    const { limits } = this.caller;
    switch (reason) {
      case 'plan':
        return `${limits.name} watches are not recorded; Pro and Max save every watch into their library.`;
      case 'library_full':
        return `Your library is full (${limits.libraryBytes.toLocaleString('en-US')} bytes on ${limits.name}): this watch is not recorded. Delete tapes in the dashboard or upgrade for more storage.`;
      case 'unavailable':
        return 'This server records no watches at the moment; the watch itself is served.';
    }
  }

  async #unwatch(message: Extract<ClientMessage, { type: 'unwatch' }>): Promise<void> {
    const market = parseConditionId(message.market);
    const trader = await this.context.resolveTrader(message.trader);
    const key = watchKey(trader.wallet, market);
    const subscription = this.#subscriptions.get(key);
    if (!subscription)
      throw new Refusal('not_subscribed', `This connection does not watch ${trader.wallet} in ${market}.`);
    this.deliver(subscription, { type: 'session', ts: this.context.now(), state: 'stop' });
    // Closed as too slow by that very event: the close released everything.
    if (this.#subscriptions.get(key) !== subscription) return;
    this.#subscriptions.delete(key);
    await this.#end(subscription);
    await this.#ack(message.id, 'unwatch', { trader, market });
  }

  async #follow(message: Extract<ClientMessage, { type: 'follow' }>): Promise<void> {
    const trader = await this.context.resolveTrader(message.trader);
    const key = followKey(trader.wallet);
    if (!this.#subscriptions.has(key)) {
      this.#roomForOneMore();
      const subscription: Subscription = {
        kind: 'follow',
        wallet: trader.wallet,
        market: null,
        seq: 0,
        slotId: null,
        followId: `${this.plane.instanceId}:${this.serial}:${trader.wallet}`,
        connection: this,
        recording: null,
        tapeId: null,
        timer: null,
      };
      this.#subscriptions.set(key, subscription);
      this.plane.index(subscription);
      // Before the ack: once followed, the upstream fast path polls the wallet's activity.
      await this.plane.putFollows([{ id: subscription.followId!, wallet: trader.wallet }]);
    }
    await this.#ack(message.id, 'follow', { trader });
  }

  async #unfollow(message: Extract<ClientMessage, { type: 'unfollow' }>): Promise<void> {
    const trader = await this.context.resolveTrader(message.trader);
    const key = followKey(trader.wallet);
    const subscription = this.#subscriptions.get(key);
    if (!subscription) throw new Refusal('not_subscribed', `This connection does not follow ${trader.wallet}.`);
    this.#subscriptions.delete(key);
    await this.#end(subscription);
    await this.#ack(message.id, 'unfollow', { trader });
  }
}
