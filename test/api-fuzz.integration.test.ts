/**
 * Property-based fuzzing of the REST API: random strings and numbers at every path and query parameter
 * of every endpoint of the service's own /openapi.json, random Authorization headers, and random
 * mutations of real cursors.
 *
 * Whatever arrives, the service answers JSON of the contract's shapes: never a 5xx other than the
 * documented ones (503 upstream_offline of pnl-series, 504 query_timeout), and every response validates
 * against /openapi.json (status documented for the operation, body matching its schema).
 *
 * A small data set (two named traders, three markets of which one is resolved, fills, trades, an upstream
 * profile, an online upstream heartbeat, equity points, watchers) is landed through the in-process
 * pipeline, and the API runs in process (`inject`) on a pinned clock.
 */
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import { publishSessions, recordSessions } from '../ingest/sources/simulator/tapes.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeResolution, makeTrade, makeWallet } from './factories.ts';
import {
  API,
  bodyOf,
  CONTRACT_PATHS,
  gatesNeverBind,
  inProcessConfig,
  OpenApiResponses,
  publishPlanKeys,
  startTestApi,
  type TestApi,
} from './harness/api.ts';

// ---------------------------------------------------------------------------------------------------
// The data set

/**
 * The service's clock, pinned for the run. Near the wall clock (hour-aligned): whale accumulations carry a
 * TTL against the real time, and the whale rows must exist for the fuzzing to reach them.
 */
const NOW = Math.floor(Date.now() / 1000 / 3600) * 3600;
const ALICE = makeWallet('fuzz-alice');
const BOB = makeWallet('fuzz-bob');
const UNKNOWN_WALLET = makeWallet('fuzz-never-seen');
const NAMES = { [ALICE]: 'FuzzAlice', [BOB]: 'Fuzz Bob' } as Record<string, string>;
const RESOLVED = makeConditionId('fuzz-resolved');
const OPEN = makeConditionId('fuzz-open');
const QUIET = makeConditionId('fuzz-quiet');
const UNTRADED = makeConditionId('fuzz-untraded');
/** Recorded sessions of the Pro test account (the fuzzer's default caller); a fresh seed per run. */
const TAPES = recordSessions(Math.floor(Math.random() * 2 ** 31), 'test-pro', 2, NOW - 86_400);
const WALLETS = [ALICE, BOB];

const fill = (
  wallet: string,
  condition_id: string,
  side: 'BUY' | 'SELL',
  token_side: 1 | 2,
  price: number,
  size_tokens: number,
  ts: number,
) =>
  makeFill({
    wallet,
    condition_id,
    side,
    token_side,
    price,
    size_tokens,
    usd: Math.round(price * size_tokens * 1e6) / 1e6,
    ts,
  });

const FILLS: EventInputOf<'fillsArchive'>[] = [
  fill(ALICE, RESOLVED, 'BUY', 1, 0.4, 100, BASE_TS + 10),
  fill(ALICE, RESOLVED, 'SELL', 1, 0.7, 30, BASE_TS + 300),
  fill(ALICE, OPEN, 'BUY', 2, 0.35, 200, BASE_TS + 1000),
  fill(ALICE, OPEN, 'BUY', 1, 0.6, 50, BASE_TS + 1200),
  fill(ALICE, QUIET, 'BUY', 1, 0.5, 10, BASE_TS + 2000),
  fill(BOB, RESOLVED, 'BUY', 2, 0.55, 40, BASE_TS + 20),
  // A whale-sized accumulation inside the 24 h window of NOW.
  fill(BOB, OPEN, 'BUY', 1, 0.5, 10_000, NOW - 600),
  fill(BOB, OPEN, 'BUY', 1, 0.52, 5_000, NOW - 300),
];

const TRADES: EventInputOf<'trades'>[] = [
  makeTrade({ condition_id: RESOLVED, token_side: 1, price: 0.4, ts: BASE_TS + 10, seq: 1 }),
  makeTrade({ condition_id: RESOLVED, token_side: 1, price: 0.7, ts: BASE_TS + 300, seq: 2 }),
  makeTrade({ condition_id: RESOLVED, token_side: 2, price: 0.05, ts: BASE_TS + 800, seq: 3 }),
  makeTrade({ condition_id: OPEN, token_side: 2, price: 0.35, ts: BASE_TS + 1000, seq: 4 }),
  makeTrade({ condition_id: OPEN, token_side: 1, price: 0.6, ts: BASE_TS + 1200, seq: 5 }),
  makeTrade({ condition_id: OPEN, token_side: 1, price: 0.52, ts: NOW - 300, seq: 6 }),
  makeTrade({ condition_id: QUIET, token_side: 1, price: 0.5, ts: BASE_TS + 2000, seq: 7 }),
];

const PROFILES: EventInputOf<'upstreamProfiles'>[] = WALLETS.map((wallet, index) => ({
  wallet,
  name: NAMES[wallet]!,
  profile_image: `https://img.example/${index}.png`,
  pnl: 100 - 50 * index,
  pnl_realized: 80,
  pnl_unrealized: 20 - 50 * index,
  portfolio_value: 1000,
  as_of: NOW - 120,
}));

const EQUITY: EventInputOf<'upstreamEquity'>[] = [
  [BASE_TS + 10, 0],
  [BASE_TS + 300, 50],
  [BASE_TS + 1000, -20],
  [NOW - 3600, 30],
  [NOW - 60, 100],
].map(([ts, pnl_usd]) => ({ wallet: ALICE, ts: ts!, pnl_usd: pnl_usd! }));

// ---------------------------------------------------------------------------------------------------
// The service

type OpenApiParameter = {
  in: string;
  name: string;
  required?: boolean;
  schema?: { enum?: unknown[]; default?: unknown; type?: unknown };
};
type OpenApiDocument = ConstructorParameters<typeof OpenApiResponses>[0] & {
  paths: Record<string, Record<string, { parameters?: OpenApiParameter[] }>>;
};

let api: TestApi;
let keys: Record<PlanId, string>;
let documentPaths: string[];
let openApiDocument: OpenApiDocument;
let openApi: OpenApiResponses;
/** Real cursors, taken from the service in beforeAll. */
const real = { markets: '', fills: '', ticks: '' };

beforeAll(async () => {
  const config = inProcessConfig('api_fuzz');
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('markets', [
      makeMarket({
        condition_id: RESOLVED,
        title: 'Bitcoin Up or Down - January 4, 3:00PM-3:15PM ET',
        outcome1: 'Up',
        outcome2: 'Down',
      }),
      makeMarket({
        condition_id: OPEN,
        title: 'Will it rain in Zürich? 🌧',
        outcome1: 'Yes',
        outcome2: 'No',
        title_start_ts: BASE_TS + 900,
        end_ts: NOW + 86_400,
      }),
      makeMarket({
        condition_id: QUIET,
        title: 'Quiet market',
        outcome1: 'Over',
        outcome2: 'Under',
        end_ts: NOW + 86_400,
      }),
      makeMarket({ condition_id: UNTRADED, title: 'Nobody traded this', outcome1: 'Up', outcome2: 'Down' }),
    ]);
    await publisher.publish('trades', TRADES);
    await publisher.publish('fillsArchive', FILLS);
    await publisher.publish('upstreamProfiles', PROFILES);
    await publisher.publish('upstreamEquity', EQUITY);
    await publisher.publish('upstreamStatus', [{ ts: NOW - 60, state: 'online', detail: '' }]);
    await publisher.publish('watchers', [
      { wallet: ALICE, watching: 3, ts: NOW - 100 },
      { wallet: BOB, watching: 1, ts: NOW - 100 },
    ]);
    await publisher.publish('markets', [makeResolution(RESOLVED, 1, BASE_TS + 900)]);
    await publishSessions(publisher, TAPES);
  });
  keys = await publishPlanKeys(config, NOW);
  api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind() });
  MAX_PARAM_LENGTH = api.app.initialConfig.routerOptions?.maxParamLength ?? 0;
  expect(MAX_PARAM_LENGTH).toBeGreaterThan(0);

  const openapi = await api.get('openapi.json');
  expect(openapi.statusCode).toBe(200);
  openApiDocument = bodyOf(openapi) as OpenApiDocument;
  openApi = new OpenApiResponses(openApiDocument);
  documentPaths = Object.keys(openApiDocument.paths).filter((path) => openApiDocument.paths[path]!.get !== undefined);

  real.markets = (bodyOf(await api.get(`traders/${ALICE}/markets?limit=1`)) as { next_cursor: string }).next_cursor;
  real.fills = (bodyOf(await api.get(`traders/${ALICE}/fills?limit=1`)) as { next_cursor: string }).next_cursor;
  real.ticks = (
    bodyOf(await api.get(`traders/${ALICE}/markets/${RESOLVED}?raw=1&limit=1`)) as { next_cursor: string }
  ).next_cursor;
  for (const cursor of Object.values(real)) expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
  // The data set is what the fuzzing assumes: the upstream online, both traders known by name.
  expect(bodyOf(await api.get(`traders/${ALICE}`))).toMatchObject({
    trader: { wallet: ALICE, name: 'FuzzAlice' },
    upstream: { pnl: 100 },
  });
  expect(bodyOf(await api.get('traders/Fuzz%20Bob'))).toMatchObject({ trader: { wallet: BOB, name: 'Fuzz Bob' } });
  expect((await api.get(`traders/${ALICE}/pnl-series`)).statusCode).toBe(200);
  expect((bodyOf(await api.get('flow/whales?min_usd=1000')) as { rows: unknown[] }).rows.length).toBeGreaterThan(0);
});

