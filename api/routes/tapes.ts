/**
 * The caller's own recorded sessions (tapes): the library, one tape's metadata, its StreamEvents in
 * pages (a heavy read), and a download link to the whole tape. Every read binds the caller's account
 * inside its SQL (projections/tapes.ts): another account's tape and an unknown id are the same
 * `404 tape_not_found`. Not trader-scoped: the Limits list names the trader-scoped reads and tapes are
 * not among them, so `wallet` never counts toward Basic's distinct-wallet cap (it only narrows the
 * caller's own library).
 */
import type { RouteContext } from '../../operations/context.ts';
import type { TapeDownloads } from '../../operations/tapes.ts';
import { errorBodySchema } from '../../operations/errors.ts';
import { type ApiApp, callOf, errorResponses } from '../http.ts';
import {
  getTapeDownload,
  getTapeEvents,
  getTapeSummary,
  listTapes,
  tapeDownloadSchema,
  tapeEventsPageSchema,
  tapeEventsQuerySchema,
  tapeListQuerySchema,
  tapeListSchema,
  tapeOneSchema,
  tapeParamsSchema,
} from '../../operations/tapes.ts';
const BAD_URL = errorBodySchema.meta({
  description: 'bad_request: the request URL could not be read (percent-encode the tape id).',
});
const NOT_FOUND = errorBodySchema.meta({
  description: 'tape_not_found: the tape is unknown or not yours (the same answer either way). Counts one call.',
});
const PRIVATE =
  'Tapes are private to your account: a tape of another account and an unknown id are the same 404 tape_not_found. Not a trader-scoped read: it never counts toward the distinct-trader cap.';

export function registerTapeRoutes(app: ApiApp, context: RouteContext, downloads: TapeDownloads): void {
  const { config } = context;

  app.get(
    '/tapes',
    {
      schema: {
        operationId: 'list_tapes',
        summary: 'Your recorded sessions (tapes)',
        description: [
          `The caller's own library {tapes, count}, newest first (by started_at). wallet narrows it to one trader; limit caps it to the newest N (default all, at most ${config.tapes.list.maxLimit}). An empty library is count 0, not an error.`,
          'Each tape: market, grade (A..F), pnl_taped_usd (observed during the recording, not the career figure), outcome, started_at, ended_at, duration_s, tick_count, fill_count, size_bytes.',
          PRIVATE,
        ].join(' '),
        querystring: tapeListQuerySchema(config),
        response: { 200: tapeListSchema, ...errorResponses(400, 404) },
      },
    },
    async (request) => listTapes(context, callOf(request), request.query),
  );

  app.get(
    '/tapes/:tape_id',
    {
      schema: {
        operationId: 'get_tape_summary',
        summary: "One tape's metadata",
        description: `{tape}: the metadata of one of your recorded sessions. ${PRIVATE}`,
        params: tapeParamsSchema,
        response: { 200: tapeOneSchema, ...errorResponses(400, 404), 400: BAD_URL, 404: NOT_FOUND },
      },
    },
    async (request) => getTapeSummary(context, callOf(request), request.params),
  );

  app.get(
    '/tapes/:tape_id/events',
    {
      config: { budget: { heavy: () => true } },
      schema: {
        operationId: 'get_tape_events',
        summary: "A tape's StreamEvents, in pages",
        description: [
          `One page {tape_id, events, next_cursor} of the tape's StreamEvents {type, ts, ...payload} in replay order; pass next_cursor back as cursor until it is null. limit default ${config.tapes.events.defaultLimit}, at most ${config.tapes.events.maxLimit}.`,
          `Types: book (bid, ask: UP space), trade (price UP space, size_tokens, usd, token_side), fill (side, price UP space, token_side, outcome, size_tokens, usd), resolution (winner, level 1 or 0), session (state start or stop). Book and trade events form the price line; each fill is a marker at (ts, price) sized by usd. types filters by a comma list (e.g. fill); any other name is 400 unknown_event_type.`,
          `A heavy read: it passes the admission lane (overflow is 429 busy, retry in about a second). A tape of more than ${config.tapes.maxEvents.toLocaleString('en-US')} events is not paged: 409 tape_too_large with download, the path of the download endpoint.`,
          PRIVATE,
        ].join('\n\n'),
        params: tapeParamsSchema,
        querystring: tapeEventsQuerySchema(config),
        response: {
          200: tapeEventsPageSchema,
          ...errorResponses(400, 404),
          400: errorBodySchema.meta({
            description:
              'bad_cursor (malformed cursor), bad_limit (limit below 1), unknown_event_type (a name in types outside the vocabulary), bad_request (an unreadable URL: percent-encode the tape id). Counts one call.',
          }),
          404: NOT_FOUND,
          409: errorBodySchema.meta({
            description:
              'tape_too_large: too many events to page; download is the path of the download endpoint. Counts one call.',
          }),
        },
      },
    },
    async (request) => getTapeEvents(context, callOf(request), { tape_id: request.params.tape_id, ...request.query }),
  );

  app.get(
    '/tapes/:tape_id/download',
    {
      schema: {
        operationId: 'get_tape_download',
        summary: 'A download link to a whole tape (.jsonl.gz)',
        description: [
          `{url, expires_in}: a presigned link (valid ${config.tapes.download.expiresInSeconds} s) to the tape as a gzipped newline-delimited JSON object, one StreamEvent per line in replay order. The object is written once, on the first request, and reused.`,
          'Fetching the link needs no key and costs no call; an expired or altered link is 403. REST only (no MCP tool).',
          PRIVATE,
        ].join(' '),
        params: tapeParamsSchema,
        response: { 200: tapeDownloadSchema, ...errorResponses(400, 404), 400: BAD_URL, 404: NOT_FOUND },
      },
    },
    async (request) => getTapeDownload(context, callOf(request), downloads, request.params),
  );
}
