/**
 * The same real fill (or redemption) from both sources counts once, with the archive's values. The
 * archive's copies are the events it derives from recorded Polygon logs (two legs of one match and a
 * taker's own order, ../shared/data/polymarket/onchain/polyprinter/; a CTF PayoutRedemption, vike-trader/);
 * the upstream's are what the poller's row mapping makes of data-API rows of the same transactions. Those
 * bodies were never saved (SOURCES.md): the rows are derived from what the logs' authors asserted
 * (expected_decodes.json: side, size, price, usdcSize checked against data-API `/activity`; the payout),
 * in the shape of the recorded `/activity` sample's TRADE and REDEEM rows, with usdcSize including the
 * taker fee as the v2 API states it. Each source lands in its own store, in both orders: the card, the
 * markets list and the fills list must equal those of the archive alone (plus an upstream-only fill,
 * which still counts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { contractsOf } from '../ingest/sources/archive/contracts.ts';
import { decodeLog, type RawLog } from '../ingest/sources/archive/decode.ts';
import { factsOf } from '../ingest/sources/archive/facts.ts';
import { TokenDirectory } from '../ingest/sources/archive/tokens.ts';
import { mapActivityRows } from '../ingest/sources/upstream/mapping.ts';
import type { EventSink } from '../ingest/publisher.ts';
import { createLogger } from '../log.ts';
import { withPublisher } from '../roles/runtime.ts';
import { bodyOf, gatesNeverBind, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { polymarketData } from './harness/polymarket.ts';
import { loadFixture, type Json } from './harness/polymarket-replay.ts';

const ONCHAIN = path.join(polymarketData, 'onchain');
const MAKER = '0x335ac48637a3bc37c2eac9e0c9799c32b3cda494';
const TAKER = '0x686024b5c1fcc10eb86b8d551fae78488b1b6279';
const LOG_FILES = [
  'v2_orderfilled_standard_buy_maker.json',
  'v2_orderfilled_standard_takers_own_order.json',
  'v2_orderfilled_standard_sell_maker.json',
];
const logs = LOG_FILES.map(
  (file) => JSON.parse(readFileSync(path.join(ONCHAIN, 'polyprinter', file), 'utf8')) as RawLog,
);
const asserted = JSON.parse(readFileSync(path.join(ONCHAIN, 'expected_decodes.json'), 'utf8')) as Record<string, Json>;
const activitySample = loadFixture<Json[]>('data-api/polyprinter_activity_sample.json');
const template = activitySample[0]!;
const redeemTemplate = activitySample.find((row) => row.type === 'REDEEM')!;
const redemptionLog = JSON.parse(
  readFileSync(path.join(ONCHAIN, 'vike-trader', 'ctf_payout_redemption.json'), 'utf8'),
) as RawLog;
const redemption = asserted['vike-trader/ctf_payout_redemption.json']!;
const REDEEMER = redemption.redeemer as string;

/** Word 1 of a V2 OrderFilled's data: the token id (DECODING.md). */
const tokenOf = (log: RawLog) => BigInt(`0x${log.data.slice(2 + 64, 2 + 128)}`).toString();
/** Word 4: the fee, 6 decimals. */
const feeOf = (log: RawLog) => Number(BigInt(`0x${log.data.slice(2 + 4 * 64, 2 + 5 * 64)}`)) / 1e6;
const timestampOf = (log: RawLog) => Number(BigInt(log.blockTimestamp!));

// Two markets, one per traded token (Gamma would name them; here each token is its market's token 1).
const MARKET_A = `0x${'a1'.repeat(32)}`;
const MARKET_B = `0x${'b2'.repeat(32)}`;
const marketEvents: EventInputOf<'markets'>[] = [
  {
    type: 'metadata',
    condition_id: MARKET_A,
    title: 'Real match, market A',
    outcome1: 'Yes',
    outcome2: 'No',
    title_start_ts: null,
    version: 1,
  },
  { type: 'tokens', condition_id: MARKET_A, token1_id: tokenOf(logs[0]!), token2_id: '1' },
  {
    type: 'metadata',
    condition_id: MARKET_B,
    title: 'Real match, market B',
    outcome1: 'Yes',
    outcome2: 'No',
    title_start_ts: null,
    version: 1,
  },
  { type: 'tokens', condition_id: MARKET_B, token1_id: tokenOf(logs[2]!), token2_id: '2' },
];

