/**
 * What the clob role subscribes, read from what the deployment shares: the markets watched on the live
 * plane (the slot store's watch index) first, then the open markets of the popular shelf's traders
 * (unresolved, active lately), each with its two tokens; a market whose tokens are unknown cannot be
 * subscribed and is left out.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MemorySlots } from '../operations/gates/slots.ts';
import { refreshRollups } from '../projections/rollups.ts';
import { clobInterest } from '../roles/clob.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeWallet } from './factories.ts';
import { createTestContext, type TestContext } from './harness/context.ts';
import { landEvents } from './harness/land.ts';

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext('clob-interest');
});
afterAll(async () => {
  await context.cleanup();
});

const SETTINGS = { burstGapSeconds: 900, exactAboveUsd: 1000 };
const tokens = (conditionId: string, n: number) => ({
  type: 'tokens' as const,
  condition_id: conditionId,
  token1_id: String(n * 10 + 1),
  token2_id: String(n * 10 + 2),
});

it('subscribes the watched markets, then the popular traders’ open ones, each with its tokens', async () => {
  const { store } = context;
  const popular = makeWallet('clob-popular');
  const open = makeConditionId('clob-open');
  const resolved = makeConditionId('clob-resolved');
  const stale = makeConditionId('clob-stale');
  const watched = makeConditionId('clob-watched');
  const tokenless = makeConditionId('clob-tokenless');
  const markets = [open, resolved, stale, watched, tokenless];
  await landEvents(store, 'markets', [
    ...markets.map((conditionId) => makeMarket({ condition_id: conditionId })),
    tokens(open, 1),
    tokens(resolved, 2),
    tokens(stale, 3),
    tokens(watched, 4),
    makeResolution(resolved, 1),
  ]);
  await landEvents(store, 'upstreamLeaderboard', [
    { period: 'WEEK', metric: 'PNL', as_of: BASE_TS, rank: 1, wallet: popular, name: 'popular', pnl: 1, vol: 1 },
  ]);
  const fills = [
    makeFill({ wallet: popular, condition_id: open, ts: BASE_TS + 900 }),
    makeFill({ wallet: popular, condition_id: resolved, ts: BASE_TS + 900 }),
    makeFill({ wallet: popular, condition_id: stale, ts: BASE_TS + 100 }),
  ];
  await refreshRollups(store, await landEvents(store, 'fillsArchive', fills), SETTINGS);

  const slots = new MemorySlots(() => BASE_TS * 1000);
  const watch = (slotId: string, market: string) =>
    slots.acquire({ userId: 'u', slotId, cap: 5, leaseMs: 30_000, nowMs: null, trader: makeWallet('x'), market });
  await watch('a', watched);
  await watch('b', tokenless);

  const config = { ...context.config.clob, openMarketSeconds: 500 };
  const interest = clobInterest(store, slots, config, () => BASE_TS + 1000);
  expect(await interest.markets()).toEqual([
    { conditionId: watched, token1: '41', token2: '42' },
    { conditionId: open, token1: '11', token2: '12' },
  ]);
  // Without a slot store (no REDIS_URL): the popular shelf's open markets only.
  expect(await clobInterest(store, null, config, () => BASE_TS + 1000).markets()).toEqual([
    { conditionId: open, token1: '11', token2: '12' },
  ]);
  // The cap keeps the watched markets first.
  expect(await clobInterest(store, slots, { ...config, maxMarkets: 1 }, () => BASE_TS + 1000).markets()).toEqual([
    { conditionId: watched, token1: '41', token2: '42' },
  ]);
});
