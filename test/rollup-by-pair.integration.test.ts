/**
 * The rollup refresh reads the staged pairs' fills from fills_by_pair (the fills in granules of few pairs,
 * migration 0025) instead of fills_v2. Its rows must be the ones the refresh files define, run as written
 * (reading fills_v2): the same kept copy of each fill (the highest source rank, whatever its time), a late
 * copy of an old fill, a pair reaching back days, legs, a resolution's restaging, fills dated from now as
 * live ingest lands them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { openStore, type Store } from '../projections/store.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeLeg, makeMarket, makeResolution, makeWallet } from './factories.ts';
import { inProcessConfig } from './harness/api.ts';

const HOUR = 3600;

/** The newest version of every row of the three rollups, keyed and sorted, for the wallets given. */
async function rollupRows(store: Store, wallets: string[]): Promise<Record<string, Record<string, unknown>[]>> {
  const newest = (table: string, key: string) =>
    store.query<Record<string, unknown>>(
      `SELECT * FROM {db:Identifier}.{table:Identifier} WHERE wallet IN {wallets:Array(String)}
       ORDER BY version DESC LIMIT 1 BY ${key}`,
      { table, wallets },
    );
  const sorted = (rows: Record<string, unknown>[]) =>
    rows.sort((a, b) =>
      JSON.stringify([a.wallet, a.condition_id, a.token_side]).localeCompare(
        JSON.stringify([b.wallet, b.condition_id, b.token_side]),
      ),
    );
  return {
    trader_markets_v2: sorted(await newest('trader_markets_v2', 'wallet, condition_id')),
    trader_skill_markets: sorted(await newest('trader_skill_markets', 'wallet, condition_id')),
    whale_accumulations_v2: sorted(await newest('whale_accumulations_v2', 'wallet, condition_id, token_side')),
  };
}

/** Equal, numbers within a relative 1e-9 (sums folded in another order differ in their last bits). */
function expectSame(actual: unknown, expected: unknown, at = ''): void {
  if (typeof actual === 'number' && typeof expected === 'number') {
    expect(Math.abs(actual - expected), at).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(expected)));
  } else if (Array.isArray(actual) && Array.isArray(expected)) {
    expect(actual.length, at).toBe(expected.length);
    actual.forEach((item, index) => {
      expectSame(item, expected[index], `${at}[${index}]`);
    });
  } else if (actual && expected && typeof actual === 'object' && typeof expected === 'object') {
    expect(Object.keys(actual), at).toEqual(Object.keys(expected));
    for (const key of Object.keys(expected))
      expectSame((actual as Record<string, unknown>)[key], (expected as Record<string, unknown>)[key], `${at}.${key}`);
  } else {
    expect(actual, at).toEqual(expected);
  }
}

