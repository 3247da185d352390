/**
 * Redemptions over recorded real rows (issue 36): a data-API REDEEM row names no outcome, so its side is
 * told by what it paid per token, and a redeemed position is closed whether or not the market's resolution
 * is stored. A market row's last_traded_at is the trader's last fill, never a leg.
 *
 * The rows are the real exports in ../shared/data/polymarket, imported as an operator imports them. The
 * pscanner wallet's real fills in "Oilers vs. Ducks" (it bought both sides) get a redemption of its Ducks
 * for nothing, in the data API's REDEEM shape (a real REDEEM row of the smart-money fixture, re-addressed:
 * no recorded export holds a losing side's redemption of tokens), and the resolution the redemption
 * implies (Oilers won). CRYINGLITTLEBABY's collectmarkets files are used as they are: one of its twelve
 * markets holds a real redemption and the exports hold no resolution. Every expected figure is computed
 * here from the raw rows.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importPolymarketExports, type RejectedRow } from '../ingest/sources/polymarket/index.ts';
import { createLogger } from '../log.ts';
import { readCareer } from '../projections/careers.ts';
import { loadMigrations } from '../projections/migrate.ts';
import { orphanRollupBatches, refreshRollups } from '../projections/rollups.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { readMarketSummary } from '../projections/market-summary.ts';
import { openStore, type Store } from '../projections/store.ts';
import { readTopMarkets } from '../projections/top-markets.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeLeg, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import { bodyOf, gatesNeverBind, inProcessConfig, publishPlanKeys, startTestApi } from './harness/api.ts';
import { collectmarketsDir, polymarketData } from './harness/polymarket.ts';

/** One /activity row, as the JSON exports state it (CSV rows are read into the same names, as strings). */
interface ActivityRow {
  proxyWallet: string;
  timestamp: number;
  conditionId: string;
  type: string;
  size: number;
  usdcSize: number;
  price: number;
  side: string;
  outcomeIndex: number;
  transactionHash: string;
  [field: string]: unknown;
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
/** Rows are summed at 6 decimals by the store, here in floats: a few micro-dollars apart over a market. */
const close = (value: number) => expect.closeTo(value, 4);
/** UP space: a token-2 price p is 1 − p (ten decimals, as the contract rounds). */
const upPrice = (row: ActivityRow) => (row.outcomeIndex === 0 ? row.price : Math.round((1 - row.price) * 1e10) / 1e10);
/** The notional of a fill: usdcSize, unless it holds a taker fee (docs/importing.md): then size × price. */
const notional = (row: ActivityRow) =>
  Math.abs(row.usdcSize - row.size * row.price) >= 0.00001 ? row.size * row.price : row.usdcSize;

/** A wallet's position in one market, from its raw rows alone. */
function position(rows: readonly ActivityRow[]) {
  const fills = rows.filter((row) => row.type === 'TRADE');
  const redemptions = rows.filter((row) => row.type === 'REDEEM');
  const tokens = (tokenIndex: number, side: string) =>
    sum(fills.filter((row) => row.outcomeIndex === tokenIndex && row.side === side).map((row) => row.size));
  // usdcSize is what changed hands, fees included: what the cash flow and the pnl count
  const cashFlow =
    sum(fills.filter((row) => row.side === 'SELL').map((row) => row.usdcSize)) -
    sum(fills.filter((row) => row.side === 'BUY').map((row) => row.usdcSize)) +
    sum(redemptions.map((row) => row.usdcSize));
  const lastFillTs = Math.max(...fills.map((row) => row.timestamp));
  const lastFills = fills.filter((row) => row.timestamp === lastFillTs);
  return {
    fills,
    held1: tokens(0, 'BUY') - tokens(0, 'SELL'),
    held2: tokens(1, 'BUY') - tokens(1, 'SELL'),
    cashFlow,
    buyUsd: sum(fills.filter((row) => row.side === 'BUY').map(notional)),
    volume: sum(fills.map(notional)),
    firstTs: Math.min(...rows.map((row) => row.timestamp)),
    lastTs: Math.max(...rows.map((row) => row.timestamp)),
    lastFillTs,
    /** The UP prices printed in the last second of fills: the market's mark is one of them (no other wallet here). */
    lastPrices: [...new Set(lastFills.map(upPrice))],
    lastFill: lastFills.length === 1 ? lastFills[0] : undefined,
  };
}

let temp: string;
const stores: Store[] = [];
beforeAll(async () => {
  temp = await mkdtemp(path.join(tmpdir(), 'redemptions-'));
});
afterAll(async () => {
  for (const store of stores) {
    await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store.close();
  }
  await rm(temp, { recursive: true, force: true });
});

describe('a losing side redeemed for nothing', () => {
  it('is booked against the losing side: the list, top-markets, summary and card equal the rows', async () => {
    const fills = JSON.parse(
      await readFile(path.join(polymarketData, 'pscanner-fixtures', 'activity.json'), 'utf8'),
    ) as ActivityRow[];
    const [template] = (
      JSON.parse(
        await readFile(path.join(polymarketData, 'polymarket-smart-money-fixtures', 'activity.json'), 'utf8'),
      ) as ActivityRow[]
    ).filter((row) => row.type === 'REDEEM');
    const first = fills[0]!;
    const wallet = first.proxyWallet.toLowerCase();
    const conditionId = first.conditionId.toLowerCase();
    expect(new Set(fills.map((row) => row.conditionId))).toEqual(new Set([first.conditionId]));
    const before = position(fills);
    // Bought both sides: Oilers (token 1) and Ducks (token 2).
    expect(before.held1).toBeGreaterThan(0);
    expect(before.held2).toBeGreaterThan(before.held1);
    const redeemTs = before.lastFillTs + 7200;
    const ducks = Math.round(before.held2 * 1e6) / 1e6;
    const redemption: ActivityRow = {
      ...template!,
      proxyWallet: first.proxyWallet,
      conditionId: first.conditionId,
      title: first.title,
      slug: first.slug,
      eventSlug: first.eventSlug,
      icon: first.icon,
      name: first.name,
      pseudonym: first.pseudonym,
      timestamp: redeemTs,
      transactionHash: `0x${'5e'.repeat(32)}`,
      size: ducks,
      usdcSize: 0,
    };
    // A payout of 0.7 per token is no side's: refused with its reason, nothing of it lands.
    const unreadable: ActivityRow = { ...redemption, transactionHash: `0x${'6f'.repeat(32)}`, size: 10, usdcSize: 7 };
    const file = path.join(temp, 'pscanner-with-redemption.json');
    await writeFile(file, JSON.stringify([...fills, redemption, unreadable]));

    // The exports are of the V1 era, which the card counts only when asked to.
    const config = inProcessConfig('redeem-lost', { CARD_INCLUDE_V1: 'true' });
    const log = createLogger('error');
    const rejected: RejectedRow[] = [];
    const counts = await withPublisher(config, log, ({ publisher }) =>
      importPolymarketExports([file], publisher, { onRejected: (row) => rejected.push(row) }),
    );
    expect(counts).toMatchObject({ read: fills.length + 2, imported: fills.length + 1, rejected: 1 });
    expect(rejected.map((row) => row.reason)).toEqual([
      expect.stringMatching(/a redemption of 10 tokens for 7 USD pays 0\.700000 per token, .*its side cannot be told/),
    ]);
    expect(counts.rejections.map(({ rule, rows }) => [rule, rows])).toEqual([
      ['a redemption must pay 0, 0.5 or 1 per token', 1],
    ]);
    const store = await openStore(config.clickhouse);
    stores.push(store);

    const after = position([...fills, redemption]);
    // The Ducks left with the redemption; the Oilers are still held.
    const net1 = after.held1;
    const net2 = after.held2 - ducks;
    expect(net2).toBeCloseTo(0, 6);
    const lastFill = after.lastFill!;
    const mark = upPrice(lastFill);
    const rowBase = {
      condition_id: conditionId,
      title: 'Oilers vs. Ducks',
      outcome: 'Oilers',
      // the last fill, not the redemption two hours later
      last_traded_at: after.lastFillTs,
      trader_last_action: lastFill.side,
      last_price: close(mark),
      fills_count: fills.length,
      volume_usd: close(after.volume),
    };

    // The result: the cash flow plus the Oilers at 1.00. Booked against the winner, the Ducks would have
    // taken their count off the Oilers instead.
    const pnl = after.cashFlow + net1;
    expect(pnl).toBeLessThan(0);
    // No resolution stored: the redemption of Ducks for nothing says Ducks lost, so Oilers (token 1) won
    // (issue 47: inferred from the redemptions); the Oilers are valued at 1.00.
    const inferred = await readTraderMarkets(store, wallet, { limit: 10 });
    expect(inferred.markets).toStrictEqual([
      {
        ...rowBase,
        resolved: true,
        winner: 'Oilers',
        resolution_source: 'redemptions',
        pnl_usd: close(pnl),
        open: false,
      },
    ]);
    const inferredSummary = await readMarketSummary(store, wallet, conditionId);
    expect(inferredSummary!.summary.sides.map((side) => side.net_tokens)).toEqual([close(net1), close(0)]);
    expect(await readCareer(store, wallet, true)).toMatchObject({
      markets_total: 1,
      resolved_total: 1,
      winrate: 0,
      open_markets: 0,
      career_pnl_usd: close(pnl),
      first_seen: after.firstTs,
      // the card's last_seen is the trader's last act of any kind: here the redemption
      last_seen: redeemTs,
    });

    // The resolution stated (its source unnamed): Oilers (token 1) won, as inferred.
    await withPublisher(config, log, ({ publisher }) =>
      publisher.publish('markets', [
        {
          type: 'resolution',
          condition_id: conditionId,
          winner_token_side: 1,
          payout_numerators: [1, 0],
          ts: after.lastFillTs + 3600,
        },
      ]),
    );
    const row = {
      ...rowBase,
      resolved: true,
      winner: 'Oilers',
      resolution_source: 'stated',
      pnl_usd: close(pnl),
      open: false,
    };
    const resolved = await readTraderMarkets(store, wallet, { limit: 10 });
    expect(resolved.markets).toStrictEqual([row]);
    const top = await readTopMarkets(store, wallet, 5);
    expect(top).toMatchObject({ top_wins: [], top_losses: [row], most_traded: [row], top_volume: [row] });
    const summary = await readMarketSummary(store, wallet, conditionId);
    expect(summary!.market).toMatchObject({ resolved: true, winner: 'Oilers', pnl_usd: close(pnl), open: false });
    expect(summary!.summary).toMatchObject({
      fills_count: fills.length,
      buy_usd: close(after.buyUsd),
      last_fill_ts: after.lastFillTs,
      pnl_usd: close(pnl),
      roi: close(pnl / after.buyUsd),
      won: false,
      open: false,
    });
    expect(summary!.summary.sides.map((side) => [side.token_side, side.outcome, side.net_tokens])).toEqual([
      [1, 'Oilers', close(net1)],
      [2, 'Ducks', close(0)],
    ]);
    expect(await readCareer(store, wallet, true)).toStrictEqual({
      markets_total: 1,
      resolved_total: 1,
      winrate: 0,
      volume_usd: close(after.volume),
      first_seen: after.firstTs,
      last_seen: redeemTs,
      // what the buys cost per token, both sides (every fill here is a buy)
      avg_entry_price: close(after.buyUsd / sum(fills.map((fill) => fill.size))),
      avg_win_usd: null,
      avg_loss_usd: close(pnl),
      open_value_usd: 0,
      open_markets: 0,
      unmarked_markets: 0,
      marked_at: null,
      career_pnl_usd: close(pnl),
      pnl_marked_usd: close(pnl),
      fills_count: fills.length,
    });

    // The same through the REST routes (their read cache and response schemas).
    const now = redeemTs + 3600;
    const api = await startTestApi(config, {
      now: () => now,
      keys: await publishPlanKeys(config, now - 10),
      gatesClockMs: gatesNeverBind(),
    });
    try {
      const card = bodyOf(await api.get(`traders/${wallet}`)) as { card: Record<string, unknown> };
      expect(card.card).toMatchObject({
        markets_total: 1,
        resolved_total: 1,
        winrate: 0,
        avg_win_usd: null,
        avg_loss_usd: close(pnl),
        open_value_usd: 0,
        open_markets: 0,
        last_seen: redeemTs,
      });
      expect(bodyOf(await api.get(`traders/${wallet}/markets`))).toMatchObject({ markets: [row] });
      expect(bodyOf(await api.get(`traders/${wallet}/top-markets`))).toMatchObject({
        top_wins: [],
        top_losses: [row],
        most_traded: [row],
        top_volume: [row],
      });
      expect(bodyOf(await api.get(`traders/${wallet}/markets/${conditionId}/summary`))).toMatchObject({
        market: { resolved: true, winner: 'Oilers', pnl_usd: close(pnl) },
        summary: { pnl_usd: close(pnl), won: false, sides: [{ net_tokens: close(net1) }, { net_tokens: close(0) }] },
      });
    } finally {
      await api.close();
    }
  });
});

describe('a redemption before the resolution is stored', () => {
  it('closes the position: no redeemed token is valued again, on the row or the card', async () => {
    const folder = path.join(collectmarketsDir, 'CRYINGLITTLEBABY');
    const config = inProcessConfig('redeem-open');
    const log = createLogger('error');
    const counts = await withPublisher(config, log, ({ publisher }) => importPolymarketExports([folder], publisher));
    expect(counts.rejected).toBe(0);
    const store = await openStore(config.clickhouse);
    stores.push(store);

    // The raw rows, by market, read here with the CSV reader (every value a string).
    const byMarket = new Map<string, ActivityRow[]>();
    for (const file of (await readdir(folder)).sort()) {
      const records = parseCsv(await readFile(path.join(folder, file), 'utf8'), { columns: true }) as Record<
        string,
        string
      >[];
      for (const record of records) {
        const row: ActivityRow = {
          ...record,
          proxyWallet: record.proxyWallet!.toLowerCase(),
          conditionId: record.conditionId!.toLowerCase(),
          type: record.type!,
          side: record.side!,
          transactionHash: record.transactionHash!,
          timestamp: Number(record.timestamp),
          size: Number(record.size),
          usdcSize: Number(record.usdcSize),
          price: Number(record.price),
          outcomeIndex: Number(record.outcomeIndex),
        };
        byMarket.set(row.conditionId, [...(byMarket.get(row.conditionId) ?? []), row]);
      }
    }
    const wallet = [...byMarket.values()][0]![0]!.proxyWallet;
    const redeemed = [...byMarket].filter(([, rows]) => rows.some((row) => row.type === 'REDEEM'));
    expect(redeemed).toHaveLength(1);
    const [redeemedId, redeemedRows] = redeemed[0]!;
    const redemption = redeemedRows.find((row) => row.type === 'REDEEM')!;
    // The winner's redemption (1.00 per token), after the last fill.
    expect(redemption.usdcSize).toBe(redemption.size);
    const redeemedPosition = position(redeemedRows);
    expect(redemption.timestamp).toBeGreaterThan(redeemedPosition.lastFillTs);

    const { markets } = await readTraderMarkets(store, wallet, { limit: 100 });
    const expectedOrder = [...byMarket]
      .map(([conditionId, rows]) => ({ conditionId, lastFillTs: position(rows).lastFillTs }))
      .sort((a, b) => b.lastFillTs - a.lastFillTs || (a.conditionId < b.conditionId ? 1 : -1));
    expect(markets.map((row) => [row.condition_id, row.last_traded_at])).toEqual(
      expectedOrder.map((row) => [row.conditionId, row.lastFillTs]),
    );

    const rowOf = new Map(markets.map((row) => [row.condition_id, row]));
    // The redeemed market holds nothing: its value is 0 and its standing is its cash flow, redemption included.
    expect(rowOf.get(redeemedId)).toMatchObject({
      resolved: false,
      open: true,
      last_traded_at: redeemedPosition.lastFillTs,
      pnl_usd: close(redeemedPosition.cashFlow),
      market_value_usd: 0,
      pnl_marked_usd: close(redeemedPosition.cashFlow),
    });
    const summary = await readMarketSummary(store, wallet, redeemedId);
    expect(summary!.summary.sides.map((side) => side.net_tokens)).toEqual([0, 0]);

    // Every other market is held at its last trade.
    let openValue = 0;
    for (const [conditionId, rows] of byMarket) {
      if (conditionId === redeemedId) continue;
      const held = position(rows);
      const row = rowOf.get(conditionId)!;
      const values = held.lastPrices.map((mark) => held.held1 * mark + held.held2 * (1 - mark));
      expect(
        values.some((value) => Math.abs(value - row.market_value_usd!) < 1e-4),
        `${conditionId}: ${row.market_value_usd} is not one of ${values.join(', ')}`,
      ).toBe(true);
      expect(row).toMatchObject({ open: true, pnl_usd: close(held.cashFlow) });
      openValue += row.market_value_usd!;
    }
    const everyRow = [...byMarket.values()].flat();
    expect(await readCareer(store, wallet, true)).toMatchObject({
      markets_total: byMarket.size,
      resolved_total: 0,
      open_markets: byMarket.size,
      unmarked_markets: 0,
      open_value_usd: close(openValue),
      first_seen: Math.min(...everyRow.map((row) => row.timestamp)),
      last_seen: Math.max(...everyRow.map((row) => row.timestamp)),
    });
  });
});

describe('a store whose redeemed rows the earlier formula computed', () => {
  it('recomputes them once migrated: the sweep of undone batches refreshes what 0015 staged', async () => {
    const file = path.join(collectmarketsDir, 'CRYINGLITTLEBABY', 'xrp-updown-15m-1767583800.csv');
    const config = inProcessConfig('redeem-migrate');
    const log = createLogger('error');
    await withPublisher(config, log, ({ publisher }) => importPolymarketExports([file], publisher));
    const store = await openStore(config.clickhouse);
    stores.push(store);
    const [row] = parseCsv(await readFile(file, 'utf8'), { columns: true }) as Record<string, string>[];
    const wallet = row!.proxyWallet!.toLowerCase();
    const held = await readMarketSummary(store, wallet, row!.conditionId!.toLowerCase());
    expect(held!.summary.sides.map((side) => side.net_tokens)).toEqual([0, 0]);

    // What the earlier formula stored: the redemption moved nothing before a resolution, and its version
    // had no generation term. The current row is replaced by it, as if it had never been recomputed.
    await store.command('CREATE TABLE {db:Identifier}.stale_rows AS {db:Identifier}.trader_markets_v2 ENGINE = Memory');
    await store.command(
      `INSERT INTO {db:Identifier}.stale_rows
       SELECT * REPLACE (side1_buy_tokens - side1_sell_tokens AS net_tokens1, side2_buy_tokens - side2_sell_tokens AS net_tokens2,
                         version - 72057594037927936 AS version)
       FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String}`,
      { wallet },
    );
    await store.command(
      'ALTER TABLE {db:Identifier}.trader_markets_v2 DELETE WHERE wallet = {wallet:String} SETTINGS mutations_sync = 2',
      { wallet },
    );
    await store.command('INSERT INTO {db:Identifier}.trader_markets_v2 SELECT * FROM {db:Identifier}.stale_rows');
    const stale = await readTraderMarkets(store, wallet, { limit: 10 });
    expect(stale.markets[0]!.market_value_usd).toBeGreaterThan(0);

    const [migration] = (await loadMigrations()).filter((migration) => migration.version === 15);
    for (const statement of migration!.statements) await store.command(statement);
    const orphans = await orphanRollupBatches(store, 0);
    expect(orphans).toContain('migration-0015-redeemed-markets');
    await refreshRollups(store, orphans, config.whales);

    const [recomputed] = (await readTraderMarkets(store, wallet, { limit: 10 })).markets;
    expect(recomputed).toMatchObject({ market_value_usd: 0, pnl_marked_usd: recomputed!.pnl_usd });
    const after = await readMarketSummary(store, wallet, row!.conditionId!.toLowerCase());
    expect(after!.summary.sides.map((side) => side.net_tokens)).toEqual([0, 0]);
  });
});

describe('the side a redemption redeemed, told without the source naming it', () => {
  it('by the holdings before the resolution, in proportion for a split payout, by the USD under a winner', async () => {
    const wallet = makeWallet('redeem-sides');
    const market = (name: string) => makeConditionId(`redeem-sides-${name}`);
    const [told, untold, split, mixed] = ['told', 'untold', 'split', 'mixed'].map(market) as [
      string,
      string,
      string,
      string,
    ];
    const buy = (conditionId: string, tokenSide: 1 | 2, tokens: number, ts: number) =>
      makeFill({
        wallet,
        condition_id: conditionId,
        side: 'BUY',
        token_side: tokenSide,
        price: 0.5,
        size_tokens: tokens,
        ts,
      });
    const redeem = (conditionId: string, tokens: number, usd: number, ts: number) =>
      makeLeg({ wallet, condition_id: conditionId, kind: 'REDEEM', tokens, usd, ts });
    const config = inProcessConfig('redeem-sides');
    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish(
        'markets',
        [told, untold, split, mixed].map((conditionId) => makeMarket({ condition_id: conditionId })),
      );
      await publisher.publish('fillsArchive', [
        // told: 100 Up and 30 Down; 100 redeemed at 1.00 each: only Up held enough, so Up won and left
        buy(told, 1, 100, 1_780_000_010),
        buy(told, 2, 30, 1_780_000_020),
        // untold: 100 of each, 100 redeemed at 1.00: either side could have paid it
        buy(untold, 1, 100, 1_780_000_010),
        buy(untold, 2, 100, 1_780_000_020),
        // split: 100 Up and 50 Down; 60 redeemed at 0.50 each: 40% of each side
        buy(split, 1, 100, 1_780_000_010),
        buy(split, 2, 50, 1_780_000_020),
        // mixed: 100 of each, Up won; 200 redeemed for 100: the winners paid it, the losers went for nothing
        buy(mixed, 1, 100, 1_780_000_010),
        buy(mixed, 2, 100, 1_780_000_020),
      ]);
      await publisher.publish(
        'trades',
        [told, untold, split, mixed].map((conditionId) =>
          makeTrade({ condition_id: conditionId, token_side: 1, price: 0.6, ts: 1_780_000_030 }),
        ),
      );
      await publisher.publish('positions', [
        redeem(told, 100, 100, 1_780_003_000),
        redeem(untold, 100, 100, 1_780_003_000),
        redeem(split, 60, 30, 1_780_003_000),
        redeem(mixed, 200, 100, 1_780_003_000),
      ]);
      await publisher.publish('markets', [makeResolution(mixed, 1, 1_780_002_000)]);
    });
    const store = await openStore(config.clickhouse);
    stores.push(store);
    const { markets } = await readTraderMarkets(store, wallet, { limit: 10 });
    const rowOf = (conditionId: string) => markets.find((row) => row.condition_id === conditionId);
    const sidesOf = async (conditionId: string) =>
      (await readMarketSummary(store, wallet, conditionId))!.summary.sides.map((side) => side.net_tokens);

    // told: Up won, as the redemption says (no resolution is stored: it is inferred from it, issue 47); cash
    // flow 100 − 65, and the 30 Down left pay nothing
    expect(await sidesOf(told)).toEqual([close(0), close(30)]);
    expect(rowOf(told)).toMatchObject({
      resolved: true,
      winner: 'Up',
      resolution_source: 'redemptions',
      pnl_usd: close(35),
    });
    // untold: the position is closed; its standing is its cash flow, 100 − 100
    expect(await sidesOf(untold)).toEqual([0, 0]);
    expect(rowOf(untold)).toMatchObject({ open: true, market_value_usd: 0, pnl_marked_usd: close(0) });
    // split: a split payout, as the redemption says (inferred); 60 Up and 30 Down left, at 0.50 each; cash flow 30 − 75
    expect(await sidesOf(split)).toEqual([close(60), close(30)]);
    expect(rowOf(split)).toMatchObject({
      resolved: true,
      winner: '50/50',
      resolution_source: 'redemptions',
      pnl_usd: close(30 - 75 + 60 * 0.5 + 30 * 0.5),
    });
    // mixed: nothing left; the result is the cash flow, 100 − 100
    expect(await sidesOf(mixed)).toEqual([close(0), close(0)]);
    expect(rowOf(mixed)).toMatchObject({
      resolved: true,
      winner: 'Up',
      resolution_source: 'stated',
      pnl_usd: close(0),
    });
    // every row last traded at its last fill, not at the redemption
    expect(markets.map((row) => row.last_traded_at)).toEqual([
      1_780_000_020, 1_780_000_020, 1_780_000_020, 1_780_000_020,
    ]);
  });
});
