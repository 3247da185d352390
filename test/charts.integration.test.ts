/// <reference lib="dom" />
/**
 * The chart templates (operations/charts) in a real browser: Debian's Chromium, headless, driven by
 * playwright-core. Every kind, format and theme is filled with what the service answers for published
 * events (the sampled chart plus slabs, the full tape, the pnl series), then checked: __ready, the test
 * hooks change what is drawn, no request at all for the vector market chart, pixels of the fixed colors
 * on a screenshot, and geometry from the DOM (markers at (ts, price), count labels, no line across a
 * gap, the y-range rule). Screenshots go to test/artifacts/.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import {
  chartTemplate,
  fillChartTemplate,
  type ChartFormat,
  type ChartKind,
  type ChartTheme,
} from '../operations/charts/templates.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import {
  API,
  bodyOf,
  gatesNeverBind,
  inProcessConfig,
  publishPlanKeys,
  startTestApi,
  type TestApi,
} from './harness/api.ts';
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
  trades.push(
    makeTrade({ condition_id: resolved, ts: t0 + s, token_side: 1, price: Math.round(up * 1000) / 1000, seq: ++seq }),
  );
  if (s % 50 === 0)
    trades.push(
      makeTrade({
        condition_id: resolved,
        ts: t0 + s,
        token_side: 2,
        price: Math.round((1 - up + 0.02) * 1000) / 1000,
        seq: ++seq,
      }),
    );
}
for (let s = 0; s <= 1800; s += 30)
  trades.push(
    makeTrade({
      condition_id: openMarket,
      ts: t0 + DAY + s,
      token_side: 1,
      price: 0.5 + 0.1 * Math.sin(s / 300),
      seq: ++seq,
    }),
  );
const fills = [
  // Three buys of Up in one 15 s bucket (a count label), a big Down buy, a sell of Up.
  makeFill({
    wallet: trader,
    condition_id: resolved,
    side: 'BUY',
    token_side: 1,
    price: 0.5,
    size_tokens: 400,
    usd: 200,
    ts: t0 + 600,
  }),
  makeFill({
    wallet: trader,
    condition_id: resolved,
    side: 'BUY',
    token_side: 1,
    price: 0.5,
    size_tokens: 100,
    usd: 50,
    ts: t0 + 602,
  }),
  makeFill({
    wallet: trader,
    condition_id: resolved,
    side: 'BUY',
    token_side: 1,
    price: 0.51,
    size_tokens: 60,
    usd: 30.6,
    ts: t0 + 607,
  }),
  makeFill({
    wallet: trader,
    condition_id: resolved,
    side: 'BUY',
    token_side: 2,
    price: 0.4,
    size_tokens: 1000,
    usd: 400,
    ts: t0 + 300,
  }),
  makeFill({
    wallet: trader,
    condition_id: resolved,
    side: 'SELL',
    token_side: 1,
    price: 0.7,
    size_tokens: 300,
    usd: 210,
    ts: t0 + 3000,
  }),
  makeFill({
    wallet: trader,
    condition_id: openMarket,
    side: 'BUY',
    token_side: 1,
    price: 0.52,
    size_tokens: 100,
    usd: 52,
    ts: t0 + DAY + 400,
  }),
  makeFill({
    wallet: trader,
    condition_id: openMarket,
    side: 'SELL',
    token_side: 2,
    price: 0.45,
    size_tokens: 100,
    usd: 45,
    ts: t0 + DAY + 900,
  }),
];
const equity: EventInputOf<'upstreamEquity'>[] = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => ({
  wallet: trader,
  ts: NOW - (9 - i) * DAY,
  pnl_usd: [0, 120, 80, 260, 150, 90, 310, 280, 400][i]!,
}));

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
      makeMarket({
        condition_id: resolved,
        title: 'Bitcoin Up or Down - January 4, 3:00PM-4:00PM ET',
        title_start_ts: t0,
        end_ts: t0 + 3600,
        outcome1: 'Up',
        outcome2: 'Down',
      }),
      makeMarket({
        condition_id: openMarket,
        title: 'Ducks vs. Wild',
        title_start_ts: t0 + DAY,
        end_ts: t0 + DAY + 7200,
        outcome1: 'Ducks',
        outcome2: 'Wild',
      }),
    ]);
    await publisher.publish('trades', trades);
    await publisher.publish('fillsArchive', fills);
    await publisher.publish('markets', [makeResolution(resolved, 1, t0 + 3700)]);
    await publisher.publish('upstreamProfiles', [
      {
        wallet: trader,
        name: 'ChartWhale',
        profile_image: '',
        pnl: 400,
        pnl_realized: 390,
        pnl_unrealized: 10,
        portfolio_value: 900,
        as_of: NOW - 60,
      },
    ]);
    await publisher.publish('upstreamEquity', equity);
    await publisher.publish('upstreamStatus', [{ ts: NOW - 30, state: 'online', detail: '' }]);
  });
  api = await startTestApi(config, {
    now: () => NOW,
    keys,
    gatesClockMs: gatesNeverBind(Date.UTC(2026, 0, 1), 3_600_000),
  }); // an hour a step: the budget test below reads one month's count
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
    response
      .writeHead(200, { 'content-type': name.endsWith('.css') ? 'text/css' : 'text/javascript' })
      .end(readFileSync(new URL(name, dist)));
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
  await page.route(url, (route) =>
    route.fulfill({
      status: 200,
      contentType: format === 'svg' ? 'image/svg+xml' : 'text/html; charset=utf-8',
      body: content,
    }),
  );
  await page.goto(url);
  await page
    .waitForFunction(() => (window as unknown as { __ready?: boolean }).__ready === true, undefined, {
      timeout: 10_000,
    })
    .catch((failure: unknown) => {
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

/** Where a chart runs: a page, or the frame of an MCP App inside a host page. */
const frameOf = (on: Page | Frame): Frame => ('mainFrame' in on ? on.mainFrame() : on);