/** What the archive publishes for the recorded logs (decode, then the archive's own facts). */
function archiveEvents() {
  const config = parseConfig({ POLYGON_RPC_URL: 'http://127.0.0.1:1' });
  const directory = new TokenDirectory();
  directory.add(MARKET_A, tokenOf(logs[0]!), '1', false);
  directory.add(MARKET_B, tokenOf(logs[2]!), '2', false);
  const fills: EventInputOf<'fillsArchive'>[] = [];
  const trades: EventInputOf<'trades'>[] = [];
  const legs: EventInputOf<'positions'>[] = [];
  for (const log of [...logs, redemptionLog]) {
    const outcome = factsOf(decodeLog(log)!, timestampOf(log), directory, contractsOf(config.archive!));
    if (outcome.kind !== 'events')
      throw new Error(`the recorded log ${log.transactionHash} yields no events (${outcome.kind})`);
    fills.push(...outcome.fills);
    trades.push(...outcome.trades);
    legs.push(...outcome.legs);
  }
  return { fills, trades, legs };
}

/** A data-API `/activity` TRADE row in the recorded sample's shape. */
function activityRow(fields: {
  wallet: string;
  log: RawLog;
  conditionId: string;
  side: 'BUY' | 'SELL';
  size: number;
  price: number;
  usdcSize: number;
  tx?: string;
  ts?: number;
}): Json {
  return {
    ...template,
    proxyWallet: fields.wallet,
    timestamp: fields.ts ?? timestampOf(fields.log),
    conditionId: fields.conditionId,
    type: 'TRADE',
    size: fields.size,
    usdcSize: fields.usdcSize,
    transactionHash: fields.tx ?? fields.log.transactionHash,
    price: fields.price,
    asset: tokenOf(fields.log),
    side: fields.side,
    outcomeIndex: 0,
    outcome: 'Yes',
    title: 'Real match',
    name: fields.wallet === MAKER ? 'the maker' : 'the taker',
  };
}

const buyMaker = asserted['polyprinter/v2_orderfilled_standard_buy_maker.json']!;
const sellMaker = asserted['polyprinter/v2_orderfilled_standard_sell_maker.json']!;
/** The upstream-only fill: a later buy of the maker in a transaction the archive never saw. */
const UPSTREAM_ONLY_TX = `0x${'e5'.repeat(32)}`;
const rows: Json[] = [
  // The maker leg of tx 0x82ea…: the authors checked side BUY, size 2.56, price 0.92, usdcSize 2.3552 against /activity.
  activityRow({
    wallet: MAKER,
    log: logs[0]!,
    conditionId: MARKET_A,
    side: 'BUY',
    size: buyMaker.shares as number,
    price: buyMaker.price as number,
    usdcSize: 2.3552,
  }),
  // The taker's own order of the same match: the opposite side of the same shares; a seller's usdcSize is net of its fee.
  activityRow({
    wallet: TAKER,
    log: logs[1]!,
    conditionId: MARKET_A,
    side: 'SELL',
    size: 2.56,
    price: 0.92,
    usdcSize: Math.round((2.3552 - feeOf(logs[1]!)) * 1e6) / 1e6,
  }),
  // tx 0x4137…: SELL 6 at 0.48 (2.88 USDC), its fee taken from the proceeds.
  activityRow({
    wallet: MAKER,
    log: logs[2]!,
    conditionId: MARKET_B,
    side: 'SELL',
    size: sellMaker.shares as number,
    price: sellMaker.price as number,
    usdcSize: Math.round((2.88 - (sellMaker.fee_usd as number)) * 1e6) / 1e6,
  }),
  activityRow({
    wallet: MAKER,
    log: logs[0]!,
    conditionId: MARKET_A,
    side: 'BUY',
    size: 10,
    price: 0.5,
    usdcSize: 5,
    tx: UPSTREAM_ONLY_TX,
    ts: timestampOf(logs[2]!) + 60,
  }),
  // The redemption: a winner's payout, tokens = USD.
  {
    ...redeemTemplate,
    proxyWallet: REDEEMER,
    timestamp: timestampOf(redemptionLog),
    conditionId: redemption.condition_id,
    size: redemption.payout_usdc,
    usdcSize: redemption.payout_usdc,
    transactionHash: redemptionLog.transactionHash,
  },
];

function upstreamEvents() {
  const mapped = mapActivityRows(rows, parseConfig({}).upstream.v2StartTs, 'activity');
  expect(mapped.rejected).toEqual([]);
  return {
    fills: mapped.parsed.flatMap((row) => (row.kind === 'fill' ? [row.fill] : [])),
    trades: mapped.parsed.flatMap((row) => (row.kind === 'fill' ? [row.trade] : [])),
    legs: mapped.parsed.flatMap((row) => (row.kind === 'leg' ? [row.leg] : [])),
  };
}

