/**
 * Recorded sessions (tapes): the caller's own library over REST and MCP. Tapes and their StreamEvents
 * are published on the `tapes` and `tape.events` topics (the simulator's recorder) and ingested; the
 * expected answers are computed from the published events. Paging returns every event once in order
 * for any limit; types filter; the events rebuild the price line and fill markers; the download object
 * holds exactly the events, its link dies on expiry (controlled clock) and when altered, and fetching it
 * costs nothing; another account's tapes are 404 everywhere; Basic's empty library is count 0; the MCP
 * tools equal their REST twins.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import { ownerFolder } from '../api/downloads.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { withPublisher } from '../roles/runtime.ts';
import {
  publishSessions,
  recordSession,
  recordSessions,
  type RecordedSession,
} from '../ingest/sources/simulator/tapes.ts';
import { createLogger } from '../log.ts';
import {
  API,
  bodyOf,
  inProcessConfig,
  OpenApiResponses,
  publishPlanKeys,
  startTestApi,
  type TestApi,
} from './harness/api.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are compared field by field

const DAY = 86_400;
const NOW = Math.floor(Date.now() / 1000 / 3600) * 3600;
const MAX_EVENTS = 1000;
const config = inProcessConfig('tapes', { TAPE_EVENTS_MAX: String(MAX_EVENTS) });
/** A fresh seed per run: tape ids (and so download objects in the shared data directory) are new each run. */
const SEED = Math.floor(Math.random() * 2 ** 31);

const proSessions = recordSessions(SEED, 'test-pro', 3, NOW - DAY);
const maxSessions = recordSessions(SEED, 'test-max', 2, NOW - DAY);

/** A tape over the paging cap: MAX_EVENTS + 1 book ticks. */
function oversized(accountId: string): RecordedSession {
  const session = recordSession(SEED, accountId, 99, NOW - 2 * DAY);
  const tapeId = `${session.tape.tape_id}_big`;
  const events: EventInputOf<'tapeEvents'>[] = Array.from({ length: MAX_EVENTS + 1 }, (_, seq) => ({
    tape_id: tapeId,
    account_id: accountId,
    seq,
    type: 'book',
    ts: NOW - 2 * DAY + seq,
    bid: 0.4,
    ask: 0.42,
  }));
  return {
    tape: { ...session.tape, tape_id: tapeId, event_count: events.length, tick_count: events.length, fill_count: 0 },
    events,
  };
}
const big = oversized('test-pro');

/** A published event as the API answers it: the StreamEvent without its tape, account and position. */
const streamEvent = (event: EventInputOf<'tapeEvents'>) => {
  const { tape_id: _tape, account_id: _account, seq: _seq, ...rest } = event as Json;
  if (rest.type === 'fill' && rest.outcome === undefined) rest.outcome = '';
  return rest;
};

/** The gates' clock: 3 s per admission (the bucket and the minute never bind). */
const clock = { ms: Date.UTC(2026, 10, 22), step: 3000 };
let serviceNow = NOW;
let api: TestApi;
let keys: Record<PlanId, string>;
let openapi: OpenApiResponses;
const clients: Client[] = [];

async function get(url: string, plan: PlanId = 'pro'): Promise<LightMyRequestResponse> {
  const response = await api.get(url, { plan });
  openapi.check(url.startsWith('/') ? url : `${API}/${url}`, response);
  return response;
}

async function json(url: string, status = 200, plan: PlanId = 'pro'): Promise<Json> {
  const response = await get(url, plan);
  expect(response.statusCode, `${url}: ${response.body.slice(0, 300)}`).toBe(status);
  return bodyOf(response) as Json;
}

async function allEvents(tapeId: string, limit: number, types?: string, plan: PlanId = 'pro'): Promise<Json[]> {
  const events: Json[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 10_000; pages++) {
    const query = new URLSearchParams({
      limit: String(limit),
      ...(types ? { types } : {}),
      ...(cursor ? { cursor } : {}),
    });
    const page = await json(`tapes/${tapeId}/events?${query}`, 200, plan);
    expect(page.tape_id).toBe(tapeId);
    expect(page.events.length).toBeLessThanOrEqual(limit);
    events.push(...page.events);
    cursor = page.next_cursor;
    if (!cursor) return events;
  }
  throw new Error('paging did not end');
}

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW - DAY);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publishSessions(publisher, [...proSessions, big, ...maxSessions]);
    // Published twice (a replay): changes no answer.
    await publishSessions(publisher, proSessions.slice(0, 1));
  });
  api = await startTestApi(config, { now: () => serviceNow, keys, gatesClockMs: () => (clock.ms += clock.step) });
  openapi = new OpenApiResponses((await api.get('openapi.json')).json());
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
});