afterAll(async () => {
  await api?.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
  await api?.close();
});

// ---------------------------------------------------------------------------------------------------
// Checks

/** A short, printable account of a response for failure messages. */
function describeResponse(url: string, response: LightMyRequestResponse): string {
  let body: string;
  try {
    body = JSON.stringify(bodyOf(response));
  } catch {
    body = `(not JSON) ${response.rawPayload.toString('utf8').slice(0, 300)}`;
  }
  const shortUrl = url.length > 240 ? `${url.slice(0, 150)}…(${url.length} characters)…${url.slice(-60)}` : url;
  return `GET ${shortUrl} → ${response.statusCode} ${response.headers['content-type'] ?? ''}\n${body.length > 800 ? `${body.slice(0, 800)}…` : body}`;
}

/**
 * The contract of any answer: no 5xx but the documented ones, a JSON body (or none on 304), and a
 * match with /openapi.json. Returns the parsed body.
 */
function expectContract(url: string, response: LightMyRequestResponse): unknown {
  const status = response.statusCode;
  let body: unknown;
  try {
    body = bodyOf(response);
  } catch (error) {
    throw new Error(`the body is not JSON (${(error as Error).message})\n${describeResponse(url, response)}`);
  }
  const problems: string[] = [];
  if (status >= 500) {
    const code = (body as { error?: unknown } | null)?.error;
    const documented =
      (status === 503 && code === 'upstream_offline' && /\/pnl-series$/.test(url.split('?')[0]!)) ||
      (status === 504 && code === 'query_timeout');
    if (!documented) problems.push(`an undocumented ${status}`);
  }
  if (status !== 304) {
    if (!/^application\/json\b/.test(String(response.headers['content-type'] ?? '')))
      problems.push('not a JSON content type');
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      problems.push('the body is not a JSON object');
  }
  // Errors other than 422 name a machine-readable code (`invalid_wallet`, `bad_cursor`…), not a reason phrase.
  if (status >= 400 && status !== 422) {
    const code = (body as { error?: unknown } | null)?.error;
    if (typeof code !== 'string' || !/^[a-z][a-z0-9_]*$/.test(code))
      problems.push(`error ${JSON.stringify(code)} is not a machine-readable code`);
  }
  try {
    openApi.check(url, response);
  } catch (error) {
    problems.push(`does not match /openapi.json: ${(error as Error).message}`);
  }
  if (problems.length > 0) throw new Error(`${problems.join('; ')}\n${describeResponse(url, response)}`);
  return body;
}

// ---------------------------------------------------------------------------------------------------
// Arbitraries

const hexChars = (min: number, max: number) =>
  fc
    .array(fc.constantFrom(...'0123456789abcdefABCDEF'), { minLength: min, maxLength: max })
    .map((chars) => chars.join(''));
const BASE64URL = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'];
const base64urlChars = (min: number, max: number) =>
  fc.array(fc.constantFrom(...BASE64URL), { minLength: min, maxLength: max }).map((chars) => chars.join(''));

/** Strings of every kind: ASCII, full Unicode, grapheme clusters, control characters. */
const anyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.constantFrom(
    '',
    ' ',
    '\t',
    '\u0000',
    '\n',
    '%',
    '%zz',
    '%E0%A4',
    '..',
    '.',
    '~',
    '\u202e',
    '🙂',
    'null',
    'undefined',
    '[]',
    '{}',
    '__proto__',
    'constructor',
  ),
);

/** Numbers as query text: integers (0, negatives, huge), floats, exotic notations. */
const numberText = fc.oneof(
  fc.integer().map(String),
  fc.integer({ min: -5, max: 5 }).map(String),
  fc.constantFrom(
    '0',
    '-1',
    '1',
    '-0',
    '+1',
    '1e3',
    '1E-3',
    '.5',
    '5.',
    ' 7 ',
    '0x10',
    'NaN',
    'Infinity',
    '-Infinity',
    '1_000',
    '١٢',
  ),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  fc.double().map(String),
  fc.constantFrom(
    String(Number.MAX_SAFE_INTEGER),
    String(Number.MAX_SAFE_INTEGER + 2),
    '4294967295',
    '4294967296',
    '-2147483649',
    '18446744073709551616',
    '1e308',
    '1e309',
  ),
  fc.integer({ min: BASE_TS - 100_000, max: NOW + 100_000 }).map(String),
);

/** Cursor-shaped text: real cursors, base64url junk, `x.y` shapes. */
const cursorText = () =>
  fc.oneof(
    fc.constantFrom(real.markets, real.fills, real.ticks),
    base64urlChars(1, 60),
    fc.tuple(base64urlChars(0, 60), base64urlChars(0, 30)).map(([payload, tag]) => `${payload}.${tag}`),
    fc.tuple(base64urlChars(1, 60), base64urlChars(22, 22)).map(([payload, tag]) => `${payload}.${tag}`),
    fc.tuple(anyString, anyString).map(([a, b]) => `${a}.${b}`),
    fc.json().map((json) => `${Buffer.from(json).toString('base64url')}.${Buffer.alloc(16).toString('base64url')}`),
  );

/** `{trader}` values that name the data set: wallets (any case, padded), names, profile URLs, an unknown wallet. */
const plausibleTrader = fc.constantFrom(
  ALICE,
  BOB,
  UNKNOWN_WALLET,
  ALICE.toUpperCase().replace('0X', '0x'),
  `0X${BOB.slice(2)}`,
  ` ${ALICE} `,
  'FuzzAlice',
  'fuzzalice',
  'Fuzz Bob',
  'FUZZ BOB',
  `https://polymarket.com/profile/${ALICE}`,
  'https://polymarket.com/@FuzzAlice',
  'polymarket.com/profile/@Fuzz%20Bob',
  'https://www.polymarket.com/@fuzzalice/',
);

