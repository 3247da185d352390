/**
 * A listening server whose live plane is fed by its own in-process log (the embedded default's wiring):
 * what the live plane's browser test and bench:live start. Publish on `publisher` to reach the plane.
 * With `record`, Pro and Max watches are recorded onto that log.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import WebSocket from 'ws';
import type { Config } from '../../config.ts';
import { MemoryLog } from '../../ingest/bus/memory.ts';
import { TopicNames } from '../../ingest/contract/topics.ts';
import { recordingsOn, startLiveFeed } from '../../ingest/live-feed.ts';
import { EventPublisher } from '../../ingest/publisher.ts';
import type { Logger } from '../../log.ts';
import { MemorySlots } from '../../operations/gates/slots.ts';
import { serverMessageSchema, type ServerMessage } from '../../operations/live/messages.ts';
import { openStore } from '../../projections/store.ts';
import { buildHttpServer } from '../../roles/http-server.ts';

export interface LiveServer {
  app: FastifyInstance;
  /** http://127.0.0.1:<port> */
  origin: string;
  /** The plane's path: `{prefix}{live.path}`. */
  livePath: string;
  publisher: EventPublisher;
  close(): Promise<void>;
}

export async function startLiveServer(
  config: Config,
  log: Logger,
  retainedBytes = 64 * 1024 * 1024,
  options: { record?: boolean } = {},
): Promise<LiveServer> {
  const store = await openStore(config.clickhouse);
  const eventLog = new MemoryLog({ partitions: 2, maxRetainedBytes: retainedBytes, log });
  const topics = new TopicNames(config.kafka.topicPrefix);
  const publisher = new EventPublisher(await eventLog.producer(), topics);
  const app = await buildHttpServer({
    log,
    storeAlive: async () => true,
    readiness: () => ({ ready: true, detail: {} }),
    api: {
      config,
      store,
      slots: new MemorySlots(),
      liveFeed: (plane) => startLiveFeed({ config, eventLog, topics, target: plane, log }),
      // Recording: Pro and Max watches are saved onto the same log, as the `all` role does.
      ...(options.record ? { liveRecordings: recordingsOn(publisher) } : {}),
    },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    app,
    origin: `http://127.0.0.1:${port}`,
    livePath: `${config.api.prefix}${config.live.path}`,
    publisher,
    async close() {
      await app.close();
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
