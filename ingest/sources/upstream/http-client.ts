/**
 * The upstream poller's HTTP client: Node's fetch (undici) with what an operator depending on someone
 * else's API needs around it.
 *
 * - Per-route token buckets below the provider's published limits (config data: `UPSTREAM_PUBLISHED_LIMITS`
 *   times `UPSTREAM_RATE_FRACTION`). A request takes a token from its route's bucket and from its service's
 *   general bucket, waiting (never failing) until both have one.
 * - `429` honours `Retry-After` (seconds or an HTTP date): the route's bucket is paused until then.
 * - Bounded retries of 5xx, 429, timeouts, network errors and unreadable bodies, with exponential backoff
 *   and full jitter (a random wait in [0, min(max, base · 2^attempt)]); other 4xx are not retried.
 * - A timeout per attempt, headers and body alike, and a bound on the body's size (a larger answer is
 *   abandoned unread and counted as a failure, not retried).
 * - A circuit breaker: after N failed requests in a row the upstream is offline for a cool-down; calls
 *   during it fail at once without touching the network, then one probe decides (half-open).
 *
 * Why hand-written rather than a library (bottleneck, opossum, cockatiel): the buckets, the backoff and
 * the breaker all run on one injected clock, so tests drive a 429, a cool-down or an hour of refreshes
 * without sleeping; Retry-After has to pause the very bucket the request came from; and the breaker's
 * state is the poller's heartbeat (`upstream.status`). Each piece is a few lines; the libraries would
 * each bring their own timers.
 */
import type { Logger } from '../../../log.ts';
import type { UpstreamRouteLimit, UpstreamService } from '../../../config.ts';
import { recordUpstreamPoll } from '../../../metrics/registry.ts';
import { retryAfterInstant } from '../../retry-after.ts';
import { sleepOrAbort } from '../../sleep.ts';

/** Milliseconds, and a wait that a test clock can satisfy without real time passing. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleepOrAbort(ms, signal),
};

/** A token bucket: `capacity` tokens, refilled continuously at `perMs` tokens per millisecond. */
export class TokenBucket {
  private tokens: number;
  private updatedAt: number;
  /** Nothing is taken before this instant (a 429's Retry-After). */
  private pausedUntil = 0;

  constructor(
    readonly capacity: number,
    private readonly perMs: number,
    private readonly clock: Clock,
  ) {
    this.tokens = capacity;
    this.updatedAt = clock.now();
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.updatedAt) * this.perMs);
    this.updatedAt = now;
  }

  /** Milliseconds until a token is available (0: one is there now). */
  waitMs(): number {
    const now = this.clock.now();
    this.refill(now);
    const paused = Math.max(0, this.pausedUntil - now);
    const missing = this.tokens >= 1 ? 0 : Math.ceil((1 - this.tokens) / this.perMs);
    return Math.max(paused, missing);
  }

  take(): void {
    this.refill(this.clock.now());
    this.tokens -= 1;
  }

  pauseUntil(instant: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, instant);
    // The provider said we were too fast: start again from an empty bucket.
    this.tokens = Math.min(this.tokens, 0);
  }
}

export type BreakerState = 'closed' | 'open' | 'half-open';

/** Consecutive-failure circuit breaker. */
export class CircuitBreaker {
  private failures = 0;
  private openedAt: number | null = null;
  private probing = false;

  constructor(
    private readonly threshold: number,
    private readonly openMs: number,
    private readonly clock: Clock,
    private readonly onChange: (state: BreakerState, reason: string) => void = () => {},
  ) {}

  get state(): BreakerState {
    if (this.openedAt === null) return 'closed';
    return this.clock.now() - this.openedAt >= this.openMs ? 'half-open' : 'open';
  }

  /** Whether a request may go out now; in half-open, only one probe at a time. */
  admit(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.probing) return false;
    this.probing = true;
    return true;
  }

  success(): void {
    const wasOpen = this.openedAt !== null;
    this.failures = 0;
    this.openedAt = null;
    this.probing = false;
    if (wasOpen) this.onChange('closed', 'the upstream answered again');
  }

  failure(reason: string): void {
    this.failures += 1;
    const probeFailed = this.probing;
    this.probing = false;
    if (probeFailed || (this.openedAt === null && this.failures >= this.threshold)) {
      this.openedAt = this.clock.now();
      this.onChange('open', reason);
    }
  }

  /** Milliseconds until the next probe may go (0 when closed or half-open). */
  retryInMs(): number {
    if (this.openedAt === null) return 0;
    return Math.max(0, this.openedAt + this.openMs - this.clock.now());
  }
}

export type UpstreamErrorKind = 'offline' | 'http' | 'timeout' | 'network' | 'body' | 'too_large';

