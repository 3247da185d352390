/**
 * Every message of the live plane (docs/live.md), in both directions: one zod schema each, JSON text
 * frames. The client sends commands; the server answers each with an `ack` or an `error` (echoing the
 * command's `id` when it had one) and streams `event`s: the tapes' StreamEvent vocabulary
 * (decisions.md, Stream events and tapes) with the market and wallet they belong to, and a sequence
 * number per subscription (1, 2, 3… without gaps: a gap is a lost event).
 */
import { z } from 'zod';
import { popularTraderSchema } from '../../projections/popular.ts';
import { streamEventSchema } from '../../projections/tapes.ts';
import { REF_PATTERN } from './resume.ts';

const commandId = z
  .string()
  .max(64)
  .optional()
  .meta({ description: "The client's own id for this command, echoed in its ack or error." });
const traderArgument = z.string().min(1).max(1000).meta({
  description: 'A 0x wallet, a profile URL of the upstream provider, or a display name (as {trader} in REST).',
});
const marketArgument = z.string().min(1).max(200).meta({ description: 'The condition_id: 0x + 64 hex.' });

/** Refs one connection may wait on at once (resume): a client holds a few blocks' events open at most. */
export const RESUMED_AT_MOST = 1000;

/** Client → server. */
export const clientMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('watch'), id: commandId, trader: traderArgument, market: marketArgument }).meta({
    description:
      "Watch a trader in a market (holds one live slot): the market's book and trades, the trader's fills there, the resolution, session start/stop.",
  }),
  z
    .object({ type: z.literal('unwatch'), id: commandId, trader: traderArgument, market: marketArgument })
    .meta({ description: 'End a watch; its slot is free again.' }),
  z
    .object({ type: z.literal('follow'), id: commandId, trader: traderArgument })
    .meta({ description: "Follow a trader's fills in every market (no slot)." }),
  z.object({ type: z.literal('unfollow'), id: commandId, trader: traderArgument }),
  z
    .object({ type: z.literal('popular'), id: commandId })
    .meta({ description: 'The popular shelf now, and again every heartbeat while connected (no slot).' }),
  z.object({ type: z.literal('unpopular'), id: commandId }),
  z
    .object({
      type: z.literal('resume'),
      id: commandId,
      refs: z
        .array(z.string().regex(REF_PATTERN))
        .min(1)
        .max(RESUMED_AT_MOST)
        .meta({ description: 'Refs of provisional events a previous connection was sent and not told the end of.' }),
    })
    .meta({
      description:
        'After a reconnect (the plane restarted, or the connection dropped): each ref is answered once with resolved, final or retracted, now or when its block ends.',
    }),
  z.object({ type: z.literal('ping'), id: commandId }).meta({ description: 'Answered with pong.' }),
]);
export type ClientMessage = z.infer<typeof clientMessageSchema>;

/** Error codes of the plane: the contract's where one applies, the plane's own otherwise (docs/live.md). */
const LIVE_ERROR_CODES = [
  // The contract's.
  'unauthorized',
  'insufficient_scope',
  'too_many_auth_failures',
  'invalid_wallet',
  'invalid_condition_id',
  'trader_not_found',
  'internal',
  // The plane's own.
  'bad_message',
  'unknown_market',
  'no_free_slot',
  'not_subscribed',
  'too_many_subscriptions',
  'too_many_connections',
  'too_slow',
  'no_pong',
  'shutting_down',
  'rate_limited',
  'lookup_limit',
  'overloaded',
  'plan_changed',
  'too_many_refs',
] as const;
export type LiveErrorCode = (typeof LIVE_ERROR_CODES)[number];

const traderSchema = z.object({ wallet: z.string(), name: z.string() });

/** Why a watch is not recorded, or stopped being recorded (docs/live.md, Recordings). */
const RECORDING_REFUSALS = ['plan', 'library_full', 'unavailable'] as const;

const recordingStateSchema = z
  .discriminatedUnion('state', [
    z.object({
      state: z.literal('on'),
      tape_id: z.string().meta({ description: 'The tape this watch is saved as (GET /tapes/{tape_id}).' }),
    }),
    z.object({
      state: z.literal('off'),
      reason: z.enum(RECORDING_REFUSALS).meta({
        description:
          "plan: the plan does not record (Basic); library_full: the library's storage is used up (limits.library_bytes in GET /me); unavailable: this server records nothing.",
      }),
      message: z.string().meta({ description: 'Written to be relayed to a human.' }),
    }),
  ])
  .meta({ description: "Whether the watch is recorded into the caller's library." });