/** Any `{trader}`: 0x junk of random lengths, unknown names, URLs, percent-encoded text, anything. */
const junkTrader = fc.oneof(
  { weight: 2, arbitrary: hexChars(0, 80).map((hex) => `0x${hex}`) },
  { weight: 1, arbitrary: hexChars(40, 40).map((hex) => `0x${hex}`) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc
        .constantFrom(ALICE.slice(0, 30), '@FuzzAlice', '@Fuzz%20Bob', '@', '0x12', '@%E0%A4', '0X')
        .map((tail) => `https://polymarket.com/profile/${tail}`),
      fc.constantFrom('Fuzz%20Bob', '%zz', '', 'x/y', '%2F', '..').map((tail) => `https://www.polymarket.com/@${tail}`),
      anyString.map((tail) => `polymarket.com/@${tail}`),
      anyString.map((tail) => `https://polymarket.com/profile/${tail}`),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
    ),
  },
  { weight: 1, arbitrary: anyString.map((text) => encodeURIComponent(safe(text) ?? '')) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'nobody-by-this-name',
      'FuzzAlice ',
      'Fuzz  Bob',
      'x'.repeat(512),
      `0x${'a'.repeat(510)}`,
    ),
  },
  { weight: 4, arbitrary: anyString },
);

/** `{condition_id}` values of the data set: resolved, open, quiet, a market the traders never traded, any case. */
const plausibleConditionId = fc.constantFrom(
  RESOLVED,
  OPEN,
  QUIET,
  UNTRADED,
  RESOLVED.toUpperCase().replace('0X', '0x'),
  `0X${OPEN.slice(2)}`,
);

/** Any `{condition_id}`: unknown valid ids, 0x junk of random lengths, anything. */
const junkConditionId = fc.oneof(
  { weight: 1, arbitrary: hexChars(64, 64).map((hex) => `0x${hex}`) },
  { weight: 2, arbitrary: hexChars(0, 100).map((hex) => `0x${hex}`) },
  { weight: 1, arbitrary: fc.constantFrom(` ${RESOLVED}`, `${RESOLVED}/`, RESOLVED.slice(2), `${RESOLVED}0`) },
  { weight: 3, arbitrary: anyString },
);

/** `{tape_id}` values: the caller's tapes and an unknown id. */
const plausibleTapeId = fc.constantFrom(...TAPES.map((session) => session.tape.tape_id), 'tape_unknown');

/** Any other path parameter (added later, e.g. `{tape_id}`). */
const junkOther = fc.oneof(anyString, hexChars(0, 80), fc.uuid(), numberText);

/** encodeURIComponent, or undefined for strings it cannot encode (lone surrogates). */
function safe(text: string): string | undefined {
  try {
    encodeURIComponent(text);
    return text;
  } catch {
    return undefined;
  }
}

/** A path segment as a client sends it: percent-encoded; the dot segments encoded too, so no client or proxy folds them. */
function encodeSegment(value: string): string {
  const encoded = encodeURIComponent(value);
  return encoded === '.' || encoded === '..' ? encoded.replace(/\./g, '%2E') : encoded;
}

/**
 * The router's limit on a path parameter, read from the app (its routerOptions.maxParamLength) in
 * beforeAll; longer ones are tried as edge values, not at random.
 */
let MAX_PARAM_LENGTH = 0;

/** The empty segment is another URL (`/traders//markets`), not a value of this parameter. */
const segment = (values: fc.Arbitrary<string>) =>
  values.filter(
    (value) => value !== '' && safe(value) !== undefined && encodeSegment(value).length <= MAX_PARAM_LENGTH,
  );

/** A plausible value of one query parameter, from its OpenAPI schema: an enum value, a sensible number, a real cursor. */
function plausibleQueryValue(parameter: OpenApiParameter): fc.Arbitrary<string> {
  const schema = parameter.schema ?? {};
  if (schema.enum && schema.enum.length > 0) return fc.constantFrom(...schema.enum.map(String));
  if (parameter.name === 'cursor') return fc.constantFrom(real.markets, real.fills, real.ticks, '');
  if (schema.type === 'integer' || schema.type === 'number') {
    return fc.oneof(
      fc.integer({ min: 1, max: 30 }).map(String),
      fc.integer({ min: BASE_TS - 3600, max: NOW + 3600 }).map(String),
      fc.constantFrom('1', '20', '600', '3600', '5000', '100000'),
      ...(schema.type === 'number' ? [fc.double({ min: 0, max: 1e6, noNaN: true }).map(String)] : []),
    );
  }
  return anyString;
}

/** Any value at all for one query parameter: numbers of every kind, strings, cursor shapes, booleans. */
const junkQueryValue = fc
  .oneof(
    { weight: 3, arbitrary: numberText },
    { weight: 2, arbitrary: anyString },
    { weight: 1, arbitrary: fc.constantFrom('', 'true', 'false', 'TRUE', 'yes', '24H', 'ALL') },
    {
      weight: 2,
      arbitrary: fc.constant(null).chain(() => cursorText()),
    },
  )
  .filter((value) => safe(value) !== undefined);

/** One parameter of a request: a plausible draw (a query parameter may be absent) and a junk draw. */
interface ParameterDraws {
  plausible: fc.Arbitrary<string[] | undefined>;
  junk: fc.Arbitrary<string[] | undefined>;
}

function drawsOf(parameter: OpenApiParameter): ParameterDraws {
  if (parameter.in === 'path') {
    const [plausible, junk] =
      parameter.name === 'trader'
        ? [plausibleTrader, junkTrader]
        : parameter.name === 'condition_id'
          ? [plausibleConditionId, junkConditionId]
          : parameter.name === 'tape_id'
            ? [plausibleTapeId, junkOther]
            : [junkOther, junkOther];
    return { plausible: segment(plausible).map((value) => [value]), junk: segment(junk).map((value) => [value]) };
  }
  return {
    plausible: fc.option(
      plausibleQueryValue(parameter).map((value) => [value]),
      { nil: undefined, freq: 2 },
    ),
    // Once or repeated (`limit=1&limit=2`).
    junk: fc.oneof(
      { weight: 4, arbitrary: junkQueryValue.map((value) => [value]) },
      { weight: 1, arbitrary: fc.array(junkQueryValue, { minLength: 2, maxLength: 3 }) },
    ),
  };
}

/**
 * The values of a request's parameters. A request with every parameter random stops at the first
 * check it fails (400, 404, 422), so most requests keep every parameter plausible (or absent) and throw
 * junk at one or two of them; some are junk throughout.
 */
function valuesOf(parameters: OpenApiParameter[]): fc.Arbitrary<(string[] | undefined)[]> {
  if (parameters.length === 0) return fc.constant([]);
  const indices = parameters.map((_, index) => index);
  const junked = fc.oneof(
    { weight: 3, arbitrary: fc.constant([] as number[]) },
    { weight: 3, arbitrary: fc.constantFrom(...indices).map((index) => [index]) },
    { weight: 1, arbitrary: fc.subarray(indices, { maxLength: Math.min(2, indices.length) }) },
    { weight: 1, arbitrary: fc.subarray(indices) },
  );
  const draws = parameters.map(drawsOf);
  return fc
    .tuple(junked, ...draws.map((draw) => fc.tuple(draw.plausible, draw.junk)))
    .map(([junkedIndices, ...values]) =>
      values.map(([plausible, junk], index) => (junkedIndices.includes(index) ? junk : plausible)),
    );
}

interface FuzzRequest {
  url: string;
  headers: Record<string, string>;
}

