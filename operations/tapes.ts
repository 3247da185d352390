/**
 * Operations over the caller's own recorded sessions (tapes): the library, one tape's metadata, its
 * StreamEvents in pages (a heavy read), and a download link to the whole tape (REST only). Every read
 * binds the caller's account inside its SQL (projections/tapes.ts): another account's tape and an
 * unknown id are the same `404 tape_not_found`.
 */
import { z } from 'zod';
import type { Config } from '../config.ts';
import {
  readTape,
  readTapeEventLines,
  readTapeEvents,
  readTapes,
  STREAM_EVENT_TYPES,
  streamEventSchema,
  tapeRecordSchema,
  type TapeRecord,
} from '../projections/tapes.ts';
import type { Call, RouteContext } from './context.ts';
import { ApiError } from './errors.ts';
import { UINT32_MAX } from '../projections/params.ts';
import { pageLimit, queryCursor, queryInt } from './parameters.ts';

const tapeErrors = {
  tapeNotFound: (tapeId: string) =>
    new ApiError(
      404,
      'tape_not_found',
      `No tape "${tapeId.length > 80 ? `${tapeId.slice(0, 80)}…` : tapeId}" in your library. Tape ids come from GET /tapes (list_tapes).`,
    ),
  unknownEventType: (names: string[]) =>
    new ApiError(
      400,
      'unknown_event_type',
      `Unknown event type ${names.map((name) => `"${name.slice(0, 40)}"`).join(', ')} in types: the types are ${STREAM_EVENT_TYPES.join(', ')} (a comma list).`,
    ),
  tapeTooLarge: (config: Config, tapeId: string, events: number) =>
    new ApiError(
      409,
      'tape_too_large',
      `This tape holds ${events.toLocaleString('en-US')} events, more than the ${config.tapes.maxEvents.toLocaleString('en-US')} that are paged. Download it whole instead (GET ${downloadPath(config, tapeId)}: a .jsonl.gz link).`,
      { download: downloadPath(config, tapeId) },
    ),
};

const downloadPath = (config: Config, tapeId: string) => `${config.api.prefix}/tapes/${tapeId}/download`;

export const tapeListSchema = z.object({
  tapes: z.array(tapeRecordSchema).meta({ description: 'Newest first (by started_at).' }),
  count: z.int().meta({ description: 'Number of tapes returned; 0 for an empty library (not an error).' }),
});
export const tapeOneSchema = z.object({ tape: tapeRecordSchema });
export const tapeEventsPageSchema = z.object({
  tape_id: z.string(),
  events: z.array(streamEventSchema).meta({ description: 'StreamEvents {type, ts, ...payload} in replay order.' }),
  next_cursor: z.string().nullable().meta({ description: 'Pass back as cursor for the next page; null at the end.' }),
});
export const tapeDownloadSchema = z.object({
  url: z.string().meta({
    description:
      'Presigned link to the tape as a .jsonl.gz object (one StreamEvent JSON per line, in order). Fetching it needs no key and costs no call.',
  }),
  expires_in: z.int().meta({ description: 'Seconds the link stays valid.' }),
});

export const tapeParamsSchema = z.object({
  tape_id: z.string().max(1000).meta({ description: 'A tape id from the tapes list.' }),
});

/** Query of /tapes (REST); list_tapes (MCP) takes `wallet` only. */
export const tapeListQuerySchema = (config: Config) =>
  z.object({
    wallet: z.string().max(1000).optional().meta({
      description:
        'Narrows to the tapes of one trader (0x wallet, profile URL or display name). Not a trader lookup: it never counts toward the distinct-trader cap.',
    }),
    limit: queryInt(
      `Caps the list to the newest N: at least 1 (0 is 400 bad_limit); default all; values above ${config.tapes.list.maxLimit} are clamped to it.`,
      { minimum: 1 },
    ).optional(),
  });

export const tapeWalletQuerySchema = (config: Config) => tapeListQuerySchema(config).pick({ wallet: true });

/** Query of tape events (REST) and the parameters of get_tape_events (MCP) beside `tape_id`. */
export const tapeEventsQuerySchema = (config: Config) =>
  z.object({
    cursor: queryCursor,
    types: z
      .string()
      .max(1000)
      .optional()
      .meta({
        description: `Comma list of event types to keep (${STREAM_EVENT_TYPES.join(', ')}), e.g. fill; default all. Any other name is 400 unknown_event_type.`,
      }),
    limit: queryInt(
      `Caps one page of events: at least 1 (0 is 400 bad_limit), default ${config.tapes.events.defaultLimit}, values above ${config.tapes.events.maxLimit} are clamped to it.`,
      { minimum: 1, default: config.tapes.events.defaultLimit },
    ).optional(),
  });

