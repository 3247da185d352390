/// <reference lib="dom" />
/**
 * The chart templates (mcp/charts) in a real browser: Debian's Chromium, headless, driven by
 * playwright-core. Every kind, format and theme is filled with what the service answers for published
 * events (the sampled chart plus slabs, the full tape, the pnl series), then checked: __ready, the test
 * hooks change what is drawn, no request at all for the vector market chart, pixels of the fixed colors
 * on a screenshot, and geometry from the DOM (markers at (ts, price), count labels, no line across a
 * gap, the y-range rule). Screenshots go to test/artifacts/.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import { chartTemplate, fillChartTemplate, type ChartFormat, type ChartKind, type ChartTheme } from '../mcp/charts/templates.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import { API, bodyOf, gatesNeverBind, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { countColor, decodePng, type Image } from './harness/png.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- chart answers are read field by field

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = new URL('./artifacts/', import.meta.url);
const COLORS = { line: '#3d7dff', up: '#46ff8e', down: '#ff5a3c', pin: '#ffb84d', night: '#101410' };
const NOW = BASE_TS + 10 * 86_400;
const DAY = 86_400;
const config = inProcessConfig('charts');

const trader = makeWallet('charts-trader');
const resolved = makeConditionId('charts-resolved');
const openMarket = makeConditionId('charts-open');
const t0 = BASE_TS; // aligned to every rung up to 1 h
// Resolved market: trades every 10 s for 20 minutes, nothing for 20 minutes (a gap), trades again for 20 minutes.
let seq = 0;
const trades: EventInputOf<'trades'>[] = [];
for (let s = 0; s <= 3600; s += 10) {
  if (s > 1200 && s < 2400) continue;
  const up = 0.42 + 0.3 * (s / 3600) + 0.03 * Math.sin(s / 97);
  trades.push(makeTrade({ condition_id: resolved, ts: t0 + s, token_side: 1, price: Math.round(up * 1000) / 1000, seq: ++seq }));
  if (s % 50 === 0) trades.push(makeTrade({ condition_id: resolved, ts: t0 + s, token_side: 2, price: Math.round((1 - up + 0.02) * 1000) / 1000, seq: ++seq }));
}
for (let s = 0; s <= 1800; s += 30) trades.push(makeTrade({ condition_id: openMarket, ts: t0 + DAY + s, token_side: 1, price: 0.5 + 0.1 * Math.sin(s / 300), seq: ++seq }));
const fills = [
  // Three buys of Up in one 15 s bucket (a count label), a big Down buy, a sell of Up.
  makeFill({ wallet: trader, condition_id: resolved, side: 'BUY', token_side: 1, price: 0.5, size_tokens: 400, usd: 200, ts: t0 + 600 }),
  makeFill({ wallet: trader, condition_id: resolved, side: 'BUY', token_side: 1, price: 0.5, size_tokens: 100, usd: 50, ts: t0 + 602 }),
  makeFill({ wallet: trader, condition_id: resolved, side: 'BUY', token_side: 1, price: 0.51, size_tokens: 60, usd: 30.6, ts: t0 + 607 }),
  makeFill({ wallet: trader, condition_id: resolved, side: 'BUY', token_side: 2, price: 0.4, size_tokens: 1000, usd: 400, ts: t0 + 300 }),
  makeFill({ wallet: trader, condition_id: resolved, side: 'SELL', token_side: 1, price: 0.7, size_tokens: 300, usd: 210, ts: t0 + 3000 }),
  makeFill({ wallet: trader, condition_id: openMarket, side: 'BUY', token_side: 1, price: 0.52, size_tokens: 100, usd: 52, ts: t0 + DAY + 400 }),
  makeFill({ wallet: trader, condition_id: openMarket, side: 'SELL', token_side: 2, price: 0.45, size_tokens: 100, usd: 45, ts: t0 + DAY + 900 }),
];
const equity: EventInputOf<'upstreamEquity'>[] = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => ({ wallet: trader, ts: NOW - (9 - i) * DAY, pnl_usd: [0, 120, 80, 260, 150, 90, 310, 280, 400][i]! }));

let keys: Record<PlanId, string>;
let api: TestApi;
let browser: Browser;
let libraryServer: http.Server;
let scriptHost: string;
const data: Json = {};

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW - DAY);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('markets', [
      makeMarket({ condition_id: resolved, title: 'Bitcoin Up or Down - January 4, 3:00PM-4:00PM ET', title_start_ts: t0, end_ts: t0 + 3600, outcome1: 'Up', outcome2: 'Down' }),
      makeMarket({ condition_id: openMarket, title: 'Ducks vs. Wild', title_start_ts: t0 + DAY, end_ts: t0 + DAY + 7200, outcome1: 'Ducks', outcome2: 'Wild' }),
    ]);
    await publisher.publish('trades', trades);
    await publisher.publish('fillsArchive', fills);
    await publisher.publish('markets', [makeResolution(resolved, 1, t0 + 3700)]);
    await publisher.publish('upstreamProfiles', [{ wallet: trader, name: 'ChartWhale', profile_image: '', pnl: 400, pnl_realized: 390, pnl_unrealized: 10, portfolio_value: 900, as_of: NOW - 60 }]);
    await publisher.publish('upstreamEquity', equity);
    await publisher.publish('upstreamStatus', [{ ts: NOW - 30, state: 'online', detail: '' }]);
  });
  api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind(Date.UTC(2026, 0, 1), 3_600_000) }); // an hour a step: the budget test below reads one month's count
  const get = async (path: string) => {
    const response = await api.get(path);
    expect(response.statusCode, path).toBe(200);
    return response;
  };
  data.resolvedChart = bodyOf(await get(`traders/${trader}/markets/${resolved}`));
  data.openChart = bodyOf(await get(`traders/${trader}/markets/${openMarket}`));
  data.resolvedPage = (await get(`traders/${trader}/markets/${resolved}/chart.html`)).body;
  data.openPage = (await get(`traders/${trader}/markets/${openMarket}/chart.html?theme=day`)).body;
  data.tape = bodyOf(await get(`traders/${trader}/markets/${resolved}/tape`));
  data.pnl = bodyOf(await get(`traders/${trader}/pnl-series`));

  // The tape template's library, from node_modules, on a local port (the configurable script host).
  const dist = new URL('../node_modules/uplot/dist/', import.meta.url);
  libraryServer = http.createServer((request, response) => {
    const name = (request.url ?? '').split('?')[0]!.replace(/^\/uplot\//, '');
    if (!/^uPlot\.(iife\.min\.js|min\.css)$/.test(name)) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': name.endsWith('.css') ? 'text/css' : 'text/javascript' }).end(readFileSync(new URL(name, dist)));
  });
  await new Promise<void>((resolve) => libraryServer.listen(0, '127.0.0.1', resolve));
  scriptHost = `http://127.0.0.1:${(libraryServer.address() as AddressInfo).port}/uplot`;

  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--font-render-hinting=none'] });
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (libraryServer ? libraryServer.close(resolve) : resolve(null)));
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
});

// ---------------------------------------------------------------------------------------------------

interface Opened {
  page: Page;
  requests: string[];
  url: string;
}

/** Opens a document (fulfilled by the page's own route, never fetched) and waits for __ready. */
async function openChart(content: string, format: ChartFormat | 'html', name: string): Promise<Opened> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 620 }, deviceScaleFactor: 1 });
  // On the library server's origin (loopback): Chromium refuses a public origin's requests to a local address.
  const url = `${new URL(scriptHost).origin}/charts/${name}.${format}`;
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.route(url, (route) => route.fulfill({ status: 200, contentType: format === 'svg' ? 'image/svg+xml' : 'text/html; charset=utf-8', body: content }));
  await page.goto(url);
  await page.waitForFunction(() => (window as unknown as { __ready?: boolean }).__ready === true, undefined, { timeout: 10_000 }).catch((failure: unknown) => {
    throw new Error(`${name}: not ready (${errors.join('; ')}) ${String(failure)}`);
  });
  expect(errors, name).toEqual([]);
  return { page, requests, url };
}

