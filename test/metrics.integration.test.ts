/**
 * `/metrics` after real work: the counters move by exactly what the test did (requests by route and
 * status, gate decisions, authentication failures, store reads; events ingested by topic, dead letters
 * by topic and reason, consumer lag per partition while a write is held and after it), label values
 * stay bounded whatever the URLs and wallets, and a worker role serves its own metrics port.
 *
 * Scrapes are read with the test's own exposition parser (test/harness/prometheus.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TopicNames } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { startIngestWorker } from '../ingest/worker.ts';
import { exposition } from '../metrics/registry.ts';
import { readWalletMarketRows, readWalletMarkets } from '../projections/wallet-markets.ts';
import { readUpstreamHistory } from '../projections/upstream-history.ts';
import { readFullTape, readSampledChart, readTraderMarket } from '../projections/prices.ts';
import { refreshRollups } from '../projections/rollups.ts';
import { readTraderName } from '../projections/traders.ts';
import { landEvents } from './harness/land.ts';
import type { Store } from '../projections/store.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeTrade, makeWallet } from './factories.ts';
import { API, gatesNeverBind, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { startRole } from './harness/child.ts';
import { createTestContext, kafkaLogFor, TEST_OVERRIDES, testEnvironment, uniqueId } from './harness/context.ts';
import { parseExposition, sampleSum, samplesOf, type Exposition } from './harness/prometheus.ts';
import { waitForIngested } from './harness/wait.ts';

const HTTP = 'trader_analytics_http_request_duration_seconds_count';
const NOW = BASE_TS + 86_400;

async function scrapeProcess(): Promise<Exposition> {
  return parseExposition((await exposition()).body);
}

describe('metrics of the read API', () => {
  let api: TestApi;
  /** Armed: the next store query waits until `release` (a read in flight, held where the test wants it). */
  const hold = { armed: false, entered: () => {}, release: Promise.resolve() };

  beforeAll(async () => {
    const config = inProcessConfig('metrics-api');
    const keys = await publishPlanKeys(config, NOW);
    const wrapStore = (store: Store): Store => ({
      ...store,
      async query<Row>(sql: string, params?: Record<string, unknown>, options?: { timeoutSeconds?: number }) {
        if (hold.armed) {
          hold.armed = false;
          hold.entered();
          await hold.release;
        }
        return store.query<Row>(sql, params, options);
      },
    });
    api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind(), wrapStore });
  });
  afterAll(async () => {
    await api?.close();
  });

  async function scrape(): Promise<Exposition> {
    const response = await api.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseExposition(response.body);
  }

  it('counts requests by route template and status, gate decisions, auth failures and store reads', async () => {
    const before = await scrape();
    const wallet = makeWallet('metrics-card');
    const statuses: Record<string, number[]> = { me: [], unknown: [], unauthorized: [], trader: [] };
    for (let i = 0; i < 3; i++) statuses.me!.push((await api.get('me')).statusCode);
    for (let i = 0; i < 2; i++) statuses.unknown!.push((await api.get(`no-such-resource-${i}`)).statusCode);
    statuses.unauthorized!.push((await api.get('me', { authorization: 'Bearer tak_not_a_key' })).statusCode);
    for (let i = 0; i < 2; i++) statuses.trader!.push((await api.get(`traders/${wallet}`)).statusCode);
    // MCP answers on a hijacked reply: still one request of the /mcp route.
    const mcp = await api.app.inject({
      method: 'POST',
      url: api.config.mcp.path,
      headers: {
        authorization: `Bearer ${api.keys.pro}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    });
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      sampleSum(after, name, labels) - sampleSum(before, name, labels);

    expect(statuses.me).toEqual([200, 200, 200]);
    expect(statuses.unknown).toEqual([404, 404]);
    expect(statuses.unauthorized).toEqual([401]);
    const traderStatus = statuses.trader![0]!;
    expect(statuses.trader).toEqual([traderStatus, traderStatus]);

    expect(delta(HTTP, { method: 'GET', route: `${API}/me`, status_code: '200' })).toBe(3);
    expect(delta(HTTP, { method: 'GET', route: `${API}/me`, status_code: '401' })).toBe(1);
    expect(delta(HTTP, { method: 'GET', route: `${API}/traders/:trader`, status_code: String(traderStatus) })).toBe(2);
    expect(delta(HTTP, { route: 'unmatched', status_code: '404' })).toBe(2);
    expect(mcp.statusCode).toBe(200);
    expect(delta(HTTP, { method: 'POST', route: api.config.mcp.path, status_code: '200' })).toBe(1);
    // Every request is in exactly one histogram series; the scrape itself is not counted.
    expect(delta(HTTP, {})).toBe(9);
    // Buckets are cumulative: the +Inf bucket is the count.
    expect(
      sampleSum(after, 'trader_analytics_http_request_duration_seconds_bucket', {
        route: `${API}/me`,
        status_code: '200',
        le: '+Inf',
      }),
    ).toBe(sampleSum(after, HTTP, { route: `${API}/me`, status_code: '200' }));

    // Metered calls: /me three times and the trader twice (an unknown path is not a call, a 401 never reaches the gates).
    expect(delta('trader_analytics_gate_decisions_total', { outcome: 'admitted' })).toBe(5);
    expect(delta('trader_analytics_gate_decisions_total', {})).toBe(5);
    expect(delta('trader_analytics_auth_failures_total', { outcome: 'refused' })).toBe(1);

    // The trader's card reads the wallet's markets (readWalletMarketRows while this process's worker
    // reports the store's changes, else readWalletMarkets) and its upstream history (readUpstreamHistory):
    // their latency is recorded under those names (a statement is named after the read function that sends
    // it, not readBundle or the cache).
    const reads = (...names: string[]) =>
      names.reduce(
        (sum, read) => sum + delta('trader_analytics_store_query_duration_seconds_count', { read, outcome: 'ok' }),
        0,
      );
    expect(reads(readWalletMarketRows.name, readWalletMarkets.name)).toBeGreaterThanOrEqual(2);
    expect(reads(readUpstreamHistory.name)).toBeGreaterThanOrEqual(2);
    const readNames = new Set(
      samplesOf(after, 'trader_analytics_store_query_duration_seconds_count').map((sample) => sample.labels.read),
    );
    for (const name of readNames) expect(name).toMatch(/^[A-Za-z_$][\w$.]*$/);

    // The keys were published through the in-process log (as `all` does): its partitions report their lag, caught up.
    const accountsLag = samplesOf(after, 'trader_analytics_ingest_consumer_lag_messages', {
      topic: new TopicNames(api.config.kafka.topicPrefix).of('accounts'),
    });
    expect(accountsLag.length).toBeGreaterThan(0);
    expect(accountsLag.map((sample) => sample.value)).toEqual(accountsLag.map(() => 0));

    expect(sampleSum(after, 'trader_analytics_heavy_reads_capacity')).toBe(api.config.gates.heavyReadsPerInstance);
    expect(sampleSum(after, 'trader_analytics_heavy_reads_in_flight')).toBe(0);
    // Runtime metrics of the process.
    expect(after.types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(after.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
  });

  it('names each store read after the read function, never after a closure handed to the cache', async () => {
    // A traded market with prices, so that the summary, the chart and the tape each read the store.
    const wallet = makeWallet('metrics-named');
    const market = makeConditionId('metrics-named');
    await landEvents(api.store, 'markets', [makeMarket({ condition_id: market })]);
    await landEvents(api.store, 'trades', [
      makeTrade({ condition_id: market, ts: BASE_TS + 60 }),
      makeTrade({ condition_id: market, ts: BASE_TS + 120, price: 0.6 }),
    ]);
    const tokens = await landEvents(api.store, 'fillsArchive', [
      makeFill({ wallet, condition_id: market, ts: BASE_TS + 60 }),
    ]);
    await refreshRollups(api.store, tokens, api.config.whales);
    const before = await scrape();
    // The chart first: a summary would keep the trader's market that the chart then takes without a read.
    for (const url of [
      `traders/${wallet}`,
      `traders/${wallet}/markets/${market}`,
      `traders/${wallet}/markets/${market}/tape`,
      `traders/${wallet}/markets/${market}/summary`,
    ]) {
      expect((await api.get(url, { plan: 'max' })).statusCode, url).toBe(200);
    }
    const after = await scrape();
    const counted = (read: string) =>
      sampleSum(after, 'trader_analytics_store_query_duration_seconds_count', { read }) -
      sampleSum(before, 'trader_analytics_store_query_duration_seconds_count', { read });
    // The cache hands each read a closure: the label is the read function the closure calls.
    for (const read of [readTraderName.name, readTraderMarket.name, readSampledChart.name, readFullTape.name]) {
      expect(counted(read), read).toBeGreaterThanOrEqual(1);
    }
    // The summary's bundle goes through the market-names plumbing (readBundleNamed): named after the function that asks for it.
    expect(counted('readSummaryParts')).toBeGreaterThanOrEqual(1);
    const labels = new Set(
      samplesOf(after, 'trader_analytics_store_query_duration_seconds_count').map((sample) => sample.labels.read),
    );
    expect([...labels].filter((label) => label === 'read' || label === '<anonymous>' || label === 'other')).toEqual([]);
  });

  it('shows a heavy read holding a slot of the lane while it runs, and none after', async () => {
    const wallet = makeWallet('metrics-heavy');
    const market = makeConditionId('metrics-heavy');
    // The key is looked up once and cached: the held read comes after the admission.
    expect((await api.get('me')).statusCode).toBe(200);
    let release!: () => void;
    hold.release = new Promise<void>((resolve) => (release = resolve));
    const entered = new Promise<void>((resolve) => (hold.entered = resolve));
    hold.armed = true;
    // The full tape is a heavy read: admitted into the lane before its first store read, which is held.
    const response = api.get(`traders/${wallet}/markets/${market}/tape`);
    await entered;
    expect(sampleSum(await scrape(), 'trader_analytics_heavy_reads_in_flight')).toBe(1);
    release();
    await response;
    expect(sampleSum(await scrape(), 'trader_analytics_heavy_reads_in_flight')).toBe(0);
  });

  it('keeps label values bounded: no wallet, key or raw URL ever becomes a label', async () => {
    const before = await scrape();
    const wallets = Array.from({ length: 30 }, (_, index) => makeWallet(`metrics-bounded-${index}`));
    for (const [index, wallet] of wallets.entries()) {
      await api.get(`traders/${wallet}`);
      await api.get(`traders/${wallet}/markets`);
      await api.get(`no-such/${wallet}/${index}`);
      await api.get(`/totally/elsewhere/${index}?wallet=${wallet}`);
    }
    const after = await scrape();
    const seriesOf = (exposition: Exposition) =>
      new Set(samplesOf(exposition, HTTP).map((sample) => JSON.stringify(sample.labels)));
    const added = [...seriesOf(after)].filter((series) => !seriesOf(before).has(series));
    // 120 requests on 120 distinct URLs: at most one new series per (route template, status) pair.
    expect(added.length).toBeLessThanOrEqual(4);

    const text = (await api.app.inject({ method: 'GET', url: '/metrics' })).body;
    for (const wallet of wallets) expect(text).not.toContain(wallet.slice(2));
    for (const key of Object.values(api.keys)) expect(text).not.toContain(key);
    expect(text).not.toContain('elsewhere');
    const routes = new Set(samplesOf(after, HTTP).map((sample) => sample.labels.route));
    for (const route of routes) expect(route === 'unmatched' || route!.startsWith('/')).toBe(true);
    expect([...routes].filter((route) => route!.includes('0x'))).toEqual([]);
  });
});

describe('metrics of the ingest worker', () => {
  it('counts events by topic and dead letters by reason, and reports the lag of a held write, then none', async () => {
    const context = await createTestContext('metrics-ingest');
    const kafka = kafkaLogFor(context);
    try {
      const producer = await kafka.producer();
      const publisher = new EventPublisher(producer, context.topics);
      const topic = context.topics.of('fillsArchive');
      // One wallet: every message is keyed alike and lands in one partition.
      const wallet = makeWallet('metrics-lag');
      const fills = Array.from({ length: 120 }, (_, index) => makeFill({ wallet, ts: BASE_TS + index }));
      await publisher.publish('fillsArchive', fills);
      const valid = JSON.parse(JSON.stringify(fills[0]!)) as Record<string, unknown>;
      await producer.send(topic, [
        { key: wallet, value: '{not json' },
        { key: wallet, value: JSON.stringify({ ...valid, price: 7 }) },
        { key: wallet, value: JSON.stringify({ ...valid, side: 'HOLD' }) },
      ]);
      const total = fills.length + 3;

      // Hold the first landing insert: the batch is fetched, nothing is committed yet.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const insertEntered = new Promise<void>((resolve) => (entered = resolve));
      const holding: Store = {
        ...context.store,
        async insertJsonLines(table, lines, token) {
          entered();
          await held;
          return context.store.insertJsonLines(table, lines, token);
        },
      };
      const before = await scrapeProcess();
      const startedAt = Date.now() / 1000;
      const worker = await startIngestWorker({
        config: context.config,
        eventLog: kafka,
        store: holding,
        log: context.log,
      });
      try {
        const ingested = waitForIngested([worker], total);
        await insertEntered;
        const holding1 = await scrapeProcess();
        const lagSeries = samplesOf(holding1, 'trader_analytics_ingest_consumer_lag_messages', { topic });
        expect(lagSeries).toHaveLength(1);
        expect(lagSeries[0]!.value).toBe(total);
        expect(lagSeries[0]!.labels.partition).toMatch(/^\d+$/);

        release();
        await ingested;
        const after = await scrapeProcess();
        const delta = (name: string, labels: Record<string, string> = {}) =>
          sampleSum(after, name, labels) - sampleSum(before, name, labels);
        expect(sampleSum(after, 'trader_analytics_ingest_consumer_lag_messages', { topic })).toBe(0);
        expect(delta('trader_analytics_ingest_events_total', { topic: 'fills.archive' })).toBe(fills.length);
        expect(delta('trader_analytics_dead_letters_total', { topic: 'fills.archive', reason: 'invalid_json' })).toBe(
          1,
        );
        expect(delta('trader_analytics_dead_letters_total', { topic: 'fills.archive', reason: 'schema' })).toBe(2);
        expect(delta('trader_analytics_dead_letters_total')).toBe(3);
        // Every message went through exactly one write.
        expect(delta('trader_analytics_ingest_batch_events_sum')).toBe(total);
        expect(
          delta('trader_analytics_ingest_insert_duration_seconds_count', { table: 'fills' }),
        ).toBeGreaterThanOrEqual(1);
        expect(
          delta('trader_analytics_rollup_refresh_duration_seconds_count', { outcome: 'ok' }),
        ).toBeGreaterThanOrEqual(1);
        expect(sampleSum(after, 'trader_analytics_ingest_last_commit_timestamp_seconds')).toBeGreaterThanOrEqual(
          Math.floor(startedAt),
        );
        // What the dead-letter topic's own table holds agrees with the counter.
        const [recorded] = await context.store.query<{ n: number }>(
          'SELECT count() AS n FROM {db:Identifier}.dead_letters WHERE topic = {topic:String}',
          { topic },
        );
        expect(recorded!.n).toBe(3);
      } finally {
        release();
        await worker.stop();
        await producer.close();
      }
    } finally {
      await kafka.close();
      await context.cleanup();
    }
  });

  it('serves /metrics and /healthz on METRICS_PORT in the ingest role', async () => {
    const id = uniqueId('metrics-role');
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-metrics-role-'));
    const environment = testEnvironment(id, dataDir, { METRICS_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'debug' });
    const role = startRole('ingest', [], environment, { overrides: TEST_OVERRIDES });
    const context = await createTestContext('metrics-role-publisher', {
      withoutStore: true,
      environment: { KAFKA_TOPIC_PREFIX: environment.KAFKA_TOPIC_PREFIX! },
    });
    const kafka = kafkaLogFor(context);
    try {
      const listening = await role.waitFor((line) => line.msg === 'metrics on /metrics');
      const base = `http://127.0.0.1:${String(listening.port)}`;
      await role.waitFor((line) => line.msg === 'ingest worker started');
      const producer = await kafka.producer();
      const fills = Array.from({ length: 40 }, (_, index) =>
        makeFill({ wallet: makeWallet(`metrics-role-${index % 5}`), ts: BASE_TS + index }),
      );
      await new EventPublisher(producer, context.topics).publish('fillsArchive', fills);
      await producer.close();
      // The worker logs each committed slice: wait until the slices cover every fill.
      let committed = 0;
      await role.waitFor((line) => line.msg === 'batch ingested' && (committed += Number(line.valid)) >= fills.length);

      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      const response = await fetch(`${base}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const scraped = parseExposition(await response.text());
      expect(sampleSum(scraped, 'trader_analytics_ingest_events_total', { topic: 'fills.archive' })).toBe(fills.length);
      expect(sampleSum(scraped, 'trader_analytics_dead_letters_total')).toBe(0);
      expect(scraped.types.get('process_resident_memory_bytes')).toBe('gauge');
      expect((await fetch(`${base}/nothing`)).status).toBe(404);

      // Another worker role on the same host and port still does its work, without metrics.
      const second = startRole(
        'simulate',
        ['--days', '0', '--no-live'],
        {
          ...environment,
          METRICS_PORT: String(listening.port),
          KAFKA_TOPIC_PREFIX: `${environment.KAFKA_TOPIC_PREFIX!}second.`,
        },
        { overrides: TEST_OVERRIDES },
      );
      await second.waitFor((line) => line.msg?.startsWith('METRICS_PORT is in use') === true);
      expect(await second.exited).toBe(0);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      role.child.kill('SIGTERM');
      expect(await role.exited).toBe(0);
      await kafka.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
