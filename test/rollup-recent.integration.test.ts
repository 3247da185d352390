/**
 * The rollup refresh reads a pair whose events are all recent from fills_recent (a range of its wallet's
 * fills by time, migration 0025) and an older pair from fills_v2 by its key. Both must give the rows a
 * recomputation of every pair from fills_v2 gives: the same kept copy of each fill (the highest source rank,
 * whatever its time), the late copy of an old fill, a pair reaching back past the refresh's look-back, legs,
 * a resolution's restaging. The fixtures elsewhere are dated in the past (old pairs only); these are dated
 * from now, as live ingest is.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { refreshRollups } from '../projections/rollups.ts';
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

describe('rollups of recent pairs', () => {
  let store: Store | undefined;
  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('equal a recomputation of every pair from fills_v2', async () => {
    const config = inProcessConfig('rolluprecent');
    const log = createLogger('error');
    const now = Math.floor(Date.now() / 1000);
    const maker = makeWallet('recent-maker');
    const whale = makeWallet('recent-whale');
    const [quick, resolved, spanning, lateOld, beyondLookback] = [0, 1, 2, 3, 4].map((index) =>
      makeConditionId(`recent-${index}`),
    );
    const markets = [quick!, resolved!, spanning!, lateOld!, beyondLookback!];
    const fill = (wallet: string, conditionId: string, ts: number, size = 100, side: 'BUY' | 'SELL' = 'BUY') =>
      makeFill({ wallet, condition_id: conditionId, ts, side, price: 0.4, size_tokens: size });
    const archiveOf = (copy: ReturnType<typeof makeFill>, shift: number) => ({
      ...copy,
      log_index: copy.log_index + 1,
      ts: copy.ts + shift,
      fee_usd: 0.75,
      role: 'maker' as const,
    });

    // The upstream's copies first: recent pairs, a pair that began three days ago, a pair eight hours old.
    const upstream = [
      fill(maker, quick!, now - 2 * HOUR),
      fill(maker, quick!, now - HOUR, 40, 'SELL'),
      fill(whale, quick!, now - HOUR, 30_000),
      fill(maker, resolved!, now - 3 * HOUR),
      fill(maker, spanning!, now - 72 * HOUR),
      fill(maker, spanning!, now - HOUR),
      fill(whale, beyondLookback!, now - 8 * HOUR, 20_000),
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
      fill(whale, beyondLookback!, now - 120, 15_000),
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
    const [paths] = await store.query<{ recent_pairs: number; old_pairs: number }>(
      'SELECT countIf(recent) AS recent_pairs, countIf(NOT recent) AS old_pairs FROM {db:Identifier}.rollup_refresh_pairs',
    );
    // Both paths were taken.
    expect(Number(paths!.recent_pairs)).toBeGreaterThan(0);
    expect(Number(paths!.old_pairs)).toBeGreaterThan(0);
    const incremental = await rollupRows(store, wallets);
    // The archive's copy is kept: the quick market's first buy pays its fee.
    const quickRow = incremental.trader_markets_v2!.find(
      (row) => row.wallet === maker && row.condition_id === quick,
    ) as { fills_count: number; fee_usd: number; first_ts: number };
    expect(quickRow.fills_count).toBe(3);
    expect(quickRow.fee_usd).toBeCloseTo(0.75, 9);
    expect(quickRow.first_ts).toBe(now - 2 * HOUR + 1);

    // Every pair recomputed again from fills_v2 alone: staged without a time, so no pair is recent.
    for (const table of ['trader_markets_v2', 'trader_skill_markets', 'whale_accumulations_v2', 'whale_recent'])
      await store.command('TRUNCATE TABLE {db:Identifier}.{table:Identifier}', { table });
    await store.command(
      `INSERT INTO {db:Identifier}.rollup_keys (batch, wallet, condition_id, from_ts)
       SELECT 'recent-test-all', wallet, condition_id, 0 FROM {db:Identifier}.market_wallets FINAL`,
    );
    await refreshRollups(store, ['recent-test-all'], config.whales);
    const [pathsAfter] = await store.query<{ recent_pairs: number; old_pairs: number }>(
      'SELECT countIf(recent) AS recent_pairs, countIf(NOT recent) AS old_pairs FROM {db:Identifier}.rollup_refresh_pairs',
    );
    expect(Number(pathsAfter!.recent_pairs)).toBe(Number(paths!.recent_pairs));
    expect(Number(pathsAfter!.old_pairs)).toBe(Number(paths!.old_pairs) + 6);
    const fromScratch = await rollupRows(store, wallets);
    expect(fromScratch.trader_markets_v2).toHaveLength(6);
    expect(fromScratch.whale_accumulations_v2!.length).toBeGreaterThan(0);
    expect(fromScratch.trader_skill_markets!.length).toBeGreaterThan(0);
    expectSame(incremental, fromScratch);
  });
});
