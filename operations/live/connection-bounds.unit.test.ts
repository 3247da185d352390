/**
 * The bounds of one live connection (docs/live.md, Bounds), driven in process through a fake socket that
 * reads (or not) what the plane sends it, on fake timers: the command rate; the store lookups of commands
 * (the user's budget, the in-flight limit, the read caches); and a fast-check property over random client
 * behaviour — send rates, reads paused and resumed, frame sizes, commands, events — in which the bytes
 * the server holds for the connection never pass the bound and every connection either keeps up (answers
 * each ping within a heartbeat) or is closed with a documented reason.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseConfig, type Config } from '../../config.ts';
import { createLogger } from '../../log.ts';
import type { QueryParams, Store } from '../../projections/store.ts';
import type { Caller } from '../auth.ts';
import { resolveTrader, type RouteContext } from '../context.ts';
import { Cursors } from '../cursors.ts';
import type { Budget } from '../gates/budget.ts';
import { InFlightLimiter, type Slot } from '../gates/in-flight.ts';
import { MemorySlots } from '../gates/slots.ts';
import { storeWithSlots } from '../gates/store-slot.ts';
import { ReadCache } from '../read-cache.ts';
import { Reader } from '../reads.ts';
import { CommandRate } from './connection-bounds.ts';
import { LookupBudget } from './lookups.ts';
import { CLOSE_CODES, type ServerMessage } from './messages.ts';
import { LivePlane, type LiveConnection, type LiveTransport } from './plane.ts';

const QUEUE_BYTES = 16 * 1024;
const HEARTBEAT_MS = 1000;
const config = parseConfig({}, { live: { heartbeatSeconds: HEARTBEAT_MS / 1000, queueBytes: QUEUE_BYTES } });
/** The most an error message (the reason a connection closes) takes beyond the bound. */
const ERROR_BYTES = 1024;
const WALLETS = [1, 2, 3].map((index) => `0x${String(index).repeat(40)}`);
const MARKET = `0x${'ab'.repeat(32)}`;

const callerOf = (
  accountId: string,
  plan: 'basic' | 'pro' = 'basic',
  plans: Config['plans'] = config.plans,
): Caller => ({
  accountId,
  keyId: `k-${accountId}`,
  label: 'unit',
  last4: 'abcd',
  planId: plan,
  limits: plans[plan],
});

/** A store that knows no trader names and no markets, counting its reads. */
function countingStore() {
  const reads: QueryParams[] = [];
  const store = {
    database: 'unit',
    kind: 'server',
    async query<Row>(_sql: string, params: QueryParams = {}): Promise<Row[]> {
      reads.push(params);
      return [] as Row[];
    },
  } as unknown as Store;
  return { store: storeWithSlots(store), reads };
}

function contextOf(store: Store, inFlight: Pick<InFlightLimiter, 'acquire'>, plans = config.plans): RouteContext {
  const reader = new Reader(store, new ReadCache({ bytes: 0, smallEntries: 1000 }), config.api.readCache);
  return {
    config: { ...config, plans },
    store,
    reader,
    budget: {} as Budget,
    log: createLogger('silent'),
    cursors: new Cursors('x'.repeat(16)),
    now: () => Math.floor(Date.now() / 1000),
    resolveTrader: (identifier) => resolveTrader(reader, identifier),
    inFlight: inFlight as InFlightLimiter,
  };
}

const unlimited = () =>
  new InFlightLimiter({
    initialInFlight: 1000,
    minInFlight: 1000,
    baselineInFlight: 1000,
    maxInFlight: 1000,
    queueDepth: 0,
    maxQueueWaitMs: 0,
    burstQueueWaitMs: 0,
    targetQueueWaitMs: 0,
    refusalWindowMs: 0,
  });

/** WebSocket frame header bytes, as ws counts them in bufferedAmount (the server does not mask). */
const frameBytes = (payload: number) => payload + (payload < 126 ? 2 : payload < 65_536 ? 4 : 10);

/**
 * The server's side of one client: what the plane handed it and the client has not read yet. The client
 * reads in order; reading a ping answers it with its payload, as a WebSocket client does.
 */
class FakeSocket implements LiveTransport {
  readonly #unread: ({ text: string; bytes: number } | { ping: string; sentAt: number; bytes: number })[] = [];
  buffered = 0;
  peak = 0;
  readonly received: ServerMessage[] = [];
  /** Every message the plane sent, read or not (the last one says why a connection closed). */
  readonly sent: ServerMessage[] = [];
  closedWith: { code: number; reason: string } | null = null;
  connection: LiveConnection | null = null;

