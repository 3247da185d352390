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
import type { Caller } from '../auth.ts';
import type { RouteContext } from '../context.ts';
import type { Follow, SlotStore } from '../gates/slots.ts';
import type { StoreSlot } from '../gates/store-slot.ts';
import { LookupBudget } from './lookups.ts';
import { Recorder, type RecordingSink } from './recording.ts';
import type { LiveInput } from '../../live-input.ts';
import { listPopularTraders } from '../popular.ts';
import type { MarketNames } from '../../projections/market-names.ts';
import { liveConnections, liveDisconnects } from '../../metrics/registry.ts';
import { CLOSE_CODES, type ServerMessage } from './messages.ts';
import { LiveConnection, type ConnectionHost } from './connection.ts';
import { FanOut } from './fan-out.ts';
import type { CredentialCheck, LiveTransport, Subscription } from './subscription.ts';

export type { LiveConnection } from './connection.ts';
export type { LiveTransport } from './subscription.ts';

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

/** A user's connections are counted and leased like slots, under a count of their own. */
const connectionsOf = (accountId: string) => `${accountId}:connections`;

export class LivePlane implements ConnectionHost {
  readonly instanceId = randomUUID();
  readonly #context: RouteContext;
  readonly #slots: SlotStore;
  readonly #slotsClockMs: (() => number) | null;
  readonly recorder: Recorder;
  readonly #connections = new Set<LiveConnection>();
  /** What the log brings, to the subscriptions that want it (fan-out.ts). */
  readonly #fanOut: FanOut;
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
    this.#fanOut = new FanOut(options.context, (userId) => this.slotsInUse(userId));
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
    return this.#fanOut.wantsMarket(market);
  }

  wantsWallet(wallet: string): boolean {
    return this.#fanOut.wantsWallet(wallet);
  }

  /** One input from the log, delivered in the order published. */
  publish(input: LiveInput): void {
    this.#fanOut.publish(input);
  }

  marketNames(market: string): Promise<MarketNames | null> {
    return this.#fanOut.marketNames(market);
  }

  resume(connection: LiveConnection, id: string | undefined, refs: readonly string[], slot: StoreSlot): Promise<void> {
    return this.#fanOut.resume(connection, id, refs, slot);
  }

  dropResumes(connection: LiveConnection): void {
    this.#fanOut.dropResumes(connection);
  }

  index(subscription: Subscription): void {
    this.#fanOut.index(subscription);
  }

  unindex(subscription: Subscription): void {
    this.#fanOut.unindex(subscription);
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
