/**
 * Recorded sessions (tapes), the caller's own library. Every read here takes the owning account and
 * binds it inside the SQL (`account_id = {account_id:String}`, the primary-key prefix of both tables):
 * a tape of another account is never read, so it cannot be told apart from an unknown one.
 */
import { z } from 'zod';
import { STREAM_EVENT_TYPES, TAPE_GRADES } from './vocabulary.ts';
import { clampUInt32 } from './params.ts';
import type { Store } from './store.ts';

export const tapeRecordSchema = z.object({
  tape_id: z.string(),
  wallet: z
    .string()
    .meta({ description: 'The trader watched (0x wallet); the tapes list can be narrowed to one with wallet.' }),
  name: z.string().meta({ description: "The trader's display name at recording time ('' when unknown)." }),
  condition_id: z.string(),
  title: z.string(),
  grade: z.enum(TAPE_GRADES).meta({ description: 'Grade of the session, A (best) to F.' }),
  pnl_taped_usd: z.number().meta({
    description: 'Profit observed during the recording (taped, not the career figure: quote upstream.pnl for that).',
  }),
  outcome: z
    .string()
    .meta({ description: "The winning outcome's name when the market resolved during the session, else ''." }),
  started_at: z.int().meta({ description: 'Epoch seconds.' }),
  ended_at: z.int().meta({ description: 'Epoch seconds.' }),
  duration_s: z.int().meta({ description: 'ended_at − started_at.' }),
  tick_count: z.int().meta({ description: 'Book and trade events (the price line).' }),
  fill_count: z.int(),
  size_bytes: z.int().meta({
    description:
      "Bytes of the tape's events as the download's JSON lines (before gzip): what the tape takes of the library's storage.",
  }),
  partial: z.boolean().meta({
    description:
      'True while the recording runs, or when it never finished (the serving instance stopped before saving it, or part of it could not be published): the tape holds its events up to ended_at, and its figures count those. False for a tape saved whole.',
  }),
});
export type TapeRecord = z.infer<typeof tapeRecordSchema>;

const upPrice = z.number().meta({ description: 'UP space (0 to 1).' });
const eventBase = { ts: z.int().meta({ description: 'Epoch seconds.' }) };
/** A fill or print read above the chain's final block: it ends with a `final` or `retracted` event naming its ref. */
const provisionalFields = {
  provisional: z.literal(true).optional().meta({
    description:
      "Present on an event of a block above the chain's final one: a `final` or `retracted` event naming its ref follows.",
  }),
  ref: z.string().optional().meta({ description: "A provisional event's name (block:hash prefix:index)." }),
};

/** The StreamEvent vocabulary of tapes (decisions.md, Stream events and tapes). */
export const streamEventSchema = z.discriminatedUnion('type', [
  z
    .object({ type: z.literal('book'), ...eventBase, bid: upPrice.nullable(), ask: upPrice.nullable() })
    .meta({ description: 'Top of book.' }),
  z
    .object({
      type: z.literal('trade'),
      ...eventBase,
      price: upPrice,
      size_tokens: z.number(),
      usd: z.number(),
      token_side: z.union([z.literal(1), z.literal(2)]),
      ...provisionalFields,
    })
    .meta({ description: 'A market-wide trade print (last trade): with book ticks, the price line.' }),
  z
    .object({
      type: z.literal('fill'),
      ...eventBase,
      side: z.enum(['BUY', 'SELL']),
      price: upPrice,
      token_side: z.union([z.literal(1), z.literal(2)]),
      outcome: z.string(),
      size_tokens: z.number(),
      usd: z.number(),
      ...provisionalFields,
    })
    .meta({ description: "The watched trader's fill: a marker at (ts, price) sized by usd." }),
  z
    .object({
      type: z.literal('resolution'),
      ...eventBase,
      winner: z.string(),
      level: z.union([z.literal(0), z.literal(1)]),
    })
    .meta({ description: 'The market resolved: pinned at level (1 token 1 won, else 0).' }),
  z
    .object({ type: z.literal('session'), ...eventBase, state: z.enum(['start', 'stop']) })
    .meta({ description: 'The recording started or stopped.' }),
  z
    .object({ type: z.literal('final'), ...eventBase, ref: z.string() })
    .meta({ description: "The provisional event `ref` is final: its block is the chain's final one (or below)." }),
  z.object({ type: z.literal('retracted'), ...eventBase, ref: z.string() }).meta({
    description:
      'The provisional event `ref` never happened: a reorg replaced its block (its replacement comes as new events).',
  }),
]);
export type StreamEvent = z.infer<typeof streamEventSchema>;

export { STREAM_EVENT_TYPES };

const TAPE_COLUMNS = `
    tape_id, wallet, name, condition_id, title, grade, pnl_taped_usd, outcome, started_at, ended_at,
    toInt64(ended_at) - toInt64(started_at) AS duration_s, tick_count, fill_count, size_bytes, partial`;