  send(text: string): void {
    if (this.closedWith) throw new Error('sent after close');
    const bytes = frameBytes(Buffer.byteLength(text));
    this.#unread.push({ text, bytes });
    this.sent.push(JSON.parse(text) as ServerMessage);
    this.buffered += bytes;
    this.peak = Math.max(this.peak, this.buffered);
  }
  bufferedBytes(): number {
    return this.buffered;
  }
  ping(payload: string): void {
    const bytes = frameBytes(payload.length);
    this.#unread.push({ ping: payload, sentAt: Date.now(), bytes });
    this.buffered += bytes;
    this.peak = Math.max(this.peak, this.buffered);
  }
  close(code: number, reason: string): void {
    this.closedWith = { code, reason };
  }
  /** The client reads up to `bytes` (whole frames). */
  read(bytes = Number.POSITIVE_INFINITY): void {
    let budget = bytes;
    while (this.#unread.length > 0 && this.#unread[0]!.bytes <= budget) {
      const frame = this.#unread.shift()!;
      budget -= frame.bytes;
      this.buffered -= frame.bytes;
      if ('ping' in frame) {
        if (!this.closedWith) this.connection?.pong(frame.ping);
      } else this.received.push(JSON.parse(frame.text) as ServerMessage);
    }
  }
  /** When the oldest ping the client has not read was sent (null: none waits). */
  oldestUnreadPing(): number | null {
    for (const frame of this.#unread) if ('ping' in frame) return frame.sentAt;
    return null;
  }
}

async function open(plane: LivePlane, caller: Caller): Promise<FakeSocket> {
  const socket = new FakeSocket();
  socket.connection = await plane.connect(caller, socket);
  return socket;
}

beforeEach(() => {
  vi.useFakeTimers({ now: Date.UTC(2026, 10, 29, 6) });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('CommandRate', () => {
  it('admits a burst, then the rate; refusals in a row close, an admitted command starts the count again', () => {
    const clock = { ms: 0 };
    const rate = new CommandRate({ perSecond: 10, burst: 3, refusalsBeforeClose: 3 }, () => clock.ms);
    expect([rate.take(), rate.take(), rate.take()]).toEqual(['admitted', 'admitted', 'admitted']);
    expect([rate.take(), rate.take()]).toEqual(['refused', 'refused']);
    clock.ms += 100; // one token back
    expect([rate.take(), rate.take(), rate.take()]).toEqual(['admitted', 'refused', 'refused']);
    expect(rate.take()).toBe('close');
    clock.ms += 10_000; // never more than the burst
    expect([rate.take(), rate.take(), rate.take(), rate.take()]).toEqual([
      'admitted',
      'admitted',
      'admitted',
      'refused',
    ]);
  });
});

describe('LookupBudget', () => {
  it('holds the plan’s lookups an hour per user, refilled continuously; another user draws on their own', () => {
    const clock = { ms: 0 };
    const budget = new LookupBudget(() => clock.ms);
    const plan = { liveLookupsPerHour: 4 };
    expect([1, 2, 3, 4, 5].map(() => budget.take('a', plan))).toEqual([true, true, true, true, false]);
    expect(budget.take('b', plan)).toBe(true);
    clock.ms += 3_600_000 / 4; // one lookup back
    expect([budget.take('a', plan), budget.take('a', plan)]).toEqual([true, false]);
    budget.giveBack('a', plan);
    expect(budget.take('a', plan)).toBe(true);
    expect(budget.retryAfterSeconds(plan)).toBe(900);
  });
});

describe('store lookups of live commands', () => {
  const budget = 3;
  const plans = { ...config.plans, basic: { ...config.plans.basic, liveLookupsPerHour: budget } };

  it('a flood of name lookups reads the store up to the budget, is refused past it, and another user is served', async () => {
    const { store, reads } = countingStore();
    const plane = new LivePlane({ context: contextOf(store, unlimited(), plans), slots: new MemorySlots() });
    const flooder = await open(plane, callerOf('flooder', 'basic', plans));
    for (let index = 0; index < 10; index++)
      flooder.connection!.receive(JSON.stringify({ type: 'follow', id: `f${index}`, trader: `name-${index}` }));
    await vi.advanceTimersByTimeAsync(0);
    flooder.read();
    const answers = flooder.received.slice(1);
    expect(answers.map((answer) => answer.type === 'error' && answer.code)).toEqual([
      ...Array(budget).fill('trader_not_found'),
      ...Array(10 - budget).fill('lookup_limit'),
    ]);
    expect(answers[budget]).toMatchObject({ id: `f${budget}`, retry_after: 1200, lookups_per_hour: budget });
    expect(reads.length).toBe(budget);
    // A wallet whose name the read cache holds costs no lookup: answered past the budget.
    flooder.connection!.receive(JSON.stringify({ type: 'follow', id: 'w', trader: WALLETS[0] }));
    await vi.advanceTimersByTimeAsync(0);
    flooder.read();
    expect(flooder.received.at(-1)).toMatchObject({ type: 'error', id: 'w', code: 'lookup_limit' });
    // Another user's lookups are theirs: served and read.
    const other = await open(plane, callerOf('other', 'basic', plans));
    other.connection!.receive(JSON.stringify({ type: 'follow', id: 'o', trader: WALLETS[0] }));
    await vi.advanceTimersByTimeAsync(0);
    other.read();
    expect(other.received.at(-1)).toMatchObject({ type: 'ack', id: 'o', trader: { wallet: WALLETS[0], name: '' } });
    expect(reads.length).toBe(budget + 1);
    // Now that name is in the read cache: the flooder's follow of it reads nothing and is served.
    flooder.connection!.receive(JSON.stringify({ type: 'follow', id: 'w2', trader: WALLETS[0] }));
    await vi.advanceTimersByTimeAsync(0);
    flooder.read();
    expect(flooder.received.at(-1)).toMatchObject({ type: 'ack', id: 'w2' });
    expect(reads.length).toBe(budget + 1);
    await plane.close();
  });

  it('a command the in-flight limit sheds is refused as overloaded, reads nothing, and costs no lookup', async () => {
    const { store, reads } = countingStore();
    let shed = true;
    const limiter = unlimited();
    const inFlight = {
      acquire: (user: string, signal?: AbortSignal): Promise<Slot | null> =>
        shed ? Promise.resolve(null) : limiter.acquire(user, signal),
    };
    const plane = new LivePlane({ context: contextOf(store, inFlight, plans), slots: new MemorySlots() });
    const socket = await open(plane, callerOf('shed', 'basic', plans));
    for (let index = 0; index < budget + 2; index++)
      socket.connection!.receive(JSON.stringify({ type: 'follow', id: `s${index}`, trader: `name-${index}` }));
    await vi.advanceTimersByTimeAsync(0);
    socket.read();
    for (const answer of socket.received.slice(1))
      expect(answer).toMatchObject({ type: 'error', code: 'overloaded', retry_after: 1 });
    expect(reads.length).toBe(0);
    // Every lookup was given back: the whole budget is still there.
    shed = false;
    for (let index = 0; index < budget + 1; index++)
      socket.connection!.receive(JSON.stringify({ type: 'follow', id: `t${index}`, trader: `name-${index}` }));
    await vi.advanceTimersByTimeAsync(0);
    socket.read();
    expect(socket.received.slice(-(budget + 1)).map((answer) => answer.type === 'error' && answer.code)).toEqual([
      ...Array(budget).fill('trader_not_found'),
      'lookup_limit',
    ]);
    expect(reads.length).toBe(budget);
    await plane.close();
  });
});

/** What a client does next. */
type Step =
  | { kind: 'send'; count: number; command: 'ping' | 'bad' | 'big' | 'follow' | 'unfollow'; spacingMs: number }
  | { kind: 'publish'; count: number }
  | { kind: 'pause' }
  | { kind: 'resume' }
  | { kind: 'readSome'; bytes: number }
  | { kind: 'wait'; ms: number };

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('send' as const),
    count: fc.integer({ min: 1, max: 120 }),
    command: fc.constantFrom('ping' as const, 'bad' as const, 'big' as const, 'follow' as const, 'unfollow' as const),
    spacingMs: fc.constantFrom(0, 0, 10, 60, 200),
  }),
  fc.record({ kind: fc.constant('publish' as const), count: fc.integer({ min: 1, max: 400 }) }),
  fc.record({ kind: fc.constant('pause' as const) }),
  fc.record({ kind: fc.constant('resume' as const) }),
  fc.record({ kind: fc.constant('readSome' as const), bytes: fc.integer({ min: 0, max: 2 * QUEUE_BYTES }) }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 3 * HEARTBEAT_MS }) }),
);