/** Server → client. */
export const serverMessageSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('ready'),
      protocol: z.string(),
      plan: z.string(),
      live_slots: z.int().meta({ description: "The plan's live slots (as GET /me limits.live_slots)." }),
      slots_in_use: z.int().meta({ description: "The user's slots held now, on every connection and key." }),
      heartbeat_s: z
        .number()
        .meta({ description: 'The server pings this often (seconds); a silent connection is closed.' }),
    })
    .meta({ description: 'Sent once, when the connection is authenticated.' }),
  z
    .object({
      type: z.literal('ack'),
      id: commandId,
      of: z.enum(['watch', 'unwatch', 'follow', 'unfollow', 'popular', 'unpopular', 'resume']),
      trader: traderSchema.optional(),
      market: z.string().optional(),
      slots_in_use: z.int(),
      recording: recordingStateSchema.optional().meta({ description: 'On the ack of a new watch.' }),
    })
    .meta({ description: 'The command took effect.' }),
  z
    .object({
      type: z.literal('ended'),
      market: z.string(),
      wallet: z.string(),
      reason: z.enum(['resolved', 'max_duration']).meta({
        description:
          'resolved: the market resolved (after its resolution event); max_duration: the watch reached its longest.',
      }),
      tape_id: z.string().optional().meta({ description: 'The tape the watch was saved as, when it was recorded.' }),
      slots_in_use: z.int(),
    })
    .meta({ description: 'The server ended a watch (a session stop event came first); its slot is free.' }),
  z
    .object({
      type: z.literal('recording'),
      market: z.string(),
      wallet: z.string(),
      tape_id: z.string(),
      state: z.literal('stopped'),
      reason: z.enum(['library_full', 'unavailable']).meta({
        description:
          "library_full: the next event would pass the plan's library; unavailable: the server's log is not taking recordings as fast as they come.",
      }),
      through_seq: z.int().min(0).meta({
        description: "The tape holds the watch's events up to this seq; the watch goes on, unrecorded.",
      }),
      message: z.string(),
    })
    .meta({ description: "A watch's recording stopped before its watch ended." }),
  z
    .object({
      type: z.literal('event'),
      market: z.string(),
      wallet: z.string().meta({ description: 'The trader of the subscription (watched or followed).' }),
      seq: z.int().min(1).meta({ description: 'Per subscription, from 1 without gaps.' }),
      event: streamEventSchema,
    })
    .meta({ description: 'A StreamEvent of a subscription.' }),
  z
    .object({
      type: z.literal('resolved'),
      ref: z.string(),
      state: z.enum(['final', 'retracted']).meta({
        description: 'final: the event stands as sent; retracted: a reorg dropped its block, it never happened.',
      }),
      ts: z.int(),
    })
    .meta({ description: 'The end of a provisional event a resume named (once per ref).' }),
  z.object({ type: z.literal('popular'), traders: z.array(popularTraderSchema), count: z.int().min(0) }),
  z.object({ type: z.literal('pong'), id: commandId, ts: z.int() }),
  z
    .object({
      type: z.literal('error'),
      id: commandId,
      code: z.enum(LIVE_ERROR_CODES),
      message: z.string().meta({ description: 'Written to be relayed to a human.' }),
      retry_after: z.number().optional().meta({
        description: 'rate_limited, lookup_limit, overloaded: seconds until the command may succeed.',
      }),
      lookups_per_hour: z
        .int()
        .optional()
        .meta({ description: "lookup_limit: the plan's store lookups an hour (docs/live.md, Bounds)." }),
      slots_in_use: z.int().optional().meta({ description: "no_free_slot: the user's slots held now." }),
      live_slots: z.int().optional().meta({ description: "no_free_slot: the plan's live slots." }),
    })
    .catchall(z.unknown())
    .meta({ description: 'A command refused, or the reason the connection is about to close.' }),
]);
export type ServerMessage = z.infer<typeof serverMessageSchema>;
type LiveEventMessage = Extract<ServerMessage, { type: 'event' }>;
export type StreamEvent = LiveEventMessage['event'];

/** Close codes (RFC 6455 §7.4.2: 4000–4999 are the application's); the close reason is the error code. */
export const CLOSE_CODES = {
  /** The server stops (a restart or a deploy): connect again. */
  shuttingDown: 1001,
  internal: 1011,
  unauthorized: 4401,
  insufficientScope: 4403,
  /** too_many_auth_failures, too_many_connections, or rate_limited (commands kept coming past the rate): the reason says which. */
  tooMany: 4429,
  /** The user's plan changed (or the key now names another account): connect again to run on the new plan. */
  planChanged: 4409,
  /** More commands before `ready` than the server keeps (RFC 6455: policy violation). */
  policy: 1008,
  /** The client did not read what it was sent fast enough: more than the bound waited unsent. */
  tooSlow: 4408,
  /** No pong to the last ping (no_pong). */
  silent: 4000,
} as const;

/** One frame's text as a command, or why it is not one (answered as bad_message). */
export function parseClientMessage(
  text: string,
): { ok: true; message: ClientMessage } | { ok: false; reason: string; id?: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'the message is not JSON' };
  }
  const parsed = clientMessageSchema.safeParse(json);
  if (parsed.success) return { ok: true, message: parsed.data };
  const id =
    typeof json === 'object' && json !== null && typeof (json as { id?: unknown }).id === 'string'
      ? (json as { id: string }).id.slice(0, 64)
      : undefined;
  const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'message'}: ${issue.message}`);
  return { ok: false, reason: issues.join('; '), ...(id === undefined ? {} : { id }) };
}