const expectedTape = ({ tape }: RecordedSession) => ({
  tape_id: tape.tape_id,
  wallet: tape.wallet,
  name: tape.name,
  condition_id: tape.condition_id,
  title: tape.title,
  grade: tape.grade,
  pnl_taped_usd: tape.pnl_taped_usd,
  outcome: tape.outcome,
  started_at: tape.started_at,
  ended_at: tape.ended_at,
  duration_s: tape.ended_at - tape.started_at,
  tick_count: tape.tick_count,
  fill_count: tape.fill_count,
  size_bytes: tape.size_bytes,
  partial: tape.partial ?? false,
});

describe('the library', () => {
  it('lists the caller’s tapes newest first; wallet narrows, limit caps the newest N; Basic’s empty library is count 0', async () => {
    const all = [...proSessions, big].sort((a, b) => b.tape.started_at - a.tape.started_at);
    expect(await json('tapes')).toEqual({ tapes: all.map(expectedTape), count: all.length });
    expect(await json('tapes?limit=1')).toEqual({ tapes: [expectedTape(all[0]!)], count: 1 });
    expect(await json('tapes?limit=100000')).toMatchObject({ count: all.length });
    expect(await json('tapes?limit=0', 400)).toMatchObject({ error: 'bad_limit' });
    const one = proSessions[1]!;
    expect(await json(`tapes?wallet=${one.tape.wallet.toUpperCase().replace('0X', '0x')}`)).toEqual({
      tapes: [expectedTape(one)],
      count: 1,
    });
    expect(await json('tapes?wallet=0x123', 400)).toMatchObject({ error: 'invalid_wallet' });
    expect(await json('tapes', 200, 'basic')).toEqual({ tapes: [], count: 0 });
    expect(await json('tapes', 200, 'max')).toMatchObject({ count: maxSessions.length });
  });

  it('one tape’s metadata; an unknown id is 404 tape_not_found', async () => {
    for (const session of proSessions)
      expect(await json(`tapes/${session.tape.tape_id}`)).toEqual({ tape: expectedTape(session) });
    expect(await json('tapes/no-such-tape', 404)).toEqual({ error: 'tape_not_found', message: expect.any(String) });
  });

  it('wallet is not a trader lookup: Basic narrows by more than its daily distinct wallets without wallet_quota', async () => {
    const wallets = Array.from(
      { length: config.plans.basic.distinctWalletsPerDay + 2 },
      (_, index) => `0x${String(index).padStart(40, 'a')}`,
    );
    for (const wallet of wallets)
      expect(await json(`tapes?wallet=${wallet}`, 200, 'basic')).toEqual({ tapes: [], count: 0 });
  });
});