export class UpstreamError extends Error {
  constructor(
    readonly kind: UpstreamErrorKind,
    readonly url: string,
    message: string,
    readonly status?: number,
  ) {
    super(`${kind}: ${message} (${url})`);
  }
}

export interface UpstreamResponse {
  status: number;
  body: unknown;
  /** The request's URL (for dead letters and logs). */
  url: string;
}

export interface HttpClientOptions {
  baseUrls: Record<UpstreamService, string>;
  limits: readonly UpstreamRouteLimit[];
  rateFraction: number;
  timeoutMs: number;
  /** The largest answer read (bytes); a larger one is abandoned and counted as a failure. */
  maxBodyBytes?: number;
  maxRetries: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  breaker: { failures: number; openMs: number };
  clock?: Clock;
  /** [0, 1): the jitter's randomness (tests pass a fixed sequence). */
  random?: () => number;
  fetch?: typeof fetch;
  log?: Logger;
  onBreakerChange?: (state: BreakerState, reason: string) => void;
}

/**
 * The largest answer the client reads when it is not told otherwise: far above any page the provider
 * serves, far below what would hold the poller (and its memory) on one answer.
 */
const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/** The body as text, or undefined once it exceeds `maxBytes` (the rest is not read: the stream is cancelled). */
async function readBounded(response: Response, maxBytes: number): Promise<string | undefined> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

interface Route {
  bucket: TokenBucket;
  general: TokenBucket;
  name: string;
}

export class UpstreamHttpClient {
  readonly breaker: CircuitBreaker;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly fetchImpl: typeof fetch;
  private readonly buckets = new Map<string, TokenBucket>();
  /** Requests sent per route (after the buckets), for tests and logs. */
  readonly sent = new Map<string, number>();
  /** When the provider last answered (ms; 0: never). */
  lastAnswerAt = 0;

  constructor(private readonly options: HttpClientOptions) {
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.fetchImpl = options.fetch ?? fetch;
    this.breaker = new CircuitBreaker(options.breaker.failures, options.breaker.openMs, this.clock, (state, reason) => {
      options.log?.warn({ state, reason }, 'upstream circuit breaker');
      options.onBreakerChange?.(state, reason);
    });
    for (const limit of options.limits) {
      const perSecond = (limit.requests / limit.perSeconds) * options.rateFraction;
      // Burst: one second's worth, at least one request.
      this.buckets.set(
        `${limit.service} ${limit.path}`,
        new TokenBucket(Math.max(1, Math.floor(perSecond)), perSecond / 1000, this.clock),
      );
    }
  }

  /** The bucket of the longest configured path prefix, and the service's general bucket. */
  private routeOf(service: UpstreamService, path: string): Route {
    let best: UpstreamRouteLimit | undefined;
    for (const limit of this.options.limits) {
      if (
        limit.service !== service ||
        limit.path === '' ||
        !(path === limit.path || path.startsWith(`${limit.path}/`) || path.startsWith(`${limit.path}?`))
      )
        continue;
      if (best === undefined || limit.path.length > best.path.length) best = limit;
    }
    const general = this.buckets.get(`${service} `);
    if (general === undefined) throw new Error(`no general rate limit configured for the ${service} service`);
    const bucket = best === undefined ? general : this.buckets.get(`${service} ${best.path}`)!;
    return { bucket, general, name: `${service} ${best?.path ?? '*'}` };
  }