/** A random request to one path template: its path parameters, its documented query parameters, sometimes a stray one or an If-None-Match. */
function requestTo(template: string): fc.Arbitrary<FuzzRequest> {
  const documented = openApiDocument.paths[template]!.get!.parameters ?? [];
  const pathNames = [...template.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
  // Path parameters in template order (a template parameter the document forgot is fuzzed all the same).
  const pathParameters = pathNames.map(
    (name) =>
      documented.find((parameter) => parameter.in === 'path' && parameter.name === name) ?? { in: 'path', name },
  );
  const queryParameters = documented.filter((parameter) => parameter.in === 'query');
  return fc
    .record({
      values: valuesOf([...pathParameters, ...queryParameters]),
      stray: fc.option(
        fc.tuple(
          fc.constantFrom('foo', 'LIMIT', 'cursor[]', 'limit[]', 'a[b]', '__proto__', 'constructor', 'key', ''),
          numberText,
        ),
        { nil: undefined, freq: 4 },
      ),
      ifNoneMatch: fc.option(
        fc.oneof(
          fc.constant('*'),
          fc.string({ maxLength: 30 }).map((text) => `"${text}"`),
        ),
        { nil: undefined, freq: 6 },
      ),
    })
    .map(({ values, stray, ifNoneMatch }) => {
      const pathValues = values.slice(0, pathParameters.length).map((value) => value![0]!);
      const pathname = template.replace(/\{[^}]+\}/g, () => encodeSegment(pathValues.shift()!));
      const pairs: string[] = [];
      queryParameters.forEach((parameter, position) => {
        for (const value of values[pathParameters.length + position] ?? [])
          pairs.push(`${encodeURIComponent(parameter.name)}=${encodeURIComponent(value)}`);
      });
      if (stray) pairs.push(`${encodeURIComponent(stray[0])}=${encodeURIComponent(stray[1])}`);
      const headers: Record<string, string> =
        ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch.replace(/[^\t\x20-\x7e]/g, '') };
      return { url: pairs.length > 0 ? `${pathname}?${pairs.join('&')}` : pathname, headers };
    });
}

// ---------------------------------------------------------------------------------------------------
// Properties

const v1 = (path: string) => `${API}${path}`;
/** The path templates of the contract this file knows; any other template of /openapi.json is fuzzed by the catch-all. */
const KNOWN_TEMPLATES: readonly string[] = CONTRACT_PATHS;
/** Runs per template; API_FUZZ_SCALE=10 for a deeper local run. */
const SCALE = Number(process.env.API_FUZZ_SCALE ?? 1);
const RUNS: Record<string, number> = { '/me': 30, '/popular': 30, '/openapi.json': 15 };
const DEFAULT_RUNS = 100;

/** Values at the edges, tried on every template before the random ones (one parameter at a time, the others plausible). */
const edgePathValues = () => [
  'x'.repeat(MAX_PARAM_LENGTH),
  'x'.repeat(MAX_PARAM_LENGTH + 1),
  `0x${'a'.repeat(MAX_PARAM_LENGTH)}`,
  `0x${'a'.repeat(39)}`,
  '0x',
  ' ',
  '%',
  '\u0000',
  '🙂',
];
const EDGE_QUERY_VALUES = ['', '0', '-1', '1.5', '1e20', '9007199254740992', '-9007199254740992', 'NaN', 'abc'];

function edgeRequests(template: string): FuzzRequest[] {
  const parameters = openApiDocument.paths[template]!.get!.parameters ?? [];
  const plain = (name: string) =>
    ({ trader: ALICE, condition_id: RESOLVED, tape_id: TAPES[0]!.tape.tape_id })[name] ?? 'x';
  const build = (override: { name: string; in: string; value: string } | undefined) => {
    const pathname = template.replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeSegment(override?.in === 'path' && override.name === name ? override.value : plain(name)),
    );
    return {
      url: override?.in === 'query' ? `${pathname}?${override.name}=${encodeURIComponent(override.value)}` : pathname,
      headers: {},
    };
  };
  return [
    build(undefined),
    ...parameters.flatMap((parameter) =>
      (parameter.in === 'path' ? edgePathValues() : EDGE_QUERY_VALUES).map((value) =>
        build({ name: parameter.name, in: parameter.in, value }),
      ),
    ),
  ];
}

async function fuzzTemplate(template: string, numRuns: number): Promise<void> {
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(requestTo(template), async ({ url, headers }) => {
      const response = await api.get(url, { headers });
      seen.set(response.statusCode, (seen.get(response.statusCode) ?? 0) + 1);
      expectContract(url, response);
    }),
    { numRuns: Math.ceil(numRuns * SCALE) },
  );
  // Not an assertion on the spread (the data decides it); a trace of what the fuzzer reached.
  console.info(
    `${template}: statuses ${[...seen.entries()]
      .sort()
      .map(([status, count]) => `${status}×${count}`)
      .join(' ')}`,
  );
}

describe('fuzzed parameters: never a 5xx, always JSON of the documented shapes', () => {
  it('/openapi.json documents every known endpoint', () => {
    const known = KNOWN_TEMPLATES.map(v1);
    expect(documentPaths).toEqual(expect.arrayContaining(known));
  });

  for (const template of KNOWN_TEMPLATES) {
    it(`GET ${template}: random values`, async () => {
      await fuzzTemplate(v1(template), RUNS[template] ?? DEFAULT_RUNS);
    });
  }

  it('GET of every other path template of /openapi.json: random values', async () => {
    const known = new Set(KNOWN_TEMPLATES.map(v1));
    for (const template of documentPaths.filter((path) => !known.has(path))) await fuzzTemplate(template, 60);
  });

  it('every path template: edge values, one parameter at a time', async () => {
    const failures: string[] = [];
    let requests = 0;
    for (const template of documentPaths) {
      for (const { url } of edgeRequests(template)) {
        requests++;
        try {
          expectContract(url, await api.get(url));
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    }
    expect(requests).toBeGreaterThan(100);
    if (failures.length > 0)
      throw new Error(
        `${failures.length} of ${requests} edge requests broke the contract:\n\n${failures.join('\n\n')}`,
      );
  });
});

describe('raw (not re-encoded) percent signs in the path', () => {
  it('a malformed percent-escape in a path parameter is a JSON 4xx of the documented shapes', async () => {
    const rawSegment = fc.oneof(
      fc.constantFrom(
        '%',
        '%zz',
        '%E0%A4',
        '%C0%AF',
        '%FF',
        '%00',
        'a%2',
        '%%41',
        '%u0041',
        '%ED%A0%80',
        '%F4%90%80%80',
      ),
      fc
        .tuple(base64urlChars(0, 8), fc.constantFrom('%', '%G', '%e', '%C3'), base64urlChars(0, 8))
        .map((parts) => parts.join('')),
    );
    const templates = documentPaths.filter((path) => path.includes('{'));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...templates), rawSegment, fc.nat(), async (template, raw, which) => {
        const names = [...template.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
        const target = which % names.length;
        const valid: Record<string, string> = {
          trader: ALICE,
          condition_id: RESOLVED,
          tape_id: TAPES[0]!.tape.tape_id,
        };
        let index = 0;
        const url = template.replace(/\{([^}]+)\}/g, (_, name: string) =>
          index++ === target ? raw : encodeSegment(valid[name] ?? 'x'),
        );
        expectContract(url, await api.get(url));
      }),
      { numRuns: Math.ceil(40 * SCALE) },
    );
  });
});

// ---------------------------------------------------------------------------------------------------
// Authentication

/** What an HTTP parser can deliver as a header value: visible ASCII, space, tab, obs-text (Latin-1). */
const HEADER_CHARS = [
  ...Array.from({ length: 95 }, (_, code) => String.fromCharCode(32 + code)),
  '\t',
  'é',
  'ÿ',
  '\u00a0',
  '£',
];
const headerText = (maxLength: number) => fc.string({ unit: fc.constantFrom(...HEADER_CHARS), maxLength });
const notBlank = (text: string) => !/^[ \t]*$/.test(text);
/** An HTTP parser strips the optional whitespace around a field value. */
const asDelivered = (value: string) => value.replace(/^[ \t]+|[ \t]+$/g, '');
const QUERY_KEY_NAMES = ['key', 'api_key', 'apikey', 'token', 'access_token'];

