/**
 * Projections are rebuilt from the log: export every topic to .jsonl.gz files, replay them into an empty
 * store, and every projection is identical to the one built live from Kafka.
 */
import { expectClose } from './harness/close.ts';
import { mkdtemp, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import type { KafkaLog } from '../ingest/bus/kafka.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { withPublisher } from '../roles/runtime.ts';
import { exportTopics, replayFiles } from '../ingest/sources/replay.ts';
import { startIngestWorker } from '../ingest/worker.ts';
import { openStore, type Store } from '../projections/store.ts';
import {
  BASE_TS,
  makeConditionId,
  makeFill,
  makeLeg,
  makeMarket,
  makeResolution,
  makeTrade,
  makeWallet,
} from './factories.ts';
import {
  createTestContext,
  kafkaLogFor,
  testEnvironment,
  uniqueId,
  PROCESS_DATA_DIR,
  type TestContext,
} from './harness/context.ts';
import { waitForIngested } from './harness/wait.ts';

/** Every projection, read in a canonical order (aggregate states finalized). */
const PROJECTIONS: Record<string, string> = {
  markets_meta: 'SELECT * FROM {db:Identifier}.markets_meta FINAL ORDER BY ALL',
  market_resolutions: 'SELECT * FROM {db:Identifier}.market_resolutions FINAL ORDER BY ALL',
  fills: 'SELECT * FROM {db:Identifier}.fills FINAL ORDER BY ALL',
  fills_v2: 'SELECT * FROM {db:Identifier}.fills_v2 FINAL ORDER BY ALL',
  position_legs_v2: 'SELECT * FROM {db:Identifier}.position_legs_v2 FINAL ORDER BY ALL',
  markets_meta_v2: 'SELECT * FROM {db:Identifier}.markets_meta_v2 FINAL ORDER BY ALL',
  market_resolutions_v2: 'SELECT * FROM {db:Identifier}.market_resolutions_v2 FINAL ORDER BY ALL',
  position_legs: 'SELECT * FROM {db:Identifier}.position_legs FINAL ORDER BY ALL',
  trades: 'SELECT * FROM {db:Identifier}.trades FINAL ORDER BY ALL',
  book_ticks: 'SELECT * FROM {db:Identifier}.book_ticks FINAL ORDER BY ALL',
  upstream_profiles: 'SELECT * FROM {db:Identifier}.upstream_profiles FINAL ORDER BY ALL',
  upstream_equity: 'SELECT * FROM {db:Identifier}.upstream_equity FINAL ORDER BY ALL',
  upstream_status: 'SELECT * FROM {db:Identifier}.upstream_status FINAL ORDER BY ALL',
  watchers: 'SELECT * FROM {db:Identifier}.watchers FINAL ORDER BY ALL',
  accounts: 'SELECT * FROM {db:Identifier}.accounts FINAL ORDER BY ALL',
  api_keys: 'SELECT * FROM {db:Identifier}.api_keys FINAL ORDER BY ALL',
  market_wallets: 'SELECT * FROM {db:Identifier}.market_wallets FINAL ORDER BY ALL',
  trader_names: 'SELECT * FROM {db:Identifier}.trader_names FINAL ORDER BY ALL',
  trader_name_index: 'SELECT * FROM {db:Identifier}.trader_name_index FINAL ORDER BY ALL',
  market_marks_v2:
    'SELECT condition_id, argMaxMerge(last_up_price) AS last_up_price, max(last_ts) AS last_ts, min(first_ts) AS first_ts FROM {db:Identifier}.market_marks_v2 GROUP BY condition_id ORDER BY condition_id',
  trader_markets_v2: 'SELECT * FROM {db:Identifier}.trader_markets_v2 FINAL ORDER BY ALL',
  trader_skill_markets: 'SELECT * FROM {db:Identifier}.trader_skill_markets FINAL ORDER BY ALL',
  dead_letters: 'SELECT reason, original_base64 FROM {db:Identifier}.dead_letters FINAL ORDER BY ALL',
};

async function snapshot(store: Store): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const [name, sql] of Object.entries(PROJECTIONS)) out[name] = await store.query(sql);
  return out;
}

