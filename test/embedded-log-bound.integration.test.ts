/**
 * The embedded default's in-process log stays within its bound and never stops its producers on a reader
 * that does not read a topic. Wired as the `all` role wires it (roles/all.ts: `openEventLog`'s 64 MiB log,
 * an ingest worker, `buildRoleServer` with the live plane fed from the same log, a client
 * watching a market), the test publishes twice the bound on a topic the live feed does not read
 * (upstream heartbeats, as large as the contract allows) beside fills it does read. Before, the feed's
 * group held the heartbeats back as if it sat at their start: the producer waited for good once 64 MiB
 * were retained (`SIM_BACKFILL_DAYS=10 npm start` stopped at about 5 M events). Now every send returns,
 * the log never holds more than its bound plus one send, the topic is trimmed to nothing once ingest has
 * committed it, every heartbeat is in the store, and the watcher still gets the market's next trade.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { MemoryLog } from '../ingest/bus/memory.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { openEventLog, startIngestWorker, type IngestWorker } from '../ingest/worker.ts';
import { createLogger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { buildRoleServer } from '../roles/http-server.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeMarket, makeTrade, makeWallet } from './factories.ts';
import { inProcessConfig, publishTestAccounts } from './harness/api.ts';
import { LiveClient } from './harness/live.ts';

const config = inProcessConfig('logbound');
const log = createLogger('error');
const NOW_S = Math.floor(Date.now() / 1000);
/** What `openEventLog` gives the `all` role (ingest/worker.ts); the test reads it back from the log it opened. */
const BOUND = 64 * 1024 * 1024;
const MARKET = makeConditionId('log-bound');
const TRADER = makeWallet('log-bound-trader');

const closing: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closing.reverse()) await close().catch(() => undefined);
});

it('publishes twice the log’s bound with the live feed running: never blocked, the log trimmed, nothing lost', async () => {
  // The `all` role's wiring (roles/all.ts), in the same order.
  const store: Store = await openMigratedStore(config, log);
  closing.push(async () => {
    await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store.close();
  });
  const eventLog = openEventLog(config, log);
  if (!(eventLog instanceof MemoryLog)) throw new Error('the embedded default runs the in-process log');
  const topics = new TopicNames(config.kafka.topicPrefix);
  const worker: IngestWorker = await startIngestWorker({ config, eventLog, store, log });
  const producer = await eventLog.producer();
  const publisher = new EventPublisher(producer, topics);
  const app = await buildRoleServer({
    log,
    store,
    readiness: () => ({ ready: true, detail: {} }),
    config,
    plane: { eventLog, topics, publisher },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  closing.push(async () => {
    await app.close();
    await worker.stop();
    await producer.close();
    await eventLog.close();
  });
  const landed = () => eventLog.committedThroughNow(config.kafka.groupId, topics.all());

  // A Max user watching one market, as a live chart would.
  const keys = await publishTestAccounts(publisher, [{ accountId: 'lb-max', plan: 'max', keys: ['m'] }], NOW_S);
  await publisher.publish('markets', [makeMarket({ condition_id: MARKET })]);
  await landed();
  const { port } = app.server.address() as AddressInfo;
  const socket = new WebSocket(
    `ws://127.0.0.1:${port}${config.api.prefix}${config.live.path}`,
    [config.live.protocol],
    {
      headers: { authorization: `Bearer ${keys.m}` },
    },
  );
  const client = new LiveClient(socket);
  closing.push(() => client.close());
  await client.nextOf('ready');
  expect(await client.command({ type: 'watch', id: 'w', trader: TRADER, market: MARKET })).toMatchObject({
    type: 'ack',
    of: 'watch',
  });
  expect(await client.nextOf('event')).toMatchObject({ event: { type: 'session', state: 'start' } });

  // Heartbeats of 1,000 characters of detail (the contract's most) on `upstream.status`, which the live
  // feed does not read, and fills of other traders on `fills.archive`, which it reads and filters.
  const detail = 'd'.repeat(1000);
  const perSend = 400;
  const heartbeatTopic = topics.of('upstreamStatus');
  let heartbeats = 0;
  let highest = 0;
  let sendBytes = 0;
  const firstTs = NOW_S - 10_000_000;
  const startOffsets = Array.from({ length: eventLog.partitionCount(heartbeatTopic) }, (_, partition) =>
    eventLog.endOffset(heartbeatTopic, partition),
  );
  let publishedBytes = 0;
  while (publishedBytes < 2 * BOUND) {
    const batch = Array.from({ length: perSend }, (_, index) => ({
      ts: firstTs + heartbeats + index,
      state: 'online' as const,
      detail,
    }));
    const before = eventLog.retained;
    await publisher.publish('upstreamStatus', batch);
    heartbeats += batch.length;
    await publisher.publish('fillsArchive', [makeFill({ condition_id: MARKET })]);
    highest = Math.max(highest, eventLog.retained);
    const added = eventLog.retained - before;
    if (added > sendBytes) sendBytes = added;
    publishedBytes +=
      perSend * (Buffer.byteLength(JSON.stringify({ ts: firstTs, state: 'online', detail })) + 'upstream'.length + 64);
  }
  // Every send returned (the loop above ended), and the log never held more than its bound and one send.
  expect(highest).toBeLessThanOrEqual(BOUND + sendBytes);
  expect(highest).toBeGreaterThan(BOUND / 2);

  await landed();
  // The topic the feed does not read is trimmed to nothing once ingest committed it.
  for (const [partition, start] of startOffsets.entries()) {
    expect(eventLog.startOffset(heartbeatTopic, partition)).toBe(eventLog.endOffset(heartbeatTopic, partition));
    expect(eventLog.endOffset(heartbeatTopic, partition)).toBeGreaterThanOrEqual(start);
  }
  expect(eventLog.retained).toBeLessThan(BOUND / 64);
  const [stored] = await store.query<{ rows: string }>(
    'SELECT count() AS rows FROM {db:Identifier}.upstream_status FINAL WHERE ts >= {from:UInt32}',
    { from: firstTs },
  );
  expect(Number(stored!.rows)).toBe(heartbeats);

  // The live plane still streams: the watched market's next trade reaches its watcher.
  const trade = makeTrade({ condition_id: MARKET, ts: NOW_S });
  await publisher.publish('trades', [trade]);
  expect(await client.nextOf('event')).toMatchObject({ market: MARKET, event: { type: 'trade' } });
}, 240_000);