  private async acquire(route: Route, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const wait = Math.max(route.bucket.waitMs(), route.general.waitMs());
      if (wait === 0) break;
      await this.clock.sleep(wait, signal);
    }
    route.bucket.take();
    if (route.general !== route.bucket) route.general.take();
  }

  private backoffMs(attempt: number): number {
    const ceiling = Math.min(this.options.backoffMaxMs, this.options.backoffBaseMs * 2 ** attempt);
    return Math.floor(this.random() * ceiling);
  }

  /** GET a JSON document; throws UpstreamError once retries are spent, at once when the circuit is open. */
  async getJson(
    service: UpstreamService,
    path: string,
    query: Record<string, string | number | boolean | undefined> = {},
    signal?: AbortSignal,
    expectJson = true,
  ): Promise<UpstreamResponse> {
    try {
      const response = await this.getJsonOnce(service, path, query, signal, expectJson);
      recordUpstreamPoll(service, null);
      return response;
    } catch (error) {
      // The label is the service and the error's kind (a closed set), never the URL.
      recordUpstreamPoll(service, error instanceof UpstreamError ? error.kind : 'network');
      throw error;
    }
  }

  private async getJsonOnce(
    service: UpstreamService,
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    signal: AbortSignal | undefined,
    expectJson: boolean,
  ): Promise<UpstreamResponse> {
    const url = new URL(`${this.options.baseUrls[service]}${path}`);
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) url.searchParams.set(name, String(value));
    const href = url.toString();
    const route = this.routeOf(service, path);

    let lastError: UpstreamError | undefined;
    for (let attempt = 0; attempt <= this.options.maxRetries; attempt += 1) {
      if (!this.breaker.admit())
        throw new UpstreamError(
          'offline',
          href,
          `circuit open, next probe in ${this.breaker.retryInMs()} ms${lastError ? ` (last: ${lastError.message})` : ''}`,
        );
      await this.acquire(route, signal);
      this.sent.set(route.name, (this.sent.get(route.name) ?? 0) + 1);
      const outcome = await this.attempt(href, route, signal, expectJson);
      if (outcome.ok || outcome.retry === false || outcome.error.status === 429 || outcome.error.kind === 'body')
        this.lastAnswerAt = this.clock.now();
      if (outcome.ok) {
        this.breaker.success();
        return outcome.response;
      }
      lastError = outcome.error;
      if (!outcome.retry) {
        // An answer past the size bound is a failure (asking again would fetch it again); a 4xx other
        // than 429 is an answer (the provider is up): it does not count against the breaker.
        if (outcome.error.kind === 'too_large') this.breaker.failure(outcome.error.message);
        else this.breaker.success();
        throw outcome.error;
      }
      // A 429 or an unreadable body is an answer (the provider is up): neither counts against the breaker.
      if (outcome.error.status !== 429 && outcome.error.kind !== 'body') this.breaker.failure(outcome.error.message);
      else this.breaker.success();
      if (attempt === this.options.maxRetries) break;
      // A 429 paused the bucket already; the others wait out a jittered backoff.
      if (outcome.error.status !== 429 || outcome.retryAt === undefined)
        await this.clock.sleep(this.backoffMs(attempt), signal);
      this.options.log?.debug({ url: href, attempt, error: outcome.error.message }, 'upstream request retried');
    }
    throw lastError ?? new UpstreamError('network', href, 'no attempt made');
  }

  private async attempt(
    href: string,
    route: Route,
    signal: AbortSignal | undefined,
    expectJson: boolean,
  ): Promise<
    { ok: true; response: UpstreamResponse } | { ok: false; retry: boolean; error: UpstreamError; retryAt?: number }
  > {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const maxBytes = this.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const tooLarge = (size: string) => ({
      ok: false as const,
      retry: false,
      error: new UpstreamError('too_large', href, `answer of ${size} bytes, above the bound of ${maxBytes}`),
    });
    let response: Response;
    let text: string;
    try {
      response = await this.fetchImpl(href, {
        signal: combined,
        headers: { accept: 'application/json', 'user-agent': 'trader-analytics-upstream/1' },
      });
      // The timeout's signal bounds the body too: a body that trickles in is cut off with its request.
      const declared = Number(response.headers.get('content-length') ?? Number.NaN);
      if (declared > maxBytes) {
        await response.body?.cancel().catch(() => undefined);
        return tooLarge(String(declared));
      }
      const bounded = await readBounded(response, maxBytes);
      if (bounded === undefined) return tooLarge(`more than ${maxBytes}`);
      text = bounded;
    } catch (error) {
      if (signal?.aborted) throw error;
      if (timeout.aborted)
        return {
          ok: false,
          retry: true,
          error: new UpstreamError('timeout', href, `no answer within ${this.options.timeoutMs} ms`),
        };
      return {
        ok: false,
        retry: true,
        error: new UpstreamError('network', href, error instanceof Error ? error.message : String(error)),
      };
    }
    if (response.status === 429) {
      const retryAt = retryAfterInstant(response.headers.get('retry-after'), this.clock.now());
      route.bucket.pauseUntil(retryAt ?? this.clock.now() + this.backoffMs(3));
      return {
        ok: false,
        retry: true,
        error: new UpstreamError('http', href, 'HTTP 429 too many requests', 429),
        retryAt,
      };
    }
    if (response.status >= 500)
      return {
        ok: false,
        retry: true,
        error: new UpstreamError('http', href, `HTTP ${response.status}`, response.status),
      };
    if (response.status >= 400)
      return {
        ok: false,
        retry: false,
        error: new UpstreamError('http', href, `HTTP ${response.status}: ${text.slice(0, 200)}`, response.status),
      };
    if (!expectJson) return { ok: true, response: { status: response.status, body: text, url: href } };
    try {
      return { ok: true, response: { status: response.status, body: JSON.parse(text) as unknown, url: href } };
    } catch (error) {
      // A truncated or garbled body: the connection broke mid-answer, most likely; worth another try.
      return {
        ok: false,
        retry: true,
        error: new UpstreamError(
          'body',
          href,
          `unreadable JSON (${text.length} bytes): ${error instanceof Error ? error.message : String(error)}`,
        ),
      };
    }
  }
}
