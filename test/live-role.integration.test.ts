/**
 * The `live` role as operators run it (`main.ts live`, a process of its own), fed from Kafka
 * (librdkafka's mock brokers): it serves the plane with the keys and the market an ingest worker landed
 * in its store, a trade published on Kafka after the watch reaches the watching `ws` client in UP space,
 * and SIGTERM ends it (exit 0). Without KAFKA_BROKERS it exits 2 at once and says why.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseConfig, type Config } from '../config.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { publishAccount, publishNewKey } from '../ingest/sources/accounts.ts';
import { openEventLog, startIngestWorker } from '../ingest/worker.ts';
import { createLogger } from '../log.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { makeConditionId, makeMarket, makeTrade, makeWallet } from './factories.ts';
import { startRole, type RoleProcess } from './harness/child.ts';
import { uniqueId } from './harness/context.ts';
import { startMockKafka, type MockKafka } from './harness/kafka-mock.ts';
import { waitForIngested } from './harness/wait.ts';

const log = createLogger('silent');
const NOW_S = Math.floor(Date.now() / 1000);
const TRADER = makeWallet('live-role-trader');
const MARKET = makeConditionId('live-role-market');

let kafka: MockKafka;
let dataDir: string;
let environment: Record<string, string>;
let config: Config;
let key = '';
const children: RoleProcess[] = [];

beforeAll(async () => {
  kafka = await startMockKafka(1);
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-live-role-'));
  environment = {
    DATA_DIR: dataDir,
    KAFKA_BROKERS: kafka.brokers.join(','),
    KAFKA_TOPIC_PREFIX: `${uniqueId('live_role')}.`,
    CLICKHOUSE_DATABASE: uniqueId('live_role'),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
  };
  config = parseConfig(environment);
  // The keys and the market, landed in the store the role will open (then released: one process holds it).
  const store = await openMigratedStore(config, log);
  const eventLog = openEventLog(config, log);
  const worker = await startIngestWorker({ config, eventLog, store, log });
  const landed = waitForIngested([worker], 3);
  const producer = await eventLog.producer();
  const publisher = new EventPublisher(producer, new TopicNames(config.kafka.topicPrefix));
  await publishAccount(publisher, { accountId: 'live-role-pro', plan: 'pro', displayName: 'Live', version: NOW_S });
  key = (await publishNewKey(publisher, 'live-role-pro', 'live role', NOW_S)).plaintext;
  await publisher.publish('markets', [makeMarket({ condition_id: MARKET, outcome1: 'Yes', outcome2: 'No' })]);
  await landed;
  await worker.stop();
  await producer.close();
  await eventLog.close();
  await store.close();
}, 120_000);

afterAll(async () => {
  for (const child of children.splice(0)) if (child.child.exitCode === null) child.child.kill('SIGKILL');
  await kafka?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('the live role', () => {
  it('without KAFKA_BROKERS exits 2 at once, naming what it needs', async () => {
    const { KAFKA_BROKERS: _brokers, ...withoutKafka } = environment;
    const child = startRole('live', [], withoutKafka);
    children.push(child);
    expect(await child.exited).toBe(2);
    expect(child.lines.some((line) => String(line.msg).includes('set KAFKA_BROKERS'))).toBe(true);
  });

  it('streams what Kafka carries to a watching client, and ends on SIGTERM with exit 0', async () => {
    const child = startRole('live', [], environment);
    children.push(child);
    const listening = await child.waitFor((line) => line.msg === 'live plane listening');
    const address = String(listening.address);
    const socket = new WebSocket(`${address.replace('http', 'ws')}${config.api.prefix}${config.live.path}`, [
      config.live.protocol,
      `bearer.${key}`,
    ]);
    const messages: { type: string; [field: string]: unknown }[] = [];
    const waiters: (() => void)[] = [];
    socket.on('message', (data) => {
      messages.push(JSON.parse(data.toString()) as (typeof messages)[number]);
      for (const wake of waiters.splice(0)) wake();
    });
    const next = async (predicate: (message: (typeof messages)[number]) => boolean) => {
      for (;;) {
        const found = messages.find(predicate);
        if (found) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    };
    expect(await next((message) => message.type === 'ready')).toMatchObject({ plan: 'Pro Intelligence' });
    socket.send(JSON.stringify({ type: 'watch', id: 'w', trader: TRADER, market: MARKET }));
    expect(await next((message) => message.type === 'ack' || message.type === 'error')).toMatchObject({
      type: 'ack',
      of: 'watch',
      market: MARKET,
    });

    // A trade of token 2 at 0.25 is 0.75 in UP space.
    const eventLog = openEventLog(config, log);
    const producer = await eventLog.producer();
    await new EventPublisher(producer, new TopicNames(config.kafka.topicPrefix)).publish('trades', [
      makeTrade({ condition_id: MARKET, ts: NOW_S, token_side: 2, price: 0.25, size_tokens: 40 }),
    ]);
    const trade = await next(
      (message) => message.type === 'event' && (message.event as { type: string }).type === 'trade',
    );
    expect(trade).toMatchObject({
      market: MARKET,
      event: { type: 'trade', ts: NOW_S, price: 0.75, size_tokens: 40, token_side: 2 },
    });
    await producer.close();
    await eventLog.close();

    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    child.child.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    // The plane said why before the server closed.
    expect((await closed).code).toBe(1001);
  });
});