describe('authentication: anything but a valid bearer key is 401 unauthorized', () => {
  /** The oracle: the Bearer scheme (case-insensitive, RFC 9110 §11.1) and exactly one of the published keys. */
  const isValid = (authorization: string | null) => {
    if (authorization === null) return false;
    const match = /^Bearer[ \t]+([^ \t]+)$/i.exec(authorization);
    return match !== null && Object.values(keys).includes(match[1]!);
  };

  function expectUnauthorized(url: string, response: LightMyRequestResponse): { error: string; message: string } {
    const account = () => describeResponse(url, response);
    expect(response.statusCode, account()).toBe(401);
    expect(response.headers['www-authenticate'], account()).toBe('Bearer realm="agent-api"');
    const body = expectContract(url, response) as { error: string; message: string };
    expect(body, account()).toEqual({ error: 'unauthorized', message: expect.any(String) });
    return body;
  }

  it('random Authorization headers', async () => {
    const plan = fc.constantFrom<PlanId>('basic', 'pro', 'max');
    const authorization = fc.oneof(
      fc.constant(null),
      fc.constant(''),
      headerText(80),
      headerText(80).map((text) => `Bearer ${text}`),
      fc.tuple(plan, headerText(12).filter(notBlank)).map(([which, suffix]) => `Bearer ${keys[which]}${suffix}`),
      fc.tuple(plan, headerText(12).filter(notBlank)).map(([which, prefix]) => `Bearer ${prefix}${keys[which]}`),
      fc.tuple(plan, fc.nat(), fc.constantFrom(...BASE64URL)).map(([which, position, replacement]) => {
        const key = keys[which];
        const at = position % key.length;
        const changed = key[at] === replacement ? (replacement === 'A' ? 'B' : 'A') : replacement;
        return `Bearer ${key.slice(0, at)}${changed}${key.slice(at + 1)}`;
      }),
      fc.tuple(plan, fc.nat()).map(([which, length]) => `Bearer ${keys[which].slice(0, length % keys[which].length)}`),
      plan.map((which) => keys[which]),
      fc
        .tuple(
          fc.constantFrom(
            'Basic',
            'Token',
            'Bearer:',
            'Bearer,',
            'Bearer=',
            'Bearer\u00a0',
            'Bearerr',
            'Bear',
            'Authorization: Bearer',
          ),
          plan,
        )
        .map(([scheme, which]) => `${scheme} ${keys[which]}`),
      fc.tuple(plan, plan).map(([a, b]) => `Bearer ${keys[a]} ${keys[b]}`),
      fc.tuple(plan, plan).map(([a, b]) => `Bearer ${keys[a]},Bearer ${keys[b]}`),
      // Valid ones: any case of the scheme, spaces or tabs before the key.
      fc
        .tuple(fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR'), fc.constantFrom(' ', '  ', '\t', ' \t '), plan)
        .map(([scheme, space, which]) => `${scheme}${space}${keys[which]}`),
    );
    const target = fc.constantFrom(...documentPaths).chain(requestTo);
    const statuses = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        authorization.map((value) => (value === null ? null : asDelivered(value))),
        target,
        fc.ipV4(),
        async (value, { url }, remoteAddress) => {
          // A fresh client address each time: the failed-authentication limit per address never trips.
          const response = await api.app.inject({
            method: 'GET',
            url,
            remoteAddress,
            headers: value === null ? {} : { authorization: value },
          });
          const valid = isValid(value);
          statuses.set(
            `${valid ? 'valid' : 'invalid'} ${response.statusCode}`,
            (statuses.get(`${valid ? 'valid' : 'invalid'} ${response.statusCode}`) ?? 0) + 1,
          );
          if (valid) {
            expect(response.statusCode, describeResponse(url, response)).not.toBe(401);
            expectContract(url, response);
          } else {
            expectUnauthorized(url, response);
          }
        },
      ),
      { numRuns: Math.ceil(300 * SCALE) },
    );
    console.info(
      `authorization: ${[...statuses.entries()]
        .sort()
        .map(([key, count]) => `${key}×${count}`)
        .join(', ')}`,
    );
  });

  it('a request the router refuses (a path parameter over its length limit, a malformed percent-escape) is 401 without a valid key too', async () => {
    const refused = [
      v1(`/traders/${'x'.repeat(MAX_PARAM_LENGTH + 1)}`),
      v1(`/traders/${ALICE}/markets/${'f'.repeat(MAX_PARAM_LENGTH + 1)}/summary`),
      v1('/traders/%'),
      v1(`/traders/%zz/fills`),
      v1(`/traders/${ALICE}/markets/%E0%A4/tape`),
    ];
    const failures: string[] = [];
    for (const url of refused) {
      for (const authorization of [null, 'Bearer nope', `Bearer ${keys.pro}x`]) {
        const response = await api.app.inject({
          method: 'GET',
          url,
          remoteAddress: `10.9.${failures.length}.${refused.indexOf(url)}`,
          headers: authorization === null ? {} : { authorization },
        });
        try {
          expectUnauthorized(url, response);
        } catch (error) {
          failures.push(`${authorization ?? '(no Authorization)'}: ${(error as Error).message}`);
        }
      }
    }
    if (failures.length > 0)
      throw new Error(`${failures.length} unauthenticated requests were not 401:\n\n${failures.join('\n\n')}`);
    // The limit read from the app is the router's: one character more is refused before any route, with a valid key too.
    const atLimit = await api.get(v1(`/traders/${'x'.repeat(MAX_PARAM_LENGTH)}`));
    const overLimit = await api.get(v1(`/traders/${'x'.repeat(MAX_PARAM_LENGTH + 1)}`));
    expect(bodyOf(atLimit)).toMatchObject({ error: 'trader_not_found' });
    expect(overLimit.statusCode).toBe(400);
    expect(bodyOf(overLimit)).toMatchObject({ error: 'bad_request' });
  });

  it('a key in the query string only is 401, and the message points to the Authorization header', async () => {
    const plan = fc.constantFrom<PlanId>('basic', 'pro', 'max');
    const target = fc.constantFrom(...documentPaths).chain(requestTo);
    await fc.assert(
      fc.asyncProperty(
        target,
        fc.constantFrom(...QUERY_KEY_NAMES),
        plan,
        fc.option(headerText(40), { nil: null }),
        fc.ipV4(),
        async ({ url }, name, which, header, remoteAddress) => {
          const withKey = `${url}${url.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(keys[which])}`;
          const authorization = header === null ? null : asDelivered(header);
          fc.pre(!isValid(authorization));
          const response = await api.app.inject({
            method: 'GET',
            url: withKey,
            remoteAddress,
            headers: authorization === null ? {} : { authorization },
          });
          const body = expectUnauthorized(withKey, response);
          expect(body.message, describeResponse(withKey, response)).toMatch(/Authorization/);
        },
      ),
      { numRuns: Math.ceil(60 * SCALE) },
    );
  });
});

// ---------------------------------------------------------------------------------------------------
// Cursors

type Paged = 'markets' | 'fills' | 'ticks';
const PAGED: Paged[] = ['markets', 'fills', 'ticks'];

