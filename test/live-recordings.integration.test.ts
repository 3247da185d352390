import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Config, ConfigOverrides } from '../config.ts';
import { publishSessions, recordSession } from '../ingest/sources/simulator/tapes.ts';
import { startIngestWorker } from '../ingest/worker.ts';
import { createLogger } from '../log.ts';
import type { RecordingSink } from '../operations/live/recording.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import { LiveClient, startLiveServer, type LiveServer } from './harness/live.ts';
import { API, inProcessConfig, publishTestAccounts } from './harness/api.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are compared field by field

/** Small flushes (a recording is published every three events), none by time: what is published is known. */
const LIVE: ConfigOverrides = { live: { recording: { flushEvents: 3, flushMs: 3_600_000 } } };
const config = inProcessConfig('live-rec', {}, LIVE);
const PROTOCOL = config.live.protocol;
const NOW_S = Math.floor(Date.now() / 1000);
const log = createLogger('silent');

const ACCOUNTS = [
  { accountId: 'r-basic', plan: 'basic', keys: ['basic'] },
  { accountId: 'r-pro', plan: 'pro', keys: ['pro'] },
  { accountId: 'r-max', plan: 'max', keys: ['max'] },
  { accountId: 'r-full', plan: 'pro', keys: ['full'] },
  { accountId: 'r-filling', plan: 'pro', keys: ['filling'] },
  { accountId: 'r-crash', plan: 'pro', keys: ['crash'] },
  { accountId: 'r-backlog', plan: 'max', keys: ['backlog'] },
] as const;
type KeyName = (typeof ACCOUNTS)[number]['keys'][number];
const keys = {} as Record<KeyName, string>;

const TRADER = makeWallet('rec-trader');
const MARKETS = [1, 2, 3, 4, 5, 6].map((index) => makeConditionId(`rec-${index}`));
const [M1, M2, M3, M4, M5, M6] = MARKETS as [string, string, string, string, string, string];
const TITLE = (index: number) => `Will the recorded market ${index} resolve Yes?`;

beforeAll(async () => {
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    Object.assign(keys, await publishTestAccounts(publisher, ACCOUNTS, NOW_S));
    await publisher.publish(
      'markets',
      MARKETS.map((conditionId, index) =>
        makeMarket({ condition_id: conditionId, title: TITLE(index), outcome1: 'Yes', outcome2: 'No' }),
      ),
    );
  });
});

type Instance = LiveServer & {
  /** Resolves once the tape's last version (whole) is on the log. */
  saved(tapeId: string): Promise<void>;
  /** Resolves once everything published so far is in the store. */
  landed(): Promise<void>;
};

const instances: Instance[] = [];

/**
 * A listening server: its in-process log feeds the plane, and an ingest worker on the same log lands
 * what it records (through `recordings`, by default straight onto the log as the `all` role does).
 */
async function startInstance(
  options: { config?: Config; recordings?: (onLog: RecordingSink) => RecordingSink } = {},
): Promise<Instance> {
  const instanceConfig = options.config ?? config;
  const groupId = instanceConfig.kafka.groupId;
  // The recordings onto the log, noting which tapes were saved whole (the test waits for a disconnect's).
  const saved = new Set<string>();
  const savedWaiters: (() => void)[] = [];
  const server = await startLiveServer(instanceConfig, log, {
    beside: ({ eventLog, store }) => startIngestWorker({ config: instanceConfig, eventLog, store, log, groupId }),
    recordings: (onTheLog) => {
      const onLog: RecordingSink = {
        publish: async (tape, events) => {
          await onTheLog.publish(tape, events);
          if (!tape.partial) saved.add(tape.tape_id);
          for (const wake of savedWaiters.splice(0)) wake();
        },
      };
      return options.recordings ? options.recordings(onLog) : onLog;
    },
  });
  const instance: Instance = {
    ...server,
    async saved(tapeId) {
      while (!saved.has(tapeId)) await new Promise<void>((resolve) => savedWaiters.push(resolve));
    },
    landed: () => server.eventLog.committedThroughNow(groupId, server.topics.all()),
  };
  instances.push(instance);
  return instance;
}