async function shot(page: Page, name: string): Promise<Image> {
  const png = await page.screenshot({ type: 'png' });
  writeFileSync(new URL(`${name}.png`, ARTIFACTS), png);
  return decodePng(png);
}

const attrs = (page: Page) =>
  page.evaluate(() => {
    const root = document.getElementById('chart')!;
    const out: Record<string, string> = {};
    for (const attr of Array.from(root.attributes)) out[attr.name] = attr.value;
    return out;
  });

/** The y-range rule: the band of the drawn points (plus the winner level), padded 18%, clamped to -0.02..1.02. */
function expectedYRange(points: number[][], winnerLevel: number | null): [number, number] {
  let lo = Math.min(...points.map((p) => p[2]!));
  let hi = Math.max(...points.map((p) => p[3]!));
  if (winnerLevel !== null) {
    lo = Math.min(lo, winnerLevel);
    hi = Math.max(hi, winnerLevel);
  }
  const pad = Math.max((hi - lo) * 0.18, 0.01);
  return [Math.max(-0.02, lo - pad), Math.min(1.02, hi + pad)];
}

/** What the market chart draws, read back from the DOM. */
const drawn = (page: Page) =>
  page.evaluate(() => {
    const root = document.getElementById('chart')!;
    const box = (node: Element) => {
      const rect = node.getBoundingClientRect();
      return { x: rect.x, y: rect.y, width: rect.width, height: rect.height };
    };
    return {
      lines: Array.from(root.querySelectorAll('path.line')).map((node) => ({ ts: node.getAttribute('data-ts')!.split(',').map(Number), d: node.getAttribute('d')!, stroke: node.getAttribute('stroke') })),
      bands: root.querySelectorAll('path.band').length,
      fills: Array.from(root.querySelectorAll('path.fill')).map((node) => ({
        ts: Number(node.getAttribute('data-ts')),
        price: Number(node.getAttribute('data-price')),
        side: node.getAttribute('data-side'),
        outcome: node.getAttribute('data-outcome'),
        color: node.getAttribute('fill'),
        r: Number(node.getAttribute('data-r')),
        d: node.getAttribute('d')!,
        box: box(node),
      })),
      counts: Array.from(root.querySelectorAll('text.count')).map((node) => ({ slot: Number(node.getAttribute('data-slot')), count: Number(node.getAttribute('data-count')) })),
      pin: root.querySelector('circle.pin') ? box(root.querySelector('circle.pin')!) : null,
      pinLine: root.querySelector('path.pin-line')?.getAttribute('stroke-dasharray') ?? null,
      surface: root.querySelector('rect.surface')?.getAttribute('fill') ?? null,
    };
  });