describe('rollups read from fills_by_pair', () => {
  let store: Store | undefined;
  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('equal the refresh files run as written, reading fills_v2', async () => {
    const config = inProcessConfig('rollupbypair');
    const log = createLogger('error');
    const now = Math.floor(Date.now() / 1000);
    const maker = makeWallet('by-pair-maker');
    const whale = makeWallet('by-pair-whale');
    const [quick, resolved, spanning, lateOld, eightHours] = [0, 1, 2, 3, 4].map((index) =>
      makeConditionId(`by-pair-${index}`),
    );
    const markets = [quick!, resolved!, spanning!, lateOld!, eightHours!];
    const fill = (wallet: string, conditionId: string, ts: number, size = 100, side: 'BUY' | 'SELL' = 'BUY') =>
      makeFill({ wallet, condition_id: conditionId, ts, side, price: 0.4, size_tokens: size });
    const archiveOf = (copy: ReturnType<typeof makeFill>, shift: number) => ({
      ...copy,
      log_index: copy.log_index + 1,
      ts: copy.ts + shift,
      fee_usd: 0.75,
      role: 'maker' as const,
    });

    // The upstream's copies first: pairs of the last hours, a pair that began three days ago, one eight hours old.
    const upstream = [
      fill(maker, quick!, now - 2 * HOUR),
      fill(maker, quick!, now - HOUR, 40, 'SELL'),
      fill(whale, quick!, now - HOUR, 30_000),
      fill(maker, resolved!, now - 3 * HOUR),
      fill(maker, spanning!, now - 72 * HOUR),
      fill(maker, spanning!, now - HOUR),
      fill(whale, eightHours!, now - 8 * HOUR, 20_000),
    ];
    const oldFill = fill(maker, lateOld!, now - 60 * HOUR, 70);
    // Then the chain's copies: one a second later (the kept copy moves in time), one a second earlier, the
    // late copy of a fill of two and a half days ago, and new fills, a split, a resolution.
    const archive = [
      archiveOf(upstream[0]!, 1),
      archiveOf(upstream[2]!, -1),
      archiveOf(upstream[4]!, 0),
      archiveOf(oldFill, 0),
      fill(maker, quick!, now - 60, 10),
      fill(maker, lateOld!, now - 30, 5, 'SELL'),
      fill(whale, eightHours!, now - 120, 15_000),
    ];

    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish(
        'markets',
        markets.map((conditionId) => makeMarket({ condition_id: conditionId })),
      );
      await publisher.publish('fillsUpstream', upstream);
    });
    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish('fillsUpstream', [oldFill]);
    });
    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish('fillsArchive', archive);
      await publisher.publish('positions', [makeLeg({ wallet: maker, condition_id: resolved!, ts: now - 2 * HOUR })]);
    });
    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish('markets', [makeResolution(resolved!, 1, now - 30 * 60)]);
    });

    store = await openStore(config.clickhouse);
    const wallets = [maker, whale];
    // The refresher's copy of the fills holds what fills_v2 holds.
    const count = async (table: string) =>
      Number(
        (
          await store!.query<{ n: number }>('SELECT count() AS n FROM {db:Identifier}.{table:Identifier}', { table })
        )[0]!.n,
      );
    expect(await count('fills_by_pair')).toBe(await count('fills_v2'));
    const incremental = await rollupRows(store, wallets);
    // The archive's copy is kept: the quick market's first buy pays its fee.
    const quickRow = incremental.trader_markets_v2!.find(
      (row) => row.wallet === maker && row.condition_id === quick,
    ) as { fills_count: number; fee_usd: number; first_ts: number };
    expect(quickRow.fills_count).toBe(3);
    expect(quickRow.fee_usd).toBeCloseTo(0.75, 9);
    expect(quickRow.first_ts).toBe(now - 2 * HOUR + 1);

    // Every pair recomputed again by the refresh files as written (fills from fills_v2), in their order.
    for (const table of ['trader_markets_v2', 'trader_skill_markets', 'whale_accumulations_v2', 'whale_recent'])
      await store.command('TRUNCATE TABLE {db:Identifier}.{table:Identifier}', { table });
    await store.command(
      `INSERT INTO {db:Identifier}.rollup_keys (batch, wallet, condition_id)
       SELECT 'by-pair-test-all', wallet, condition_id FROM {db:Identifier}.market_wallets FINAL`,
    );
    for (const file of [
      'refresh_trader_markets.sql',
      'refresh_trader_skill_markets.sql',
      'refresh_whale_accumulations.sql',
    ]) {
      const sql = readFileSync(path.join(import.meta.dirname, '..', 'projections', 'rollups', file), 'utf8');
      expect(sql).toContain('{db:Identifier}.fills_v2');
      await store.command(sql, {
        batches: ['by-pair-test-all'],
        burst_gap_s: config.whales.burstGapSeconds,
        exact_above_usd: config.whales.exactAboveUsd,
      });
    }
    const fromScratch = await rollupRows(store, wallets);
    expect(fromScratch.trader_markets_v2).toHaveLength(6);
    expect(fromScratch.whale_accumulations_v2!.length).toBeGreaterThan(0);
    expect(fromScratch.trader_skill_markets!.length).toBeGreaterThan(0);
    expectSame(incremental, fromScratch);
  });
});
