/**
 * `npm run bench:prices` — read latencies of the price projections on one large market, beside the
 * cheapest possible ClickHouse query on the same table in the same run.
 *
 * Builds (embedded ClickHouse, a fresh data directory) a 53-day market with TRADES trades whose price
 * moves about 27,000 times, and a day of fills from WALLETS wallets over MARKETS markets for the whale
 * flow, then times, over REPEAT calls each (medians):
 *   baseline      SELECT count() over the market's primary-key range of `trades`
 *   sampled chart the default chart (300 points over the market's life) and a one-day window
 *   full tape     the whole change-only per-second tape
 *   whale flow    the default whale-flow read (by burst, 24 h, min 10,000 USD)
 * and prints each with its ratio to the baseline. Options: --trades N (default 2000000), --repeat N.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../config.ts';
import { median, runBenchmark } from './support.ts';
import { createLogger } from '../../log.ts';
import type { EventInputOf } from '../../ingest/contract/topics.ts';
import { openMigratedStore } from '../../roles/runtime.ts';
import { refreshRollups } from '../../projections/rollups.ts';
import { readFullTape } from '../../projections/prices.ts';
import { readWhaleFlow } from '../../projections/whales.ts';
import { landEvents } from '../harness/land.ts';
import { readMarketTimes, readSampledSeries } from '../harness/prices.ts';

const { values } = parseArgs({
  options: {
    trades: { type: 'string', default: '2000000' },
    repeat: { type: 'string', default: '30' },
  },
});
const TRADES = Number(values.trades);
const REPEAT = Number(values.repeat);
const DAYS = 53;
const PRICE_MOVES = 27_000;
const WALLETS = 500;
const MARKETS = 50;
const WHALE_FILLS = 20_000;
const INSERT_CHUNK = 100_000;

function hex(value: number, length: number): string {
  return value.toString(16).padStart(length, '0').slice(-length);
}

async function timeMedian(work: () => Promise<unknown>): Promise<number> {
  await work(); // warm
  const samples: number[] = [];
  for (let index = 0; index < REPEAT; index++) {
    const started = performance.now();
    await work();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-prices-'));
  const config = parseConfig({ DATA_DIR: dataDir, CLICKHOUSE_DATABASE: 'bench_prices' });
  const store = await openMigratedStore(config, createLogger('error'));
  const now = Math.floor(Date.now() / 1000);
  const start = now - DAYS * 86_400;
  const conditionId = `0x${hex(0xbeef, 64)}`;

  const settings = { burstGapSeconds: config.whales.burstGapSeconds, exactAboveUsd: config.whales.exactAboveUsd };
  const loadStarted = performance.now();
  await landEvents(
    store,
    'markets',
    [
      {
        type: 'metadata',
        condition_id: conditionId,
        title: 'Will the benchmark finish?',
        outcome1: 'Yes',
        outcome2: 'No',
        title_start_ts: start,
        version: start,
      },
    ],
    'bench-market',
  );
  let price = 50;
  let seed = 12_345;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  for (let chunk = 0; chunk * INSERT_CHUNK < TRADES; chunk++) {
    const trades: EventInputOf<'trades'>[] = [];
    for (let index = chunk * INSERT_CHUNK; index < Math.min(TRADES, (chunk + 1) * INSERT_CHUNK); index++) {
      if (random() < PRICE_MOVES / TRADES) price = Math.min(99, Math.max(1, price + (random() < 0.5 ? -1 : 1)));
      const tokenSide = random() < 0.5 ? 1 : 2;
      const tokenPrice = tokenSide === 1 ? price / 100 : (100 - price) / 100;
      trades.push({
        tx_hash: `0x${hex(index, 64)}`,
        log_index: index % 1000,
        condition_id: conditionId,
        token_side: tokenSide,
        price: tokenPrice,
        size_tokens: 10,
        usd: Math.round(tokenPrice * 1000) / 100,
        ts: start + Math.floor((index * DAYS * 86_400) / TRADES),
        seq: index,
      });
    }
    await refreshRollups(store, await landEvents(store, 'trades', trades, `bench-trades-${chunk}`), settings);
  }

  // A day of fills for the whale flow: one wallet in twenty accumulates one side of one market in
  // bursts of $4k fills; the others trade a little everywhere.
  const fills: EventInputOf<'fillsArchive'>[] = [];
  for (let index = 0; index < WHALE_FILLS; index++) {
    const wallet = index % WALLETS;
    const whale = wallet % 20 === 0;
    fills.push({
      tx_hash: `0x${hex(10_000_000 + index, 64)}`,
      log_index: index % 1000,
      wallet: `0x${hex(wallet + 1, 40)}`,
      condition_id: `0x${hex(whale ? wallet % MARKETS : (index * 7) % MARKETS, 64)}`,
      side: whale || random() < 0.7 ? 'BUY' : 'SELL',
      token_side: whale ? (wallet % 40 === 0 ? 1 : 2) : random() < 0.5 ? 1 : 2,
      price: 0.5,
      size_tokens: whale ? 8000 : 40,
      usd: whale ? 4000 : 20,
      role: 'taker',
      era: 'v2',
      // A whale's fills come two minutes apart: one burst of forty.
      ts: whale ? now - 12 * 3600 + Math.floor(index / WALLETS) * 120 : now - 86_400 + Math.floor(random() * 86_400),
    });
  }
  await refreshRollups(store, await landEvents(store, 'fillsArchive', fills, 'bench-fills'), settings);
  console.log(
    `loaded ${TRADES} trades over ${DAYS} days and ${WHALE_FILLS} fills in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`,
  );

  const times = (await readMarketTimes(store, conditionId))!;
  const tape = await readFullTape(store, times);
  const chart = await readSampledSeries(store, times, {}, config.charts, now);
  const dayChart = await readSampledSeries(store, times, { fromTs: now - 86_400, toTs: now }, config.charts, now);
  const whales = await readWhaleFlow(
    store,
    {
      minUsd: config.whales.defaultMinUsd,
      by: 'burst',
      windowHours: config.whales.defaultWindowHours,
      limit: config.whales.defaultLimit,
      nowSeconds: now,
    },
    config.whales,
  );
  console.log(
    `full tape ${tape.length} rows; default chart ${chart.points.length} points at ${chart.fidelity} s; day chart ${dayChart.points.length} points at ${dayChart.fidelity} s; whale flow ${whales.count} rows`,
  );

  const baseline = await timeMedian(() =>
    store.query('SELECT count() AS n FROM {db:Identifier}.trades WHERE condition_id = {condition_id:String}', {
      condition_id: conditionId,
    }),
  );
  const results: [string, number, number][] = [];
  const measure = async (name: string, aim: number, work: () => Promise<unknown>) =>
    results.push([name, await timeMedian(work), aim]);
  await measure('sampled chart (default, 300 points)', 25, async () =>
    readSampledSeries(store, await readMarketTimes(store, conditionId).then((value) => value!), {}, config.charts, now),
  );
  await measure('sampled chart (one day)', 25, async () =>
    readSampledSeries(
      store,
      await readMarketTimes(store, conditionId).then((value) => value!),
      { fromTs: now - 86_400, toTs: now },
      config.charts,
      now,
    ),
  );
  await measure('full tape', 150, async () =>
    readFullTape(store, await readMarketTimes(store, conditionId).then((value) => value!)),
  );
  await measure('whale flow (default)', 25, () =>
    readWhaleFlow(
      store,
      {
        minUsd: config.whales.defaultMinUsd,
        by: 'burst',
        windowHours: config.whales.defaultWindowHours,
        limit: config.whales.defaultLimit,
        nowSeconds: now,
      },
      config.whales,
    ),
  );

  console.log(
    `median of ${REPEAT} calls each; baseline count() over the market's key range: ${baseline.toFixed(1)} ms`,
  );
  for (const [name, ms, aim] of results) {
    console.log(
      `  ${name.padEnd(38)} ${ms.toFixed(1).padStart(8)} ms   ${(ms / baseline).toFixed(1).padStart(6)} × baseline   (aim < ${aim} ms)`,
    );
  }
  await store.close();
  await rm(dataDir, { recursive: true, force: true });
}

runBenchmark(main);
