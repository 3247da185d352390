/**
 * The rate of one live connection's commands (docs/live.md, Bounds): a token bucket per connection
 * (every frame counts, a bad one too); a frame beyond it is refused, and a client that keeps sending
 * while refused is closed. The connection's other bounds (its unsent bytes, its pongs) are checked in
 * plane.ts, where it sends.
 */

export interface CommandRateLimits {
  perSecond: number;
  burst: number;
  /** Refusals in a row (no command admitted between them) that close the connection. */
  refusalsBeforeClose: number;
}

/** One frame's fate: run it, refuse it (the client is told), or close the connection (it persisted). */
export type CommandVerdict = 'admitted' | 'refused' | 'close';

/** A token bucket of commands, on a clock in milliseconds. */
export class CommandRate {
  #tokens: number;
  #atMs: number;
  #refusedInARow = 0;

  constructor(
    private readonly limits: CommandRateLimits,
    private readonly clockMs: () => number,
  ) {
    this.#tokens = limits.burst;
    this.#atMs = clockMs();
  }

  take(): CommandVerdict {
    const now = this.clockMs();
    this.#tokens = Math.min(this.limits.burst, this.#tokens + ((now - this.#atMs) / 1000) * this.limits.perSecond);
    this.#atMs = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      this.#refusedInARow = 0;
      return 'admitted';
    }
    return this.refuse();
  }

  /** A command refused for another reason of the same kind (too many waiting): counts toward the close. */
  refuse(): CommandVerdict {
    this.#refusedInARow += 1;
    return this.#refusedInARow >= this.limits.refusalsBeforeClose ? 'close' : 'refused';
  }
}