const READ_TAPES = `
SELECT ${TAPE_COLUMNS}
FROM {db:Identifier}.tapes FINAL
WHERE account_id = {account_id:String}
  AND ({wallet:String} = '' OR wallet = {wallet:String})
ORDER BY started_at DESC, tape_id DESC
LIMIT {limit:UInt32}`;

const READ_LIBRARY_USAGE = `
SELECT count() AS tapes, sum(size_bytes) AS bytes
FROM {db:Identifier}.tapes FINAL
WHERE account_id = {account_id:String} AND tape_id NOT IN {except:Array(String)}`;

const READ_TAPE = `
SELECT ${TAPE_COLUMNS},
    (SELECT count() FROM {db:Identifier}.tape_events FINAL WHERE account_id = {account_id:String} AND tape_id = {tape_id:String}) AS events
FROM {db:Identifier}.tapes FINAL
WHERE account_id = {account_id:String} AND tape_id = {tape_id:String}`;

const READ_TAPE_EVENTS = `
SELECT seq, payload
FROM {db:Identifier}.tape_events FINAL
WHERE account_id = {account_id:String} AND tape_id = {tape_id:String}
  AND seq > {after:Int64}
  AND ({all_types:UInt8} = 1 OR type IN {types:Array(String)})
ORDER BY seq
LIMIT {limit:UInt32}`;

type TapeRow = Omit<TapeRecord, 'partial'> & { partial: boolean | number };

function toTape(row: TapeRow): TapeRecord {
  return {
    tape_id: row.tape_id,
    wallet: row.wallet,
    name: row.name,
    condition_id: row.condition_id,
    title: row.title,
    grade: row.grade,
    pnl_taped_usd: Number(row.pnl_taped_usd),
    outcome: row.outcome,
    started_at: Number(row.started_at),
    ended_at: Number(row.ended_at),
    duration_s: Number(row.duration_s),
    tick_count: Number(row.tick_count),
    fill_count: Number(row.fill_count),
    size_bytes: Number(row.size_bytes),
    partial: Boolean(row.partial),
  };
}

/** How much of the library the account's tapes take (all but `except`: recordings whose size the caller tracks itself). */
export async function readLibraryUsage(
  store: Store,
  accountId: string,
  except: readonly string[] = [],
): Promise<{ tapes: number; bytes: number }> {
  const rows = await store.query<{ tapes: number | string; bytes: number | string }>(READ_LIBRARY_USAGE, {
    account_id: accountId,
    except,
  });
  return { tapes: Number(rows[0]?.tapes ?? 0), bytes: Number(rows[0]?.bytes ?? 0) };
}

/** The account's tapes, newest first (by start), optionally one trader's, at most `limit`. */
export async function readTapes(
  store: Store,
  accountId: string,
  options: { wallet?: string | undefined; limit: number },
): Promise<TapeRecord[]> {
  const rows = await store.query<TapeRow>(READ_TAPES, {
    account_id: accountId,
    wallet: options.wallet ?? '',
    limit: clampUInt32(options.limit),
  });
  return rows.map(toTape);
}

/** One tape of the account with the number of its events, or null (unknown, or another account's). */
export async function readTape(
  store: Store,
  accountId: string,
  tapeId: string,
): Promise<{ tape: TapeRecord; events: number } | null> {
  const rows = await store.query<TapeRow & { events: number }>(READ_TAPE, { account_id: accountId, tape_id: tapeId });
  const row = rows[0];
  return row ? { tape: toTape(row), events: Number(row.events) } : null;
}

export interface TapeEventsPage {
  events: StreamEvent[];
  /** The last seq of a full page (more may follow); null at the end. */
  next: number | null;
}

/** One page of a tape's events in replay order, after position `after` (-1: from the start), optionally of some types only. */
export async function readTapeEvents(
  store: Store,
  accountId: string,
  tapeId: string,
  options: { after: number; limit: number; types?: readonly string[] | undefined },
): Promise<TapeEventsPage> {
  const rows = await store.query<{ seq: number | string; payload: string }>(READ_TAPE_EVENTS, {
    account_id: accountId,
    tape_id: tapeId,
    after: options.after,
    all_types: options.types ? 0 : 1,
    types: options.types ?? [],
    limit: clampUInt32(options.limit + 1),
  });
  const page = rows.slice(0, options.limit);
  return {
    events: page.map((row) => JSON.parse(row.payload) as StreamEvent),
    next: rows.length > options.limit ? Number(page.at(-1)!.seq) : null,
  };
}

/** Every event of a tape as its JSON line (the download object), in replay order. */
export async function* readTapeEventLines(
  store: Store,
  accountId: string,
  tapeId: string,
  chunk = 50_000,
): AsyncGenerator<string> {
  let after = -1;
  for (;;) {
    const rows = await store.query<{ seq: number | string; payload: string }>(READ_TAPE_EVENTS, {
      account_id: accountId,
      tape_id: tapeId,
      after,
      all_types: 1,
      types: [],
      limit: chunk,
    });
    for (const row of rows) yield row.payload;
    if (rows.length < chunk) return;
    after = Number(rows.at(-1)!.seq);
  }
}
