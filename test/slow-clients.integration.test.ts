/**
 * Slow and idle clients, on real sockets: a client that trickles its headers or its body, or holds an
 * idle connection, is cut off within the configured bound (small bounds here) while other clients are
 * served; an oversized body is refused. Each cut-off is awaited on the socket's own 'close' event; the
 * only timer is a deadline that turns "never closed" into a failure instead of a hang.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../config.ts';
import { API, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';

const BOUNDS = { headers: 400, request: 800, keepAlive: 300, idle: 3000, body: 4096 };
const config: Config = inProcessConfig(
  'slow',
  { CLICKHOUSE_QUERY_TIMEOUT_S: '2' },
  {
    http: {
      headersTimeoutMs: BOUNDS.headers,
      requestTimeoutMs: BOUNDS.request,
      keepAliveTimeoutMs: BOUNDS.keepAlive,
      idleTimeoutMs: BOUNDS.idle,
      bodyLimitBytes: BOUNDS.body,
    },
  },
);
/** Node enforces the headers and request bounds on a sweep (a quarter of the headers bound, here 100 ms); plus scheduling slack on a shared machine (without the bounds, these connections stay open for a minute and more). */
const SLACK_MS = 3000;
const NOW_S = Math.floor(Date.now() / 1000);

let api: TestApi;
let port: number;
let key: string;

beforeAll(async () => {
  const keys = await publishPlanKeys(config, NOW_S - 60);
  key = keys.max;
  api = await startTestApi(config, { now: () => NOW_S, keys });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  port = (api.app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
});

interface Slow {
  socket: net.Socket;
  /** What the server sent before it closed. */
  received(): string;
  /** Milliseconds from the connection to the server's close; rejects if the socket is still open after `deadlineMs`. */
  closed(deadlineMs: number): Promise<number>;
}

/** Opens a raw connection and writes `head` (nothing more unless the test trickles). */
async function open(head: string): Promise<Slow> {
  const socket = net.connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const startedAt = performance.now();
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => {}); // a reset by the server is a close too
  const closedAt = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now() - startedAt)));
  if (head) socket.write(head);
  return {
    socket,
    received: () => text,
    closed(deadlineMs) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(
          () =>
            reject(new Error(`still open after ${deadlineMs} ms (received: ${JSON.stringify(text.slice(0, 120))})`)),
          deadlineMs,
        );
      });
      return Promise.race([closedAt, deadline]).finally(() => clearTimeout(timer));
    },
  };
}

/** Writes one byte every `everyMs` until the socket closes (a slowloris body). */
function trickle(slow: Slow, everyMs: number): void {
  const timer = setInterval(() => {
    if (slow.socket.destroyed || !slow.socket.writable) clearInterval(timer);
    else slow.socket.write('x');
  }, everyMs);
  slow.socket.once('close', () => clearInterval(timer));
}

/** A normal request on its own connection: served while the slow ones are held. */
async function servedMe(): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}${API}/me`, { headers: { authorization: `Bearer ${key}` } });
  await response.arrayBuffer();
  return response.status;
}

const post = (path: string, length: number, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('slow and idle clients are cut off; others are served', () => {
  it('headers that never finish: closed within the headers bound', async () => {
    const clients = await Promise.all(
      Array.from({ length: 10 }, () => open('GET /healthz HTTP/1.1\r\nHost: localhost\r\n')),
    );
    // Keep them alive with a trickle of header bytes: only the bound can end them.
    for (const client of clients) trickle(client, 50);
    expect(await servedMe()).toBe(200);
    const elapsed = await Promise.all(clients.map((client) => client.closed(BOUNDS.headers + SLACK_MS)));
    for (const ms of elapsed) expect(ms).toBeGreaterThanOrEqual(BOUNDS.headers - 50);
  });

  it('a connection that sends nothing at all: closed within the headers bound', async () => {
    const silent = await open('');
    expect(await servedMe()).toBe(200);
    await silent.closed(BOUNDS.headers + SLACK_MS);
  });

  it.each([
    ['POST /mcp, unauthenticated', config.mcp.path, ''],
    ['POST /mcp, with a valid key', config.mcp.path, 'AUTHORIZATION'],
    ['GET /healthz', '/healthz', ''],
    ['GET /downloads/…', '/downloads/someone/tape.ndjson.gz?expires=1&sig=x', ''],
  ])('a body at one byte per 100 ms (%s): closed within the request bound', async (_label, path, auth) => {
    const method = path === config.mcp.path ? 'POST' : 'GET';
    const head = post(path, 2000, auth ? `Authorization: Bearer ${key}\r\n` : '').replace(/^POST/, method);
    const clients = await Promise.all(Array.from({ length: 5 }, () => open(head)));
    for (const client of clients) trickle(client, 100);
    expect(await servedMe()).toBe(200);
    await Promise.all(clients.map((client) => client.closed(BOUNDS.request + SLACK_MS)));
  });

  it('a keep-alive connection idle after its answer: closed within the keep-alive bound', async () => {
    const client = await open(`GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    const elapsed = await client.closed(BOUNDS.keepAlive + SLACK_MS);
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(client.received()).toMatch(/keep-alive/i);
    expect(elapsed).toBeGreaterThanOrEqual(BOUNDS.keepAlive - 50);
  });

  it('a body above the limit is 413, whatever its speed', async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: { padding: 'x'.repeat(BOUNDS.body) },
    });
    const response = await fetch(`http://127.0.0.1:${port}${config.mcp.path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body,
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: 'bad_request' });
    // Just under the limit, the same call is served.
    const small = await fetch(`http://127.0.0.1:${port}${config.mcp.path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(small.status).toBe(200);
  });
});
