/// <reference lib="dom" />
/**
 * The live chart page (`GET {base_url}/live/chart`, operations/charts/live.js) in a real browser: Debian's
 * Chromium, headless, driven by playwright-core, against a listening server whose live plane is fed by
 * its in-process log. The page connects with the key from its address's fragment, watches the pair, and
 * the trades and the fill published on the log appear on the chart: the line's bucket at the trades' time
 * and the fill's marker at its (ts, UP price), drawn by the market chart's own script.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventPublisher } from '../ingest/publisher.ts';
import { publishAccount, publishNewKey } from '../ingest/sources/accounts.ts';
import { createLogger } from '../log.ts';
import { withPublisher } from '../roles/runtime.ts';
import { makeConditionId, makeFill, makeMarket, makeTrade, makeWallet } from './factories.ts';
import { inProcessConfig } from './harness/api.ts';
import { startLiveServer } from './harness/live.ts';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = new URL('./artifacts/', import.meta.url);
const config = inProcessConfig('live_chart');
const log = createLogger('silent');
const NOW_S = Math.floor(Date.now() / 1000);
const TRADER = makeWallet('live-chart-trader');
const MARKET = makeConditionId('live-chart-market');
/** A minute's start (the page's buckets are minutes), a little in the past. */
const T0 = NOW_S - (NOW_S % 60) - 600;

let browser: Browser;
let key = '';
let pageUrl = '';
let publisher: EventPublisher;
let close: () => Promise<void>;

beforeAll(async () => {
  await withPublisher(config, createLogger('error'), async ({ publisher: ingest }) => {
    await publishAccount(ingest, { accountId: 'chart-pro', plan: 'pro', displayName: 'Chart', version: NOW_S });
    key = (await publishNewKey(ingest, 'chart-pro', 'chart page', NOW_S)).plaintext;
    await ingest.publish('markets', [makeMarket({ condition_id: MARKET, outcome1: 'Yes', outcome2: 'No' })]);
  });
  const server = await startLiveServer(config, log);
  publisher = server.publisher;
  pageUrl = `${server.origin}${server.livePath}/chart#key=${encodeURIComponent(key)}&trader=${TRADER}&market=${MARKET}`;
  close = () => server.close();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--font-render-hinting=none'] });
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await close?.();
  await withPublisher(config, createLogger('error'), async () => undefined).catch(() => undefined);
});

type Live = { connected: boolean; watching: boolean; trades: number; fills: number; error: unknown };
const liveState = (page: Page) => page.evaluate(() => (window as unknown as { __live: Live }).__live);

describe('the live chart page', () => {
  it('is served to anyone, holds no data, and allows only its own origin besides inline code', async () => {
    const page = await browser.newPage();
    const response = await page.goto(pageUrl.split('#')[0]!);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("connect-src 'self'");
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    const html = await response!.text();
    expect(html).toContain('<script type="application/json" id="chart-data">null</script>');
    expect(html).not.toContain('%%');
    // Without the fragment it asks for the key, the trader and the market, and opens no connection.
    await page.waitForFunction(() => document.getElementById('live-status')?.textContent !== '', undefined, {
      timeout: 10_000,
    });
    expect(await page.locator('#live-status').textContent()).toContain('#key=…&trader=0x…&market=0x…');
    expect((await liveState(page)).connected).toBe(false);
    await page.close();
  });

  it('connects with the key of its fragment, watches, and draws the trades and the fill as they are published', async () => {
    const page = await browser.newPage({ viewport: { width: 900, height: 500 } });
    await page.goto(pageUrl);
    await page.waitForFunction(() => (window as unknown as { __live?: Live }).__live?.watching === true, undefined, {
      timeout: 15_000,
    });
    expect(await page.locator('#live-status').textContent()).toMatch(/^watching /);
    expect(await page.locator('#chart path.line').count()).toBe(0);

    // Token 2 at 0.30 is 0.70 in UP space; token 1 at 0.64 is 0.64.
    await publisher.publish('trades', [
      makeTrade({ condition_id: MARKET, ts: T0 + 5, token_side: 1, price: 0.64, seq: 1 }),
      makeTrade({ condition_id: MARKET, ts: T0 + 20, token_side: 2, price: 0.3, seq: 2 }),
    ]);
    await publisher.publish('fillsArchive', [
      makeFill({ wallet: TRADER, condition_id: MARKET, ts: T0 + 30, side: 'BUY', token_side: 1, price: 0.66 }),
    ]);
    await page.waitForFunction(
      () => {
        const live = (window as unknown as { __live: Live }).__live;
        return live.trades === 2 && live.fills === 1 && document.querySelectorAll('#chart path.fill').length === 1;
      },
      undefined,
      { timeout: 15_000 },
    );
    const line = page.locator('#chart path.line');
    expect(await line.count()).toBe(1);
    expect(await line.getAttribute('data-ts')).toBe(String(T0));
    const fill = page.locator('#chart path.fill');
    expect(await fill.getAttribute('data-ts')).toBe(String(T0 + 30));
    expect(Number(await fill.getAttribute('data-price'))).toBeCloseTo(0.66, 9);
    expect(await fill.getAttribute('data-side')).toBe('BUY');
    // The band of the minute spans the two trades' UP prices.
    const frame = await page.evaluate(() => {
      const chart = (window as unknown as { __chart: { ymin: number; ymax: number } }).__chart;
      return { ymin: chart.ymin, ymax: chart.ymax };
    });
    expect(frame.ymin).toBeLessThan(0.64);
    expect(frame.ymax).toBeGreaterThan(0.7);
    writeFileSync(new URL('live-chart.png', ARTIFACTS), await page.screenshot());
    expect((await liveState(page)).error).toBeNull();
    await page.close();
  });
});
