/**
 * The importer end to end, as an operator runs it (`main.ts import <dir>`, no Kafka: the in-process log
 * and worker): every file of the real Polymarket exports in ../shared lands, and each wallet's
 * per-market buy/sell USD and token totals in the projections equal the sums over its CSV rows,
 * computed here straight from the CSV files.
 */
import { readdir, readFile, mkdtemp } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../config.ts';
import { createLogger } from '../log.ts';
import { openMigratedStore, withPublisher } from '../roles/runtime.ts';
import { bodyOf, gatesNeverBind, publishPlanKeys, startTestApi } from './harness/api.ts';
import { REPO_ROOT, startRole } from './harness/child.ts';
import { TEST_OVERRIDES, testEnvironment, uniqueId } from './harness/context.ts';

const EXPORTS = path.resolve(REPO_ROOT, '../shared/data/polymarket/collectmarkets');

interface Totals {
  rows: number;
  buyUsd: number;
  sellUsd: number;
  buyTokens1: number;
  buyTokens2: number;
  sellTokens1: number;
  sellTokens2: number;
}

/** The V1 → V2 cut-over, stated here as the fact it is (docs/upstream.md), not read from the code. */
const CUT_OVER_TS = Date.UTC(2026, 3, 28, 11, 15) / 1000;

async function csvTotals(): Promise<{
  files: number;
  rows: number;
  byTraderMarket: Map<string, Totals>;
  /** Rows at or after the cut-over: the V2 era's. */
  v2Rows: number;
  /** Every market a wallet has a row in, by the wallet's display name. */
  marketsByName: Map<string, Set<string>>;
}> {
  const byTraderMarket = new Map<string, Totals>();
  const marketsByName = new Map<string, Set<string>>();
  let files = 0;
  let rows = 0;
  let v2Rows = 0;
  for (const folder of await readdir(EXPORTS, { withFileTypes: true })) {
    if (!folder.isDirectory()) continue;
    for (const file of await readdir(path.join(EXPORTS, folder.name))) {
      if (!file.endsWith('.csv')) continue;
      files += 1;
      const records = parse(await readFile(path.join(EXPORTS, folder.name, file), 'utf8'), { columns: true }) as Record<
        string,
        string
      >[];
      for (const record of records) {
        rows += 1;
        if (Number(record.timestamp) >= CUT_OVER_TS) v2Rows += 1;
        const named = marketsByName.get(record.name!) ?? new Set<string>();
        marketsByName.set(record.name!, named.add(record.conditionId!.toLowerCase()));
        if (record.type !== 'TRADE') continue;
        const key = `${record.proxyWallet!.toLowerCase()}|${record.conditionId!.toLowerCase()}`;
        let totals = byTraderMarket.get(key);
        if (!totals)
          byTraderMarket.set(
            key,
            (totals = { rows: 0, buyUsd: 0, sellUsd: 0, buyTokens1: 0, buyTokens2: 0, sellTokens1: 0, sellTokens2: 0 }),
          );
        const usd = Number(record.usdcSize);
        const tokens = Number(record.size);
        const token1 = record.outcomeIndex === '0';
        totals.rows += 1;
        if (record.side === 'BUY') {
          totals.buyUsd += usd;
          if (token1) totals.buyTokens1 += tokens;
          else totals.buyTokens2 += tokens;
        } else {
          totals.sellUsd += usd;
          if (token1) totals.sellTokens1 += tokens;
          else totals.sellTokens2 += tokens;
        }
      }
    }
  }
  return { files, rows, byTraderMarket, v2Rows, marketsByName };
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are checked field by field

/**
 * The card of an imported trader, over REST and MCP, with the provider online but never having reported
 * on the wallet (no upstream poller ran): the upstream block in its offline form and the archive's own
 * figures, never zeros dated now. The exports hold no resolution, so nothing is realized.
 */
async function expectImportedCardsHonest(
  config: Config,
  totals: Awaited<ReturnType<typeof csvTotals>>,
  name: string,
): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  const keys = await publishPlanKeys(config, now - 86_400);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('upstreamStatus', [{ ts: now - 10, state: 'online', detail: '' }]);
  });
  const markets = totals.marketsByName.get(name)!.size;
  for (const [includeV1, counted] of [
    [false, 0],
    [true, markets],
  ] as const) {
    const api = await startTestApi(
      { ...config, card: { ...config.card, includeV1 } },
      {
        now: () => now,
        keys,
        gatesClockMs: gatesNeverBind(),
      },
    );
    try {
      const response = await api.get(`traders/${name}`);
      expect(response.statusCode).toBe(200);
      const card = bodyOf(response) as Json;
      expect(card.upstream, `includeV1 ${includeV1}`).toEqual({ status: 'upstream_offline' });
      expect(card.card).toMatchObject({ markets_total: counted, open_markets: counted, resolved_total: 0 });
      expect(card.card.career_pnl_usd).toBe(0);
      // No archive indexed V1 here: only the operator's override counts it, and the card says so.
      expect(card.card.coverage).toEqual({ eras: includeV1 ? ['v1', 'v2'] : ['v2'], v2_start_ts: CUT_OVER_TS });
      // Without V1 nothing is counted; with it, the open markets' cash flow and holdings: some figure, stated.
      if (counted === 0) expect(card.card.pnl_marked_usd).toBe(0);
      else expect(card.card.pnl_marked_usd).toEqual(expect.any(Number));

      await api.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = api.app.server.address() as AddressInfo;
      const client = new Client({ name: 'import-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}${config.mcp.path}`), {
          requestInit: { headers: { Authorization: `Bearer ${keys.max}` } },
        }),
      );
      try {
        const result = (await client.callTool({
          name: 'get_trader_card',
          arguments: { trader: name },
        })) as CallToolResult;
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toEqual(card);
      } finally {
        await client.close();
      }
    } finally {
      await api.close();
    }
  }
}