const eventCursor = (context: RouteContext) =>
  context.cursors.codec<number, [number]>(
    'tape-events',
    (seq) => [seq],
    z.tuple([z.int().min(0)]),
    ([seq]) => seq,
  );

/** The `types` filter: undefined for all; `400 unknown_event_type` for a name outside the vocabulary. */
function parseEventTypes(types: string | undefined): string[] | undefined {
  if (types === undefined) return undefined;
  const names = [
    ...new Set(
      types
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    ),
  ];
  if (names.length === 0) return undefined;
  const unknown = names.filter((name) => !(STREAM_EVENT_TYPES as readonly string[]).includes(name));
  if (unknown.length > 0) throw tapeErrors.unknownEventType(unknown);
  return names;
}

async function loadTape(
  context: RouteContext,
  call: Call,
  tapeId: string,
): Promise<{ tape: TapeRecord; events: number }> {
  const found = await readTape(context.store, call.caller.accountId, tapeId);
  if (!found) throw tapeErrors.tapeNotFound(tapeId);
  return found;
}

/** list_tapes: the caller's library, newest first, optionally one trader's. */
export async function listTapes(
  context: RouteContext,
  call: Call,
  query: { wallet?: string | undefined; limit?: number | undefined },
): Promise<z.infer<typeof tapeListSchema>> {
  const limit =
    query.limit === undefined
      ? UINT32_MAX
      : pageLimit(query.limit, {
          defaultLimit: context.config.tapes.list.maxLimit,
          maxLimit: context.config.tapes.list.maxLimit,
        });
  const wallet =
    query.wallet === undefined || query.wallet.trim() === ''
      ? undefined
      : (await context.resolveTrader(query.wallet)).wallet;
  const tapes = await readTapes(context.store, call.caller.accountId, { wallet, limit });
  return { tapes, count: tapes.length };
}

/** get_tape_summary: one tape's metadata. */
export async function getTapeSummary(
  context: RouteContext,
  call: Call,
  input: { tape_id: string },
): Promise<z.infer<typeof tapeOneSchema>> {
  return { tape: (await loadTape(context, call, input.tape_id)).tape };
}

/** get_tape_events: one page of a tape's StreamEvents (a heavy read); oversized tapes are 409 tape_too_large. */
export async function getTapeEvents(
  context: RouteContext,
  call: Call,
  input: { tape_id: string } & z.infer<ReturnType<typeof tapeEventsQuerySchema>>,
): Promise<z.infer<typeof tapeEventsPageSchema>> {
  const limit = pageLimit(input.limit, context.config.tapes.events);
  const types = parseEventTypes(input.types);
  const cursor = eventCursor(context);
  const after = cursor.decode(input.cursor, input.tape_id);
  const { events } = await loadTape(context, call, input.tape_id);
  if (events > context.config.tapes.maxEvents) throw tapeErrors.tapeTooLarge(context.config, input.tape_id, events);
  const page = await readTapeEvents(context.store, call.caller.accountId, input.tape_id, {
    after: after ?? -1,
    limit,
    types,
  });
  return {
    tape_id: input.tape_id,
    events: page.events,
    next_cursor: page.next === null ? null : cursor.encode(input.tape_id, page.next),
  };
}

/** A tape's download object, as the link's writer needs it (the REST app provides the writer: api/downloads.ts). */
export interface TapeObject {
  accountId: string;
  tapeId: string;
  /** The tape's events as JSON lines, in replay order (read only when the object does not exist yet). */
  lines: () => AsyncIterable<string>;
}

export interface TapeDownloads {
  readonly kind: 'local' | 's3';
  /** A link to the tape's object (written first when missing), valid for the configured time from `nowSeconds`. */
  link(object: TapeObject, nowSeconds: number): Promise<string>;
}

/** The download link of a tape (REST only). */
export async function getTapeDownload(
  context: RouteContext,
  call: Call,
  downloads: TapeDownloads,
  input: { tape_id: string },
): Promise<z.infer<typeof tapeDownloadSchema>> {
  const { accountId } = call.caller;
  const { tape } = await loadTape(context, call, input.tape_id);
  const url = await downloads.link(
    { accountId, tapeId: tape.tape_id, lines: () => readTapeEventLines(context.store, accountId, tape.tape_id) },
    context.now(),
  );
  return { url, expires_in: context.config.tapes.download.expiresInSeconds };
}