describe('replay of exported topics', () => {
  let context: TestContext | undefined;
  let kafka: KafkaLog | undefined;
  let replayStore: Store | undefined;

  afterAll(async () => {
    await kafka?.close();
    await replayStore?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await replayStore?.close();
    await context?.cleanup();
  });

  it('rebuilds identical projections in an empty store', async () => {
    context = await createTestContext('replay');
    kafka = kafkaLogFor(context);
    const publisher = new EventPublisher(await kafka.producer(), context.topics);

    // Some of every topic, duplicates and a corrupt message included.
    const wallets = Array.from({ length: 5 }, (_, index) => makeWallet(`replay-w${index}`));
    const markets = Array.from({ length: 3 }, (_, index) => makeConditionId(`replay-m${index}`));
    const fills = Array.from({ length: 600 }, (_, index) =>
      makeFill({
        wallet: wallets[index % 5]!,
        condition_id: markets[index % 3]!,
        side: index % 3 === 0 ? 'SELL' : 'BUY',
        token_side: index % 2 === 0 ? 1 : 2,
        ts: BASE_TS + index,
      }),
    );
    const events = {
      markets: [
        ...markets.map((conditionId) => makeMarket({ condition_id: conditionId })),
        makeResolution(markets[0]!, 2),
      ],
      fillsArchive: fills,
      fillsUpstream: fills.slice(0, 100).map((fill) => ({ ...fill, name: 'Replayer' })),
      positions: [makeLeg({ wallet: wallets[0]!, condition_id: markets[0]!, kind: 'REDEEM', tokens: 10, usd: 10 })],
      trades: Array.from({ length: 300 }, (_, index) =>
        makeTrade({
          condition_id: markets[index % 3]!,
          price: ((index % 90) + 5) / 100,
          ts: BASE_TS + index,
          seq: index,
        }),
      ),
      book: [{ condition_id: markets[1]!, ts: BASE_TS, seq: 1, bid: 0.4, ask: 0.42 }],
      upstreamProfiles: wallets.map((wallet, index) => ({
        wallet,
        name: `Trader${index}`,
        pnl: index * 10,
        pnl_realized: index,
        pnl_unrealized: 0,
        portfolio_value: 100,
        as_of: BASE_TS,
      })),
      upstreamEquity: wallets.map((wallet, index) => ({ wallet, ts: BASE_TS + index, pnl_usd: index * 3 })),
      upstreamStatus: [{ ts: BASE_TS, state: 'online' as const }],
      watchers: [{ wallet: wallets[0]!, watching: 12, ts: BASE_TS }],
      accounts: [{ account_id: 'acct-1', plan: 'pro' as const, version: 1 }],
      keys: [
        {
          key_id: 'key_1',
          account_id: 'acct-1',
          key_sha256: 'a'.repeat(64),
          label: 'laptop',
          last4: 'abcd',
          created_at: BASE_TS,
          version: 1,
        },
      ],
    };
    const total = Object.values(events).reduce((sum, list) => sum + list.length, 0) + 1;

    const worker = await startIngestWorker({
      config: context.config,
      eventLog: kafka,
      store: context.store,
      log: context.log,
    });
    const ingested = waitForIngested([worker], total);
    for (const [topicId, list] of Object.entries(events)) {
      await publisher.publish(topicId as keyof typeof events, list as never);
    }
    await (await kafka.producer()).send(context.topics.of('trades'), [{ key: null, value: '{"broken": ' }]);
    await ingested;
    await worker.stop();
    const live = await snapshot(context.store);
    expect((live.fills ?? []).length).toBe(fills.length);
    expect((live.dead_letters ?? []).length).toBe(1);

    const directory = await mkdtemp(path.join(os.tmpdir(), 'ta-export-'));
    const exported = await exportTopics(kafka, context.topics, directory, { gzip: true });
    expect(exported.events).toBe(total);
    expect((await readdir(directory)).sort()).toContain('fills.archive.jsonl.gz');

    // Replay through the in-process log (what `main.ts replay` does without KAFKA_BROKERS) into a fresh database.
    const replayId = uniqueId('replayed');
    const replayEnvironment = testEnvironment(replayId, PROCESS_DATA_DIR);
    delete (replayEnvironment as Record<string, string | undefined>).KAFKA_BROKERS;
    const replayConfig = parseConfig(replayEnvironment);
    const counts = await withPublisher(replayConfig, context.log, ({ publisher: replayPublisher }) =>
      replayFiles([directory], replayPublisher),
    );
    expect(counts).toMatchObject({ lines: total, published: total, unattributed: 0 });

    replayStore = await openStore(replayConfig.clickhouse);
    const replayed = await snapshot(replayStore);
    // Rollups sum floats in an order the engine does not fix: equal, sums within their last bits.
    for (const name of Object.keys(PROJECTIONS)) expectClose(replayed[name], live[name], name);
  });
});
