/**
 * The clob source against a local WebSocket server that speaks the market channel and replays its
 * recorded sequences (../shared/data/polymarket/http/clob-ws/streams/), then misbehaves: it drops the
 * connection, freezes while still answering PING, stops answering PING, and sends garbage. The source
 * subscribes, reconnects and resubscribes, publishes the recorded prices in UP space, and dead-letters
 * the garbage without stopping. Expected prices are read from the recordings. No network beyond loopback.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { parseConfig, type ClobConfig } from '../config.ts';
import type { PartitionSlice } from '../ingest/bus/types.ts';
import type { EventInputOf, TopicId } from '../ingest/contract/topics.ts';
import { liveEventsOf } from '../ingest/live-feed.ts';
import { ClobSource, type MarketTokens } from '../ingest/sources/clob/index.ts';
import { createUpstreamClient } from '../ingest/sources/upstream/index.ts';
import { createLogger } from '../log.ts';
import { clobMessages, clobReconnects } from '../metrics/registry.ts';
import { polymarketData, RecordingSink } from './harness/polymarket.ts';

const STREAMS = path.join(polymarketData, 'http/clob-ws/streams');
const lines = (file: string) =>
  readFileSync(path.join(STREAMS, file), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');

const MIKELIN = 'mikelin97_btc-updown-15m-1761786000';
const MARKET = '0x9444d31814238a9d89fed3eab0e2782da96eb9b7bf1ba5da8663edeee137ec06';
const UP = '83183308674131023197302415258788997759161749822734524473545155235350145282641';
const DOWN = '41962797971457692471944227875529019000673384934005887575219956926514413062682';
const MIKELIN_MARKET: MarketTokens = { conditionId: MARKET, token1: UP, token2: DOWN };
const OTHER_MARKET: MarketTokens = { conditionId: `0x${'ab'.repeat(32)}`, token1: '111', token2: '222' };

const books = lines(`${MIKELIN}_yes_token_books.jsonl`);
/** Frames 1–69 as the venue sent them (each with its YES entry; the NO entries were not recorded). */
const deltaFrames = lines(`${MIKELIN}_yes_price_change_entries_frames1-69.jsonl`).map((line) => {
  const { frame_timestamp, price_change_entry } = JSON.parse(line) as {
    frame_timestamp: string;
    price_change_entry: Record<string, string>;
  };
  return JSON.stringify({
    market: MARKET,
    price_changes: [price_change_entry],
    timestamp: frame_timestamp,
    event_type: 'price_change',
  });
});
const prints = lines(`${MIKELIN}_last_trade_price.jsonl`);