/** The reasons a connection may be closed for its behaviour, and their close codes. */
const CLOSES: Record<string, number> = {
  too_slow: CLOSE_CODES.tooSlow,
  no_pong: CLOSE_CODES.silent,
  rate_limited: CLOSE_CODES.tooMany,
};

function frameOf(command: Extract<Step, { kind: 'send' }>['command'], index: number): string {
  const wallet = WALLETS[index % WALLETS.length]!;
  switch (command) {
    case 'ping':
      return JSON.stringify({ type: 'ping', id: `p${index}` });
    case 'bad':
      return 'x';
    case 'big':
      return `{"type":"ping","pad":"${'y'.repeat(config.live.maxMessageBytes - 40)}"}`;
    case 'follow':
      return JSON.stringify({ type: 'follow', trader: wallet });
    case 'unfollow':
      return JSON.stringify({ type: 'unfollow', trader: wallet });
  }
}

describe('property: one connection’s cost stays bounded, whatever the client does', () => {
  it(`holds at most ${QUEUE_BYTES} unsent bytes plus one error, at most ${config.live.commands.maxPending} waiting commands; it keeps up or is closed with its reason`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArbitrary, { minLength: 1, maxLength: 25 }), async (steps) => {
        const { store } = countingStore();
        const plane = new LivePlane({ context: contextOf(store, unlimited()), slots: new MemorySlots() });
        plane.publish({ kind: 'names', market: MARKET, outcome1: 'Yes', outcome2: 'No', title: 'A market' });
        const socket = await open(plane, callerOf(`u${Math.random()}`, 'pro'));
        const connection = socket.connection!;
        let reading = true;

        const check = () => {
          expect(socket.buffered).toBeLessThanOrEqual(QUEUE_BYTES + ERROR_BYTES);
          expect(connection.state.pendingCommands).toBeLessThanOrEqual(config.live.commands.maxPending);
          if (socket.closedWith) {
            const { code, reason } = socket.closedWith;
            expect(CLOSES[reason], reason).toBe(code);
            expect(socket.sent.at(-1)).toMatchObject({ type: 'error', code: reason });
          } else {
            // Keeping up: no ping waits unread for longer than a heartbeat.
            const oldest = socket.oldestUnreadPing();
            if (oldest !== null) expect(Date.now() - oldest).toBeLessThanOrEqual(HEARTBEAT_MS);
          }
        };
        /** Time passes; a client that reads reads as it goes. */
        const pass = async (ms: number) => {
          for (let left = ms; left > 0; left -= 50) {
            if (reading) socket.read();
            await vi.advanceTimersByTimeAsync(Math.min(50, left));
            check();
          }
          if (reading) socket.read();
        };

        for (const step of steps) {
          switch (step.kind) {
            case 'send':
              for (let index = 0; index < step.count; index++) {
                connection.receive(frameOf(step.command, index));
                if (step.spacingMs > 0) await pass(step.spacingMs);
              }
              break;
            case 'publish':
              for (let index = 0; index < step.count; index++)
                plane.publish({
                  kind: 'fill',
                  market: MARKET,
                  wallet: WALLETS[index % WALLETS.length]!,
                  ts: 1_767_556_900 + index,
                  side: 'BUY',
                  price: 0.5,
                  token_side: 1,
                  size_tokens: 10,
                  usd: 5,
                });
              break;
            case 'pause':
              reading = false;
              break;
            case 'resume':
              reading = true;
              break;
            case 'readSome':
              socket.read(step.bytes);
              break;
            case 'wait':
              await pass(step.ms);
              break;
          }
          await vi.advanceTimersByTimeAsync(0);
          check();
        }
        // At the end the client reads for two heartbeats: open, it has kept up and caught up.
        reading = true;
        await pass(2 * HEARTBEAT_MS);
        if (!socket.closedWith) {
          expect(socket.buffered).toBe(0);
          expect(connection.state.closed).toBe(false);
        }
        expect(socket.peak).toBeLessThanOrEqual(QUEUE_BYTES + ERROR_BYTES);
        await plane.close();
      }),
      { numRuns: 60 },
    );
    // A shared machine may stretch it past the default timeout.
  }, 60_000);
});