/** The first-page URL of a paged read (limit 1, so that there is a next page). */
function pagedUrl(paged: Paged, trader: string = ALICE, cursor?: string, market: string = RESOLVED): string {
  const base = {
    markets: `traders/${encodeSegment(trader)}/markets?limit=1`,
    fills: `traders/${encodeSegment(trader)}/fills?limit=1`,
    ticks: `traders/${encodeSegment(trader)}/markets/${market}?raw=1&limit=1`,
  }[paged];
  return v1(`/${base}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/;

/** The contract's reading of a cursor that is not the service's own: page 1 when it is a well-formed forgery (or empty), else bad_cursor. */
function expectedReading(token: string): 'page 1' | 'bad_cursor' {
  if (token === '') return 'page 1';
  if (!TOKEN_SHAPE.test(token)) return 'bad_cursor';
  const payload = token.split('.')[0]!;
  try {
    const envelope: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const wellFormed =
      Array.isArray(envelope) &&
      envelope.length === 3 &&
      typeof envelope[0] === 'string' &&
      typeof envelope[1] === 'string' &&
      Array.isArray(envelope[2]) &&
      envelope[2].every((item: unknown) => typeof item === 'string' || typeof item === 'number');
    return wellFormed ? 'page 1' : 'bad_cursor';
  } catch {
    return 'bad_cursor';
  }
}

describe('cursors', () => {
  const firstPages = {} as Record<Paged, unknown>;
  beforeAll(async () => {
    for (const paged of PAGED) {
      const url = pagedUrl(paged);
      const response = await api.get(url);
      expect(response.statusCode, describeResponse(url, response)).toBe(200);
      firstPages[paged] = bodyOf(response);
      expect((firstPages[paged] as { next_cursor: string }).next_cursor).toBe(real[paged]);
    }
  });

  async function expectReading(paged: Paged, token: string, reading: 'page 1' | 'bad_cursor'): Promise<void> {
    const url = pagedUrl(paged, ALICE, token);
    const response = await api.get(url);
    const body = expectContract(url, response);
    if (reading === 'page 1') {
      expect(response.statusCode, describeResponse(url, response)).toBe(200);
      expect(body, describeResponse(url, response)).toEqual(firstPages[paged]);
    } else {
      expect(response.statusCode, describeResponse(url, response)).toBe(400);
      expect(body, describeResponse(url, response)).toMatchObject({ error: 'bad_cursor' });
    }
  }

  const item = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 8 }),
    fc.integer(),
    fc.integer({ min: 0, max: NOW * 2 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
  );

  it('a real cursor whose payload is changed (still base64url of JSON of the right structure) reads as page 1', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PAGED),
        fc.oneof(
          fc.record({ slot: fc.constant(2 as const), at: fc.nat(), value: item }),
          fc.record({
            slot: fc.constant(0 as const),
            value: fc.oneof(fc.constantFrom<string>(...PAGED, 'Markets', ''), fc.string({ maxLength: 12 })),
          }),
          fc.record({
            slot: fc.constant(1 as const),
            value: fc.oneof(
              fc.constantFrom(BOB, ALICE.toUpperCase(), `${ALICE}|${RESOLVED}`, ''),
              fc.string({ maxLength: 12 }),
            ),
          }),
          fc.record({ slot: fc.constant('items' as const), value: fc.array(item, { maxLength: 5 }) }),
          fc.record({ slot: fc.constant('tag only' as const) }),
        ),
        fc.option(base64urlChars(22, 22), { nil: undefined, freq: 3 }),
        async (paged, mutation, newTag) => {
          const [payload, tag] = real[paged].split('.') as [string, string];
          const envelope = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [
            string,
            string,
            (string | number)[],
          ];
          if (mutation.slot === 2) envelope[2][mutation.at % envelope[2].length] = mutation.value;
          else if (mutation.slot === 'items') envelope[2] = mutation.value;
          else if (mutation.slot !== 'tag only') envelope[mutation.slot] = mutation.value;
          const flipped = `${tag[0] === 'A' ? 'B' : 'A'}${tag.slice(1)}`;
          const forged = `${Buffer.from(JSON.stringify(envelope), 'utf8').toString('base64url')}.${newTag ?? (mutation.slot === 'tag only' ? flipped : tag)}`;
          fc.pre(forged !== real[paged]);
          expect(expectedReading(forged)).toBe('page 1');
          await expectReading(paged, forged, 'page 1');
        },
      ),
      { numRuns: Math.ceil(60 * SCALE) },
    );
  });

  it('truncated, corrupted and garbage cursors are 400 bad_cursor (well-formed forgeries page 1), never a 5xx', async () => {
    const corruption = fc.oneof(
      // Truncations of a real cursor.
      fc
        .tuple(fc.constantFrom(...PAGED), fc.nat())
        .map(([source, cut]) => real[source].slice(0, 1 + (cut % (real[source].length - 1)))),
      // A real cursor with a character inserted, replaced or appended.
      fc
        .tuple(
          fc.constantFrom(...PAGED),
          fc.nat(),
          fc.constantFrom('.', '=', '+', '/', ' ', '%', '~', 'é', '\u0000', 'A', '-'),
        )
        .map(([source, at, extra]) => {
          const token = real[source];
          const position = at % (token.length + 1);
          return `${token.slice(0, position)}${extra}${token.slice(position)}`;
        }),
      fc.tuple(fc.constantFrom(...PAGED), base64urlChars(1, 4)).map(([source, extra]) => `${real[source]}${extra}`),
      fc.constantFrom(...PAGED).map((source) => real[source].split('.').reverse().join('.')),
      fc.constantFrom(...PAGED).map((source) => real[source].split('.')[0]!),
      fc.constantFrom(...PAGED).map((source) => `${real[source].split('.')[0]!}=.${real[source].split('.')[1]!}`),
      // Garbage.
      anyString,
      base64urlChars(1, 80),
      fc.tuple(base64urlChars(0, 80), base64urlChars(0, 30)).map(([payload, tag]) => `${payload}.${tag}`),
      fc.tuple(base64urlChars(1, 80), base64urlChars(22, 22)).map(([payload, tag]) => `${payload}.${tag}`),
      fc
        .tuple(fc.json({ maxDepth: 2 }), base64urlChars(22, 22))
        .map(([json, tag]) => `${Buffer.from(json).toString('base64url')}.${tag}`),
      fc
        .tuple(fc.string({ maxLength: 30 }), base64urlChars(22, 22))
        .map(([text, tag]) => `${Buffer.from(text).toString('base64url')}.${tag}`),
    );
    const readings = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PAGED),
        corruption.filter((token) => safe(token) !== undefined),
        async (paged, token) => {
          fc.pre(!Object.values(real).includes(token));
          const reading = expectedReading(token);
          readings.set(reading, (readings.get(reading) ?? 0) + 1);
          await expectReading(paged, token, reading);
        },
      ),
      { numRuns: Math.ceil(150 * SCALE) },
    );
    console.info(`cursor corruptions: ${[...readings.entries()].map(([key, count]) => `${key}×${count}`).join(', ')}`);
  });

  it('a cursor of one endpoint (or of another trader or market) is 400 bad_cursor; the same trader spelled otherwise reads on', async () => {
    const spellings = [
      ALICE,
      ALICE.toUpperCase().replace('0X', '0x'),
      'FuzzAlice',
      'fuzzalice',
      `https://polymarket.com/profile/${ALICE}`,
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PAGED),
        fc.constantFrom(...PAGED),
        fc.constantFrom(...spellings),
        fc.boolean(),
        async (source, target, spelling, otherScope) => {
          const cursor = real[source];
          if (source !== target || otherScope) {
            // Another endpoint, or the right one for another trader (or, for ticks, another market).
            const url =
              source === target && target === 'ticks'
                ? pagedUrl(target, spelling, cursor, OPEN)
                : pagedUrl(target, source === target ? BOB : spelling, cursor);
            const response = await api.get(url);
            const body = expectContract(url, response);
            expect(response.statusCode, describeResponse(url, response)).toBe(400);
            expect(body, describeResponse(url, response)).toMatchObject({ error: 'bad_cursor' });
            return;
          }
          const url = pagedUrl(target, spelling, cursor);
          const canonical = pagedUrl(target, ALICE, cursor);
          const [response, expected] = [await api.get(url), await api.get(canonical)];
          const body = expectContract(url, response);
          expect(response.statusCode, describeResponse(url, response)).toBe(200);
          expect(expected.statusCode, describeResponse(canonical, expected)).toBe(200);
          expect(body, describeResponse(url, response)).toEqual(bodyOf(expected));
          expect(body, describeResponse(url, response)).not.toEqual(firstPages[target]);
        },
      ),
      { numRuns: Math.ceil(40 * SCALE) },
    );
  });
});

// ---------------------------------------------------------------------------------------------------
// Value oracles: numeric parameters at their boundaries

/**
 * Integers at the edges of the types the store binds parameters as (UInt16, Int32, UInt32, Int64,
 * UInt64) and of JavaScript's safe integers, plus times of the data set. A wrapped parameter answers
 * 200 with other rows (4294967296 bound as UInt32 is 0): only a comparison with the rows the request
 * means, computed here from the published events, sees that.
 */