describe('events', () => {
  // A session with a fill: the recorder fills at random (3% a step), and the seed is new each run, so a
  // short session has none about once in thirty runs (the filter test below then had nothing to find).
  const session =
    proSessions.find((recorded) => recorded.events.some((event) => event.type === 'fill')) ?? proSessions[0]!;
  const published = session.events.map(streamEvent);

  it('paging returns every event once, in order, for any limit', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: published.length + 5 }), async (limit) => {
        expect(await allEvents(session.tape.tape_id, limit)).toEqual(published);
      }),
      { numRuns: 12 },
    );
    // Default page size.
    const page = await json(`tapes/${session.tape.tape_id}/events`);
    expect(page.events).toEqual(published.slice(0, config.tapes.events.defaultLimit));
  });

  it('types=fill returns exactly the fills; a comma list keeps those types; an unknown name is 400 unknown_event_type', async () => {
    const fills = published.filter((event) => event.type === 'fill');
    expect(fills.length).toBeGreaterThan(0);
    expect(await allEvents(session.tape.tape_id, 3, 'fill')).toEqual(fills);
    expect(await allEvents(session.tape.tape_id, 50, 'book,trade')).toEqual(
      published.filter((event) => event.type === 'book' || event.type === 'trade'),
    );
    expect(await allEvents(session.tape.tape_id, 50, 'session')).toHaveLength(2);
    expect(await json(`tapes/${session.tape.tape_id}/events?types=fill,bogus`, 400)).toMatchObject({
      error: 'unknown_event_type',
    });
    expect(await json(`tapes/${session.tape.tape_id}/events?types=fills`, 400)).toMatchObject({
      error: 'unknown_event_type',
    });
    expect(await json(`tapes/${session.tape.tape_id}/events?limit=0`, 400)).toMatchObject({ error: 'bad_limit' });
    expect(await json(`tapes/${session.tape.tape_id}/events?cursor=garbage`, 400)).toMatchObject({
      error: 'bad_cursor',
    });
  });

  it('the events rebuild the tape’s price line and fill markers', async () => {
    for (const recorded of proSessions) {
      const events = await allEvents(recorded.tape.tape_id, 5000);
      const line = (list: Json[]) =>
        list
          .filter((event) => event.type === 'book' || event.type === 'trade')
          .map((event) => [event.ts, event.type === 'book' ? (event.bid + event.ask) / 2 : event.price]);
      const markers = (list: Json[]) =>
        list
          .filter((event) => event.type === 'fill')
          .map((event) => ({
            ts: event.ts,
            price: event.price,
            usd: event.usd,
            side: event.side,
            token_side: event.token_side,
          }));
      const expected = recorded.events.map(streamEvent);
      expect(line(events)).toEqual(line(expected));
      expect(markers(events)).toEqual(markers(expected));
      expect(markers(events)).toHaveLength(recorded.tape.fill_count);
      expect(line(events)).toHaveLength(recorded.tape.tick_count);
      for (const [, price] of line(events))
        expect(price).toBeGreaterThanOrEqual(0), expect(price).toBeLessThanOrEqual(1);
    }
  });

  it(`a tape of more than ${MAX_EVENTS} events is 409 tape_too_large, pointing to the download`, async () => {
    const body = await json(`tapes/${big.tape.tape_id}/events`, 409);
    expect(body).toEqual({
      error: 'tape_too_large',
      message: expect.any(String),
      download: `${API}/tapes/${big.tape.tape_id}/download`,
    });
    const link = await json(body.download.replace(`${API}/`, ''));
    expect(link.expires_in).toBe(3600);
  });
});

describe('downloads', () => {
  const session = proSessions[2]!;
  const pathOf = (url: string) => {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  };
  const fetchObject = (url: string) => api.app.inject({ method: 'GET', url: pathOf(url) });
  const usage = async () => (await json('me')).usage.month.requests as number;

  it('the object, gunzipped, holds exactly the tape’s events; written once; fetching costs nothing', async () => {
    const link = await json(`tapes/${session.tape.tape_id}/download`);
    expect(link).toEqual({
      url: expect.stringMatching(
        /^http:\/\/localhost:\d+\/downloads\/[0-9a-f]{32}\/[A-Za-z0-9_-]+\.jsonl\.gz\?expires=\d+&sig=[A-Za-z0-9_-]+$/,
      ),
      expires_in: 3600,
    });
    const before = await usage();
    const response = await fetchObject(link.url);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/gzip');
    const lines = gunzipSync(response.rawPayload)
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Json);
    expect(lines).toEqual(session.events.map(streamEvent));
    expect((await fetchObject(link.url)).statusCode).toBe(200);
    expect(await usage()).toBe(before + 1); // only that /me itself

    const file = path.join(
      config.tapes.download.directory,
      ownerFolder('test-pro'),
      `${session.tape.tape_id}.jsonl.gz`,
    );
    const written = (await stat(file)).mtimeMs;
    const again = await json(`tapes/${session.tape.tape_id}/download`);
    expect((await stat(file)).mtimeMs).toBe(written);
    expect(gunzipSync((await fetchObject(again.url)).rawPayload)).toEqual(gunzipSync(response.rawPayload));
  });

  it('the link stops working after expiry and when altered (403)', async () => {
    const link = (await json(`tapes/${session.tape.tape_id}/download`)).url as string;
    const url = new URL(link);
    const altered = (change: (url: URL) => void) => {
      const copy = new URL(link);
      change(copy);
      return copy.toString();
    };
    const sig = url.searchParams.get('sig')!;
    const expires = Number(url.searchParams.get('expires'));
    for (const bad of [
      altered((copy) => copy.searchParams.set('sig', `${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`)),
      altered((copy) => copy.searchParams.set('expires', String(expires + 3600))),
      altered((copy) => copy.searchParams.delete('sig')),
      altered((copy) => (copy.pathname = copy.pathname.replace(session.tape.tape_id, proSessions[0]!.tape.tape_id))),
      altered(
        (copy) =>
          (copy.pathname = copy.pathname.replace(/downloads\/[0-9a-f]{32}/, `downloads/${ownerFolder('test-max')}`)),
      ),
    ]) {
      const response = await fetchObject(bad);
      expect(response.statusCode, bad).toBe(403);
      expect(response.json()).toMatchObject({ error: 'link_forbidden' });
    }
    serviceNow = expires;
    expect((await fetchObject(link)).statusCode).toBe(200);
    serviceNow = expires + 1;
    try {
      const response = await fetchObject(link);
      expect(response.statusCode).toBe(403);
      expect(response.json()).toMatchObject({ error: 'link_expired' });
    } finally {
      serviceNow = NOW;
    }
  });
});