/** Everything but display names (the upstream knows them, the chain does not) and the request's own timing. */
function figures(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(figures);
  if (body !== null && typeof body === 'object') {
    return Object.fromEntries(
      Object.entries(body as Json)
        .filter(([key]) => key !== 'name')
        .map(([key, value]) => [key, figures(value)]),
    );
  }
  return body;
}

describe('a fill from both the archive and the upstream counts once, with the archive’s values', () => {
  const NOW = timestampOf(logs[2]!) + 3600;
  const apis: TestApi[] = [];
  const archive = archiveEvents();
  const { fills: upstream, legs: upstreamLegs } = upstreamEvents();
  const upstreamOnly = upstream.filter((fill) => fill.tx_hash === UPSTREAM_ONLY_TX);
  const copies = upstream.filter((fill) => fill.tx_hash !== UPSTREAM_ONLY_TX);
  let reference: TestApi;
  let upstreamFirst: TestApi;
  let archiveFirst: TestApi;

  async function storeOf(label: string, publish: (publisher: EventSink) => Promise<void>): Promise<TestApi> {
    const config: Config = inProcessConfig(label);
    const keys = await publishPlanKeys(config, NOW - 10);
    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('markets', marketEvents);
      await publish(publisher);
    });
    const api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind() });
    apis.push(api);
    return api;
  }

  beforeAll(async () => {
    // The reference: the archive alone, plus the one fill only the upstream has.
    const publishArchive = async (publisher: EventSink) => {
      await publisher.publish('fillsArchive', archive.fills);
      await publisher.publish('trades', archive.trades);
      await publisher.publish('positions', archive.legs);
    };
    const publishUpstream = async (publisher: EventSink) => {
      await publisher.publish('fillsUpstream', upstream);
      await publisher.publish('positions', upstreamLegs);
    };
    reference = await storeOf('dedup_reference', async (publisher) => {
      await publishArchive(publisher);
      await publisher.publish('fillsUpstream', upstreamOnly);
    });
    upstreamFirst = await storeOf('dedup_upstream_first', async (publisher) => {
      await publishUpstream(publisher);
      await publishArchive(publisher);
    });
    archiveFirst = await storeOf('dedup_archive_first', async (publisher) => {
      await publishArchive(publisher);
      await publishUpstream(publisher);
    });
  });
  afterAll(async () => {
    for (const api of apis) {
      await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
      await api.close();
    }
  });

  it('the two sources describe the same three fills, the upstream with synthetic log indexes', () => {
    expect(archive.fills).toHaveLength(3);
    expect(copies).toHaveLength(3);
    for (const [index, fill] of archive.fills.entries()) {
      const copy = copies[index]!;
      expect(copy).toMatchObject({
        tx_hash: fill.tx_hash,
        wallet: fill.wallet,
        condition_id: fill.condition_id,
        side: fill.side,
        token_side: fill.token_side,
        size_tokens: fill.size_tokens,
        ts: fill.ts,
      });
      expect(copy.price).toBeCloseTo(fill.price, 9);
      expect(copy.log_index).not.toBe(fill.log_index);
    }
    // The sources disagree where only the chain knows: who made and who took the liquidity.
    expect(archive.fills.map((fill) => fill.role)).toEqual(['maker', 'taker', 'taker']);
    expect(copies.map((fill) => fill.role)).toEqual(['taker', 'taker', 'taker']);
    // The redemption: one leg each, the same payout, different log indexes.
    expect(archive.legs).toEqual([
      expect.objectContaining({
        kind: 'REDEEM',
        wallet: REDEEMER,
        usd: redemption.payout_usdc,
        tx_hash: redemptionLog.transactionHash,
      }),
    ]);
    expect(upstreamLegs).toEqual([
      expect.objectContaining({
        kind: 'REDEEM',
        wallet: REDEEMER,
        condition_id: archive.legs[0]!.condition_id,
        usd: archive.legs[0]!.usd,
        tx_hash: archive.legs[0]!.tx_hash,
      }),
    ]);
    expect(upstreamLegs[0]!.log_index).not.toBe(archive.legs[0]!.log_index);
  });

  for (const wallet of [MAKER, TAKER, REDEEMER]) {
    it(`${wallet === MAKER ? 'the maker' : wallet === TAKER ? 'the taker' : 'the redeemer'}: card, markets and fills equal the archive's alone, whichever source lands first`, async () => {
      const reads = [
        `traders/${wallet}`,
        `traders/${wallet}/markets?limit=100`,
        `traders/${wallet}/fills?since=0&limit=100`,
      ];
      for (const url of reads) {
        const want = await reference.get(url);
        expect(want.statusCode, url).toBe(200);
        for (const api of [upstreamFirst, archiveFirst]) {
          const got = await api.get(url);
          expect(got.statusCode, url).toBe(200);
          expect(figures(bodyOf(got)), url).toEqual(figures(bodyOf(want)));
        }
      }
    });
  }

  it('counts each fill once: the archive’s three, and the upstream-only one', async () => {
    for (const api of [reference, upstreamFirst, archiveFirst]) {
      const maker = (
        bodyOf(await api.get(`traders/${MAKER}/fills?since=0&limit=100`)) as {
          fills: { side: string; size_tokens: number; usd: number; price: number }[];
        }
      ).fills;
      expect(maker.map((fill) => [fill.side, fill.size_tokens, fill.usd])).toEqual([
        ['BUY', 2.56, 2.3552],
        ['SELL', 6, 2.88],
        ['BUY', 10, 5],
      ]);
      const taker = (bodyOf(await api.get(`traders/${TAKER}/fills?since=0&limit=100`)) as { fills: unknown[] }).fills;
      expect(taker).toHaveLength(1);
      const card = bodyOf(await api.get(`traders/${MAKER}`)) as { card: { volume_usd: number; markets_total: number } };
      expect(card.card.volume_usd).toBeCloseTo(2.3552 + 2.88 + 5, 6);
      expect(card.card.markets_total).toBe(2);
      // The payout once: the redeemer's market made the payout (no fills here: nothing was paid for it).
      const redeemed = bodyOf(await api.get(`traders/${REDEEMER}/markets?limit=100`)) as {
        markets: { pnl_usd: number }[];
      };
      expect(redeemed.markets.map((market) => market.pnl_usd)).toEqual([
        expect.closeTo(redemption.payout_usdc as number, 6),
      ]);
    }
    // The stored row of each shared fill is the archive's (source rank 2, its role).
    const stored = await upstreamFirst.store.query<{ wallet: string; role: string; source_rank: number }>(
      'SELECT wallet, role, source_rank FROM {db:Identifier}.fills FINAL ORDER BY ts, wallet, fill_id',
    );
    expect(stored.map((row) => [row.wallet, row.role, row.source_rank])).toEqual([
      [MAKER, 'maker', 2],
      [TAKER, 'taker', 2],
      [MAKER, 'taker', 2],
      [MAKER, 'taker', 1],
    ]);
  });
});

