/**
 * Request helpers shared by the routes: the caching rules (resolved → immutable with a strong ETag; open →
 * briefly cached), the error responses of a route's schema, and the call of a metered request. Query
 * parameter types, shared with the MCP tools, are in operations/parameters.ts.
 */
import { createHash } from 'node:crypto';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { Call } from '../operations/context.ts';
import {
  errorBodySchema,
  overloadedSchema,
  upstreamOfflineSchema,
  validationErrorSchema,
} from '../operations/errors.ts';

/** The Fastify instance the routes are declared on (zod request and response schemas). */
export type ApiApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** The call of a metered REST request (after the v1 hook authenticated and admitted it). */
export function callOf(request: FastifyRequest): Call {
  if (!request.caller || !request.admitted)
    throw new Error('operation outside an admitted call (a free route cannot run an operation)');
  return { caller: request.caller, admitted: request.admitted };
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

/**
 * An answer as of a past instant (`as_of`) never changes: immutable with a strong ETag, 304 on a match.
 * Today's answer (no `as_of`) is sent as it is.
 */
export function replyAsOf<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  body: T,
  asOf: number | undefined,
  config: Config,
): T | FastifyReply {
  if (asOf !== undefined && applyMarketCaching(request, reply, body, true, config) === 'not-modified')
    return reply.code(304).send(null);
  return body;
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
  403: "Plan walls (do not retry; relay the message): depth_gated (market outside a Basic caller's history depth: the trader's most recent markets, as GET /me history_depth counts them), wallet_quota (fourth new distinct wallet in a UTC day on Basic; carries used, limit, resets_at). Counts one call.",
  404: 'trader_not_found (unknown display name) or market_not_found (unknown market, or one this trader never traded). Counts one call.',
  429: 'rate_limited or busy (transient: wait retry_after seconds / the Retry-After header), daily_limit or monthly_limit (quota spent: relay and stop), too_many_auth_failures. A 429 consumes nothing.',
  503: "overloaded: this instance is at capacity and did not start the call (decided after the plan's gates, only for a call that needs the store; transient: retry after retry_after seconds / the Retry-After header; consumes nothing, like a 429).",
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
    ? z
        .union([upstreamOfflineSchema, overloadedSchema])
        .meta({ description: `${ERROR_DESCRIPTIONS[503]!} Or upstream_offline: the upstream provider is down.` })
    : overloadedSchema.meta({ description: ERROR_DESCRIPTIONS[503]! });
  out[422] = validationErrorSchema;
  return out;
}

/** `304 Not Modified`: the If-None-Match matched the ETag of an immutable (resolved) answer. Counts one call. */
export const notModifiedSchema = z.null().meta({
  description:
    'Not Modified: If-None-Match matched the ETag (resolved markets are immutable). No body; counts one call.',
});
