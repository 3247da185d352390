/**
 * A listening server whose live plane is fed by its own in-process log (the embedded default's wiring):
 * what the live plane's tests, its browser test and bench:live start. Publish on `publisher` to reach the
 * plane. With `recordings`, Pro and Max watches are recorded: onto that log as the `all` role does, through
 * the sink `recordings` builds over it. Every connection's transport is observed (`transports`): the
 * bytes the server had waiting for the client at most, its pings, and how the server closed it.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import WebSocket from 'ws';
import type { Config } from '../../config.ts';
import { MemoryLog } from '../../ingest/bus/memory.ts';
import { TopicNames } from '../../ingest/contract/topics.ts';
import { recordingsOn, startLiveFeed, streamedTopics } from '../../ingest/live-feed.ts';
import { EventPublisher } from '../../ingest/publisher.ts';
import type { Logger } from '../../log.ts';
import { MemorySlots, type SlotStore } from '../../operations/gates/slots.ts';
import { serverMessageSchema, type ServerMessage } from '../../operations/live/messages.ts';
import type { LivePlane, LiveTransport } from '../../operations/live/plane.ts';
import type { RecordingSink } from '../../operations/live/recording.ts';
import { openStore, type Store } from '../../projections/store.ts';
import { buildHttpServer } from '../../roles/http-server.ts';

export interface LiveServer {
  app: FastifyInstance;
  /** http://127.0.0.1:<port> */
  origin: string;
  /** The plane's path: `{prefix}{live.path}`. */
  livePath: string;
  /** ws://127.0.0.1:<port>{livePath} */
  url: string;
  publisher: EventPublisher;
  eventLog: MemoryLog;
  topics: TopicNames;
  store: Store;
  /** Resolves once the plane's feed has read everything on the log up to now (the head's topic included). */
  feedCaughtUp(): Promise<void>;
  /** The server's side of every connection the plane was handed, in order. */
  transports: ObservedTransport[];
  close(): Promise<void>;
}

/** What the server did with one connection's transport, seen from inside the server. */
class ObservedTransport implements LiveTransport {
  /** The most bytes the server had handed to the socket and not yet written to the network (ws bufferedAmount), after any send. */
  peakBufferedBytes = 0;
  pings = 0;
  closedWith: { code: number; reason: string } | null = null;
  readonly #waiters: (() => void)[] = [];
  constructor(private readonly inner: LiveTransport) {}
  send(text: string): void {
    this.inner.send(text);
    this.peakBufferedBytes = Math.max(this.peakBufferedBytes, this.inner.bufferedBytes());
  }
  bufferedBytes(): number {
    return this.inner.bufferedBytes();
  }
  ping(payload: string): void {
    this.pings += 1;
    this.inner.ping(payload);
    this.#wake();
  }
  close(code: number, reason: string): void {
    this.closedWith = { code, reason };
    this.inner.close(code, reason);
    this.#wake();
  }
  #wake(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }
  /** Resolves when the server closed the connection (its code and reason), or after `pings` more pings (null). */
  async closedWithin(pings: number): Promise<{ code: number; reason: string } | null> {
    const until = this.pings + pings;
    while (this.closedWith === null && this.pings < until)
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    return this.closedWith;
  }
}

/** Wraps the plane's `connect` so that each transport it is handed is observed. */
function observe(plane: LivePlane, transports: ObservedTransport[]): void {
  const connect = plane.connect.bind(plane);
  plane.connect = (caller, transport, ...rest) => {
    const observed = new ObservedTransport(transport);
    transports.push(observed);
    return connect(caller, observed, ...rest);
  };
}

