/**
 * Polymarket's CLOB market channel on the wire (../shared/data/polymarket/http/clob-ws/PROTOCOL.md has
 * each fact with its citation): what the client sends (subscribe, dynamic subscribe and unsubscribe, the
 * text `PING`) and how a received text frame reads — a bare `PONG`, one JSON message, or a JSON array of
 * them; every number a string (prices, sizes, millisecond timestamps). Unknown fields are stripped and
 * unknown message kinds are ignored (the venue adds them); a known kind that does not match its schema is
 * rejected with its reason, never thrown.
 */
import { z } from 'zod';
import { describeZodError } from '../../decode.ts';

/** The heartbeat: a text frame (not a protocol ping), answered with the text `PONG`. */
export const PING = 'PING';
const PONG = 'PONG';

/** A decimal carried as a string; an empty string is an absent value (the venue's encoding of "none"). */
const decimal = z
  .string()
  .regex(/^[0-9]+(\.[0-9]+)?$/, 'a decimal string')
  .transform(Number);
const optionalDecimal = z
  .union([z.literal(''), decimal])
  .nullish()
  .transform((value) => (value === '' || value === undefined || value === null ? null : value));
const millis = z
  .string()
  .regex(/^[0-9]{10,16}$/, 'epoch milliseconds as a string')
  .transform(Number);
const tokenId = z.string().regex(/^[0-9]{1,78}$/, 'a decimal token id');
const level = z.object({ price: decimal, size: decimal });

const bookMessage = z.object({
  event_type: z.literal('book'),
  market: z.string(),
  asset_id: tokenId,
  timestamp: millis,
  hash: z.string().optional(),
  /** Order not relied on: real books list the best level last, the docs' example first. */
  bids: z.array(level),
  asks: z.array(level),
});

const priceChangeEntry = z.object({
  asset_id: tokenId,
  price: decimal,
  /** The level's new aggregate size; 0 removes it. */
  size: decimal,
  side: z.enum(['BUY', 'SELL']),
  hash: z.string().optional(),
  best_bid: optionalDecimal,
  best_ask: optionalDecimal,
});

const priceChangeMessage = z.object({
  event_type: z.literal('price_change'),
  market: z.string(),
  timestamp: millis,
  price_changes: z.array(priceChangeEntry),
});

const lastTradeMessage = z.object({
  event_type: z.literal('last_trade_price'),
  market: z.string(),
  asset_id: tokenId,
  price: decimal,
  size: decimal,
  side: z.enum(['BUY', 'SELL']),
  timestamp: millis,
  transaction_hash: z.string().optional(),
});

const newMarketMessage = z.object({
  event_type: z.literal('new_market'),
  market: z.string(),
  question: z.string().nullish(),
  slug: z.string().nullish(),
  assets_ids: z.array(tokenId).length(2),
  outcomes: z.array(z.string()).nullish(),
  timestamp: millis,
});

const marketResolvedMessage = z.object({
  event_type: z.literal('market_resolved'),
  market: z.string(),
  assets_ids: z.array(tokenId).nullish(),
  winning_asset_id: tokenId,
  timestamp: millis,
});

const SCHEMAS = {
  book: bookMessage,
  price_change: priceChangeMessage,
  last_trade_price: lastTradeMessage,
  new_market: newMarketMessage,
  market_resolved: marketResolvedMessage,
} as const;

export type BookMessage = z.infer<typeof bookMessage>;
export type PriceChangeMessage = z.infer<typeof priceChangeMessage>;
export type PriceChangeEntry = z.infer<typeof priceChangeEntry>;
export type LastTradeMessage = z.infer<typeof lastTradeMessage>;
export type NewMarketMessage = z.infer<typeof newMarketMessage>;
export type MarketResolvedMessage = z.infer<typeof marketResolvedMessage>;
export type ClobMessage = z.infer<(typeof SCHEMAS)[keyof typeof SCHEMAS]>;

/** A message (or a whole frame) that could not be read: its text and why. */
interface RejectedMessage {
  raw: string;
  reason: string;
}

export interface DecodedFrame {
  pong: boolean;
  messages: ClobMessage[];
  rejected: RejectedMessage[];
  /** Messages of kinds the source does not use (tick_size_change, best_bid_ask, new kinds). */
  ignored: number;
}

/** Reads one received text frame. */
export function decodeFrame(text: string): DecodedFrame {
  const frame: DecodedFrame = { pong: false, messages: [], rejected: [], ignored: 0 };
  if (text.trim() === PONG) {
    frame.pong = true;
    return frame;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    frame.rejected.push({ raw: text, reason: 'not JSON (nor the text PONG)' });
    return frame;
  }
  for (const item of Array.isArray(json) ? json : [json]) {
    const kind =
      item !== null && typeof item === 'object' && 'event_type' in item
        ? (item as { event_type: unknown }).event_type
        : undefined;
    if (typeof kind !== 'string') {
      frame.rejected.push({ raw: JSON.stringify(item), reason: 'not a market-channel message (no event_type)' });
      continue;
    }
    const schema = SCHEMAS[kind as keyof typeof SCHEMAS];
    if (!schema) {
      frame.ignored++;
      continue;
    }
    const parsed = schema.safeParse(item);
    if (parsed.success) frame.messages.push(parsed.data);
    else frame.rejected.push({ raw: JSON.stringify(item), reason: `${kind}: ${describeZodError(parsed.error)}` });
  }
  return frame;
}

/**
 * The REST API's book of one token (`GET /book?token_id=`): the channel's `book` message without its
 * `event_type`. A body that is not that token's book is rejected with its reason.
 */
export function decodeRestBook(body: unknown, tokenId: string): { book: BookMessage } | RejectedMessage {
  const raw = JSON.stringify(body) ?? 'undefined';
  const parsed = bookMessage.safeParse(
    body !== null && typeof body === 'object' ? { ...body, event_type: 'book' } : body,
  );
  if (!parsed.success) return { raw, reason: `GET /book: ${describeZodError(parsed.error)}` };
  if (parsed.data.asset_id !== tokenId)
    return { raw, reason: `GET /book: the book of token ${parsed.data.asset_id}, asked for ${tokenId}` };
  return { book: parsed.data };
}

/**
 * The first message on a new connection, and the dynamic subscribe on an open one: the token ids, with
 * the custom feature on (new_market, market_resolved) and the initial book asked for explicitly (a
 * missing initial book is reported when it is left to its default).
 */
export function subscribeMessage(assetIds: readonly string[], first: boolean): string {
  return JSON.stringify({
    type: 'market',
    ...(first ? {} : { operation: 'subscribe' }),
    assets_ids: assetIds,
    initial_dump: true,
    custom_feature_enabled: true,
  });
}

export function unsubscribeMessage(assetIds: readonly string[]): string {
  return JSON.stringify({ type: 'market', operation: 'unsubscribe', assets_ids: assetIds });
}