function axes(a: Record<string, string>) {
  const [l, t, w, h] = a['data-plot']!.split(',').map(Number) as [number, number, number, number];
  const from = Number(a['data-from']);
  const to = Number(a['data-to']);
  const ymin = Number(a['data-ymin']);
  const ymax = Number(a['data-ymax']);
  return { x: (ts: number) => l + ((ts - from) / (to - from)) * w, y: (p: number) => t + ((ymax - p) / (ymax - ymin)) * h, from, to, ymin, ymax, fidelity: Number(a['data-fidelity']) };
}

/** Geometry of a market chart against its data: markers, count labels, gaps, y-range. */
async function checkMarketGeometry(page: Page, chart: Json, slabs: Json[] | undefined) {
  const a = await attrs(page);
  const ax = axes(a);
  const d = await drawn(page);
  const slab = (slabs ?? [chart.series]).find((candidate: Json) => candidate.fidelity === ax.fidelity)!;
  expect(slab, `a slab of fidelity ${ax.fidelity}`).toBeDefined();
  const visible = (slab.points as number[][]).filter((p) => p[0]! + ax.fidelity > ax.from && p[0]! <= ax.to);
  // Lines: consecutive buckets only, one run per path, a gap between runs; the line color.
  expect(d.lines.length).toBeGreaterThan(0);
  expect(d.bands).toBe(d.lines.length);
  const drawnTs = d.lines.flatMap((line) => line.ts);
  expect(drawnTs).toEqual(visible.map((p) => p[0]));
  for (const line of d.lines) {
    expect(line.stroke).toBe(COLORS.line);
    expect(line.d.match(/M/g)).toHaveLength(1);
    for (let i = 1; i < line.ts.length; i++) expect(line.ts[i]! - line.ts[i - 1]!).toBe(ax.fidelity);
  }
  for (let i = 1; i < d.lines.length; i++) expect(d.lines[i]!.ts[0]! - d.lines[i - 1]!.ts.at(-1)!).toBeGreaterThan(ax.fidelity);
  // Each line vertex sits at (ts, (lo + hi) / 2).
  for (const line of d.lines.filter((candidate) => candidate.ts.length > 1)) {
    const vertices = [...line.d.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((match) => [Number(match[1]), Number(match[2])]);
    line.ts.forEach((ts, index) => {
      const point = visible.find((p) => p[0] === ts)!;
      expect(vertices[index]![0]).toBeCloseTo(ax.x(ts), 3);
      expect(vertices[index]![1]).toBeCloseTo(ax.y((point[2]! + point[3]!) / 2), 3);
    });
  }
  // Y-range rule.
  const winnerLevel = chart.market.resolved ? (chart.market.winner === chart.market.outcome ? 1 : 0) : null;
  const [ymin, ymax] = expectedYRange(visible, winnerLevel);
  expect(ax.ymin).toBeCloseTo(ymin, 9);
  expect(ax.ymax).toBeCloseTo(ymax, 9);
  // Markers: every fill in view, at (ts, price): apex and base center on x, the triangle spans y; buy up, sell down.
  const inView = (chart.fills as Json[]).filter((fill) => fill.ts >= ax.from && fill.ts <= ax.to);
  expect(d.fills.map((fill) => `${fill.ts}@${fill.price}`).sort()).toEqual(inView.map((fill) => `${fill.ts}@${fill.price}`).sort());
  for (const fill of d.fills) {
    const [apex, b, c] = [...fill.d.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((match) => [Number(match[1]), Number(match[2])]) as [number[], number[], number[]];
    const x = ax.x(fill.ts);
    const y = ax.y(fill.price);
    expect(apex[0]).toBeCloseTo(x, 3);
    expect((b[0]! + c[0]!) / 2).toBeCloseTo(x, 3);
    if (fill.side === 'BUY') expect(apex[1]! < y && y < b[1]!).toBe(true);
    else expect(apex[1]! > y && y > b[1]!).toBe(true);
  }
  // Count labels exactly on the x-slots (buckets of the drawn rung) with 3 or more fills.
  const slots = new Map<number, number>();
  for (const fill of inView) slots.set(Math.floor(fill.ts / ax.fidelity), (slots.get(Math.floor(fill.ts / ax.fidelity)) ?? 0) + 1);
  const expectedCounts = [...slots.entries()].filter(([, n]) => n >= 3).map(([slot, count]) => ({ slot, count }));
  expect(d.counts.sort((p, q) => p.slot - q.slot)).toEqual(expectedCounts.sort((p, q) => p.slot - q.slot));
  return { ax, d };
}

function filled(kind: ChartKind, format: ChartFormat, theme: ChartTheme, body: unknown): string {
  const template = chartTemplate(kind, format, theme, scriptHost)!;
  expect(template.split('__DATA__')).toHaveLength(2);
  return fillChartTemplate(template, body);
}

// ---------------------------------------------------------------------------------------------------

describe('market (vector, self-contained)', () => {
  it('the REST chart page of a resolved market: no request, geometry, hooks, colors (night)', async () => {
    const { page, requests, url } = await openChart(data.resolvedPage, 'html', 'market-html-night');
    expect(requests).toEqual([url]);
    const slabs = JSON.parse(data.resolvedPage.match(/<script type="application\/json" id="chart-data">([\s\S]*?)<\/script>/)![1]).slabs as Json[];
    expect(slabs.length).toBeGreaterThan(1);
    expect(slabs[0]).toEqual({ ...data.resolvedChart.series });
    const first = await checkMarketGeometry(page, data.resolvedChart, slabs);
    expect(first.ax.fidelity).toBe(data.resolvedChart.series.fidelity);
    // The gap of 20 minutes: at least two runs.
    expect(first.d.lines.length).toBeGreaterThanOrEqual(2);
    expect(first.d.counts).toEqual([{ slot: Math.floor((t0 + 600) / first.ax.fidelity), count: 3 }]);
    expect(first.d.pinLine).toBe('6 5');
    expect(first.d.surface).toBe(COLORS.night);
    // Colors by token family: Up green, Down red.
    for (const fill of first.d.fills) expect(fill.color).toBe(fill.outcome === 'Up' ? COLORS.up : COLORS.down);

    const image = await shot(page, 'market-html-night');
    expect(countColor(image, COLORS.night)).toBeGreaterThan(image.width * image.height * 0.4);
    expect(countColor(image, COLORS.line)).toBeGreaterThan(300);
    const downFill = first.d.fills.find((fill) => fill.outcome === 'Down')!;
    const upSell = first.d.fills.find((fill) => fill.side === 'SELL')!;
    expect(countColor(image, COLORS.down, downFill.box)).toBeGreaterThan(20);
    expect(countColor(image, COLORS.up, upSell.box)).toBeGreaterThan(10);
    expect(countColor(image, COLORS.up, downFill.box)).toBe(0);
    expect(countColor(image, COLORS.pin, first.d.pin!)).toBeGreaterThan(20);

    // __setRange zooms through a finer slab; __setDom moves the domain and keeps the rung.
    await page.evaluate(([from, to]) => (window as any).__setRange(from, to), [t0 + 500, t0 + 700]); // eslint-disable-line @typescript-eslint/no-explicit-any
    const zoomed = await checkMarketGeometry(page, data.resolvedChart, slabs);
    expect(zoomed.ax.fidelity).toBeLessThan(first.ax.fidelity);
    expect([zoomed.ax.from, zoomed.ax.to]).toEqual([t0 + 500, t0 + 700]);
    expect(zoomed.d.fills).toHaveLength(3);
    await shot(page, 'market-html-night-zoomed');
    await page.evaluate(([from, to]) => (window as any).__setDom(from, to), [t0, t0 + 1800]); // eslint-disable-line @typescript-eslint/no-explicit-any
    const dom = await checkMarketGeometry(page, data.resolvedChart, slabs);
    expect(dom.ax.fidelity).toBe(zoomed.ax.fidelity);
    expect([dom.ax.from, dom.ax.to]).toEqual([t0, t0 + 1800]);
    // __setTheme: day surface, no night pixels left.
    await page.evaluate(() => (window as any).__setTheme('day')); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect((await drawn(page)).surface).not.toBe(COLORS.night);
    const day = await shot(page, 'market-html-night-then-day');
    expect(countColor(day, COLORS.night, undefined, 2)).toBeLessThan(50);
    expect(countColor(day, COLORS.line)).toBeGreaterThan(100);
    // A person hovering reads the bucket under the pointer; over the gap it says so.
    await page.evaluate(([from, to]) => (window as any).__setRange(from, to), [data.resolvedChart.series.from_ts, data.resolvedChart.series.to_ts]); // eslint-disable-line @typescript-eslint/no-explicit-any
    const plotBox = axes(await attrs(page));
    await page.mouse.move(plotBox.x(t0 + 605), 300);
    expect(await page.textContent('#hover text')).toMatch(/mid 0\.\d{3}.*3 fills: BUY Up/);
    await page.mouse.move(plotBox.x(t0 + 1800), 300);
    expect(await page.textContent('#hover text')).toContain('no trade (gap)');
    expect(requests).toEqual([url]);
    await page.close();
  });

  it('the REST chart page of an open market in the day theme: hash colors for other names, no pin', async () => {
    const { page, requests, url } = await openChart(data.openPage, 'html', 'market-html-day');
    expect(requests).toEqual([url]);
    const slabs = JSON.parse(data.openPage.match(/id="chart-data">([\s\S]*?)<\/script>/)![1]).slabs as Json[];
    const { d } = await checkMarketGeometry(page, data.openChart, slabs);
    expect(d.pin).toBeNull();
    expect(d.surface).not.toBe(COLORS.night);
    const colors = new Set(d.fills.map((fill) => fill.color));
    expect(colors.size).toBe(2);
    for (const color of colors) expect([COLORS.up, COLORS.down, COLORS.line, COLORS.pin]).not.toContain(color);
    const image = await shot(page, 'market-html-day');
    expect(countColor(image, COLORS.night, undefined, 2)).toBeLessThan(50);
    expect(countColor(image, COLORS.line)).toBeGreaterThan(200);
    expect(countColor(image, COLORS.pin)).toBe(0);
    await page.evaluate(() => (window as any).__setTheme('night')); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(countColor(await shot(page, 'market-html-day-then-night'), COLORS.night)).toBeGreaterThan(100_000);
    await page.close();
  });

  for (const theme of ['night', 'day'] as const) {
    it(`the svg document (${theme}), filled with the get_market_events answer: same conventions, no request`, async () => {
      const { page, requests, url } = await openChart(filled('market', 'svg', theme, data.resolvedChart), 'svg', `market-svg-${theme}`);
      expect(requests).toEqual([url]);
      const { d } = await checkMarketGeometry(page, data.resolvedChart, undefined);
      expect(d.lines.length).toBeGreaterThanOrEqual(2);
      const image = await shot(page, `market-svg-${theme}`);
      expect(countColor(image, COLORS.line)).toBeGreaterThan(200);
      expect(countColor(image, COLORS.pin, d.pin!)).toBeGreaterThan(20);
      expect(countColor(image, COLORS.down, d.fills.find((fill) => fill.outcome === 'Down')!.box)).toBeGreaterThan(20);
      if (theme === 'night') expect(countColor(image, COLORS.night)).toBeGreaterThan(200_000);
      else expect(countColor(image, COLORS.night, undefined, 2)).toBe(0);
      await page.evaluate(([from, to]) => (window as any).__setDom(from, to), [t0 + 2400, t0 + 3600]); // eslint-disable-line @typescript-eslint/no-explicit-any
      const after = await checkMarketGeometry(page, data.resolvedChart, undefined);
      expect(after.ax.from).toBe(t0 + 2400);
      await page.close();
    });
  }
});

describe('market-tape (uPlot from the script host)', () => {
  for (const theme of ['night', 'day'] as const) {
    it(`draws the full tape with the fills (${theme}); hooks; colors`, async () => {
      const body = { ...data.tape, fills: data.resolvedChart.fills };
      const { page, requests } = await openChart(filled('market-tape', 'html', theme, body), 'html', `market-tape-${theme}`);
      expect(requests.some((request) => request.startsWith(scriptHost))).toBe(true);
      const a = await attrs(page);
      expect(a['data-theme']).toBe(theme);
      const markers = (await page.evaluate(() => (window as any).__markers)) as { ts: number; price: number; x: number; y: number }[]; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(markers).toHaveLength(data.resolvedChart.fills.length);
      // Markers at (ts, price) on uPlot's scales: the plot box and the scale ranges, read back from the plot.
      const frame = await page.evaluate(() => {
        const u = (window as any).__chart.plot; // eslint-disable-line @typescript-eslint/no-explicit-any
        const ratio = (window as any).uPlot.pxRatio; // eslint-disable-line @typescript-eslint/no-explicit-any
        return { left: u.bbox.left / ratio, top: u.bbox.top / ratio, width: u.bbox.width / ratio, height: u.bbox.height / ratio, x: [u.scales.x.min, u.scales.x.max], y: [u.scales.y.min, u.scales.y.max] };
      });
      for (const marker of markers) {
        expect(marker.x).toBeCloseTo(frame.left + ((marker.ts - frame.x[0]) / (frame.x[1] - frame.x[0])) * frame.width, 1);
        expect(marker.y).toBeCloseTo(frame.top + ((frame.y[1] - marker.price) / (frame.y[1] - frame.y[0])) * frame.height, 1);
      }
      // The y-range rule over the whole tape (the winner level included: the tape ends pinned there).
      const [ymin, ymax] = expectedYRange(data.tape.tape.slice(0, -1), data.tape.tape.at(-1)[1]);
      expect(frame.y[0]).toBeCloseTo(ymin, 9);
      expect(frame.y[1]).toBeCloseTo(ymax, 9);
      // Three fills seven seconds apart share one x-slot at this scale: one count label.
      expect((await page.evaluate(() => (window as any).__counts)).map((count: { n: number }) => count.n)).toEqual([3]); // eslint-disable-line @typescript-eslint/no-explicit-any
      const image = await shot(page, `market-tape-${theme}`);
      expect(countColor(image, COLORS.line)).toBeGreaterThan(200);
      expect(countColor(image, COLORS.pin)).toBeGreaterThan(20);
      expect(countColor(image, COLORS.up)).toBeGreaterThan(20);
      expect(countColor(image, COLORS.down)).toBeGreaterThan(20);
      if (theme === 'night') expect(countColor(image, COLORS.night)).toBeGreaterThan(200_000);
      else expect(countColor(image, COLORS.night, undefined, 2)).toBeLessThan(50);
      await page.evaluate(([from, to]) => (window as any).__setRange(from, to), [t0 + 550, t0 + 650]); // eslint-disable-line @typescript-eslint/no-explicit-any
      const zoomed = await attrs(page);
      expect([Number(zoomed['data-from']), Number(zoomed['data-to'])]).toEqual([t0 + 550, t0 + 650]);
      expect((await page.evaluate(() => (window as any).__markers)).length).toBe(3); // eslint-disable-line @typescript-eslint/no-explicit-any
      // Zoomed in, they are apart: no label.
      expect(await page.evaluate(() => (window as any).__counts)).toEqual([]); // eslint-disable-line @typescript-eslint/no-explicit-any
      await page.evaluate((next) => (window as any).__setTheme(next), theme === 'night' ? 'day' : 'night'); // eslint-disable-line @typescript-eslint/no-explicit-any
      await page.waitForFunction(() => (window as any).__ready === true); // eslint-disable-line @typescript-eslint/no-explicit-any
      const switched = await shot(page, `market-tape-${theme}-switched`);
      if (theme === 'night') expect(countColor(switched, COLORS.night, undefined, 2)).toBeLessThan(50);
      else expect(countColor(switched, COLORS.night)).toBeGreaterThan(200_000);
      await page.close();
    });
  }
});

describe('equity', () => {
  for (const [format, theme] of [['html', 'night'], ['html', 'day'], ['svg', 'night'], ['svg', 'day']] as const) {
    it(`${format} ${theme}: the pnl curve, then drawdown; range and theme hooks`, async () => {
      const { page, requests, url } = await openChart(filled('equity', format, theme, data.pnl), format, `equity-${format}-${theme}`);
      expect(requests).toEqual([url]);
      const series = data.pnl.series as [number, number][];
      const pnl = await attrs(page);
      expect(pnl['data-mode']).toBe('pnl');
      const line = await page.evaluate(() => {
        const node = document.querySelector('path.line')!;
        return { ts: node.getAttribute('data-ts')!.split(',').map(Number), d: node.getAttribute('d')! };
      });
      expect(line.ts).toEqual(series.map((p) => p[0]));
      const ax = axes(pnl);
      const vertices = [...line.d.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((match) => [Number(match[1]), Number(match[2])]);
      series.forEach(([ts, value], index) => {
        expect(vertices[index]![0]).toBeCloseTo(ax.x(ts), 3);
        expect(vertices[index]![1]).toBeCloseTo(ax.y(value), 3);
      });
      const image = await shot(page, `equity-${format}-${theme}`);
      expect(countColor(image, COLORS.line)).toBeGreaterThan(200);
      if (theme === 'night') expect(countColor(image, COLORS.night)).toBeGreaterThan(200_000);
      else expect(countColor(image, COLORS.night, undefined, 2)).toBeLessThan(50);

      await page.evaluate(() => (window as any).__setMode('drawdown')); // eslint-disable-line @typescript-eslint/no-explicit-any
      const dd = await attrs(page);
      expect(dd['data-mode']).toBe('drawdown');
      let runningMax = -Infinity;
      const drawdowns = series.map(([, value]) => ((runningMax = Math.max(runningMax, value)), value - runningMax));
      expect(Math.min(...drawdowns)).toBe(-data.pnl.max_drawdown);
      const ddAx = axes(dd);
      const ddPath = await page.evaluate(() => document.querySelector('path.line.drawdown')!.getAttribute('d')!);
      const ddVertices = [...ddPath.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((match) => Number(match[2]));
      drawdowns.forEach((value, index) => {
        expect(ddVertices[index]).toBeCloseTo(ddAx.y(value), 3);
      });
      const ddImage = await shot(page, `equity-${format}-${theme}-drawdown`);
      expect(countColor(ddImage, COLORS.down)).toBeGreaterThan(100);
      expect(countColor(ddImage, COLORS.line)).toBeLessThan(countColor(image, COLORS.line));

      await page.evaluate(([from, to]) => (window as any).__setRange(from, to), [series[3]![0], series[6]![0]]); // eslint-disable-line @typescript-eslint/no-explicit-any
      const ranged = await attrs(page);
      expect([Number(ranged['data-from']), Number(ranged['data-to'])]).toEqual([series[3]![0], series[6]![0]]);
      await page.evaluate((next) => (window as any).__setTheme(next), theme === 'night' ? 'day' : 'night'); // eslint-disable-line @typescript-eslint/no-explicit-any
      expect((await attrs(page))['data-theme']).toBe(theme === 'night' ? 'day' : 'night');
      await page.close();
    });
  }
});

describe('get_chart_template (MCP) and the chart page (REST)', () => {
  it('returns {kind, format, theme, content} with defaults market/html/night; svg only for market and equity; one request per call', async () => {
    await api.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = api.app.server.address() as AddressInfo;
    const client = new Client({ name: 'charts-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}${config.mcp.path}`), { requestInit: { headers: { Authorization: `Bearer ${keys.max}` } } }));
    try {
      const monthRequests = async () => (bodyOf(await api.get('me', { plan: 'max' })) as Json).usage.month.requests as number;
      const call = async (args: Json) => (await client.callTool({ name: 'get_chart_template', arguments: args })) as CallToolResult;
      const before = await monthRequests();
      const defaults = await call({});
      expect(defaults.isError).toBeFalsy();
      const structured = defaults.structuredContent as Json;
      expect({ ...structured, content: null }).toEqual({ kind: 'market', format: 'html', theme: 'night', content: null });
      expect(structured.content).toBe(chartTemplate('market', 'html', 'night', config.charts.scriptHost));
      expect(JSON.parse((defaults.content[0] as { text: string }).text)).toEqual(structured);
      for (const [kind, format] of [['market', 'svg'], ['market-tape', 'html'], ['equity', 'html'], ['equity', 'svg']] as const) {
        for (const theme of ['night', 'day'] as const) {
          const result = (await call({ kind, format, theme })).structuredContent as Json;
          expect({ ...result, content: null }).toEqual({ kind, format, theme, content: null });
          expect(result.content.split('__DATA__')).toHaveLength(2);
          expect(result.content).toContain(`data-theme="${theme}"`);
          if (kind === 'market-tape') expect(result.content).toContain(`${config.charts.scriptHost}/uPlot.iife.min.js`);
          else expect(result.content).not.toMatch(/\b(src|href)=["']?https?:/);
        }
      }
      const tapeSvg = await call({ kind: 'market-tape', format: 'svg' });
      expect(tapeSvg.isError).toBe(true);
      expect((tapeSvg.structuredContent as Json).error).toBe('unsupported_format');
      expect(await monthRequests()).toBe(before + 1 + 1 + 8 + 1);
      // Values outside the enums are refused by the input schema, before the budget.
      for (const args of [{ kind: 'candles' }, { format: 'png' }, { theme: 'dusk' }]) expect((await call(args)).isError).toBe(true);
      expect(await monthRequests()).toBe(before + 1 + 1 + 8 + 1 + 1);
    } finally {
      await client.close();
    }
  });

  it('GET .../chart.html: authenticated, counted, the trader-scoped walls and a 422 for a bad theme; HTML that fetches nothing', async () => {
    const path = `traders/${trader}/markets/${resolved}/chart.html`;
    const response = await api.get(path);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(response.headers['cache-control']).toMatch(/immutable/);
    expect((await api.get(path, { headers: { 'if-none-match': String(response.headers.etag) } })).statusCode).toBe(304);
    expect(response.body).not.toContain('__DATA__');
    expect((await api.get(path, { authorization: null })).statusCode).toBe(401);
    expect((await api.get(`${path}?theme=dusk`)).statusCode).toBe(422);
    expect((await api.get(`traders/${trader}/markets/${makeConditionId('charts-never')}/chart.html`)).statusCode).toBe(404);
    const before = (bodyOf(await api.get('me', { plan: 'pro' })) as Json).usage.month.requests as number;
    await api.get(path, { plan: 'pro' });
    expect((bodyOf(await api.get('me', { plan: 'pro' })) as Json).usage.month.requests).toBe(before + 2);
    expect(API).toBe(config.api.prefix);
  });
});

describe('fast', () => {
  it('market html with a 600-point series, 11,400 slab points and 1,500 fills: ready within 3 s, a zoom re-renders within 100 ms', async () => {
    const fid = 15;
    const points = (fidelity: number, n: number) =>
      Array.from({ length: n }, (_, i) => {
        const mid = Math.round((0.5 + 0.3 * Math.sin(i / 50)) * 1000) / 1000;
        return [t0 + i * fidelity, mid, mid - 0.01, mid + 0.01];
      });
    const series = { from_ts: t0, to_ts: t0 + 600 * fid - 1, fidelity: fid, points: points(fid, 600) };
    const slabs = [series, { fidelity: 5, from_ts: t0, to_ts: series.to_ts, points: points(5, 1800) }, { fidelity: 1, from_ts: t0, to_ts: series.to_ts, points: points(1, 9000) }];
    const bigFills = Array.from({ length: 1500 }, (_, i) => ({ ts: t0 + i * 6, side: i % 2 ? 'BUY' : 'SELL', price: 0.5, token_side: 1 + (i % 2), outcome: i % 2 ? 'Down' : 'Up', size_tokens: 10, usd: 1 + (i % 50) }));
    const market = { ...data.resolvedChart.market };
    const started = Date.now();
    const { page, requests, url } = await openChart(filled('market', 'html', 'night', { market, trader: data.resolvedChart.trader, series, fills: bigFills, slabs }), 'html', 'market-html-big');
    expect(Date.now() - started).toBeLessThan(3000);
    expect(requests).toEqual([url]);
    const perZoom = await page.evaluate((from) => {
      const start = performance.now();
      for (let i = 0; i < 10; i++) (window as any).__setRange(from + i * 300, from + 800 + i * 300); // eslint-disable-line @typescript-eslint/no-explicit-any
      return (performance.now() - start) / 10;
    }, t0);
    expect(perZoom).toBeLessThan(100);
    expect(Number((await attrs(page))['data-fidelity'])).toBe(1);
    await page.close();
  });
});
