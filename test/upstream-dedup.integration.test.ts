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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { contractsOf } from '../ingest/sources/archive/archive.ts';
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
const LOG_FILES = ['v2_orderfilled_standard_buy_maker.json', 'v2_orderfilled_standard_takers_own_order.json', 'v2_orderfilled_standard_sell_maker.json'];
const logs = LOG_FILES.map((file) => JSON.parse(readFileSync(path.join(ONCHAIN, 'polyprinter', file), 'utf8')) as RawLog);
const asserted = JSON.parse(readFileSync(path.join(ONCHAIN, 'expected_decodes.json'), 'utf8')) as Record<string, Json>;
const activitySample = loadFixture<Json[]>('data-api/polyprinter_activity_sample.json');
const template = activitySample[0]!;
const redeemTemplate = activitySample.find((row) => row.type === 'REDEEM')!;
const redemptionLog = JSON.parse(readFileSync(path.join(ONCHAIN, 'vike-trader', 'ctf_payout_redemption.json'), 'utf8')) as RawLog;
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
  { type: 'metadata', condition_id: MARKET_A, title: 'Real match, market A', outcome1: 'Yes', outcome2: 'No', title_start_ts: null, version: 1 },
  { type: 'tokens', condition_id: MARKET_A, token1_id: tokenOf(logs[0]!), token2_id: '1' },
  { type: 'metadata', condition_id: MARKET_B, title: 'Real match, market B', outcome1: 'Yes', outcome2: 'No', title_start_ts: null, version: 1 },
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
    if (outcome.kind !== 'events') throw new Error(`the recorded log ${log.transactionHash} yields no events (${outcome.kind})`);
    fills.push(...outcome.fills);
    trades.push(...outcome.trades);
    legs.push(...outcome.legs);
  }
  return { fills, trades, legs };
}

/** A data-API `/activity` TRADE row in the recorded sample's shape. */
function activityRow(fields: { wallet: string; log: RawLog; conditionId: string; side: 'BUY' | 'SELL'; size: number; price: number; usdcSize: number; tx?: string; ts?: number }): Json {
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
  activityRow({ wallet: MAKER, log: logs[0]!, conditionId: MARKET_A, side: 'BUY', size: buyMaker.shares as number, price: buyMaker.price as number, usdcSize: 2.3552 }),
  // The taker's own order of the same match: the opposite side of the same shares; a seller's usdcSize is net of its fee.
  activityRow({ wallet: TAKER, log: logs[1]!, conditionId: MARKET_A, side: 'SELL', size: 2.56, price: 0.92, usdcSize: Math.round((2.3552 - feeOf(logs[1]!)) * 1e6) / 1e6 }),
  // tx 0x4137…: SELL 6 at 0.48 (2.88 USDC), its fee taken from the proceeds.
  activityRow({ wallet: MAKER, log: logs[2]!, conditionId: MARKET_B, side: 'SELL', size: sellMaker.shares as number, price: sellMaker.price as number, usdcSize: Math.round((2.88 - (sellMaker.fee_usd as number)) * 1e6) / 1e6 }),
  activityRow({ wallet: MAKER, log: logs[0]!, conditionId: MARKET_A, side: 'BUY', size: 10, price: 0.5, usdcSize: 5, tx: UPSTREAM_ONLY_TX, ts: timestampOf(logs[2]!) + 60 }),
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
    legs: mapped.parsed.flatMap((row) => (row.kind === 'leg' ? [row.leg] : [])),
  };
}

/** Everything but display names (the upstream knows them, the chain does not) and the request's own timing. */
function figures(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(figures);
  if (body !== null && typeof body === 'object') {
    return Object.fromEntries(Object.entries(body as Json).filter(([key]) => key !== 'name').map(([key, value]) => [key, figures(value)]));
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
      expect(copy).toMatchObject({ tx_hash: fill.tx_hash, wallet: fill.wallet, condition_id: fill.condition_id, side: fill.side, token_side: fill.token_side, size_tokens: fill.size_tokens, ts: fill.ts });
      expect(copy.price).toBeCloseTo(fill.price, 9);
      expect(copy.log_index).not.toBe(fill.log_index);
    }
    // The sources disagree where only the chain knows: who made and who took the liquidity.
    expect(archive.fills.map((fill) => fill.role)).toEqual(['maker', 'taker', 'taker']);
    expect(copies.map((fill) => fill.role)).toEqual(['taker', 'taker', 'taker']);
    // The redemption: one leg each, the same payout, different log indexes.
    expect(archive.legs).toEqual([expect.objectContaining({ kind: 'REDEEM', wallet: REDEEMER, usd: redemption.payout_usdc, tx_hash: redemptionLog.transactionHash })]);
    expect(upstreamLegs).toEqual([expect.objectContaining({ kind: 'REDEEM', wallet: REDEEMER, condition_id: archive.legs[0]!.condition_id, usd: archive.legs[0]!.usd, tx_hash: archive.legs[0]!.tx_hash })]);
    expect(upstreamLegs[0]!.log_index).not.toBe(archive.legs[0]!.log_index);
  });

  for (const wallet of [MAKER, TAKER, REDEEMER]) {
    it(`${wallet === MAKER ? 'the maker' : wallet === TAKER ? 'the taker' : 'the redeemer'}: card, markets and fills equal the archive's alone, whichever source lands first`, async () => {
      const reads = [`traders/${wallet}`, `traders/${wallet}/markets?limit=100`, `traders/${wallet}/fills?since=0&limit=100`];
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
      const maker = (bodyOf(await api.get(`traders/${MAKER}/fills?since=0&limit=100`)) as { fills: { side: string; size_tokens: number; usd: number; price: number }[] }).fills;
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
      const redeemed = bodyOf(await api.get(`traders/${REDEEMER}/markets?limit=100`)) as { markets: { pnl_usd: number }[] };
      expect(redeemed.markets.map((market) => market.pnl_usd)).toEqual([expect.closeTo(redemption.payout_usdc as number, 6)]);
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
