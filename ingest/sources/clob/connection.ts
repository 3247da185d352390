/**
 * One connection to the market channel, kept open for as long as there is something to subscribe:
 *
 * - on connect it subscribes every token wanted now (a reconnect resubscribes them all); while open,
 *   a change of the wanted set is a dynamic subscribe or unsubscribe on the same socket;
 * - it sends the text `PING` every heartbeat; no `PONG` within the timeout is a dead socket;
 * - a socket whose heartbeat answers but that brings no message for the stall period while something is
 *   subscribed is frozen (a failure the venue's users report: PONGs keep coming, data does not) and is
 *   replaced;
 * - a dropped, dead or frozen socket is reconnected after a backoff with full jitter (a random delay up
 *   to base × 2^attempt, at most the maximum), reset once a connection delivered data.
 */
import { WebSocket } from 'ws';
import type { Logger } from '../../../log.ts';
import { sleepUnlessAborted } from '../../sleep.ts';
import { PING, subscribeMessage, unsubscribeMessage } from './protocol.ts';

export type DisconnectReason = 'closed' | 'error' | 'heartbeat' | 'stalled';

export interface ClobConnectionOptions {
  url: string;
  heartbeatMs: number;
  pongTimeoutMs: number;
  stallMs: number;
  backoff: { baseMs: number; maxMs: number };
  log: Logger;
  /** Every received text frame except PONG. */
  onFrame(text: string): void;
  /** A socket opened: what was known of the books may be stale (called before resubscribing). */
  onConnected?(): void;
  onDisconnected?(reason: DisconnectReason): void;
  random?: () => number;
}

export class ClobConnection {
  readonly #options: ClobConnectionOptions;
  readonly #random: () => number;
  #wanted = new Set<string>();
  #socket: WebSocket | null = null;
  /** Wakes the run loop when there is something to subscribe again. */
  #wake: (() => void) | null = null;

  constructor(options: ClobConnectionOptions) {
    this.#options = options;
    this.#random = options.random ?? Math.random;
  }

  get subscribed(): number {
    return this.#wanted.size;
  }

  /** The tokens to be subscribed from now on: the difference goes out at once on an open socket. */
  setAssets(assets: Iterable<string>): void {
    const next = new Set(assets);
    const added = [...next].filter((asset) => !this.#wanted.has(asset));
    const removed = [...this.#wanted].filter((asset) => !next.has(asset));
    this.#wanted = next;
    const socket = this.#socket;
    if (socket && socket.readyState === WebSocket.OPEN) {
      if (added.length > 0) socket.send(subscribeMessage(added, false));
      if (removed.length > 0) socket.send(unsubscribeMessage(removed));
    }
    if (next.size > 0) this.#wake?.();
  }

  /** Connects, and reconnects, until aborted. */
  async run(signal: AbortSignal): Promise<void> {
    let attempt = 0;
    while (!signal.aborted) {
      if (this.#wanted.size === 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
        this.#wake = null;
        continue;
      }
      const { reason, delivered } = await this.#session(signal);
      if (signal.aborted) break;
      this.#options.onDisconnected?.(reason);
      attempt = delivered ? 0 : attempt + 1;
      const ceiling = Math.min(this.#options.backoff.maxMs, this.#options.backoff.baseMs * 2 ** Math.min(attempt, 30));
      const delayMs = Math.round(this.#random() * ceiling);
      this.#options.log.warn({ reason, attempt, delayMs }, 'clob socket lost: reconnecting');
      await sleepUnlessAborted(delayMs, signal);
    }
  }

  /** One socket, from connect to its end. */
  #session(signal: AbortSignal): Promise<{ reason: DisconnectReason; delivered: boolean }> {
    const { url, heartbeatMs, pongTimeoutMs, stallMs } = this.#options;
    return new Promise((resolve) => {
      const socket = new WebSocket(url, { handshakeTimeout: pongTimeoutMs });
      let delivered = false;
      let lastPong = Date.now();
      let lastData = Date.now();
      let heartbeat: NodeJS.Timeout | undefined;
      let done = false;
      const finish = (reason: DisconnectReason) => {
        if (done) return;
        done = true;
        clearInterval(heartbeat);
        signal.removeEventListener('abort', onAbort);
        if (this.#socket === socket) this.#socket = null;
        socket.removeAllListeners();
        // A late error of a socket given up must not be unhandled.
        socket.on('error', () => undefined);
        socket.terminate();
        resolve({ reason, delivered });
      };
      const onAbort = () => finish('closed');
      signal.addEventListener('abort', onAbort, { once: true });
      socket.on('open', () => {
        this.#socket = socket;
        this.#options.onConnected?.();
        lastPong = lastData = Date.now();
        // Subscribe at once: the venue may close a socket that does not.
        socket.send(subscribeMessage([...this.#wanted], true));
        this.#options.log.info({ assets: this.#wanted.size }, 'clob socket open: subscribed');
        heartbeat = setInterval(() => {
          const now = Date.now();
          if (now - lastPong > pongTimeoutMs) finish('heartbeat');
          else if (this.#wanted.size > 0 && now - lastData > stallMs) finish('stalled');
          else socket.send(PING);
        }, heartbeatMs);
      });
      socket.on('message', (data, isBinary) => {
        if (isBinary) return;
        const text = data.toString();
        if (text === 'PONG') {
          lastPong = Date.now();
          return;
        }
        lastData = Date.now();
        delivered = true;
        this.#options.onFrame(text);
      });
      socket.on('close', () => finish('closed'));
      socket.on('error', (error) => {
        this.#options.log.warn({ err: { message: error.message } }, 'clob socket error');
        finish('error');
      });
    });
  }
}