const BOUNDARY_VALUES = [
  '0',
  '1',
  '-1',
  '20',
  '600',
  '601',
  '65536',
  '2147483647',
  '2147483648',
  '-2147483649',
  '4294967295',
  '4294967296',
  '4294967297',
  '-4294967296',
  '6090387296',
  '9007199254740991',
  '9007199254740992',
  '-9007199254740992',
  '18446744073709551616',
  String(BASE_TS + 300),
  String(BASE_TS + 301),
  String(NOW),
];
/** What a boundary value means: a safe integer (the service must answer it), or beyond (422 allowed). */
const safeIntegerOf = (text: string): number | null => {
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
};
const STORE_LAST_SECOND = 2 ** 32 - 1;
const upPrice = (trade: { token_side: 1 | 2; price: number }) =>
  trade.token_side === 1 ? trade.price : 1 - trade.price;
const closeTo = (a: number, b: number) => Math.abs(a - b) < 1e-9;

type Oracle =
  | { kind: 'rows'; rows: unknown[] }
  /** The answer is checked by a function (the chart: its own window and rung decide the buckets). */
  | { kind: 'check'; check: (body: any) => string | null } // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are read field by field
  | { kind: 'bad_limit' };

interface BoundaryCase {
  /** The URL with `{v}` where the boundary value goes. */
  url: string;
  /** The rows the answer must hold for the safe integer v (projected by `rowsOf`). */
  oracle: (value: number) => Oracle;
  rowsOf?: (body: any) => unknown[]; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are read field by field
}

const ticksOf = (market: string) =>
  TRADES.filter((trade) => trade.condition_id === market)
    .sort((a, b) => a.ts - b.ts || a.seq - b.seq)
    .map((trade) => ({ ts: trade.ts, price: upPrice(trade) }));
const aliceFills = () =>
  FILLS.filter((row) => row.wallet === ALICE)
    .sort((a, b) => a.ts - b.ts)
    .map((row) => ({
      ts: row.ts,
      condition_id: row.condition_id,
      side: row.side,
      token_side: row.token_side,
      price: upPrice(row),
      usd: row.usd,
    }));
/** ALICE's markets, most recent activity first (her last fill in each). */
const aliceMarketsByRecency = () => {
  const last = new Map<string, number>();
  for (const row of FILLS)
    if (row.wallet === ALICE) last.set(row.condition_id, Math.max(last.get(row.condition_id) ?? 0, row.ts));
  return [...last.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : -1)).map(([market]) => market);
};
/** most_traded: fills descending, then last activity descending. */
const aliceMostTraded = () => {
  const stats = new Map<string, { fills: number; last: number }>();
  for (const row of FILLS) {
    if (row.wallet !== ALICE) continue;
    const entry = stats.get(row.condition_id) ?? { fills: 0, last: 0 };
    stats.set(row.condition_id, { fills: entry.fills + 1, last: Math.max(entry.last, row.ts) });
  }
  return [...stats.entries()]
    .sort((a, b) => b[1].fills - a[1].fills || b[1].last - a[1].last)
    .map(([market]) => market);
};
const clampTo = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));
const pageOf = <T>(rows: T[], value: number, max: number): Oracle =>
  value < 1 ? { kind: 'bad_limit' } : { kind: 'rows', rows: rows.slice(0, Math.min(value, max)) };

/**
 * The sampled chart's points, recomputed from the trades for the rung and window the answer states:
 * every bucket of that rung whose start lies in [from_ts rounded down to the rung, to_ts], each
 * `[start, last, lo, hi]` of its trades (last = the greatest (ts, seq)). The window itself must lie
 * inside the requested one (a bound outside the store's seconds means its nearest end, never a wrap).
 */
function chartCheck(market: string, request: { from?: number; to?: number; points?: number }) {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are read field by field
  return (body: any): string | null => {
    const {
      from_ts: from,
      to_ts: to,
      fidelity,
      points,
    } = body.series as { from_ts: number; to_ts: number; fidelity: number; points: number[][] };
    if (request.from !== undefined && from < clampTo(request.from, 0, STORE_LAST_SECOND))
      return `series.from_ts ${from} is before the requested ${request.from}`;
    if (request.to !== undefined && to !== Math.max(from, clampTo(request.to, 0, STORE_LAST_SECOND)))
      return `series.to_ts ${to} is not the requested ${request.to}`;
    if (from < 0 || to > STORE_LAST_SECOND || from > to) return `window [${from}, ${to}] outside the store's seconds`;
    if (request.points !== undefined && points.length > clampTo(request.points, 20, 600))
      return `${points.length} points for a budget of ${request.points}`;
    const buckets = new Map<number, { last: [number, number, number]; lo: number; hi: number }>();
    for (const trade of TRADES) {
      if (trade.condition_id !== market) continue;
      const start = Math.floor(trade.ts / fidelity) * fidelity;
      if (start < Math.floor(from / fidelity) * fidelity || start > to) continue;
      const price = upPrice(trade);
      const bucket = buckets.get(start);
      if (!bucket) buckets.set(start, { last: [trade.ts, trade.seq, price], lo: price, hi: price });
      else {
        if (trade.ts > bucket.last[0] || (trade.ts === bucket.last[0] && trade.seq > bucket.last[1]))
          bucket.last = [trade.ts, trade.seq, price];
        bucket.lo = Math.min(bucket.lo, price);
        bucket.hi = Math.max(bucket.hi, price);
      }
    }
    const expected = [...buckets.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([start, bucket]) => [start, bucket.last[2], bucket.lo, bucket.hi]);
    const same =
      expected.length === points.length &&
      expected.every((row, i) => row.every((value, j) => closeTo(value, points[i]![j]!)));
    return same
      ? null
      : `points ${JSON.stringify(points)} are not the trades' buckets ${JSON.stringify(expected)} (rung ${fidelity}, window [${from}, ${to}])`;
  };
}