export interface LiveServerOptions {
  retainedBytes?: number;
  /** The slots' store (in memory by default), and the clock their leases run on (the store's own by default). */
  slots?: SlotStore;
  slotsClockMs?: () => number;
  /** The sink recordings go through, built over the one onto the log; without it nothing is recorded. */
  recordings?: (onLog: RecordingSink) => RecordingSink;
  /** Wraps the store the server reads (e.g. to count its reads). */
  wrapStore?: (store: Store) => Store;
  /** The key cache's clock (Date.now by default): a test moves it past the cache's window. */
  authClockMs?: () => number;
  /** Started on the server's log and store before it listens, stopped after it closes (an ingest worker). */
  beside?: (parts: { eventLog: MemoryLog; store: Store }) => Promise<{ stop(): Promise<void> }>;
  /** Another server's log and store (a second plane instance, or one started after a plane stopped); left open on close. */
  on?: { eventLog: MemoryLog; store: Store };
}

let feeds = 0;

export async function startLiveServer(
  config: Config,
  log: Logger,
  options: LiveServerOptions = {},
): Promise<LiveServer> {
  const store = options.on?.store ?? (await openStore(config.clickhouse));
  const eventLog =
    options.on?.eventLog ??
    new MemoryLog({ partitions: 2, maxRetainedBytes: options.retainedBytes ?? 64 * 1024 * 1024, log });
  const topics = new TopicNames(config.kafka.topicPrefix);
  const publisher = new EventPublisher(await eventLog.producer(), topics);
  const beside = await options.beside?.({ eventLog, store });
  const feedGroup = `${config.live.groupPrefix}test-${process.pid}-${++feeds}`;
  const transports: ObservedTransport[] = [];
  const app = await buildHttpServer({
    log,
    storeAlive: async () => true,
    readiness: () => ({ ready: true, detail: {} }),
    api: {
      config,
      store: options.wrapStore ? options.wrapStore(store) : store,
      slots: options.slots ?? new MemorySlots(),
      ...(options.slotsClockMs ? { slotsClockMs: options.slotsClockMs } : {}),
      ...(options.authClockMs ? { authClockMs: options.authClockMs } : {}),
      liveFeed: (plane) => {
        observe(plane, transports);
        return startLiveFeed({ config, eventLog, topics, target: plane, log, groupId: feedGroup });
      },
      ...(options.recordings ? { liveRecordings: options.recordings(recordingsOn(publisher)) } : {}),
    },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const livePath = `${config.api.prefix}${config.live.path}`;
  return {
    app,
    origin: `http://127.0.0.1:${port}`,
    livePath,
    url: `ws://127.0.0.1:${port}${livePath}`,
    publisher,
    eventLog,
    topics,
    store,
    feedCaughtUp: () => eventLog.committedThroughNow(feedGroup, streamedTopics(topics)),
    transports,
    async close() {
      await app.close();
      await beside?.stop();
      if (options.on) return;
      await eventLog.close();
      await store.close();
    },
  };
}

/** A live-plane client that keeps every message (each checked against the plane's schema) and its close. */
export class LiveClient {
  readonly messages: ServerMessage[] = [];
  #read = 0;
  #waiters: (() => void)[] = [];
  #invalid: Error | undefined;
  readonly closed: Promise<{ code: number; reason: string }>;
  constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const parsed = serverMessageSchema.safeParse(JSON.parse(data.toString()));
      if (parsed.success) this.messages.push(parsed.data);
      else this.#invalid ??= new Error(`not a message of the plane: ${data.toString()}: ${parsed.error.message}`);
      for (const wake of this.#waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) =>
      socket.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const wake of this.#waiters.splice(0)) wake();
      }),
    );
  }

  /** The next message not read yet. */
  async next(): Promise<ServerMessage> {
    while (this.#read >= this.messages.length) {
      if (this.#invalid) throw this.#invalid;
      if (this.socket.readyState === WebSocket.CLOSED) throw new Error('closed before the next message');
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    return this.messages[this.#read++]!;
  }

  async nextOf<T extends ServerMessage['type']>(type: T): Promise<Extract<ServerMessage, { type: T }>> {
    const message = await this.next();
    expect(message.type, JSON.stringify(message)).toBe(type);
    return message as Extract<ServerMessage, { type: T }>;
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Sends a command and returns its answer (ack or error). */
  async command(message: Record<string, unknown>): Promise<ServerMessage> {
    this.send(message);
    return this.next();
  }

  async close(): Promise<void> {
    this.socket.close();
    await this.closed;
  }
}