const attrs = (on: Page | Frame) =>
  frameOf(on).evaluate(() => {
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
const drawn = (on: Page | Frame) =>
  frameOf(on).evaluate(() => {
    const root = document.getElementById('chart')!;
    const box = (node: Element) => {
      const rect = node.getBoundingClientRect();
      return { x: rect.x, y: rect.y, width: rect.width, height: rect.height };
    };
    return {
      lines: Array.from(root.querySelectorAll('path.line')).map((node) => ({
        ts: node.getAttribute('data-ts')!.split(',').map(Number),
        d: node.getAttribute('d')!,
        stroke: node.getAttribute('stroke'),
      })),
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
      counts: Array.from(root.querySelectorAll('text.count')).map((node) => ({
        slot: Number(node.getAttribute('data-slot')),
        count: Number(node.getAttribute('data-count')),
      })),
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
  return {
    x: (ts: number) => l + ((ts - from) / (to - from)) * w,
    y: (p: number) => t + ((ymax - p) / (ymax - ymin)) * h,
    from,
    to,
    ymin,
    ymax,
    fidelity: Number(a['data-fidelity']),
  };
}

/** Geometry of a market chart against its data: markers, count labels, gaps, y-range. */
async function checkMarketGeometry(page: Page | Frame, chart: Json, slabs: Json[] | undefined) {
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
  for (let i = 1; i < d.lines.length; i++)
    expect(d.lines[i]!.ts[0]! - d.lines[i - 1]!.ts.at(-1)!).toBeGreaterThan(ax.fidelity);
  // Each line vertex sits at (ts, (lo + hi) / 2).
  for (const line of d.lines.filter((candidate) => candidate.ts.length > 1)) {
    const vertices = [...line.d.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((match) => [
      Number(match[1]),
      Number(match[2]),
    ]);
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
  expect(d.fills.map((fill) => `${fill.ts}@${fill.price}`).sort()).toEqual(
    inView.map((fill) => `${fill.ts}@${fill.price}`).sort(),
  );
  for (const fill of d.fills) {
    const [apex, b, c] = [...fill.d.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((match) => [
      Number(match[1]),
      Number(match[2]),
    ]) as [number[], number[], number[]];
    const x = ax.x(fill.ts);
    const y = ax.y(fill.price);
    expect(apex[0]).toBeCloseTo(x, 3);
    expect((b[0]! + c[0]!) / 2).toBeCloseTo(x, 3);
    if (fill.side === 'BUY') expect(apex[1]! < y && y < b[1]!).toBe(true);
    else expect(apex[1]! > y && y > b[1]!).toBe(true);
  }
  // Count labels exactly on the x-slots (buckets of the drawn rung) with 3 or more fills.
  const slots = new Map<number, number>();
  for (const fill of inView)
    slots.set(Math.floor(fill.ts / ax.fidelity), (slots.get(Math.floor(fill.ts / ax.fidelity)) ?? 0) + 1);
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
    const slabs = JSON.parse(
      data.resolvedPage.match(/<script type="application\/json" id="chart-data">([\s\S]*?)<\/script>/)![1],
    ).slabs as Json[];
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
    await page.evaluate(
      ([from, to]) => (window as any).__setRange(from, to),
      [data.resolvedChart.series.from_ts, data.resolvedChart.series.to_ts],
    ); // eslint-disable-line @typescript-eslint/no-explicit-any
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
      const { page, requests, url } = await openChart(
        filled('market', 'svg', theme, data.resolvedChart),
        'svg',
        `market-svg-${theme}`,
      );
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
      const { page, requests } = await openChart(
        filled('market-tape', 'html', theme, body),
        'html',
        `market-tape-${theme}`,
      );
      expect(requests.some((request) => request.startsWith(scriptHost))).toBe(true);
      const a = await attrs(page);
      expect(a['data-theme']).toBe(theme);
      // The title names ET: the time axis speaks it too.
      expect(a['data-axis-zone']).toBe('America/New_York');
      const markers = (await page.evaluate(() => (window as any).__markers)) as {
        ts: number;
        price: number;
        x: number;
        y: number;
      }[]; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(markers).toHaveLength(data.resolvedChart.fills.length);
      // Markers at (ts, price) on uPlot's scales: the plot box and the scale ranges, read back from the plot.
      const frame = await page.evaluate(() => {
        const u = (window as any).__chart.plot; // eslint-disable-line @typescript-eslint/no-explicit-any
        const ratio = (window as any).uPlot.pxRatio; // eslint-disable-line @typescript-eslint/no-explicit-any
        return {
          left: u.bbox.left / ratio,
          top: u.bbox.top / ratio,
          width: u.bbox.width / ratio,
          height: u.bbox.height / ratio,
          x: [u.scales.x.min, u.scales.x.max],
          y: [u.scales.y.min, u.scales.y.max],
        };
      });
      for (const marker of markers) {
        expect(marker.x).toBeCloseTo(
          frame.left + ((marker.ts - frame.x[0]) / (frame.x[1] - frame.x[0])) * frame.width,
          1,
        );
        expect(marker.y).toBeCloseTo(
          frame.top + ((frame.y[1] - marker.price) / (frame.y[1] - frame.y[0])) * frame.height,
          1,
        );
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
  for (const [format, theme] of [
    ['html', 'night'],
    ['html', 'day'],
    ['svg', 'night'],
    ['svg', 'day'],
  ] as const) {
    it(`${format} ${theme}: the pnl curve, then drawdown; range and theme hooks`, async () => {
      const { page, requests, url } = await openChart(
        filled('equity', format, theme, data.pnl),
        format,
        `equity-${format}-${theme}`,
      );
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
      const vertices = [...line.d.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((match) => [
        Number(match[1]),
        Number(match[2]),
      ]);
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
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}${config.mcp.path}`), {
        requestInit: { headers: { Authorization: `Bearer ${keys.max}` } },
      }),
    );
    try {
      const monthRequests = async () =>
        (bodyOf(await api.get('me', { plan: 'max' })) as Json).usage.month.requests as number;
      const call = async (args: Json) =>
        (await client.callTool({ name: 'get_chart_template', arguments: args })) as CallToolResult;
      const before = await monthRequests();
      const defaults = await call({});
      expect(defaults.isError).toBeFalsy();
      const structured = defaults.structuredContent as Json;
      expect({ ...structured, content: null }).toEqual({
        kind: 'market',
        format: 'html',
        theme: 'night',
        content: null,
      });
      expect(structured.content).toBe(chartTemplate('market', 'html', 'night', config.charts.scriptHost));
      expect(JSON.parse((defaults.content[0] as { text: string }).text)).toEqual(structured);
      for (const [kind, format] of [
        ['market', 'svg'],
        ['market-tape', 'html'],
        ['equity', 'html'],
        ['equity', 'svg'],
      ] as const) {
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
      for (const args of [{ kind: 'candles' }, { format: 'png' }, { theme: 'dusk' }])
        expect((await call(args)).isError).toBe(true);
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
    expect((await api.get(`traders/${trader}/markets/${makeConditionId('charts-never')}/chart.html`)).statusCode).toBe(
      404,
    );
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
    const slabs = [
      series,
      { fidelity: 5, from_ts: t0, to_ts: series.to_ts, points: points(5, 1800) },
      { fidelity: 1, from_ts: t0, to_ts: series.to_ts, points: points(1, 9000) },
    ];
    const bigFills = Array.from({ length: 1500 }, (_, i) => ({
      ts: t0 + i * 6,
      side: i % 2 ? 'BUY' : 'SELL',
      price: 0.5,
      token_side: 1 + (i % 2),
      outcome: i % 2 ? 'Down' : 'Up',
      size_tokens: 10,
      usd: 1 + (i % 50),
    }));
    const market = { ...data.resolvedChart.market };
    const started = Date.now();
    const { page, requests, url } = await openChart(
      filled('market', 'html', 'night', { market, trader: data.resolvedChart.trader, series, fills: bigFills, slabs }),
      'html',
      'market-html-big',
    );
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

// ---------------------------------------------------------------------------------------------------
// MCP: the chart templates as free resources, the two charts as MCP Apps, and one time zone per chart.

const APP_URIS = {
  market: 'ui://trader-analytics/market-chart.html',
  equity: 'ui://trader-analytics/equity-chart.html',
} as const;
const APP_MIME = 'text/html;profile=mcp-app';
const TEMPLATE_RESOURCES = [
  ['market', 'html', 'text/html'],
  ['market', 'svg', 'image/svg+xml'],
  ['market-tape', 'html', 'text/html'],
  ['equity', 'html', 'text/html'],
  ['equity', 'svg', 'image/svg+xml'],
] as const;

let mcp: Client | null = null;

/**
 * The Max account's month count, read through REST /me (which counts itself: each reading is one more
 * than the reading before it plus what was spent in between).
 */
const monthRequests = async () => (bodyOf(await api.get('me', { plan: 'max' })) as Json).usage.month.requests as number;

/** One SDK client on the running app (a Max key), announcing MCP Apps support as a host does. */
async function mcpClient(): Promise<Client> {
  if (mcp) return mcp;
  if (!api.app.server.listening) await api.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = api.app.server.address() as AddressInfo;
  const client = new Client(
    { name: 'charts-app-host', version: '1.0.0' },
    { capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [APP_MIME] } } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}${config.mcp.path}`), {
      requestInit: { headers: { Authorization: `Bearer ${keys.max}` } },
    }),
  );
  mcp = client;
  return client;
}

afterAll(async () => {
  await mcp?.close();
});

describe('chart templates as MCP resources (free), the tools that name an MCP App', () => {
  it('resources/list: the two Apps and one template per kind × format × theme; resources/read returns what get_chart_template returns; none of it is counted', async () => {
    const client = await mcpClient();
    const before = await monthRequests();
    const { resources } = await client.listResources();
    const expectedTemplates = TEMPLATE_RESOURCES.flatMap(([kind, format, mimeType]) =>
      (['night', 'day'] as const).map((theme) => ({
        uri: `chart-template://${kind}/${theme}.${format}`,
        kind,
        format,
        theme,
        mimeType,
      })),
    );
    expect(resources.map((resource) => resource.uri).sort()).toEqual(
      [APP_URIS.market, APP_URIS.equity, ...expectedTemplates.map((entry) => entry.uri)].sort(),
    );
    for (const resource of resources) {
      expect(resource.name, resource.uri).toMatch(/\S/);
      expect(resource.description!.length, resource.uri).toBeGreaterThan(40);
    }
    for (const entry of expectedTemplates) {
      const listed = resources.find((resource) => resource.uri === entry.uri)!;
      expect(listed.mimeType).toBe(entry.mimeType);
      const read = await client.readResource({ uri: entry.uri });
      expect(read.contents).toHaveLength(1);
      const [content] = read.contents as { uri: string; mimeType: string; text: string }[];
      expect(content!.uri).toBe(entry.uri);
      expect(content!.mimeType).toBe(entry.mimeType);
      expect(content!.text).toBe(chartTemplate(entry.kind, entry.format, entry.theme, config.charts.scriptHost));
      expect(content!.text.split('__DATA__')).toHaveLength(2);
    }
    for (const uri of Object.values(APP_URIS)) {
      const listed = resources.find((resource) => resource.uri === uri)!;
      expect(listed.mimeType).toBe(APP_MIME);
      expect(listed._meta).toEqual({
        ui: {
          csp: { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] },
          prefersBorder: true,
        },
      });
      const [content] = (await client.readResource({ uri })).contents as {
        uri: string;
        mimeType: string;
        text: string;
        _meta?: Json;
      }[];
      expect(content!.mimeType).toBe(APP_MIME);
      expect(content!._meta).toEqual(listed._meta);
      expect(content!.text.startsWith('<!doctype html>')).toBe(true);
      expect(content!.text).not.toContain('__DATA__');
      expect(content!.text).not.toMatch(/\b(src|href)=/);
    }
    await client.listResourceTemplates();
    await expect(client.readResource({ uri: 'chart-template://market/dusk.html' })).rejects.toThrow(/not found/i);
    expect(await monthRequests()).toBe(before + 1); // the first reading only: listing and reading are free

    // The tool stays as the contract says: the same document, one request.
    const tool = (await client.callTool({
      name: 'get_chart_template',
      arguments: { kind: 'equity', theme: 'day' },
    })) as CallToolResult;
    expect((tool.structuredContent as Json).content).toBe(
      ((await client.readResource({ uri: 'chart-template://equity/day.html' })).contents[0] as { text: string }).text,
    );
    expect(await monthRequests()).toBe(before + 1 + 1 + 1); // two readings and the one tool call
  });

  it('a client of the newest revision (2026-07-28: the 2.x Client, pinned) lists and reads the same resources and sees the same _meta, free too', async () => {
    const v1 = await mcpClient();
    const { port } = api.app.server.address() as AddressInfo;
    const client = new ClientV2(
      { name: 'charts-2026', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new TransportV2(new URL(`http://127.0.0.1:${port}${config.mcp.path}`), {
        requestInit: { headers: { Authorization: `Bearer ${keys.max}` } },
      }),
    );
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const before = await monthRequests();
      const listed = (await client.listResources()).resources;
      expect(listed.map((resource) => [resource.uri, resource.mimeType, resource._meta ?? null])).toEqual(
        (await v1.listResources()).resources.map((resource) => [
          resource.uri,
          resource.mimeType,
          resource._meta ?? null,
        ]),
      );
      for (const uri of [APP_URIS.market, APP_URIS.equity, 'chart-template://market/day.svg']) {
        expect((await client.readResource({ uri })).contents).toEqual((await v1.readResource({ uri })).contents);
      }
      const tools = (await client.listTools()).tools;
      expect(tools.find((tool) => tool.name === 'get_market_events')!._meta).toEqual({
        ui: { resourceUri: APP_URIS.market },
        'ui/resourceUri': APP_URIS.market,
      });
      expect(tools.find((tool) => tool.name === 'get_pnl_series')!._meta).toEqual({
        ui: { resourceUri: APP_URIS.equity },
        'ui/resourceUri': APP_URIS.equity,
      });
      expect(await monthRequests()).toBe(before + 1); // the first reading only
    } finally {
      await client.close();
    }
  });

  it('tools/list: get_market_events and get_pnl_series name their App in _meta (ui.resourceUri and the flat ui/resourceUri); no other tool does; results unchanged', async () => {
    const client = await mcpClient();
    const { tools } = await client.listTools();
    const withMeta = tools.filter((tool) => tool._meta !== undefined);
    expect(withMeta.map((tool) => tool.name).sort()).toEqual(['get_market_events', 'get_pnl_series']);
    expect(tools.find((tool) => tool.name === 'get_market_events')!._meta).toEqual({
      ui: { resourceUri: APP_URIS.market },
      'ui/resourceUri': APP_URIS.market,
    });
    expect(tools.find((tool) => tool.name === 'get_pnl_series')!._meta).toEqual({
      ui: { resourceUri: APP_URIS.equity },
      'ui/resourceUri': APP_URIS.equity,
    });
    // A client without MCP Apps gets today's result: the REST body, twice.
    const result = (await client.callTool({
      name: 'get_market_events',
      arguments: { trader, market: resolved },
    })) as CallToolResult;
    expect(result.structuredContent).toEqual(data.resolvedChart);
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(data.resolvedChart) }]);
    expect(result._meta).toBeUndefined();
  });
});

/**
 * A minimal MCP Apps host page (ext-apps protocol 2026-01-26): the View in an iframe of another origin
 * (sandbox allow-scripts allow-same-origin), JSON-RPC 2.0 over postMessage checked against the iframe's
 * window; answers ui/initialize with its context, sends nothing before ui/notifications/initialized, then
 * tool-input and tool-result; follows size-changed; can send host-context-changed and requests.
 */
const HOST_PAGE = `<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;background:#777777}iframe{display:block;border:0;width:100%;height:150px}</style></head><body><script>
window.host = (function () {
  var log = [], frame = null, initialized = false, queued = [], context = {}, pending = {}, nextId = 1000;
  function send(message) { frame.contentWindow.postMessage(message, '*'); }
  window.addEventListener('message', function (event) {
    if (!frame || event.source !== frame.contentWindow) return;
    var m = event.data;
    log.push(m);
    if (!m || m.jsonrpc !== '2.0') return;
    if (m.method === undefined && pending[m.id]) { pending[m.id](m); delete pending[m.id]; return; }
    if (m.method === 'ui/initialize' && m.id != null) {
      send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2026-01-26', hostInfo: { name: 'test-host', version: '1.0.0' }, hostCapabilities: {}, hostContext: context } });
    } else if (m.method === 'ui/notifications/initialized') {
      initialized = true;
      queued.forEach(send);
      queued = [];
    } else if (m.method === 'ui/notifications/size-changed') {
      if (!(context.containerDimensions && typeof context.containerDimensions.height === 'number') && typeof m.params.height === 'number') frame.style.height = m.params.height + 'px';
    } else if (m.id != null && m.method) {
      send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
    }
  });
  return {
    log: log,
    initialized: function () { return initialized; },
    load: function (src, hostContext) {
      context = hostContext;
      frame = document.createElement('iframe');
      frame.setAttribute('sandbox', 'allow-scripts allow-same-origin');
      var box = hostContext.containerDimensions || {};
      if (typeof box.height === 'number') frame.style.height = box.height + 'px';
      frame.src = src;
      document.body.appendChild(frame);
    },
    deliver: function (args, result) {
      var messages = [{ jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: args } }, { jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: result }];
      if (initialized) messages.forEach(send); else queued = queued.concat(messages);
    },
    notify: function (method, params) { send({ jsonrpc: '2.0', method: method, params: params }); },
    request: function (method, params) {
      var id = nextId++;
      return new Promise(function (resolve) { pending[id] = resolve; send({ jsonrpc: '2.0', id: id, method: method, params: params }); });
    },
    frameBox: function () { var r = frame.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; }
  };
})();
</script></body></html>`;

/** The CSP a host builds from the resource's _meta.ui.csp (the extension's construction, declared domains only). */
function hostCsp(csp: Json | undefined): string {
  const list = (key: string) => ((csp?.[key] as string[] | undefined) ?? []).join(' ');
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${list('resourceDomains')}`,
    `style-src 'self' 'unsafe-inline' ${list('resourceDomains')}`,
    `connect-src 'self' ${list('connectDomains')}`,
    `img-src 'self' data: ${list('resourceDomains')}`,
    `font-src 'self' ${list('resourceDomains')}`,
    `media-src 'self' data: ${list('resourceDomains')}`,
    `frame-src ${list('frameDomains') || "'none'"}`,
    "object-src 'none'",
    `base-uri ${list('baseUriDomains') || "'self'"}`,
  ].join('; ');
}

interface HostedApp {
  page: Page;
  frame: Frame;
  requests: string[];
  problems: string[];
  hostUrl: string;
  viewUrl: string;
  protocol: () => Promise<Json[]>;
}

const HOST_ORIGIN = 'http://mcp-host.test';
const SANDBOX_ORIGIN = 'http://mcp-sandbox.test';

/**
 * Does what an MCP Apps host does after a tool call: reads the tool's _meta.ui.resourceUri from
 * tools/list, reads that resource (resources/read), renders it in the host page's iframe under the CSP
 * of its _meta.ui.csp, and, once the View has initialized, hands it the tool input and the tool result.
 */
async function hostApp(
  toolName: string,
  args: Json,
  result: CallToolResult,
  hostContext: Json,
  name: string,
  waitReady = true,
): Promise<HostedApp> {
  const client = await mcpClient();
  const tool = (await client.listTools()).tools.find((candidate) => candidate.name === toolName)!;
  const uri = (tool._meta as { ui: { resourceUri: string } }).ui.resourceUri;
  const [content] = (await client.readResource({ uri })).contents as {
    text: string;
    mimeType: string;
    _meta?: { ui?: { csp?: Json } };
  }[];
  expect(content!.mimeType).toBe(APP_MIME);
  const page = await browser.newPage({ viewport: { width: 1100, height: 620 }, deviceScaleFactor: 1 });
  const hostUrl = `${HOST_ORIGIN}/chat.html`;
  const viewUrl = `${SANDBOX_ORIGIN}/views/${uri.slice('ui://'.length)}`;
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => problems.push(String(error)));
  // A blocked request (CSP) or a failed one would show here.
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
  await page.route(hostUrl, (route) =>
    route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: HOST_PAGE }),
  );
  await page.route(viewUrl, (route) =>
    route.fulfill({
      status: 200,
      contentType: 'text/html; charset=utf-8',
      headers: { 'Content-Security-Policy': hostCsp(content!._meta?.ui?.csp) },
      body: content!.text,
    }),
  );
  await page.goto(hostUrl);
  await page.evaluate(([src, context]) => (window as any).host.load(src, context), [
    viewUrl,
    { ...hostContext, toolInfo: { tool } },
  ] as const); // eslint-disable-line @typescript-eslint/no-explicit-any
  await page.waitForFunction(() => (window as any).host.initialized() === true, undefined, { timeout: 10_000 }); // eslint-disable-line @typescript-eslint/no-explicit-any
  const frame = page.frames().find((candidate) => candidate.url() === viewUrl)!;
  expect(frame, 'the View frame').toBeDefined();
  await page.evaluate(([input, toolResult]) => (window as any).host.deliver(input, toolResult), [
    args,
    result,
  ] as const); // eslint-disable-line @typescript-eslint/no-explicit-any
  if (waitReady) {
    await frame
      .waitForFunction(() => (window as unknown as { __ready?: boolean }).__ready === true, undefined, {
        timeout: 10_000,
      })
      .catch((failure: unknown) => {
        throw new Error(`${name}: not ready (${problems.join('; ')}) ${String(failure)}`);
      });
  }
  const protocol = () => page.evaluate(() => (window as any).host.log as Json[]); // eslint-disable-line @typescript-eslint/no-explicit-any
  return { page, frame, requests, problems, hostUrl, viewUrl, protocol };
}

const axisText = (on: Page | Frame) =>
  frameOf(on).evaluate(() => ({
    ticks: Array.from(document.querySelectorAll('#chart text.tick')).map((node) => node.textContent ?? ''),
    zone: document.querySelector('#chart text.zone')?.textContent ?? null,
    zoneId: document.querySelector('#chart text.zone')?.getAttribute('data-time-zone') ?? null,
  }));

describe('MCP Apps: the charts drawn by a host from a tool result', () => {
  it('market: get_market_events → the App in a host page: protocol, geometry, pixels, ET axis, hooks, theme from the host, no request', async () => {
    const client = await mcpClient();
    const args = { trader, market: resolved };
    const before = await monthRequests();
    const result = (await client.callTool({ name: 'get_market_events', arguments: args })) as CallToolResult;
    expect(await monthRequests()).toBe(before + 1 + 1); // the first reading and the tool call
    expect(result.structuredContent).toEqual(data.resolvedChart);
    const app = await hostApp(
      'get_market_events',
      args,
      result,
      { theme: 'dark', displayMode: 'inline', containerDimensions: { width: 1100, maxHeight: 620 } },
      'app-market',
    );
    const { page, frame } = app;
    expect(await monthRequests()).toBe(before + 1 + 1 + 1); // plus the second reading: tools/list and resources/read of the host are free

    // The protocol as the View spoke it: ui/initialize (protocol version, app info, capabilities), then initialized, then sizes.
    const log = await app.protocol();
    expect(log[0]).toMatchObject({
      jsonrpc: '2.0',
      id: expect.any(Number),
      method: 'ui/initialize',
      params: {
        protocolVersion: '2026-01-26',
        appInfo: { name: expect.stringContaining('market'), version: expect.any(String) },
        appCapabilities: expect.any(Object),
      },
    });
    expect(log[1]).toEqual({ jsonrpc: '2.0', method: 'ui/notifications/initialized', params: {} });
    expect(new Set(log.map((message) => message.method))).toEqual(
      new Set(['ui/initialize', 'ui/notifications/initialized', 'ui/notifications/size-changed']),
    );
    // Flexible height (maxHeight 620): the View asks for its chart's height, and the host sizes the frame to it.
    await page.waitForFunction(() => (window as any).host.frameBox().height === 480); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(
      (await app.protocol()).filter((message) => message.method === 'ui/notifications/size-changed').at(-1)!.params,
    ).toEqual({ width: 1100, height: 480 });
    expect(await frame.evaluate(() => (window as any).__toolInput)).toEqual(args); // eslint-disable-line @typescript-eslint/no-explicit-any

    // The same geometry as the chart page: lines, gaps, markers at (ts, price), count label, y-range.
    const first = await checkMarketGeometry(frame, data.resolvedChart, undefined);
    expect(first.ax.fidelity).toBe(data.resolvedChart.series.fidelity);
    expect(first.d.lines.length).toBeGreaterThanOrEqual(2);
    expect(first.d.counts).toEqual([{ slot: Math.floor((t0 + 600) / first.ax.fidelity), count: 3 }]);
    expect(first.d.pinLine).toBe('6 5');
    expect(first.d.surface).toBe(COLORS.night);
    for (const fill of first.d.fills) expect(fill.color).toBe(fill.outcome === 'Up' ? COLORS.up : COLORS.down);
    // The title says ET: so does the axis (15:00 EST is 20:00 UTC).
    const axis = await axisText(frame);
    expect(axis.zone).toBe('EST');
    expect(axis.zoneId).toBe('America/New_York');
    expect(axis.ticks.length).toBeGreaterThan(2);
    for (const tick of axis.ticks) expect(tick).toMatch(/^1[56]:\d\d$/);

    // Pixels, on the host page's screenshot (the frame sits at its top left corner).
    expect(await page.evaluate(() => (window as any).host.frameBox())).toEqual({
      x: 0,
      y: 0,
      width: 1100,
      height: 480,
    }); // eslint-disable-line @typescript-eslint/no-explicit-any
    const image = await shot(page, 'app-market-night');
    expect(countColor(image, COLORS.night)).toBeGreaterThan(1100 * 480 * 0.4);
    expect(countColor(image, COLORS.line)).toBeGreaterThan(300);
    const downFill = first.d.fills.find((fill) => fill.outcome === 'Down')!;
    const upSell = first.d.fills.find((fill) => fill.side === 'SELL')!;
    expect(countColor(image, COLORS.down, downFill.box)).toBeGreaterThan(20);
    expect(countColor(image, COLORS.up, upSell.box)).toBeGreaterThan(10);
    expect(countColor(image, COLORS.up, downFill.box)).toBe(0);
    expect(countColor(image, COLORS.pin, first.d.pin!)).toBeGreaterThan(20);

    // The template's hooks work inside the App.
    await frame.evaluate(([from, to]) => (window as any).__setRange(from, to), [t0 + 500, t0 + 700]); // eslint-disable-line @typescript-eslint/no-explicit-any
    const zoomed = await checkMarketGeometry(frame, data.resolvedChart, undefined);
    expect([zoomed.ax.from, zoomed.ax.to]).toEqual([t0 + 500, t0 + 700]);
    expect(zoomed.d.fills).toHaveLength(3);
    await frame.evaluate(
      ([from, to]) => (window as any).__setRange(from, to),
      [data.resolvedChart.series.from_ts, data.resolvedChart.series.to_ts],
    ); // eslint-disable-line @typescript-eslint/no-explicit-any

    // The host turns light: the chart follows with the day theme.
    await page.evaluate(() => (window as any).host.notify('ui/notifications/host-context-changed', { theme: 'light' })); // eslint-disable-line @typescript-eslint/no-explicit-any
    await frame.waitForFunction(() => document.getElementById('chart')!.getAttribute('data-theme') === 'day');
    const day = await shot(page, 'app-market-day');
    expect(countColor(day, COLORS.night, undefined, 2)).toBeLessThan(50);
    expect(countColor(day, COLORS.line)).toBeGreaterThan(300);
    await checkMarketGeometry(frame, data.resolvedChart, undefined);

    // Host requests: ping and teardown are answered.
    expect(await page.evaluate(() => (window as any).host.request('ping', {}))).toMatchObject({ result: {} }); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(await page.evaluate(() => (window as any).host.request('ui/resource-teardown', {}))).toMatchObject({
      result: {},
    }); // eslint-disable-line @typescript-eslint/no-explicit-any

    // Nothing was fetched: the host page and the View's document, both served by the page's own routes.
    expect(app.requests).toEqual([app.hostUrl, app.viewUrl]);
    expect(app.problems).toEqual([]);
    await page.close();
  });

  it('equity: get_pnl_series → the App at a fixed size in a light host: the curve at (ts, pnl), drawdown by its button, UTC axis, no request', async () => {
    const client = await mcpClient();
    const args = { trader };
    const result = (await client.callTool({ name: 'get_pnl_series', arguments: args })) as CallToolResult;
    expect(result.structuredContent).toEqual(data.pnl);
    const app = await hostApp(
      'get_pnl_series',
      args,
      result,
      { theme: 'light', displayMode: 'inline', containerDimensions: { width: 1100, height: 620 } },
      'app-equity',
    );
    const { page, frame } = app;
    expect(await page.evaluate(() => (window as any).host.frameBox())).toEqual({
      x: 0,
      y: 0,
      width: 1100,
      height: 620,
    }); // eslint-disable-line @typescript-eslint/no-explicit-any
    const a = await attrs(frame);
    expect(a['data-theme']).toBe('day');
    expect(a['data-mode']).toBe('pnl');
    const [, , plotWidth, plotHeight] = a['data-plot']!.split(',').map(Number);
    expect(plotWidth).toBe(1100 - 30 - 72);
    expect(plotHeight).toBe(620 - 58 - 30); // the chart fills the fixed container
    const series = data.pnl.series as [number, number][];
    const line = await frame.evaluate(() => {
      const node = document.querySelector('path.line')!;
      return { ts: node.getAttribute('data-ts')!.split(',').map(Number), d: node.getAttribute('d')! };
    });
    expect(line.ts).toEqual(series.map((p) => p[0]));
    const ax = axes(a);
    const vertices = [...line.d.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((match) => [
      Number(match[1]),
      Number(match[2]),
    ]);
    series.forEach(([ts, value], index) => {
      expect(vertices[index]![0]).toBeCloseTo(ax.x(ts), 3);
      expect(vertices[index]![1]).toBeCloseTo(ax.y(value), 3);
    });
    expect((await axisText(frame)).zone).toBe('UTC');
    const image = await shot(page, 'app-equity-day');
    expect(countColor(image, COLORS.line)).toBeGreaterThan(200);
    expect(countColor(image, COLORS.night, undefined, 2)).toBeLessThan(50);

    await frame.click('#modes button[data-mode="drawdown"]');
    expect((await attrs(frame))['data-mode']).toBe('drawdown');
    const ddImage = await shot(page, 'app-equity-day-drawdown');
    expect(countColor(ddImage, COLORS.down)).toBeGreaterThan(100);
    expect(app.requests).toEqual([app.hostUrl, app.viewUrl]);
    expect(app.problems).toEqual([]);
    await page.close();
  });

  it('an isError result (a market the trader never traded): the App shows its message and draws nothing', async () => {
    const client = await mcpClient();
    const args = { trader, market: makeConditionId('charts-never') };
    const result = (await client.callTool({ name: 'get_market_events', arguments: args })) as CallToolResult;
    expect(result.isError).toBe(true);
    const app = await hostApp('get_market_events', args, result, { theme: 'dark' }, 'app-market-error', false);
    const message = (result.content[0] as { text: string }).text;
    await app.frame.waitForFunction((text) => document.getElementById('app-message')?.textContent === text, message);
    expect(await app.frame.evaluate(() => (window as unknown as { __ready?: boolean }).__ready)).toBe(false);
    expect(await app.frame.evaluate(() => document.querySelectorAll('#chart path').length)).toBe(0);
    expect(app.requests).toEqual([app.hostUrl, app.viewUrl]);
    expect(app.problems).toEqual([]);
    await app.page.close();
  });
});

describe('one time zone per chart', () => {
  it("market: the title's zone by default (ET), the data's time_zone over it, the root's data-time-zone and __setTimeZone over both; UTC when the title names none", async () => {
    const cases: { name: string; content: string; zone: string; label: string; tick: RegExp }[] = [
      {
        name: 'tz-title',
        content: filled('market', 'html', 'night', data.resolvedChart),
        zone: 'America/New_York',
        label: 'EST',
        tick: /^1[56]:\d\d$/,
      },
      {
        name: 'tz-data',
        content: filled('market', 'html', 'night', { ...data.resolvedChart, time_zone: 'UTC' }),
        zone: 'UTC',
        label: 'UTC',
        tick: /^2[01]:\d\d$/,
      },
      {
        name: 'tz-option',
        content: filled('market', 'html', 'night', { ...data.resolvedChart, time_zone: 'UTC' }).replace(
          'data-theme="night"',
          'data-theme="night" data-time-zone="America/Chicago"',
        ),
        zone: 'America/Chicago',
        label: 'CST',
        tick: /^1[45]:\d\d$/,
      },
      {
        name: 'tz-svg',
        content: filled('market', 'svg', 'day', data.resolvedChart),
        zone: 'America/New_York',
        label: 'EST',
        tick: /^1[56]:\d\d$/,
      },
    ];
    for (const { name, content, zone, label, tick } of cases) {
      const { page, requests, url } = await openChart(content, name === 'tz-svg' ? 'svg' : 'html', name);
      const axis = await axisText(page);
      expect([axis.zoneId, axis.zone], name).toEqual([zone, label]);
      expect((await attrs(page))['data-axis-zone']).toBe(zone);
      expect(axis.ticks.length, name).toBeGreaterThan(2);
      for (const text of axis.ticks) expect(text, name).toMatch(tick);
      expect(requests).toEqual([url]);
      if (name === 'tz-title') {
        // A person picks a zone: 20:00 UTC is 05:00 the next day in Tokyo; an unknown zone changes nothing; '' goes back to the default.
        await page.evaluate(() => (window as any).__setTimeZone('Asia/Tokyo')); // eslint-disable-line @typescript-eslint/no-explicit-any
        const tokyo = await axisText(page);
        expect([tokyo.zoneId, tokyo.zone]).toEqual(['Asia/Tokyo', 'GMT+9']);
        for (const text of tokyo.ticks) expect(text).toMatch(/^0[56]:\d\d$/);
        await page.evaluate(() => (window as any).__setTimeZone('Mars/Olympus_Mons')); // eslint-disable-line @typescript-eslint/no-explicit-any
        expect((await axisText(page)).zoneId).toBe('Asia/Tokyo');
        await page.evaluate(() => (window as any).__setTimeZone('')); // eslint-disable-line @typescript-eslint/no-explicit-any
        expect((await axisText(page)).zoneId).toBe('America/New_York');
        // Hover reads the same zone.
        const plot = axes(await attrs(page));
        await page.mouse.move(plot.x(t0 + 605), 300);
        expect(await page.textContent('#hover text')).toMatch(/^\d{4}-\d\d-\d\d 15:10:\d\d EST/);
        // The zone's name sits at the axis end, clear of the last tick label.
        const boxes = await page.evaluate(() => {
          const box = (node: Element) => node.getBoundingClientRect().toJSON() as { left: number; right: number };
          return {
            zone: box(document.querySelector('#chart text.zone')!),
            ticks: Array.from(document.querySelectorAll('#chart text.tick')).map(box),
          };
        });
        for (const tickBox of boxes.ticks) expect(tickBox.right).toBeLessThanOrEqual(boxes.zone.left);
      }
      await page.close();
    }
    // No zone in the title ("Ducks vs. Wild"): UTC, said so.
    const { page } = await openChart(data.openPage, 'html', 'tz-open');
    expect(await axisText(page)).toMatchObject({ zoneId: 'UTC', zone: 'UTC' });
    await page.close();
  });

  it("the REST chart page takes time_zone (it becomes the data's time_zone); a zone Intl does not know is a 422 naming the parameter", async () => {
    const path = `traders/${trader}/markets/${resolved}/chart.html`;
    const tokyo = await api.get(`${path}?time_zone=${encodeURIComponent('Asia/Tokyo')}`);
    expect(tokyo.statusCode).toBe(200);
    expect(JSON.parse(tokyo.body.match(/id="chart-data">([\s\S]*?)<\/script>/)![1]!).time_zone).toBe('Asia/Tokyo');
    const { page, requests, url } = await openChart(tokyo.body, 'html', 'tz-rest-tokyo');
    expect(await axisText(page)).toMatchObject({ zoneId: 'Asia/Tokyo', zone: 'GMT+9' });
    expect(requests).toEqual([url]);
    await page.close();
    for (const bad of ['Mars/Olympus_Mons', 'x'.repeat(65)]) {
      const response = await api.get(`${path}?time_zone=${encodeURIComponent(bad)}`);
      expect(response.statusCode, bad).toBe(422);
      const { detail } = bodyOf(response) as { detail: Json[] };
      expect(detail.length).toBeGreaterThan(0);
      for (const issue of detail)
        expect(issue).toMatchObject({ loc: ['query', 'time_zone'], input: bad, msg: expect.any(String) });
    }
  });

  it('equity: UTC by default (no title), the data can choose', async () => {
    for (const [body, zone, label] of [
      [data.pnl, 'UTC', 'UTC'],
      [{ ...data.pnl, time_zone: 'America/New_York' }, 'America/New_York', 'EST'],
    ] as const) {
      const { page } = await openChart(filled('equity', 'html', 'night', body), 'html', `tz-equity-${label}`);
      expect(await axisText(page)).toMatchObject({ zoneId: zone, zone: label });
      await page.close();
    }
  });
});
