/**
 * A local HTTP server that plays Polymarket's public APIs from the recorded real responses in
 * ../shared/data/polymarket/http/ (never copied into the repo), plus what a test derives from them:
 * more markets, pages, a wallet's pnl series, and faults (errors, 429s, slow answers, truncated bodies,
 * a provider gone silent). One listener serves the three services under /gamma, /data and /pnl.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { polymarketData } from './polymarket.ts';

export type Json = Record<string, unknown>;
const HTTP_FIXTURES = path.join(polymarketData, 'http');

export function loadFixture<T = unknown>(relative: string): T {
  return JSON.parse(readFileSync(path.join(HTTP_FIXTURES, relative), 'utf8')) as T;
}

/** What the next request(s) to a path get instead of the normal answer. */
export type Fault =
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: string }
  | { kind: 'slow'; ms: number }
  | { kind: 'truncated' }
  | { kind: 'drop' }
  /** A JSON answer of `bytes` (an array padded with blanks), written as fast as the client reads it. */
  | { kind: 'huge'; bytes: number };

export interface WalletData {
  /** The all-time leaderboard row the provider states for this wallet (undefined: it has none). */
  leaderboardRow?: Json;
  value?: unknown;
  positions?: unknown[];
  /** user-pnl answer: [{t, p}]. */
  pnl?: { t: number; p: number }[];
  /** /activity answer pages, in order: arrays (v1) or {data, pagination} envelopes (v2, cursor "1", "2", …). */
  activity?: unknown[];
}

export class PolymarketReplay {
  /** Gamma markets, served newest-updated first by /markets/keyset. */
  markets: Json[] = [];
  /** Gamma events (each nesting its markets), served newest-updated first by /events/keyset. */
  events: Json[] = [];
  gammaPageSize = 100;
  leaderboard: unknown = [];
  wallets = new Map<string, WalletData>();
  /** Per path (e.g. "/data/value"), faults served first, one per request. */
  faults = new Map<string, Fault[]>();
  /** Everything answered with a destroyed socket (the provider gone silent). */
  silent = false;
  /** Requests seen: "GET /gamma/markets/keyset?limit=…". */
  readonly requests: string[] = [];
  private readonly requestWaiters: { prefix: string; resolve: () => void }[] = [];
  private server: Server | undefined;
  base = '';

  async start(): Promise<string> {
    this.server = createServer((request, response) => {
      void this.handle(request, response);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.base;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  environment(): Record<string, string> {
    return {
      UPSTREAM_GAMMA_URL: `${this.base}/gamma`,
      UPSTREAM_DATA_URL: `${this.base}/data`,
      UPSTREAM_PNL_URL: `${this.base}/pnl`,
    };
  }

  /** Resolves once a request starting with `prefix` (e.g. "GET /gamma/markets/keyset") has arrived. */
  requested(prefix: string): Promise<void> {
    if (this.requests.some((seen) => seen.startsWith(prefix))) return Promise.resolve();
    return new Promise((resolve) => this.requestWaiters.push({ prefix, resolve }));
  }

  fault(pathname: string, ...faults: Fault[]): void {
    this.faults.set(pathname, [...(this.faults.get(pathname) ?? []), ...faults]);
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://replay');
    const seen = `${request.method} ${url.pathname}${url.search}`;
    this.requests.push(seen);
    for (const waiter of this.requestWaiters.filter((one) => seen.startsWith(one.prefix))) {
      this.requestWaiters.splice(this.requestWaiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    if (this.silent) {
      request.socket.destroy();
      return;
    }
    const fault = this.faults.get(url.pathname)?.shift();
    if (fault?.kind === 'drop') {
      request.socket.destroy();
      return;
    }
    if (fault?.kind === 'status') {
      response.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
      response.end(fault.body ?? JSON.stringify({ error: `replayed ${fault.status}` }));
      return;
    }
    if (fault?.kind === 'huge') {
      await this.writeHuge(response, fault.bytes);
      return;
    }
    if (fault?.kind === 'slow') await new Promise((resolve) => setTimeout(resolve, fault.ms));
    const body = this.answer(url);
    if (body === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end('{"error":"not found"}');
      return;
    }
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    response.writeHead(200, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
    response.end(fault?.kind === 'truncated' ? text.slice(0, Math.floor(text.length / 2)) : text);
  }

  /** `[` + blanks + `]`, `bytes` long, in chunks paced by the socket (until the client stops reading or leaves). */
  private async writeHuge(response: ServerResponse, bytes: number): Promise<void> {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(bytes) });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    response.write('[');
    let left = bytes - 2;
    while (left > 0 && !response.destroyed) {
      const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      if (!response.write(piece))
        await new Promise<void>((resolve) => {
          response.once('drain', resolve);
          response.once('close', resolve);
        });
    }
    if (!response.destroyed) response.end(']');
  }

  /** A Gamma keyset page, newest-updated first: `{markets | events, next_cursor}`, next_cursor absent on the final page. */
  private keysetPage(name: 'markets' | 'events', items: readonly Json[], query: URLSearchParams): Json {
    const sorted = [...items].sort((a, b) => Date.parse(b.updatedAt as string) - Date.parse(a.updatedAt as string));
    const start = Number(query.get('cursor') ?? '0');
    const limit = Math.min(Number(query.get('limit') ?? this.gammaPageSize), this.gammaPageSize);
    const page = sorted.slice(start, start + limit);
    return start + limit < sorted.length ? { [name]: page, next_cursor: String(start + limit) } : { [name]: page };
  }

  private answer(url: URL): unknown {
    const query = url.searchParams;
    const user = (query.get('user') ?? query.get('user_address') ?? '').toLowerCase();
    switch (url.pathname) {
      case '/data/ok':
        return 'OK';
      case '/gamma/markets/keyset':
        return this.keysetPage('markets', this.markets, query);
      case '/gamma/events/keyset':
        return this.keysetPage('events', this.events, query);
      case '/data/v1/leaderboard': {
        if (user === '') return this.leaderboard;
        const row = this.wallets.get(user)?.leaderboardRow;
        return row === undefined ? [] : [row];
      }
      case '/data/value':
        return this.wallets.get(user)?.value ?? [];
      case '/data/positions':
        return this.wallets.get(user)?.positions ?? [];
      case '/pnl/user-pnl':
        return this.wallets.get(user)?.pnl ?? [];
      case '/data/activity': {
        const pages = this.wallets.get(user)?.activity ?? [];
        const cursor = query.get('cursor');
        const index =
          cursor === null
            ? Math.floor(Number(query.get('offset') ?? '0') / Number(query.get('limit') ?? '500'))
            : Number(cursor);
        const start = Number(query.get('start') ?? '0');
        const page = pages[index];
        if (page === undefined) return [];
        // `start` filters by timestamp, as the data API does.
        if (Array.isArray(page)) return page.filter((row) => Number((row as Json).timestamp) >= start);
        return page;
      }
      default:
        return undefined;
    }
  }
}

/** Splits a v2 envelope's rows into pages of `size`, each with the next page's cursor. */
export function envelopePages(rows: readonly unknown[], size: number): unknown[] {
  const pages: unknown[] = [];
  for (let start = 0, index = 0; start < rows.length; start += size, index += 1) {
    const more = start + size < rows.length;
    pages.push({
      data: rows.slice(start, start + size),
      pagination: { limit: size, offset: start, has_more: more, next_cursor: more ? String(index + 1) : null },
    });
  }
  return pages;
}
