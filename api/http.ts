/**
 * Request helpers shared by the routes: query parameter types (zod, coerced from strings), page limits,
 * identifiers, and the caching rules (resolved → immutable with a strong ETag; open → briefly cached).
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Config, PageLimits } from '../config.ts';
import { MAX_EPOCH_SECONDS } from '../projections/params.ts';
import { errorBodySchema, errors, overloadedSchema, upstreamOfflineSchema, validationErrorSchema } from './errors.ts';

const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
/** Query strings arrive as text: a numeric text becomes a number, anything else stays and fails the type check (422). */
const numericText = (value: unknown) => (typeof value === 'string' && NUMERIC.test(value) ? Number(value) : value);

/**
 * An integer query parameter. `bounds` are documented (OpenAPI) but not enforced by validation: they
 * clamp or map to a contract code in the route. (Bounds and default sit on the inner schema: zod keeps
 * a `default` there in the input JSON Schema.)
 */
export const queryInt = (description: string, bounds: { minimum?: number; maximum?: number; default?: number } = {}) =>
  z.preprocess(numericText, z.int().meta(bounds)).meta({ description });
/**
 * An epoch-seconds query parameter: any integer within ±(2^53 − 1) (beyond is 422). The store holds the
 * seconds 0..MAX_EPOCH_SECONDS (UInt32); the read functions bind a bound outside that range to what it
 * means there (projections/params.ts), never to a wrapped value.
 */
export const queryEpochSeconds = (description: string) =>
  queryInt(
    `${description} Epoch seconds (an integer). The store holds 0..${MAX_EPOCH_SECONDS}: an earlier time means the first second; a start after the last second selects nothing, an end after it means the last second.`,
  );
/** A number query parameter; beyond ±2^53 is 422 (no threshold means anything there, and the store refuses such literals). */
export const queryNumber = (description: string, bounds: { minimum?: number; maximum?: number; default?: number } = {}) =>
  z.preprocess(numericText, z.number().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).meta(bounds)).meta({ description });
export const queryCursor = z
  .string()
  .max(8192)
  .optional()
  .meta({ description: 'Opaque cursor: the next_cursor of the previous page. Omit for the first page. A malformed cursor is 400 bad_cursor; a forged one reads as page 1.' });

/** `limit`: below 1 is `400 bad_limit`; above the maximum is clamped silently; absent is the default. */
export function pageLimit(limit: number | undefined, limits: PageLimits): number {
  if (limit === undefined) return limits.defaultLimit;
  if (limit < 1) throw errors.badLimit();
  return Math.min(limit, limits.maxLimit);
}

export const limitParameter = (limits: PageLimits, what: string) =>
  queryInt(`Caps one page of ${what}: at least 1 (0 is 400 bad_limit), default ${limits.defaultLimit}, values above ${limits.maxLimit} are clamped to it.`, {
    minimum: 1,
    default: limits.defaultLimit,
  }).optional();

const CONDITION_ID = /^0x[0-9a-fA-F]{64}$/;

/** A market id, lower-cased; anything but 0x + 64 hex is `400 invalid_condition_id`. */
export function parseConditionId(input: string): string {
  if (!CONDITION_ID.test(input)) throw errors.invalidConditionId(input);
  return input.toLowerCase();
}

/** Caching of market-shaped answers: resolved markets are immutable (ETag), open ones change. */
export function applyMarketCaching(
  request: FastifyRequest,
  reply: FastifyReply,
  body: unknown,
  resolved: boolean,
  config: Config,
): 'not-modified' | 'send' {
  if (!resolved) {
    reply.header('Cache-Control', `private, max-age=${config.api.openMarketMaxAgeSeconds}`);
    return 'send';
  }
  const etag = strongEtag(typeof body === 'string' ? body : JSON.stringify(body));
  reply.header('Cache-Control', `private, max-age=${config.api.immutableMaxAgeSeconds}, immutable`);
  reply.header('ETag', etag);
  return ifNoneMatch(request.headers['if-none-match'], etag) ? 'not-modified' : 'send';
}

export function strongEtag(content: string | Buffer): string {
  return `"${createHash('sha256').update(content).digest('base64url').slice(0, 32)}"`;
}

/** If-None-Match uses the weak comparison (RFC 9110 §13.1.2): `W/` prefixes are ignored, `*` matches. */
export function ifNoneMatch(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const values = (Array.isArray(header) ? header.join(',') : header).split(',').map((value) => value.trim());
  return values.some((value) => value === '*' || value.replace(/^W\//, '') === etag);
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Bad request: invalid_wallet (0x-prefixed trader of the wrong length), invalid_condition_id, bad_cursor (malformed cursor), bad_limit (limit below 1). Counts one call.',
  401: 'unauthorized: missing, unknown or revoked key (header WWW-Authenticate: Bearer realm="agent-api"). Keys are only read from the Authorization header.',
  403: 'Plan walls (do not retry; relay the message): depth_gated (market outside a Basic caller\'s history depth: the trader\'s most recent markets, as GET /me history_depth counts them), wallet_quota (fourth new distinct wallet in a UTC day on Basic; carries used, limit, resets_at). Counts one call.',
  404: 'trader_not_found (unknown display name) or market_not_found (unknown market, or one this trader never traded). Counts one call.',
  429: 'rate_limited or busy (transient: wait retry_after seconds / the Retry-After header), daily_limit or monthly_limit (quota spent: relay and stop), too_many_auth_failures. A 429 consumes nothing.',
  503: 'overloaded: this instance is at capacity and did not start the call (transient: retry after retry_after seconds / the Retry-After header; consumes nothing, like a 429).',
  504: 'query_timeout: a heavy query on a very large account took too long; ask for fewer rows.',
};

/**
 * The error responses a route can give, for its schema (and so OpenAPI). 401, 422, 429 and 503
 * (overloaded) apply everywhere; naming 503 adds upstream_offline (pnl-series).
 */
export function errorResponses(...statuses: (400 | 403 | 404 | 503 | 504)[]): Record<number, z.ZodType> {
  const out: Record<number, z.ZodType> = {};
  for (const status of [...statuses.filter((status) => status !== 503), 401, 429].sort()) {
    out[status] = errorBodySchema.meta({ description: ERROR_DESCRIPTIONS[status]! });
  }
  out[503] = statuses.includes(503)
    ? z.union([upstreamOfflineSchema, overloadedSchema]).meta({ description: `${ERROR_DESCRIPTIONS[503]!} Or upstream_offline: the upstream provider is down.` })
    : overloadedSchema.meta({ description: ERROR_DESCRIPTIONS[503]! });
  out[422] = validationErrorSchema;
  return out;
}

/** `304 Not Modified`: the If-None-Match matched the ETag of an immutable (resolved) answer. Counts one call. */
export const notModifiedSchema = z.null().meta({ description: 'Not Modified: If-None-Match matched the ETag (resolved markets are immutable). No body; counts one call.' });
