/**
 * The error model: one `ApiError(status, code, message, extra)` family, and one mapping of any failure
 * to it (`toApiError`), used by the REST error handler and by MCP tool calls alike; the contract's body
 * is `{error, message, ...extra}`. Validation errors of parameter types are the exception: on REST they
 * answer 422 with `{detail: [{loc, msg, type, input?, ctx?}]}`.
 */
import { z } from 'zod';
import type { PlanLimits } from '../config.ts';
import type { Logger } from '../log.ts';
import { QueryTimeoutError } from '../projections/store.ts';
import { ResponseSchemaError } from './response-schema.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  body(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.extra };
  }
}

export const errors = {
  unauthorized: (message = 'A valid API key is required: send it as "Authorization: Bearer <API_KEY>".') =>
    new ApiError(401, 'unauthorized', message, {}, { 'WWW-Authenticate': 'Bearer realm="agent-api"' }),
  invalidWallet: (input: string) =>
    new ApiError(
      400,
      'invalid_wallet',
      `"${truncate(input)}" starts with 0x but is not a wallet: a wallet is 0x followed by exactly 40 hex characters.`,
    ),
  invalidConditionId: (input: string) =>
    new ApiError(
      400,
      'invalid_condition_id',
      `"${truncate(input)}" is not a market id: a condition_id is 0x followed by exactly 64 hex characters.`,
    ),
  traderNotFound: (name: string) =>
    new ApiError(
      404,
      'trader_not_found',
      `No trader is known by the name "${truncate(name)}". Try the 0x wallet or the profile URL.`,
    ),
  marketNotFound: (conditionId: string) =>
    new ApiError(
      404,
      'market_not_found',
      `Market ${conditionId} is unknown, or this trader never traded it. Market ids come from the markets list or top-markets.`,
    ),
  badCursor: () =>
    new ApiError(
      400,
      'bad_cursor',
      'The cursor is malformed or belongs to another endpoint. Start again without a cursor.',
    ),
  badLimit: () => new ApiError(400, 'bad_limit', 'limit must be at least 1.'),
  upstreamOffline: (
    message = 'The upstream provider is offline, so its profit curve is unavailable right now. Try again later; the trader card still serves the archive figures.',
  ) =>
    new ApiError(503, 'upstream_offline', message, {
      status: 'upstream_offline',
    }),
  queryTimeout: () =>
    new ApiError(
      504,
      'query_timeout',
      'The query took too long (this account has very many markets). Ask for fewer rows (a smaller n or limit) and try again.',
    ),
  /** Transient: the token bucket or the rolling minute is spent. */
  rateLimited: (limits: PlanLimits, retryAfterSeconds: number) =>
    new ApiError(
      429,
      'rate_limited',
      `Too many requests: ${limits.name} allows ${limits.burst} at once, then ${limits.rps} per second, and at most ${limits.rpm} in any 60 seconds. Retry in ${retryAfterSeconds} s.`,
      { retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    ),
  /** Transient: the admission lane of heavy reads is full (never queued). */
  busy: (limits: PlanLimits, retryAfterSeconds: number) =>
    new ApiError(
      429,
      'busy',
      `Too many heavy reads (raw ticks, tapes) are in flight (${limits.name} allows ${limits.heavyReadsInFlight} at once per account). Retry in about ${retryAfterSeconds} second.`,
      { retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    ),
  /**
   * Transient: this instance cannot start the call's store work within its queue's bounds (load
   * shedding, after the plan's gates). Consumes nothing, like a 429 (what the gates consumed is given
   * back); a heavy read gets `busy` instead.
   */
  overloaded: (retryAfterSeconds: number) =>
    new ApiError(
      503,
      'overloaded',
      `The service is at capacity right now and did not start this call (it was not counted against your quota). Retry in about ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}.`,
      { retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    ),
  /** Paywall: the Basic daily call quota is spent. */
  dailyLimit: (limits: PlanLimits, next: PlanLimits | null, retryAfterSeconds: number) =>
    new ApiError(
      429,
      'daily_limit',
      `${limits.name} allows ${count(limits.dailyRequests)} calls per UTC day and today's are spent; they reset at midnight UTC (in ${retryAfterSeconds} s). ${allowanceOf(next)}`,
      { retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    ),
  /** Paywall: the Pro or Max monthly call quota is spent. */
  monthlyLimit: (limits: PlanLimits, next: PlanLimits | null, retryAfterSeconds: number) =>
    new ApiError(
      429,
      'monthly_limit',
      `${limits.name} allows ${count(limits.monthlyRequests)} calls per month and this month's are spent; they reset at the start of next month, UTC (in ${retryAfterSeconds} s). ${allowanceOf(next)}`,
      { retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    ),
  /** Plan wall: a fourth new distinct trader in a UTC day (Basic). Counts one call; no retry_after. */
  walletQuota: (limits: PlanLimits, next: PlanLimits | null, used: number, resetsAt: string) =>
    new ApiError(
      403,
      'wallet_quota',
      `${limits.name} reads ${limits.distinctWalletsPerDay} distinct traders per UTC day and today's are used (repeat reads of them stay free). ${
        next
          ? `Upgrade to ${next.name} for ${next.distinctWalletsPerDay < 0 ? 'unlimited' : next.distinctWalletsPerDay} trader lookups, or wait`
          : 'Wait'
      } for the reset at midnight UTC (${resetsAt}).`,
      { used, limit: limits.distinctWalletsPerDay, resets_at: resetsAt },
    ),
  /** Plan wall: a market outside the trader's most recent ones (Basic). Counts one call; do not retry. */
  depthGated: (limits: PlanLimits, next: PlanLimits | null) =>
    new ApiError(
      403,
      'depth_gated',
      `${limits.name} reaches a trader's ${limits.historyDepth} most recent markets, and this market is older.${
        next
          ? ` Upgrade to ${next.name} for ${next.historyDepth < 0 ? 'the full history' : `the ${next.historyDepth} most recent`}.`
          : ''
      }`,
    ),
  /** Credential matter: too many failed authentications from this address. */
  tooManyAuthFailures: (retryAfterSeconds: number) =>
    new ApiError(
      429,
      'too_many_auth_failures',
      `Too many failed authentications from this address: it is blocked for ${retryAfterSeconds} s more. Fix the API key (Authorization: Bearer <API_KEY>), then wait out the block.`,
      { retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    ),
  /** A failure on our side (5xx): the body is opaque, the cause is logged. */
  internal: () =>
    new ApiError(500, 'internal', 'Something went wrong on our side. Try again; if it persists, report it.'),
  notFound: (path: string) =>
    new ApiError(404, 'not_found', `There is no endpoint ${truncate(path)}. See /api/agent/v1/openapi.json.`),
};

/**
 * Any failure of a call as the contract's error: an ApiError as it is, a store timeout as
 * `504 query_timeout`, anything else as an opaque `500 internal` whose cause is logged (never sent).
 * `where` names the call in the log (`{url}` on REST, `{tool}` on MCP).
 */
export function toApiError(
  failure: unknown,
  log: Pick<Logger, 'warn' | 'error'>,
  where: Record<string, unknown>,
): ApiError {
  if (failure instanceof ApiError) {
    // A shed call is the limiter working, by the thousand under overload: the request metrics count it by
    // status; a line each would spend the event loop the overload is short of.
    if (failure.status >= 500 && failure.code !== 'overloaded')
      log.warn({ code: failure.code, ...where }, failure.message);
    return failure;
  }
  if (failure instanceof QueryTimeoutError) {
    log.warn({ ...where, timeoutSeconds: failure.timeoutSeconds }, 'query timeout');
    return errors.queryTimeout();
  }
  if (failure instanceof ResponseSchemaError) {
    // Our bug, not the caller's: the opaque 500, and the route (or tool) with each offending path and value in the log.
    log.error(
      { route: failure.route, ...where, mismatches: failure.mismatches },
      'the answer does not match its response schema',
    );
    return errors.internal();
  }
  log.error({ err: failure, ...where }, 'call failed');
  return errors.internal();
}

function count(value: number): string {
  return value.toLocaleString('en-US');
}

function allowanceOf(next: PlanLimits | null): string {
  if (!next) return 'This is the largest plan; the allowance returns at the reset.';
  return next.dailyRequests > 0
    ? `${next.name} allows ${count(next.dailyRequests)} calls per day.`
    : `${next.name} allows ${count(next.monthlyRequests)} calls per month.`;
}

function truncate(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Every `{error, message}` body; extra fields vary by code. */
export const errorBodySchema = z
  .object({
    error: z.string().meta({ description: 'Machine-readable error code.' }),
    message: z.string().meta({ description: 'Written to be relayed to a human.' }),
  })
  .catchall(z.unknown())
  .meta({ description: 'Error body: a code and a message; some codes carry extra fields.' });

export const validationErrorSchema = z
  .object({
    detail: z.array(
      z.object({
        loc: z
          .array(z.union([z.string(), z.int()]))
          .meta({ description: 'Where the invalid value is, e.g. ["query", "limit"].' }),
        msg: z.string(),
        type: z.string(),
        input: z.unknown().optional(),
        ctx: z.record(z.string(), z.unknown()).optional(),
      }),
    ),
  })
  .meta({ description: 'A parameter has the wrong type or value.' });

export const overloadedSchema = z
  .object({
    error: z.literal('overloaded'),
    message: z.string(),
    retry_after: z.number().meta({ description: 'Seconds to wait before retrying (also the Retry-After header).' }),
  })
  .meta({ description: 'The instance is at capacity; the call was not started and consumed nothing.' });

export const upstreamOfflineSchema = z
  .object({
    error: z.literal('upstream_offline'),
    status: z.literal('upstream_offline'),
    message: z.string(),
  })
  .meta({ description: 'The upstream provider is offline.' });