/** One connection as the server sees it: what the client sent. */
class ServerSide {
  readonly received: string[] = [];
  #waiters: (() => void)[] = [];
  closed = false;
  constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.received.push(data.toString());
      for (const wake of this.#waiters.splice(0)) wake();
    });
    socket.on('close', () => {
      this.closed = true;
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }
  async until(predicate: () => boolean): Promise<void> {
    while (!predicate()) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
  /** The JSON messages the client sent (PINGs aside). */
  subscriptions(): Record<string, unknown>[] {
    return this.received.filter((text) => text !== 'PING').map((text) => JSON.parse(text) as Record<string, unknown>);
  }
  pings(): number {
    return this.received.filter((text) => text === 'PING').length;
  }
}

/** The market channel, scripted per test: answers PING unless told not to. */
class ReplayServer {
  readonly server: WebSocketServer;
  readonly connections: ServerSide[] = [];
  answerPings = true;
  #waiters: (() => void)[] = [];
  constructor() {
    this.server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    this.server.on('connection', (socket) => {
      const side = new ServerSide(socket);
      socket.on('message', (data) => {
        if (data.toString() === 'PING' && this.answerPings) socket.send('PONG');
      });
      this.connections.push(side);
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }
  get url(): string {
    const address = this.server.address();
    if (typeof address === 'string' || address === null) throw new Error('no address');
    return `ws://127.0.0.1:${address.port}`;
  }
  /** The n-th connection (0-based), once it subscribed. */
  async connection(index: number): Promise<ServerSide> {
    while (this.connections.length <= index) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    const side = this.connections[index]!;
    await side.until(() => side.subscriptions().length > 0);
    return side;
  }
  close(): Promise<void> {
    for (const client of this.server.clients) client.terminate();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

class WaitingSink extends RecordingSink {
  #waiters: (() => void)[] = [];
  override async publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void> {
    await super.publish(topicId, events);
    for (const wake of this.#waiters.splice(0)) wake();
  }
  async until(predicate: () => boolean): Promise<void> {
    while (!predicate()) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
}

interface Running {
  server: ReplayServer;
  sink: WaitingSink;
  source: ClobSource;
  interest: MarketTokens[];
  deadLetters: { raw: string; reason: string }[];
  stop(): Promise<void>;
}

const running: Running[] = [];
afterEach(async () => {
  for (const run of running.splice(0)) await run.stop();
});

async function start(
  overrides: Partial<ClobConfig> = {},
  log = createLogger('silent'),
  extra: { interest?: MarketTokens[]; fetchBook?: (tokenId: string, signal: AbortSignal) => Promise<unknown> } = {},
): Promise<Running> {
  const server = new ReplayServer();
  await new Promise<void>((resolve) => server.server.once('listening', () => resolve()));
  const config: ClobConfig = {
    ...parseConfig({}).clob,
    url: server.url,
    heartbeatMs: 40,
    pongTimeoutMs: 2_000,
    stallMs: 2_000,
    backoff: { baseMs: 5, maxMs: 40 },
    // The tests refresh by hand.
    refreshMs: 600_000,
    ...overrides,
  };
  const sink = new WaitingSink();
  const interest = extra.interest ?? [MIKELIN_MARKET];
  const deadLetters: { raw: string; reason: string }[] = [];
  const source = new ClobSource({
    config,
    interest: { markets: async () => [...interest] },
    sink,
    reject: async (raw, reason) => {
      deadLetters.push({ raw, reason });
    },
    log,
    ...(extra.fetchBook ? { fetchBook: extra.fetchBook } : {}),
  });
  const controller = new AbortController();
  const done = source.run(controller.signal);
  const run: Running = {
    server,
    sink,
    source,
    interest,
    deadLetters,
    stop: async () => {
      controller.abort();
      await done;
      await server.close();
    },
  };
  running.push(run);
  return run;
}

async function messages(outcome: string): Promise<number> {
  const metric = await clobMessages.get();
  return metric.values.find((value) => value.labels.outcome === outcome)?.value ?? 0;
}

async function reconnects(reason: string): Promise<number> {
  const metric = await clobReconnects.get();
  return metric.values.find((value) => value.labels.reason === reason)?.value ?? 0;
}

/** The venue's stated top after each delta, consecutive repeats dropped: the ticks a faithful book gives. */
function statedTops(): { bid: number; ask: number }[] {
  const tops: { bid: number; ask: number }[] = [];
  const first = JSON.parse(books[0]!) as { bids: { price: string }[]; asks: { price: string }[] };
  tops.push({
    bid: Math.max(...first.bids.map((level) => Number(level.price))),
    ask: Math.min(...first.asks.map((level) => Number(level.price))),
  });
  for (const frame of deltaFrames) {
    const entry = (JSON.parse(frame) as { price_changes: Record<string, string>[] }).price_changes[0]!;
    const top = { bid: Number(entry.best_bid), ask: Number(entry.best_ask) };
    const last = tops.at(-1)!;
    if (last.bid !== top.bid || last.ask !== top.ask) tops.push(top);
  }
  return tops;
}

describe('the clob source against a replaying market channel', () => {
  it('subscribes with the documented message, and publishes the recorded books and prints in UP space', async () => {
    const { server, sink } = await start();
    const socket = await server.connection(0);
    expect(socket.subscriptions()[0]).toEqual({
      type: 'market',
      assets_ids: [UP, DOWN],
      initial_dump: true,
      custom_feature_enabled: true,
    });
    // The initial dump, the deltas (some batched into one array frame, as the venue does), then prints.
    socket.socket.send(`[${books[0]}]`);
    for (const frame of deltaFrames.slice(0, 30)) socket.socket.send(frame);
    socket.socket.send(`[${deltaFrames.slice(30).join(',')}]`);
    socket.socket.send(`[${prints.slice(0, 50).join(',')}]`);
    const tops = statedTops();
    await sink.until(() => sink.events('book').length >= tops.length && sink.events('trades').length >= 50);
    expect(sink.events('book').map(({ bid, ask }) => ({ bid, ask }))).toEqual(tops);
    expect(sink.events('book')[0]).toMatchObject({ condition_id: MARKET, ts: Math.floor(1761786033748 / 1000) });

    // Through the live plane's reading of the log: the prints' prices in UP space, as recorded.
    const trades = sink.events('trades');
    const slice: PartitionSlice = {
      topic: 'trades',
      partition: 0,
      messages: trades.map((trade, offset) => ({
        offset: String(offset),
        key: Buffer.from(MARKET),
        value: Buffer.from(JSON.stringify(trade)),
        headers: {},
      })),
    };
    const live = liveEventsOf(slice, 'trades', 'market', { wantsMarket: () => true, wantsWallet: () => true });
    expect(live.map((event) => (event.kind === 'trade' ? event.price : null))).toEqual(
      prints.slice(0, 50).map((line) => {
        const raw = JSON.parse(line) as { asset_id: string; price: string };
        return raw.asset_id === UP ? Number(raw.price) : Number((1 - Number(raw.price)).toFixed(10));
      }),
    );
  });

  it('reconnects after a drop and resubscribes every token; the books start again from the new snapshot', async () => {
    const { server, sink } = await start();
    const before = await reconnects('closed');
    const first = await server.connection(0);
    first.socket.send(books[0]!);
    await sink.until(() => sink.events('book').length === 1);
    first.socket.terminate();
    const second = await server.connection(1);
    expect(second.subscriptions()[0]).toMatchObject({ assets_ids: [UP, DOWN] });
    expect(await reconnects('closed')).toBe(before + 1);
    second.socket.send(books[1]!);
    const recorded = JSON.parse(books[1]!) as { bids: { price: string }[]; asks: { price: string }[] };
    await sink.until(() => sink.events('book').length === 2);
    expect(sink.events('book')[1]).toMatchObject({
      bid: Math.max(...recorded.bids.map((level) => Number(level.price))),
      ask: Math.min(...recorded.asks.map((level) => Number(level.price))),
    });
  });

  it('replaces a socket that answers PING but brings no data, and one whose PONGs stop', async () => {
    const { server } = await start({ stallMs: 300 });
    const stalledBefore = await reconnects('stalled');
    const frozen = await server.connection(0);
    // The heartbeat is alive (PINGs answered) while nothing else comes.
    await frozen.until(() => frozen.pings() >= 3);
    const next = await server.connection(1);
    expect(next.subscriptions()[0]).toMatchObject({ assets_ids: [UP, DOWN] });
    expect(await reconnects('stalled')).toBeGreaterThan(stalledBefore);

    const deaf = await start({ pongTimeoutMs: 200, stallMs: 60_000 });
    deaf.server.answerPings = false;
    const heartbeatBefore = await reconnects('heartbeat');
    await deaf.server.connection(0);
    const again = await deaf.server.connection(1);
    expect(again.subscriptions()[0]).toMatchObject({ assets_ids: [UP, DOWN] });
    expect(await reconnects('heartbeat')).toBeGreaterThan(heartbeatBefore);
  });

  it('dead-letters garbage with its reason and keeps publishing what follows', async () => {
    const { server, sink, deadLetters } = await start();
    const socket = await server.connection(0);
    socket.socket.send('{"half a message');
    socket.socket.send('[1, "two"]');
    socket.socket.send('{"event_type":"book","asset_id":"nope"}');
    socket.socket.send(Buffer.from([0xde, 0xad]), { binary: true });
    socket.socket.send('{"event_type":"tick_size_change","asset_id":"1"}');
    socket.socket.send(books[0]!);
    await sink.until(() => sink.events('book').length === 1);
    expect(deadLetters.map((letter) => letter.reason)).toEqual([
      expect.stringMatching(/not JSON/),
      expect.stringMatching(/no event_type/),
      expect.stringMatching(/no event_type/),
      expect.stringMatching(/^book: /),
    ]);
    expect(deadLetters[0]!.raw).toBe('{"half a message');
    expect(socket.closed).toBe(false);
  });

  it('drops (and counts) what the log cannot take beyond its bound; the books stay right', async () => {
    let dropped = () => {};
    const firstDrop = new Promise<void>((resolve) => {
      dropped = resolve;
    });
    const log = createLogger('warn', {
      write: (line: string) => {
        if (line.includes('clob events dropped')) dropped();
      },
    });
    const { server, sink } = await start({ maxPendingFrames: 2 }, log);
    let release = () => {};
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const publish = sink.publish.bind(sink);
    sink.publish = async (topicId, events) => {
      await blocked;
      await publish(topicId, events);
    };
    const droppedBefore = await messages('dropped');
    const socket = await server.connection(0);
    // Two frames wait for the log; the next one, the deltas batched (one of them moves the top), is dropped.
    socket.socket.send(books[0]!);
    socket.socket.send(deltaFrames[0]!);
    socket.socket.send(`[${deltaFrames.slice(1, 40).join(',')}]`);
    await firstDrop;
    release();
    await sink.until(() => sink.events('book').length === 1);
    expect(await messages('dropped')).toBe(droppedBefore + 1);
    // The next book's top goes out although the dropped tick had it already: the log never saw it.
    socket.socket.send(books[1]!);
    await sink.until(() => sink.events('book').length === 2);
    const top = (line: string) => {
      const book = JSON.parse(line) as { bids: { price: string }[]; asks: { price: string }[] };
      return {
        bid: Math.max(...book.bids.map((level) => Number(level.price))),
        ask: Math.min(...book.asks.map((level) => Number(level.price))),
      };
    };
    expect(sink.events('book').map(({ bid, ask }) => ({ bid, ask }))).toEqual([top(books[0]!), top(books[1]!)]);
  });

  it('subscribes and unsubscribes on the open socket as the markets of interest change', async () => {
    const { server, source, interest } = await start();
    const socket = await server.connection(0);
    interest.push(OTHER_MARKET);
    await source.refresh();
    await socket.until(() => socket.subscriptions().length === 2);
    expect(socket.subscriptions()[1]).toEqual({
      type: 'market',
      operation: 'subscribe',
      assets_ids: ['111', '222'],
      initial_dump: true,
      custom_feature_enabled: true,
    });
    interest.splice(0, 1);
    await source.refresh();
    await socket.until(() => socket.subscriptions().length === 3);
    expect(socket.subscriptions()[2]).toEqual({ type: 'market', operation: 'unsubscribe', assets_ids: [UP, DOWN] });
    // A reconnect resubscribes what is wanted now, and only that.
    socket.socket.terminate();
    const next = await server.connection(1);
    expect(next.subscriptions()[0]).toMatchObject({ assets_ids: ['111', '222'] });
  });
});

describe('a book the channel does not send', () => {
  /** The CLOB REST API's recorded book (`GET /book`) and the market and token it belongs to. */
  const restBook = JSON.parse(readFileSync(path.join(polymarketData, 'http/clob/nautilus_clob_book.json'), 'utf8')) as {
    market: string;
    asset_id: string;
    timestamp: string;
    bids: { price: string }[];
    asks: { price: string }[];
  };

  it('is read over REST once the wait is over, through the upstream client, and published as its top; a wrong book is dead-lettered', async () => {
    // The REST API: the recorded book for every token asked for (so another token's answer is the wrong book).
    const asked: string[] = [];
    const rest = http.createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      asked.push(`${url.pathname}?token_id=${url.searchParams.get('token_id')}`);
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(restBook));
    });
    await new Promise<void>((resolve) => rest.listen(0, '127.0.0.1', resolve));
    const defaults = parseConfig({});
    const client = createUpstreamClient(
      {
        ...defaults,
        upstream: {
          ...defaults.upstream,
          baseUrls: { ...defaults.upstream.baseUrls, clob: `http://127.0.0.1:${(rest.address() as AddressInfo).port}` },
        },
      },
      createLogger('silent'),
    );
    // Token 2 is the recorded book's token: token 1's answer is that book too, the wrong one.
    const market: MarketTokens = { conditionId: restBook.market, token1: '999', token2: restBook.asset_id };
    const { server, sink, deadLetters } = await start({ snapshotWaitMs: 50 }, createLogger('silent'), {
      interest: [market],
      fetchBook: async (tokenId, signal) => (await client.getJson('clob', '/book', { token_id: tokenId }, signal)).body,
    });
    try {
      // Subscribed, and the channel sends no book.
      await server.connection(0);
      await sink.until(() => sink.events('book').length === 1);
      expect(asked).toEqual(['/book?token_id=999', `/book?token_id=${restBook.asset_id}`]);
      expect(deadLetters).toHaveLength(1);
      expect(deadLetters[0]!.reason).toBe(`GET /book: the book of token ${restBook.asset_id}, asked for 999`);
      // Token 2's book mirrored into UP space: bid 1 − its lowest ask, ask 1 − its highest bid.
      const lowestAsk = Math.min(...restBook.asks.map((level) => Number(level.price)));
      const highestBid = Math.max(...restBook.bids.map((level) => Number(level.price)));
      expect(sink.events('book')).toEqual([
        {
          condition_id: restBook.market,
          ts: Math.floor(Number(restBook.timestamp) / 1000),
          seq: Number(restBook.timestamp) * 1000,
          bid: Number((1 - lowestAsk).toFixed(10)),
          ask: Number((1 - highestBid).toFixed(10)),
        },
      ]);
    } finally {
      await new Promise<void>((resolve) => rest.close(() => resolve()));
    }
  });
});