function boundaryCases(config: typeof api.config): BoundaryCase[] {
  const tapesNewestFirst = [...TAPES]
    .sort((a, b) => b.tape.started_at - a.tape.started_at)
    .map((session) => session.tape.tape_id);
  const firstTapeEvents = [...TAPES[0]!.events]
    .sort((a, b) => a.seq - b.seq)
    .map((event) => ({ type: event.type, ts: event.ts }));
  const whaleRow = { wallet: BOB, condition_id: OPEN, token_side: 1, burst_usd: 7600 };
  const whaleRows = (threshold: number) =>
    Math.max(threshold, config.whales.exactAboveUsd) <= whaleRow.burst_usd ? [whaleRow] : [];
  const ticks = (body: { ticks: unknown[] }) => body.ticks;
  const fillRows = (body: {
    fills: { ts: number; condition_id: string; side: string; token_side: number; price: number; usd: number }[];
  }) =>
    body.fills.map(({ ts, condition_id, side, token_side, price, usd }) => ({
      ts,
      condition_id,
      side,
      token_side,
      price,
      usd,
    }));
  const whaleRowsOf = (body: {
    rows: { wallet: string; condition_id: string; token_side: number; burst_usd: number }[];
  }) =>
    body.rows.map(({ wallet, condition_id, token_side, burst_usd }) => ({
      wallet,
      condition_id,
      token_side,
      burst_usd: Math.round(burst_usd * 1e6) / 1e6,
    }));
  return [
    ...[RESOLVED, OPEN].map((market) => ({
      url: `/traders/${ALICE}/markets/${market}?raw=1&limit=10000&window={v}`,
      oracle: (v: number): Oracle => ({ kind: 'rows', rows: ticksOf(market).filter((tick) => tick.ts >= v) }),
      rowsOf: ticks,
    })),
    {
      url: `/traders/${ALICE}/markets/${RESOLVED}?raw=1&limit={v}`,
      oracle: (v) => pageOf(ticksOf(RESOLVED), v, config.charts.rawTicksMaxLimit),
      rowsOf: ticks,
    },
    {
      url: `/traders/${ALICE}/fills?limit=2000&since={v}`,
      oracle: (v) => ({ kind: 'rows', rows: aliceFills().filter((row) => row.ts >= v) }),
      rowsOf: fillRows,
    },
    {
      url: `/traders/${ALICE}/fills?limit={v}`,
      oracle: (v) => pageOf(aliceFills(), v, config.api.fills.maxLimit),
      rowsOf: fillRows,
    },
    {
      url: `/traders/${ALICE}/markets?limit={v}`,
      oracle: (v) => pageOf(aliceMarketsByRecency(), v, config.api.marketsList.maxLimit),
      rowsOf: (body: { markets: { condition_id: string }[] }) => body.markets.map((row) => row.condition_id),
    },
    {
      url: `/traders/${ALICE}/top-markets?n={v}`,
      oracle: (v) => ({
        kind: 'rows',
        rows: aliceMostTraded().slice(0, clampTo(v, config.api.topMarkets.minN, config.api.topMarkets.maxN)),
      }),
      rowsOf: (body: { most_traded: { condition_id: string }[] }) => body.most_traded.map((row) => row.condition_id),
    },
    ...[RESOLVED, OPEN].map((market) => ({
      url: `/traders/${ALICE}/markets/${market}?from_ts={v}`,
      oracle: (v: number): Oracle => ({ kind: 'check', check: chartCheck(market, { from: v }) }),
    })),
    {
      url: `/traders/${ALICE}/markets/${RESOLVED}?to_ts={v}`,
      oracle: (v) => ({ kind: 'check', check: chartCheck(RESOLVED, { to: v }) }),
    },
    {
      url: `/traders/${ALICE}/markets/${RESOLVED}?from_ts=${BASE_TS}&to_ts={v}`,
      oracle: (v) => ({ kind: 'check', check: chartCheck(RESOLVED, { from: BASE_TS, to: v }) }),
    },
    {
      url: `/traders/${ALICE}/markets/${RESOLVED}?from_ts={v}&to_ts=${STORE_LAST_SECOND}`,
      oracle: (v) => ({ kind: 'check', check: chartCheck(RESOLVED, { from: v, to: STORE_LAST_SECOND }) }),
    },
    {
      url: `/traders/${ALICE}/markets/${RESOLVED}?points={v}`,
      oracle: (v) => ({ kind: 'check', check: chartCheck(RESOLVED, { points: v }) }),
    },
    {
      url: `/traders/${ALICE}/markets/${RESOLVED}?resolution={v}`,
      oracle: () => ({ kind: 'check', check: chartCheck(RESOLVED, {}) }),
    },
    { url: '/flow/whales?min_usd={v}', oracle: (v) => ({ kind: 'rows', rows: whaleRows(v) }), rowsOf: whaleRowsOf },
    {
      url: '/flow/whales?min_usd=1000&window_h={v}',
      oracle: () => ({ kind: 'rows', rows: whaleRows(1000) }),
      rowsOf: whaleRowsOf,
    },
    {
      url: '/flow/whales?min_usd=1000&limit={v}',
      oracle: (v) => pageOf(whaleRows(1000), v, config.whales.maxLimit),
      rowsOf: whaleRowsOf,
    },
    {
      url: '/tapes?limit={v}',
      oracle: (v) => pageOf(tapesNewestFirst, v, config.tapes.list.maxLimit),
      rowsOf: (body: { tapes: { tape_id: string }[] }) => body.tapes.map((tape) => tape.tape_id),
    },
    {
      url: `/tapes/${TAPES[0]!.tape.tape_id}/events?limit={v}`,
      oracle: (v) => pageOf(firstTapeEvents, v, config.tapes.events.maxLimit),
      rowsOf: (body: { events: { type: string; ts: number }[] }) =>
        body.events.map((event) => ({ type: event.type, ts: event.ts })),
    },
  ];
}

describe('value oracles: a numeric parameter at a boundary gives the rows it means, or a 422', () => {
  it('every numeric query parameter of the row-selecting reads, at the edges of the store types and of safe integers', async () => {
    const failures: string[] = [];
    let answered = 0;
    for (const testCase of boundaryCases(api.config)) {
      for (const text of BOUNDARY_VALUES) {
        const url = v1(testCase.url.replace('{v}', encodeURIComponent(text)));
        const response = await api.get(url);
        const account = () => describeResponse(url, response);
        let body: unknown;
        try {
          body = expectContract(url, response);
        } catch (error) {
          failures.push((error as Error).message);
          continue;
        }
        const value = safeIntegerOf(text);
        if (value === null) {
          // Beyond ±2^53 no integer is exact: the only acceptable answer is the validation error.
          if (response.statusCode !== 422) failures.push(`${text} is not a safe integer, yet not 422\n${account()}`);
          continue;
        }
        const oracle = testCase.oracle(value);
        if (oracle.kind === 'bad_limit') {
          if (response.statusCode !== 400 || (body as { error?: string }).error !== 'bad_limit')
            failures.push(`expected 400 bad_limit\n${account()}`);
          continue;
        }
        if (response.statusCode !== 200) {
          failures.push(`a safe integer (${text}) must be answered, not ${response.statusCode}\n${account()}`);
          continue;
        }
        answered += 1;
        const problem =
          oracle.kind === 'check'
            ? oracle.check(body)
            : JSON.stringify(testCase.rowsOf!(body)) === JSON.stringify(oracle.rows)
              ? null
              : `rows ${JSON.stringify(testCase.rowsOf!(body))}, but the request means ${JSON.stringify(oracle.rows)}`;
        if (problem !== null) failures.push(`${problem}\n${account()}`);
      }
    }
    expect(answered).toBeGreaterThan(250);
    if (failures.length > 0)
      throw new Error(
        `${failures.length} boundary requests broke their oracle:\n\n${failures.slice(0, 20).join('\n\n')}`,
      );
  });

  it("MCP answers the same rows as REST at the same boundaries (the tools take the routes' query schemas), and refuses what REST refuses with 422", async () => {
    await api.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = api.app.server.address() as AddressInfo;
    const client = new Client({ name: 'api-fuzz-boundaries', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}${api.config.mcp.path}`), {
        requestInit: { headers: { Authorization: `Bearer ${keys.pro}` } },
      }),
    );
    try {
      const pairs = [
        {
          tool: 'get_recent_fills',
          args: (v: number) => ({ trader: ALICE, since: v, limit: 2000 }),
          url: (text: string) => `/traders/${ALICE}/fills?limit=2000&since=${text}`,
        },
        {
          tool: 'get_market_events',
          args: (v: number) => ({ trader: ALICE, market: RESOLVED, from_ts: v }),
          url: (text: string) => `/traders/${ALICE}/markets/${RESOLVED}?from_ts=${text}`,
        },
        {
          tool: 'get_market_events',
          args: (v: number) => ({ trader: ALICE, market: OPEN, to_ts: v }),
          url: (text: string) => `/traders/${ALICE}/markets/${OPEN}?to_ts=${text}`,
        },
      ];
      for (const pair of pairs) {
        for (const text of BOUNDARY_VALUES) {
          const rest = await api.get(v1(pair.url(text)));
          let answer: CallToolResult | Error;
          try {
            answer = (await client.callTool({ name: pair.tool, arguments: pair.args(Number(text)) })) as CallToolResult;
          } catch (error) {
            answer = error as Error;
          }
          const account = `${pair.tool} ${text}: REST ${rest.statusCode}, MCP ${answer instanceof Error ? answer.message : JSON.stringify(answer).slice(0, 300)}`;
          if (rest.statusCode === 422) {
            // The protocol layer refuses arguments the schema refuses: an error, never rows.
            expect(answer instanceof Error || answer.isError === true, account).toBe(true);
            continue;
          }
          expect(rest.statusCode, account).toBe(200);
          expect(answer instanceof Error ? null : answer.structuredContent, account).toEqual(bodyOf(rest));
        }
      }
    } finally {
      await client.close();
    }
  });
});
