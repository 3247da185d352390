/**
 * The summary's USD shares (usd_share_first_tenth, usd_share_last_tenth) on a whole market of late
 * buyers, and what happens when an answer does not match its response schema.
 *
 * The hazard (issue 14, defect 8): a share divided a sum over an array by a sum that ClickHouse's
 * `sum()` added in another order; for a trader whose USD all lies in the last tenth it came out
 * 1.0000000000000004, the response schema (0..1) refused it, and the summary was a 500 for good. The
 * data set here is many wallets buying late in one market with cent-rounded amounts, and the test first
 * checks that it reproduces the hazard in this store (the two summation orders differ for some wallet).
 */
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeTrade, makeWallet, mulberry32 } from './factories.ts';
import { API, bodyOf, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';

const config = inProcessConfig('summary_shares');
const NOW = BASE_TS + 86_400;
const MARKET = makeConditionId('late-pilers');
/** The market's traded window: a first and a last trade 1,000 s apart; its last tenth starts at END − 100. */
const START = BASE_TS;
const END = BASE_TS + 1000;

interface WalletFills {
  wallet: string;
  fills: EventInputOf<'fillsArchive'>[];
}

const random = mulberry32(20261123);
/** Late buyers: every fill in the last tenth, amounts in cents as the data API has them. */
const LATE: WalletFills[] = Array.from({ length: 48 }, (_, index) => {
  const wallet = makeWallet(`late-${index}`);
  const count = 20 + Math.floor(random() * 60);
  const fills = Array.from({ length: count }, (_, n) => {
    const price = 0.9 + Math.round(random() * 9) / 100;
    const usd = Math.round(random() * 100_000) / 100;
    return makeFill({
      wallet,
      condition_id: MARKET,
      side: 'BUY',
      token_side: 1,
      price,
      size_tokens: usd / price,
      usd,
      ts: END - 99 + (n % 100),
    });
  });
  return { wallet, fills };
});
/** Spread buyers: fills across the whole window, so both shares are strictly between 0 and 1. */
const SPREAD: WalletFills[] = Array.from({ length: 6 }, (_, index) => {
  const wallet = makeWallet(`spread-${index}`);
  const fills = Array.from({ length: 30 }, (_, n) => {
    const usd = Math.round(random() * 50_000) / 100;
    return makeFill({
      wallet,
      condition_id: MARKET,
      side: 'BUY',
      token_side: 2,
      price: 0.5,
      size_tokens: usd / 0.5,
      usd,
      ts: START + Math.floor((n * 1000) / 29),
    });
  });
  return { wallet, fills };
});

/** The share of a wallet's USD in a tenth, computed here from its fills (the window is START..END). */
function referenceShares(fills: readonly EventInputOf<'fillsArchive'>[]): { first: number; last: number } {
  const span = END - START;
  let total = 0;
  let first = 0;
  let last = 0;
  for (const fill of fills) {
    total += fill.usd;
    if (10 * (fill.ts - START) <= span) first += fill.usd;
    if (10 * (END - fill.ts) <= span) last += fill.usd;
  }
  return { first: first / total, last: last / total };
}

let keys: Record<PlanId, string>;
let api: TestApi;

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW - 3600);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('markets', [
      makeMarket({
        condition_id: MARKET,
        title: 'Will the late pilers win?',
        outcome1: 'Yes',
        outcome2: 'No',
        title_start_ts: START,
      }),
    ]);
    await publisher.publish('trades', [
      makeTrade({ condition_id: MARKET, token_side: 1, price: 0.5, ts: START, seq: 1 }),
      makeTrade({ condition_id: MARKET, token_side: 1, price: 0.95, ts: END, seq: 2 }),
    ]);
    await publisher.publish(
      'fillsArchive',
      [...LATE, ...SPREAD].flatMap((entry) => entry.fills),
    );
  });
  api = await startTestApi(config, { now: () => NOW, keys });
});

afterAll(async () => {
  await api?.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
  await api?.close();
});

const summaryUrl = (wallet: string) => `${API}/traders/${wallet}/markets/${MARKET}/summary`;

/** Wallets whose `sum()` (the old denominator) adds to less than arraySum over groupArray (the old numerator). */
async function walletsWithTheHazard(store: Store): Promise<string[]> {
  const hazards: string[] = [];
  // One wallet at a time, as the summary read it (a single-place aggregate, not a GROUP BY of many).
  for (const { wallet } of LATE) {
    const [row] = await store.query<{ s: number; a: number }>(
      `SELECT sum(usd) AS s, arraySum(groupArray(usd)) AS a FROM {db:Identifier}.fills FINAL WHERE wallet = {wallet:String} AND condition_id = {condition_id:String}`,
      { wallet, condition_id: MARKET },
    );
    if (row && row.a > row.s) hazards.push(wallet);
  }
  return hazards;
}