describe('privacy', () => {
  it('account A cannot list, read, page or download account B’s tapes: 404 every time, like an unknown id', async () => {
    const unknown = await json('tapes/tape_unknown', 404, 'max');
    for (const { tape } of [...proSessions, big]) {
      for (const suffix of ['', '/events', '/events?types=fill', '/download']) {
        const body = await json(`tapes/${tape.tape_id}${suffix}`, 404, 'max');
        expect(body).toEqual({ error: 'tape_not_found', message: expect.any(String) });
        expect(Object.keys(body)).toEqual(Object.keys(unknown));
      }
      expect(await json(`tapes?wallet=${tape.wallet}`, 200, 'max')).toEqual({ tapes: [], count: 0 });
      expect(await json(`tapes/${tape.tape_id}`, 404, 'basic')).toMatchObject({ error: 'tape_not_found' });
    }
    const listed = (await json('tapes', 200, 'max')).tapes.map((tape: Json) => tape.tape_id);
    expect(listed.sort()).toEqual(maxSessions.map((session) => session.tape.tape_id).sort());
    // And the other way round.
    for (const { tape } of maxSessions)
      expect(await json(`tapes/${tape.tape_id}/events`, 404, 'pro')).toMatchObject({ error: 'tape_not_found' });
  });
});

describe('MCP tools', () => {
  it('list_tapes, get_tape_summary and get_tape_events answer what their REST twins answer', async () => {
    await api.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = api.app.server.address() as AddressInfo;
    const client = new Client({ name: 'tapes-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}${config.mcp.path}`), {
        requestInit: { headers: { Authorization: `Bearer ${keys.pro}` } },
      }),
    );
    clients.push(client);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName.get('list_tapes')!.inputSchema.properties ?? {})).toEqual(['wallet']);
    expect(Object.keys(byName.get('get_tape_summary')!.inputSchema.properties ?? {})).toEqual(['tape_id']);
    expect(Object.keys(byName.get('get_tape_events')!.inputSchema.properties ?? {}).sort()).toEqual([
      'cursor',
      'limit',
      'tape_id',
      'types',
    ]);

    const call = async (name: string, args: Json) =>
      (await client.callTool({ name, arguments: args })) as CallToolResult;
    const same = async (name: string, args: Json, url: string) => {
      const result = await call(name, args);
      expect(result.isError, JSON.stringify(result.content).slice(0, 300)).toBeFalsy();
      expect(result.structuredContent).toEqual(await json(url));
      return result.structuredContent as Json;
    };
    const tapeId = proSessions[0]!.tape.tape_id;
    await same('list_tapes', {}, 'tapes');
    await same('list_tapes', { wallet: proSessions[1]!.tape.wallet }, `tapes?wallet=${proSessions[1]!.tape.wallet}`);
    await same('get_tape_summary', { tape_id: tapeId }, `tapes/${tapeId}`);
    const first = await same('get_tape_events', { tape_id: tapeId, limit: 7 }, `tapes/${tapeId}/events?limit=7`);
    await same(
      'get_tape_events',
      { tape_id: tapeId, limit: 7, cursor: first.next_cursor },
      `tapes/${tapeId}/events?limit=7&cursor=${first.next_cursor}`,
    );
    await same('get_tape_events', { tape_id: tapeId, types: 'fill' }, `tapes/${tapeId}/events?types=fill`);

    for (const [name, args, code] of [
      ['get_tape_summary', { tape_id: maxSessions[0]!.tape.tape_id }, 'tape_not_found'],
      ['get_tape_events', { tape_id: maxSessions[0]!.tape.tape_id }, 'tape_not_found'],
      ['get_tape_events', { tape_id: tapeId, types: 'bogus' }, 'unknown_event_type'],
      ['get_tape_events', { tape_id: big.tape.tape_id }, 'tape_too_large'],
    ] as const) {
      const result = await call(name, args);
      expect(result.isError, name).toBe(true);
      expect((result.structuredContent as Json).error).toBe(code);
    }
  });
});