afterAll(async () => {
  for (const instance of instances.splice(0)) await instance.close().catch(() => undefined);
});

/** The plane's client, and the StreamEvents it was sent for one market. */
class Client extends LiveClient {
  /** The StreamEvents this client was sent for one market, in order. */
  eventsOf(market: string): Json[] {
    return this.messages.flatMap((message) =>
      message.type === 'event' && message.market === market ? [message.event as Json] : [],
    );
  }
}

async function ready(instance: Instance, key: KeyName): Promise<Client> {
  const socket = new WebSocket(instance.url, [PROTOCOL], { headers: { authorization: `Bearer ${keys[key]}` } });
  const client = new Client(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  await client.nextOf('ready');
  return client;
}

async function get(instance: Instance, key: KeyName, path: string): Promise<Json> {
  const response = await instance.app.inject({
    method: 'GET',
    url: `${API}${path}`,
    headers: { authorization: `Bearer ${keys[key]}` },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as Json;
}

/** A recorded watch of `market` and the three events its client was sent: its session start and two trades from `ts`. */
async function recordedWatchOfThreeEvents(instance: Instance, key: KeyName, market: string, ts: number) {
  const client = await ready(instance, key);
  const ack = (await client.command({ type: 'watch', trader: TRADER, market })) as Json;
  expect(ack.recording.state).toBe('on');
  await client.nextOf('event');
  await instance.publisher.publish('trades', [makeTrade({ condition_id: market, price: 0.5, ts })]);
  expect(await client.nextOf('event')).toMatchObject({ seq: 2 });
  await instance.publisher.publish('trades', [makeTrade({ condition_id: market, price: 0.51, ts: ts + 1 })]);
  expect(await client.nextOf('event')).toMatchObject({ seq: 3 });
  return { client, ack };
}

/** Every event of a tape, through the tapes routes (page by page). */
async function replay(instance: Instance, key: KeyName, tapeId: string): Promise<Json[]> {
  const events: Json[] = [];
  let cursor: string | null = null;
  do {
    const page: Json = await get(
      instance,
      key,
      `/tapes/${tapeId}/events?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    events.push(...(page.events as Json[]));
    cursor = page.next_cursor as string | null;
  } while (cursor !== null);
  return events;
}

/** An event's bytes in the library: its JSON line as the download holds it. */
const lineBytes = (event: Json) => Buffer.byteLength(`${JSON.stringify(event)}\n`);
/** The bytes of events in the library: the sum of their lines. */
const linesBytes = (events: Json[]) => events.reduce((sum, event) => sum + lineBytes(event), 0);

describe('a Pro watch is recorded', () => {
  it('the tape replays exactly the events sent, with the metadata tapes carry; a resolution ends the watch', async () => {
    const instance = await startInstance();
    const client = await ready(instance, 'pro');
    const ack = await client.command({ type: 'watch', id: 'w', trader: TRADER, market: M1 });
    expect(ack).toMatchObject({ type: 'ack', of: 'watch', recording: { state: 'on' } });
    const tapeId = (ack as Json).recording.tape_id as string;
    expect(await client.nextOf('event')).toMatchObject({ seq: 1, event: { type: 'session', state: 'start' } });

    // More events than one flush holds: the tape is published in parts.
    await instance.publisher.publish('trades', [
      makeTrade({ condition_id: M1, token_side: 1, price: 0.6, size_tokens: 10, usd: 6, ts: 1_767_556_900 }),
    ]);
    expect(await client.nextOf('event')).toMatchObject({ seq: 2, event: { type: 'trade', price: 0.6 } });
    await instance.publisher.publish('book', [{ condition_id: M1, ts: 1_767_556_901, seq: 1, bid: 0.59, ask: 0.61 }]);
    expect(await client.nextOf('event')).toMatchObject({ seq: 3, event: { type: 'book' } });
    // The trader buys 4 "No" tokens for 1 USD (UP price 0.75), then sells 1 for 0.30.
    await instance.publisher.publish('fillsArchive', [
      makeFill({
        wallet: TRADER,
        condition_id: M1,
        side: 'BUY',
        token_side: 2,
        price: 0.25,
        size_tokens: 4,
        usd: 1,
        ts: 1_767_556_902,
      }),
    ]);
    expect(await client.nextOf('event')).toMatchObject({ seq: 4, event: { type: 'fill', side: 'BUY' } });
    await instance.publisher.publish('fillsArchive', [
      makeFill({
        wallet: TRADER,
        condition_id: M1,
        side: 'SELL',
        token_side: 2,
        price: 0.3,
        size_tokens: 1,
        usd: 0.3,
        ts: 1_767_556_903,
      }),
    ]);
    expect(await client.nextOf('event')).toMatchObject({ seq: 5, event: { type: 'fill', side: 'SELL' } });
    // "No" wins: the resolution, the session's stop, and the watch ends with its tape named.
    await instance.publisher.publish('markets', [makeResolution(M1, 2, 1_767_556_999)]);
    expect(await client.nextOf('event')).toMatchObject({ seq: 6, event: { type: 'resolution', winner: 'No' } });
    expect(await client.nextOf('event')).toMatchObject({ seq: 7, event: { type: 'session', state: 'stop' } });
    expect(await client.nextOf('ended')).toEqual({
      type: 'ended',
      market: M1,
      wallet: TRADER,
      reason: 'resolved',
      tape_id: tapeId,
      slots_in_use: 0,
    });
    // The watch is gone: unwatching it is refused.
    expect(await client.command({ type: 'unwatch', trader: TRADER, market: M1 })).toMatchObject({
      code: 'not_subscribed',
    });

    await instance.landed();
    const sent = client.eventsOf(M1);
    expect(sent).toHaveLength(7);
    expect(await replay(instance, 'pro', tapeId)).toEqual(sent);
    const { tape } = await get(instance, 'pro', `/tapes/${tapeId}`);
    expect(tape).toMatchObject({
      tape_id: tapeId,
      wallet: TRADER,
      condition_id: M1,
      title: TITLE(0),
      // Cash −1 + 0.30, and 3 "No" tokens left, each paying 1 when No won: 2.30, a C (above 0, up to 200).
      pnl_taped_usd: 2.3,
      grade: 'C',
      outcome: 'No',
      tick_count: 2,
      fill_count: 2,
      size_bytes: linesBytes(sent),
      partial: false,
    });
    expect(tape.duration_s).toBe(tape.ended_at - tape.started_at);
    expect(tape.started_at).toBeGreaterThanOrEqual(NOW_S);
    await client.close();
  });

  it('unwatch and disconnect save the tape too (Max); each holds exactly its watch’s events', async () => {
    const instance = await startInstance();
    const client = await ready(instance, 'max');
    const first = (await client.command({ type: 'watch', trader: TRADER, market: M2 })) as Json;
    await client.nextOf('event');
    const second = (await client.command({ type: 'watch', trader: TRADER, market: M3 })) as Json;
    await client.nextOf('event');
    await instance.publisher.publish('trades', [
      makeTrade({ condition_id: M2, price: 0.4, ts: 1_767_557_000 }),
      makeTrade({ condition_id: M3, price: 0.45, ts: 1_767_557_001 }),
    ]);
    await client.nextOf('event');
    await client.nextOf('event');
    client.socket.send(JSON.stringify({ type: 'unwatch', trader: TRADER, market: M2 }));
    expect(await client.nextOf('event')).toMatchObject({ market: M2, event: { type: 'session', state: 'stop' } });
    expect(await client.nextOf('ack')).toMatchObject({ of: 'unwatch' });
    // The connection goes while M3 is watched: its tape ends with the last event sent.
    await client.close();
    await instance.saved(second.recording.tape_id);
    await instance.landed();
    const list = await get(instance, 'max', '/tapes');
    const ids = (list.tapes as Json[]).map((tape) => tape.tape_id);
    expect(ids).toEqual(expect.arrayContaining([first.recording.tape_id, second.recording.tape_id]));
    expect(await replay(instance, 'max', first.recording.tape_id)).toEqual(client.eventsOf(M2));
    expect(await replay(instance, 'max', second.recording.tape_id)).toEqual(client.eventsOf(M3));
    expect(client.eventsOf(M2).map((event) => event.type)).toEqual(['session', 'trade', 'session']);
    expect(client.eventsOf(M3).map((event) => event.type)).toEqual(['session', 'trade']);
  });
});

describe('a Basic watch', () => {
  it('is served and not recorded: the ack says why, the library stays empty', async () => {
    const instance = await startInstance();
    const client = await ready(instance, 'basic');
    expect(await client.command({ type: 'watch', trader: TRADER, market: M4 })).toMatchObject({
      type: 'ack',
      recording: { state: 'off', reason: 'plan' },
    });
    await client.nextOf('event');
    await instance.publisher.publish('trades', [makeTrade({ condition_id: M4, ts: 1_767_557_100 })]);
    expect(await client.nextOf('event')).toMatchObject({ event: { type: 'trade' } });
    await client.command({ type: 'unwatch', trader: TRADER, market: M4 });
    await client.close();
    await instance.landed();
    expect(await get(instance, 'basic', '/tapes')).toEqual({ tapes: [], count: 0 });
    const me = await get(instance, 'basic', '/me');
    expect(me.limits).toMatchObject({ records_live: false, library_bytes: config.plans.basic.libraryBytes });
    expect(me.usage.library).toEqual({ tapes: 0, bytes_used: 0 });
  });
});

describe('the library limit', () => {
  /** A tiny library for Pro on this instance: room for a session start and one trade, not two. */
  const LIBRARY_BYTES = 200;
  const tiny = (): Config => ({
    ...config,
    plans: { ...config.plans, pro: { ...config.plans.pro, libraryBytes: LIBRARY_BYTES } },
  });

  it('a full library records no more: the watch is served, its ack says library_full; /me shows the usage', async () => {
    const instance = await startInstance({ config: tiny() });
    // The library already holds a tape larger than the whole limit.
    const stored = recordSession(1, 'r-full', 0, NOW_S - 86_400);
    await publishSessions(instance.publisher, [stored]);
    await instance.landed();
    const me = await get(instance, 'full', '/me');
    expect(me.limits).toMatchObject({ records_live: true, library_bytes: LIBRARY_BYTES });
    expect(me.usage.library).toEqual({ tapes: 1, bytes_used: stored.tape.size_bytes });
    expect(stored.tape.size_bytes).toBeGreaterThan(LIBRARY_BYTES);

    const client = await ready(instance, 'full');
    const ack = (await client.command({ type: 'watch', trader: TRADER, market: M5 })) as Json;
    expect(ack.recording).toMatchObject({ state: 'off', reason: 'library_full' });
    expect(ack.recording.message).toContain('library is full');
    expect(await client.nextOf('event')).toMatchObject({ event: { type: 'session', state: 'start' } });
    await client.command({ type: 'unwatch', trader: TRADER, market: M5 });
    await client.close();
    await instance.landed();
    expect((await get(instance, 'full', '/tapes')).count).toBe(1);
  });

  it('a recording that fills the library stops before the event that does not fit, and says so; the watch goes on', async () => {
    const instance = await startInstance({ config: tiny() });
    const { client, ack } = await recordedWatchOfThreeEvents(instance, 'filling', M6, 1_767_557_200);
    expect(await client.nextOf('recording')).toMatchObject({
      market: M6,
      wallet: TRADER,
      tape_id: ack.recording.tape_id,
      state: 'stopped',
      reason: 'library_full',
      through_seq: 2,
    });
    // Still watched: the next trade arrives.
    await instance.publisher.publish('trades', [makeTrade({ condition_id: M6, price: 0.52, ts: 1_767_557_202 })]);
    expect(await client.nextOf('event')).toMatchObject({ seq: 4, event: { type: 'trade', price: 0.52 } });
    await client.command({ type: 'unwatch', trader: TRADER, market: M6 });
    await client.close();
    await instance.landed();

    const sent = client.eventsOf(M6);
    const kept = sent.slice(0, 2);
    // The figures of the test: two events fit, three do not.
    expect(linesBytes(kept)).toBeLessThanOrEqual(LIBRARY_BYTES);
    expect(linesBytes(sent.slice(0, 3))).toBeGreaterThan(LIBRARY_BYTES);
    expect(await replay(instance, 'filling', ack.recording.tape_id)).toEqual(kept);
    const { tape } = await get(instance, 'filling', `/tapes/${ack.recording.tape_id}`);
    expect(tape).toMatchObject({ tick_count: 1, fill_count: 0, partial: false });
    const me = await get(instance, 'filling', '/me');
    expect(me.usage.library).toEqual({ tapes: 1, bytes_used: tape.size_bytes });
  });
});

describe('a recording never half-written silently', () => {
  /** Forwards to the log until the instance "dies": from then on nothing it records is published. */
  class DyingSink implements RecordingSink {
    dead = false;
    published = 0;
    #waiters: (() => void)[] = [];
    constructor(private readonly onLog: RecordingSink) {}
    async publish(...args: Parameters<RecordingSink['publish']>): Promise<void> {
      if (this.dead) throw new Error('the instance is gone');
      await this.onLog.publish(...args);
      this.published += 1;
      for (const wake of this.#waiters.splice(0)) wake();
    }
    async publishedParts(count: number): Promise<void> {
      while (this.published < count) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  it('a crash loses only what was not published yet: the tape holds the published events and says partial', async () => {
    let sink: DyingSink | undefined;
    const instance = await startInstance({ recordings: (onLog) => (sink = new DyingSink(onLog)) });
    const client = await ready(instance, 'crash');
    const ack = (await client.command({ type: 'watch', trader: TRADER, market: M2 })) as Json;
    await client.nextOf('event');
    for (let index = 0; index < 4; index++) {
      await instance.publisher.publish('trades', [
        makeTrade({ condition_id: M2, price: 0.3 + index / 100, ts: 1_767_557_300 + index }),
      ]);
      await client.nextOf('event');
    }
    // Five events sent; a part is published every three: the first three are on the log.
    await sink!.publishedParts(1);
    sink!.dead = true;
    await client.close();
    await instance.landed();

    const sent = client.eventsOf(M2);
    expect(sent).toHaveLength(5);
    const tapeId = ack.recording.tape_id as string;
    expect(await replay(instance, 'crash', tapeId)).toEqual(sent.slice(0, 3));
    const { tape } = await get(instance, 'crash', `/tapes/${tapeId}`);
    expect(tape).toMatchObject({
      partial: true,
      tick_count: 2,
      size_bytes: linesBytes(sent.slice(0, 3)),
    });
  });

  it('a part that could not be published leaves the saved tape partial', async () => {
    let failNext = false;
    const instance = await startInstance({
      recordings: (onLog) => ({
        publish: async (tape, events) => {
          if (failNext) {
            failNext = false;
            throw new Error('the log refused this part');
          }
          await onLog.publish(tape, events);
        },
      }),
    });
    const client = await ready(instance, 'crash');
    const ack = (await client.command({ type: 'watch', trader: TRADER, market: M3 })) as Json;
    await client.nextOf('event');
    // The first part (events 1-3) is lost; the rest is published, the watch ends normally.
    failNext = true;
    for (let index = 0; index < 3; index++) {
      await instance.publisher.publish('trades', [
        makeTrade({ condition_id: M3, price: 0.6 + index / 100, ts: 1_767_557_400 + index }),
      ]);
      await client.nextOf('event');
    }
    client.socket.send(JSON.stringify({ type: 'unwatch', trader: TRADER, market: M3 }));
    await client.nextOf('event');
    await client.nextOf('ack');
    await client.close();
    await instance.landed();

    const tapeId = ack.recording.tape_id as string;
    const { tape } = await get(instance, 'crash', `/tapes/${tapeId}`);
    expect(tape.partial).toBe(true);
    // What was published is there, in its place: the events after the lost part.
    expect(await replay(instance, 'crash', tapeId)).toEqual(client.eventsOf(M3).slice(3));
  });
});

describe('a log that falls behind the recordings', () => {
  it('past the backlog bound a recording stops at once and says so, and a new watch is not recorded; once the log catches up, the tape holds the events before the stop, whole', async () => {
    /** Room for a session start and one trade, not two (checked below on what was sent). */
    const BACKLOG_BYTES = 200;
    const bounded: Config = {
      ...config,
      live: { ...config.live, recording: { ...config.live.recording, maxUnpublishedBytes: BACKLOG_BYTES } },
    };
    // The log takes nothing until released.
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const instance = await startInstance({
      config: bounded,
      recordings: (onLog) => ({
        publish: async (tape, events) => {
          await released;
          await onLog.publish(tape, events);
        },
      }),
    });
    const { client, ack } = await recordedWatchOfThreeEvents(instance, 'backlog', M4, 1_767_557_500);
    const stopped = (await client.nextOf('recording')) as Json;
    expect(stopped).toMatchObject({
      market: M4,
      wallet: TRADER,
      tape_id: ack.recording.tape_id,
      state: 'stopped',
      reason: 'unavailable',
      through_seq: 2,
    });
    expect(stopped.message).toContain('stopped before event 3');
    // While the log is behind, a new watch is served and not recorded.
    const unrecorded = (await client.command({ type: 'watch', trader: TRADER, market: M5 })) as Json;
    expect(unrecorded.recording).toMatchObject({ state: 'off', reason: 'unavailable' });
    await client.nextOf('event');
    client.send({ type: 'unwatch', trader: TRADER, market: M5 });
    await client.nextOf('event');
    await client.nextOf('ack');

    // The log catches up: the stopped tape is saved, and a new watch is recorded again.
    release();
    await instance.saved(ack.recording.tape_id as string);
    const again = (await client.command({ type: 'watch', trader: TRADER, market: M6 })) as Json;
    expect(again).toMatchObject({ type: 'ack', recording: { state: 'on' } });
    await client.command({ type: 'unwatch', trader: TRADER, market: M4 });
    await client.command({ type: 'unwatch', trader: TRADER, market: M6 });
    await client.close();
    await instance.landed();

    const sent = client.eventsOf(M4);
    const kept = sent.slice(0, 2);
    // The figures of the test: two events fit and stay over half the bound (the backlog stays behind), three do not.
    const keptBytes = linesBytes(kept);
    expect(keptBytes).toBeLessThanOrEqual(BACKLOG_BYTES);
    expect(keptBytes).toBeGreaterThan(BACKLOG_BYTES / 2);
    expect(linesBytes(sent.slice(0, 3))).toBeGreaterThan(BACKLOG_BYTES);
    expect(await replay(instance, 'backlog', ack.recording.tape_id as string)).toEqual(kept);
    const { tape } = await get(instance, 'backlog', `/tapes/${ack.recording.tape_id}`);
    expect(tape).toMatchObject({ tick_count: 1, fill_count: 0, partial: false });
    // Two tapes in the library: the stopped one and the one recorded after the log caught up.
    expect((await get(instance, 'backlog', '/tapes')).count).toBe(2);
  });
});
