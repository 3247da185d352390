/**
 * One live connection: every byte sent to it under one bound, its commands rate-limited and run one after
 * another (their acks in order), the pings it must echo, its credential checked again, and its
 * subscriptions (a watch holds a slot and may be recorded; a follow holds a place in the follow index).
 * Closing it, by either side, gives back everything it held. The plane it belongs to is its host.
 */
import { randomUUID } from 'node:crypto';
import type { Caller } from '../auth.ts';
import type { RouteContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import type { Follow, SlotStore } from '../gates/slots.ts';
import type { StoreSlot } from '../gates/store-slot.ts';
import { parseConditionId } from '../parameters.ts';
import { liveCommands, liveEventsSent } from '../../metrics/registry.ts';
import type { MarketNames } from '../../projections/market-names.ts';
import { tapeEventBytes } from '../../projections/tape-tally.ts';
import { CommandRate } from './connection-bounds.ts';
import { LiveRefusal, type LookupBudget, lookupSlot } from './lookups.ts';
import {
  CLOSE_CODES,
  parseClientMessage,
  type ClientMessage,
  type LiveErrorCode,
  type ServerMessage,
  type StreamEvent,
} from './messages.ts';
import type { Recorder, Recording, RecordingRefusal } from './recording.ts';
import {
  followKey,
  frameBytes,
  Refusal,
  watchKey,
  type CredentialCheck,
  type LiveTransport,
  type Subscription,
} from './subscription.ts';

/** What a connection asks of its plane (LivePlane). */
export interface ConnectionHost {
  readonly instanceId: string;
  readonly config: RouteContext['config']['live'];
  readonly clockMs: () => number;
  readonly recorder: Recorder;
  readonly lookups: LookupBudget;
  readonly slots: SlotStore;
  slotsNow(): number | null;
  slotsInUse(userId: string): Promise<number>;
  slotStoreFailed(failure: unknown, operation: string): void;
  newSlotId(connection: LiveConnection, wallet: string, market: string): string;
  marketNames(market: string): Promise<MarketNames | null>;
  popularShelf(): Promise<ServerMessage>;
  putFollows(follows: readonly Follow[]): Promise<void>;
  index(subscription: Subscription): void;
  unindex(subscription: Subscription): void;
  resume(connection: LiveConnection, id: string | undefined, refs: readonly string[], slot: StoreSlot): Promise<void>;
  dropResumes(connection: LiveConnection): void;
  /** The connection is gone (`reason`: client, or the error it was closed with). */
  forget(connection: LiveConnection, reason: string): Promise<void>;
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
    private readonly plane: ConnectionHost,
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
