/**
 * What the plane and its connections share: a connection's transport, its subscriptions (a watch or a
 * follow) and the refusal of a command. A subscription names its connection by what the plane's fan-out
 * asks of it: an event delivered, a watch ended.
 */
import type { Caller } from '../auth.ts';
import type { LiveErrorCode, StreamEvent } from './messages.ts';
import type { Recording } from './recording.ts';

/** One client connection as the plane sees it. */
export interface LiveTransport {
  send(text: string): void;
  /** Bytes handed to `send` and not yet written to the network. */
  bufferedBytes(): number;
  /** A ping carrying `payload`; the client's pong echoes it (RFC 6455 §5.5.3). */
  ping(payload: string): void;
  close(code: number, reason: string): void;
}

/** A connection's credential checked again: its caller now, or the ApiError it is refused with now (failures not counted). */
export type CredentialCheck = () => Promise<Caller>;

/** A WebSocket frame's header, as counted in the transport's buffered bytes (RFC 6455 §5.2; the server does not mask). */
export function frameBytes(payloadBytes: number): number {
  return payloadBytes + (payloadBytes < 126 ? 2 : payloadBytes < 65_536 ? 4 : 10);
}

/** What the fan-out asks of the connection a subscription belongs to. */
interface SubscriptionOwner {
  /** One event of a subscription: numbered, and sent unless the client is too far behind. */
  deliver(subscription: Subscription, event: StreamEvent, market?: string): void;
  /** The server ends a watch (its market resolved, or it reached its longest). */
  endWatch(subscription: Subscription, reason: 'resolved' | 'max_duration'): Promise<void>;
}

export interface Subscription {
  kind: 'watch' | 'follow';
  wallet: string;
  /** The watched market (a follow has none). */
  market: string | null;
  seq: number;
  /** The slot's id in the store; null for a follow, or a watch admitted while the slot store was down. */
  slotId: string | null;
  /** A follow's id in the store's follow index (what the upstream fast path polls); null for a watch. */
  followId: string | null;
  connection: SubscriptionOwner;
  /** The watch's recording while it runs (null: a follow, not recorded, or stopped). */
  recording: Recording | null;
  /** The tape the watch is (or was) recorded as. */
  tapeId: string | null;
  /** Ends the watch at its longest. */
  timer: NodeJS.Timeout | null;
  /** Unindexed: nothing more is sent to it (a provisional event's end included). */
  ended?: true;
}

export const watchKey = (wallet: string, market: string) => `watch:${wallet}:${market}`;
/** A user's connections are counted and leased like slots, under a count of their own. */

export const followKey = (wallet: string) => `follow:${wallet}`;

/** A refusal of a command, sent as an error message (the connection stays open). */
export class Refusal extends Error {
  constructor(
    readonly code: LiveErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