describe('import of Polymarket data-API exports', () => {
  it('loads every collectmarkets file; per wallet and market, USD and tokens equal the CSV sums', async () => {
    const expected = await csvTotals();
    expect(expected.files).toBeGreaterThan(20);

    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-import-'));
    const environment = testEnvironment(uniqueId('import'), dataDir, { LOG_LEVEL: 'info' });
    delete (environment as Record<string, string | undefined>).KAFKA_BROKERS;
    const run = startRole('import', [EXPORTS], environment, { overrides: TEST_OVERRIDES });
    const summary = await run.waitFor((line) => typeof line.text === 'string' && line.text.startsWith('read '));
    expect(await run.exited).toBe(0);
    expect(summary.text).toBe(
      `read ${expected.rows}, imported ${expected.rows}, duplicate 0, rejected 0, skipped 0 (${expected.files} files: ${expected.files} read, 0 skipped, 0 failed)`,
    );
    expect(run.stderr()).toBe('');

    const store = await openMigratedStore(parseConfig(environment), createLogger('error'));
    try {
      const rows = await store.query<{
        wallet: string;
        condition_id: string;
        fills_count: number;
        buy_usd: number;
        sell_usd: number;
        side1_buy_tokens: number;
        side2_buy_tokens: number;
        side1_sell_tokens: number;
        side2_sell_tokens: number;
      }>(
        `SELECT wallet, condition_id, fills_count, buy_usd, sell_usd, side1_buy_tokens, side2_buy_tokens, side1_sell_tokens, side2_sell_tokens
         FROM {db:Identifier}.trader_markets_v2 FINAL`,
      );
      const actual = new Map(rows.map((row) => [`${row.wallet}|${row.condition_id}`, row]));
      expect([...actual.keys()].sort()).toEqual([...expected.byTraderMarket.keys()].sort());
      for (const [key, want] of expected.byTraderMarket) {
        const got = actual.get(key)!;
        expect(got.fills_count, key).toBe(want.rows);
        expect(got.buy_usd, key).toBeCloseTo(want.buyUsd, 6);
        expect(got.sell_usd, key).toBeCloseTo(want.sellUsd, 6);
        expect(got.side1_buy_tokens, key).toBeCloseTo(want.buyTokens1, 6);
        expect(got.side2_buy_tokens, key).toBeCloseTo(want.buyTokens2, 6);
        expect(got.side1_sell_tokens, key).toBeCloseTo(want.sellTokens1, 6);
        expect(got.side2_sell_tokens, key).toBeCloseTo(want.sellTokens2, 6);
      }
      // Every market got its metadata, with the start time its title names.
      const markets = await store.query<{ slug: string; title_start_ts: number | null }>(
        'SELECT slug, title_start_ts FROM {db:Identifier}.markets_meta FINAL',
      );
      expect(markets).toHaveLength(new Set([...expected.byTraderMarket.keys()].map((key) => key.split('|')[1])).size);
      for (const market of markets) {
        const epoch = /-(\d{10})$/.exec(market.slug);
        if (epoch) expect(market.title_start_ts, market.slug).toBe(Number(epoch[1]));
        else expect(market.title_start_ts, market.slug).not.toBeNull();
      }
      // The exports' names reach the name index (the card and the identifier lookup read it).
      const names = await store.query<{ name: string }>('SELECT DISTINCT name FROM {db:Identifier}.trader_names FINAL');
      expect(names.map((row) => row.name).sort()).toEqual(['CRYINGLITTLEBABY', 'gabagool22']);
    } finally {
      await store.close();
    }
    // Every exported row is of the V1 era: the card counts none of them unless V1 is included.
    expect(expected.v2Rows).toBe(0);
    await expectImportedCardsHonest(parseConfig(environment, TEST_OVERRIDES), expected, 'gabagool22');
  });
});