/**
 * The market tape: the archive prints each maker leg (of the recorded logs, the buy maker's: the sell log
 * is a taker's own order, whose maker legs were not recorded), the upstream prints each row of a tracked
 * wallet (the maker's, and the taker's own order of the same match, which is the same trade as the maker
 * leg it matched; the sell, which the archive here has no print of). A further chain print in the second of the first match (another maker leg of
 * the same transaction, at 0.93) makes the second's last trade depend on the order within the second:
 * the upstream's copy of the earlier print must not become the second's last. The upstream-only print
 * still counts. Raw ticks, the sampled chart and the full tape of both sources together, in either order,
 * equal the archive's alone plus the upstream-only print.
 */
describe('a print from both the archive and the upstream counts once in the market tape', () => {
  const NOW = timestampOf(logs[2]!) + 3600;
  const apis: TestApi[] = [];
  const archive = archiveEvents();
  const first = archive.trades[0]!;
  // Another maker leg of the first match, later in the same block, at another level (the chain's order).
  const laterLeg: EventInputOf<'trades'> = {
    ...first,
    log_index: first.log_index + 1,
    price: 0.93,
    size_tokens: 1,
    usd: 0.93,
    seq: first.seq + 1,
  };
  const archiveTrades = [...archive.trades, laterLeg];
  const { trades: upstreamTrades } = upstreamEvents();
  // The upstream's prints of trades the archive has no print of: the upstream-only fill and the sell.
  const upstreamOnly = upstreamTrades.filter(
    (trade) => !archiveTrades.some((print) => print.tx_hash === trade.tx_hash),
  );
  let reference: TestApi;
  let upstreamFirst: TestApi;
  let archiveFirst: TestApi;

  async function storeOf(label: string, publish: (publisher: EventSink) => Promise<void>): Promise<TestApi> {
    const config: Config = inProcessConfig(label);
    const keys = await publishPlanKeys(config, NOW - 10);
    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('markets', marketEvents);
      // The maker's fills make the markets the maker's (the chart routes are trader-scoped).
      await publisher.publish('fillsArchive', archive.fills);
      await publish(publisher);
    });
    const api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind() });
    apis.push(api);
    return api;
  }

  beforeAll(async () => {
    reference = await storeOf('prints_reference', async (publisher) => {
      await publisher.publish('trades', archiveTrades);
      await publisher.publish('trades', upstreamOnly);
    });
    upstreamFirst = await storeOf('prints_upstream_first', async (publisher) => {
      await publisher.publish('trades', upstreamTrades);
      await publisher.publish('trades', archiveTrades);
    });
    archiveFirst = await storeOf('prints_archive_first', async (publisher) => {
      await publisher.publish('trades', archiveTrades);
      await publisher.publish('trades', upstreamTrades);
    });
  });
  afterAll(async () => {
    for (const api of apis) {
      await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
      await api.close();
    }
  });

  it('the upstream prints the shared trade twice (the maker’s row and the taker’s), and two of its own', () => {
    expect(archive.trades).toHaveLength(1);
    expect(upstreamTrades).toHaveLength(4);
    expect(upstreamOnly.map((trade) => [trade.tx_hash, trade.size_tokens, trade.price])).toEqual([
      [logs[2]!.transactionHash, 6, 0.48],
      [UPSTREAM_ONLY_TX, 10, 0.5],
    ]);
    const shared = upstreamTrades.filter((trade) => trade.tx_hash === first.tx_hash);
    expect(shared.map((trade) => [trade.size_tokens, trade.price, trade.token_side])).toEqual([
      [2.56, 0.92, 1],
      [2.56, 0.92, 1],
    ]);
    // Different log indexes and seqs than the chain's: only the print id can make them one.
    expect(shared.every((trade) => trade.seq !== first.seq && trade.log_index !== first.log_index)).toBe(true);
  });

  it('raw ticks: each print once, the upstream-only one included', async () => {
    for (const market of [MARKET_A, MARKET_B]) {
      const url = `traders/${MAKER}/markets/${market}?raw=1&limit=100&window=${first.ts - 60}`;
      const want = figures(bodyOf(await reference.get(url)));
      for (const api of [upstreamFirst, archiveFirst]) {
        const got = await api.get(url);
        expect(got.statusCode, url).toBe(200);
        expect(figures(bodyOf(got)), url).toEqual(want);
      }
    }
    const ticks = (
      bodyOf(
        await upstreamFirst.get(`traders/${MAKER}/markets/${MARKET_A}?raw=1&limit=100&window=${first.ts - 60}`),
      ) as { ticks: { ts: number; price: number }[] }
    ).ticks;
    // In the first match's second, the chain's order: 0.92 then 0.93; the upstream-only print a minute later.
    expect(ticks).toEqual([
      { ts: first.ts, price: 0.92 },
      { ts: first.ts, price: 0.93 },
      { ts: timestampOf(logs[2]!) + 60, price: 0.5 },
    ]);
  });

  it('the sampled chart and the full tape equal the archive’s alone plus the upstream-only print', async () => {
    for (const market of [MARKET_A, MARKET_B]) {
      const chartUrl = `traders/${MAKER}/markets/${market}?from_ts=${first.ts - 60}&to_ts=${NOW}`;
      const tapeUrl = `traders/${MAKER}/markets/${market}/tape`;
      const wantChart = bodyOf(await reference.get(chartUrl));
      const wantTape = JSON.parse(gunzipSync((await reference.get(tapeUrl)).rawPayload).toString('utf8')) as Json;
      for (const api of [upstreamFirst, archiveFirst]) {
        const chart = await api.get(chartUrl);
        expect(chart.statusCode, chartUrl).toBe(200);
        expect(figures(bodyOf(chart)), chartUrl).toEqual(figures(wantChart));
        const tape = await api.get(tapeUrl);
        expect(tape.statusCode, tapeUrl).toBe(200);
        expect(figures(JSON.parse(gunzipSync(tape.rawPayload).toString('utf8'))), tapeUrl).toEqual(figures(wantTape));
      }
    }
    // The first match's second ends at the chain's later print (0.93), not at the upstream's copy of the earlier.
    const tape = JSON.parse(
      gunzipSync((await upstreamFirst.get(`traders/${MAKER}/markets/${MARKET_A}/tape`)).rawPayload).toString('utf8'),
    ) as { tape: number[][] };
    expect(tape.tape.find((row) => row[0] === first.ts)).toEqual([first.ts, 0.93, 0.92, 0.93]);
  });
});