describe('summary shares on a market of late buyers', () => {
  it('the data set reproduces the float hazard: for some wallets the two summation orders differ', async () => {
    const hazards = await walletsWithTheHazard(api.store);
    expect(hazards.length, 'wallets whose USD sums differ by summation order').toBeGreaterThan(0);
  });

  it('every late buyer: 200, usd_share_last_tenth exactly 1 and usd_share_first_tenth 0; spread buyers: the reference shares, within 0..1', async () => {
    const failures: string[] = [];
    for (const { wallet, fills } of LATE) {
      const response = await api.get(summaryUrl(wallet));
      const body = bodyOf(response) as {
        summary?: { usd_share_first_tenth: number; usd_share_last_tenth: number; fills_count: number };
      };
      if (response.statusCode !== 200) {
        failures.push(`${wallet}: ${response.statusCode} ${JSON.stringify(body)}`);
        continue;
      }
      expect(body.summary!.fills_count).toBe(fills.length);
      if (body.summary!.usd_share_last_tenth !== 1 || body.summary!.usd_share_first_tenth !== 0)
        failures.push(`${wallet}: ${JSON.stringify(body.summary)}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
    for (const { wallet, fills } of SPREAD) {
      const response = await api.get(summaryUrl(wallet));
      expect(response.statusCode).toBe(200);
      const { summary } = bodyOf(response) as {
        summary: { usd_share_first_tenth: number; usd_share_last_tenth: number };
      };
      const expected = referenceShares(fills);
      expect(summary.usd_share_first_tenth).toBeCloseTo(expected.first, 12);
      expect(summary.usd_share_last_tenth).toBeCloseTo(expected.last, 12);
      for (const share of [summary.usd_share_first_tenth, summary.usd_share_last_tenth])
        expect(share > 0 && share < 1).toBe(true);
    }
  });
});

describe('an answer that does not match its response schema', () => {
  const logLines: Record<string, unknown>[] = [];
  let broken: TestApi;
  let client: Client;

  beforeAll(async () => {
    const destination = { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) };
    // The summary read returns a fill count the schema refuses (an integer ≥ 0): a bug of ours, simulated.
    broken = await startTestApi(config, {
      now: () => NOW,
      keys,
      log: createLogger('error', destination),
      wrapStore: (store) => ({
        ...store,
        database: store.database,
        kind: store.kind,
        query: async <Row>(
          sql: string,
          params?: Record<string, unknown>,
          options?: { timeoutSeconds?: number | undefined },
        ) => {
          const rows = await store.query<Row>(sql, params, options);
          // The summary's bundle (projections/bundle.ts): the trader's fills and its row of the market,
          // whose serialized `wallet_row` carries fills_count.
          if (!(/wallet_row/.test(sql) && /fills_v2/.test(sql))) return rows;
          return rows.map((row) => {
            const part = row as { part: number; row: string };
            const values = JSON.parse(part.row) as Record<string, unknown>;
            if (typeof values.wallet_row !== 'string') return row;
            const walletRow = { ...(JSON.parse(values.wallet_row) as Record<string, unknown>), fills_count: 2.5 };
            return { ...part, row: JSON.stringify({ wallet_row: JSON.stringify(walletRow) }) } as Row;
          });
        },
      }),
    });
    await broken.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = broken.app.server.address() as AddressInfo;
    client = new Client({ name: 'summary-shares-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}${config.mcp.path}`), {
        requestInit: { headers: { Authorization: `Bearer ${keys.pro}` } },
      }),
    );
  });

  afterAll(async () => {
    await client?.close();
    await broken?.app.close();
  });

  const mismatchLogs = () => logLines.filter((line) => line.msg === 'the answer does not match its response schema');

  it('REST: the contract 500 body, and the log names the route, the path and the value', async () => {
    const wallet = SPREAD[0]!.wallet;
    const response = await broken.get(summaryUrl(wallet));
    expect(response.statusCode).toBe(500);
    expect(bodyOf(response)).toEqual({ error: 'internal', message: expect.any(String) });
    expect(JSON.stringify(bodyOf(response))).not.toContain('2.5');
    const [logged] = mismatchLogs();
    expect(logged).toMatchObject({
      level: 50,
      route: `GET ${API}/traders/:trader/markets/:condition_id/summary`,
      url: summaryUrl(wallet),
      mismatches: [{ path: 'summary.fills_count', value: '2.5', code: 'invalid_type' }],
    });
  });

  it('MCP: an isError internal result, and the log names the tool, the path and the value', async () => {
    const before = mismatchLogs().length;
    const result = (await client.callTool({
      name: 'get_market_summary',
      arguments: { trader: SPREAD[1]!.wallet, market: MARKET },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: 'internal' });
    const logged = mismatchLogs().slice(before);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({
      level: 50,
      route: 'tool get_market_summary',
      tool: 'get_market_summary',
      mismatches: [{ path: 'summary.fills_count', value: '2.5' }],
    });
  });
});
