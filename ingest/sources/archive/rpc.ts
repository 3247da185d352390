/**
 * The node, as the archive uses it: viem's JSON-RPC transports (one per endpoint, `fallback` fails over in
 * order), behind our requests-per-second cap and our bounded retries (exponential backoff with full jitter,
 * or the node's Retry-After when it names a longer wait).
 * A "range too large" answer (or a timeout) is not retried as is: the caller halves its block range.
 */
import { createPublicClient, fallback, http, webSocket, type Hex, type PublicClient } from 'viem';
import type { Logger } from '../../../log.ts';
import type { RawLog } from './decode.ts';
import { retryAfterInstant } from '../../retry-after.ts';
import { sleepOrAbort } from '../../sleep.ts';

export interface RpcOptions {
  urls: readonly string[];
  requestsPerSecond: number;
  retries: number;
  retryBaseMs: number;
  retryMaxMs: number;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Test seam: the random source of the jitter. */
  random?: () => number;
}

export interface GetLogsFilter {
  fromBlock: number;
  toBlock: number;
  address: readonly Hex[];
  topics: readonly (readonly Hex[])[];
}

/** The node refused the range (too many results, too wide, too slow): ask again for fewer blocks. */
export class RangeTooLargeError extends Error {
  constructor(
    readonly fromBlock: number,
    readonly toBlock: number,
    reason: string,
  ) {
    super(`blocks ${fromBlock}..${toBlock}: ${reason}`);
  }
}

/** Retries ran out; carries the last failure. */
class RpcUnavailableError extends Error {}

export class AbortedError extends Error {
  constructor() {
    super('aborted');
  }
}

const RANGE_REFUSAL =
  /too many|more than [\d,]+ results|range (is )?too (large|wide)|block range|exceed(s|ed)? (the )?max|limit exceeded|response size|response body exceeded|size limit|result set|too large|-32005|query timeout/i;
const TIMEOUT = /timed? ?out|timeout/i;

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const details = (error as { details?: string }).details;
  const status = (error as { status?: number }).status;
  return [error.message.split('\n')[0], details, status === undefined ? undefined : `HTTP ${status}`]
    .filter(Boolean)
    .join(' | ');
}

/**
 * How long the node asked us to wait (its Retry-After, on a 429 or 503), in ms; undefined when it did not
 * say. viem keeps the HTTP answer's headers on the request error it wraps in its RPC errors.
 */
function nodeRetryAfterMs(error: unknown, now = Date.now()): number | undefined {
  let cause: unknown = error;
  for (let depth = 0; cause instanceof Error && depth < 8; depth++) {
    const headers = (cause as { headers?: unknown }).headers;
    if (headers instanceof Headers) {
      const at = retryAfterInstant(headers.get('retry-after'), now);
      if (at !== undefined) return at - now;
    }
    cause = cause.cause;
  }
  return undefined;
}

/** A node that does not know the `finalized` block tag (how nodes word it: an invalid or unknown tag, an unsupported parameter). */
const FINALIZED_UNSUPPORTED =
  /finali[sz]ed|invalid (block )?tag|unknown block|invalid argument|invalid param|-32602|not supported/i;

class FinalityUnsupportedError extends Error {}

export interface RawHeader {
  number: string;
  hash: string;
  parentHash?: string;
  timestamp: string;
}

export function headerOf(block: RawHeader): BlockHeader {
  return {
    number: Number(BigInt(block.number)),
    hash: block.hash.toLowerCase(),
    parentHash: (block.parentHash ?? '').toLowerCase(),
    timestamp: Number(BigInt(block.timestamp)),
  };
}

/** What the archive reads of a block header. Hashes in lower case. */
export interface BlockHeader {
  number: number;
  hash: string;
  parentHash: string;
  timestamp: number;
}

export interface RpcStats {
  requests: number;
  failures: number;
  retries: number;
  rangeRefusals: number;
}

export class PolygonRpc {
  private readonly client: PublicClient;
  private nextSlotAt = 0;
  readonly stats: RpcStats = { requests: 0, failures: 0, retries: 0, rangeRefusals: 0 };

  constructor(
    private readonly options: RpcOptions,
    private readonly log: Logger,
  ) {
    const transports = options.urls.map((url) =>
      url.startsWith('ws')
        ? webSocket(url, { timeout: options.timeoutMs, retryCount: 0 })
        : http(url, { timeout: options.timeoutMs, retryCount: 0 }),
    );
    this.client = createPublicClient({
      transport: transports.length === 1 ? transports[0]! : fallback(transports, { retryCount: 0 }),
    });
  }

  /** The cap on requests per second, shared by every request of this client. */
  private async slot(): Promise<void> {
    const interval = 1000 / this.options.requestsPerSecond;
    const now = Date.now();
    const at = Math.max(now, this.nextSlotAt);
    this.nextSlotAt = at + interval;
    if (at > now) await this.sleep(at - now);
  }

  private sleep(ms: number): Promise<void> {
    return sleepOrAbort(ms, this.options.signal, () => new AbortedError());
  }

  /** Backoff before retry `attempt` (1, 2, …): full jitter over an exponentially growing cap. */
  backoffMs(attempt: number): number {
    const cap = Math.min(this.options.retryMaxMs, this.options.retryBaseMs * 2 ** (attempt - 1));
    return Math.round((this.options.random ?? Math.random)() * cap);
  }

  /**
   * One JSON-RPC call with bounded retries. `rangeRefusal` lets a caller turn a refusal of its range into
   * a RangeTooLargeError at once instead of retrying the same request.
   */
  async call<T>(method: string, params: unknown[], rangeRefusal?: (reason: string) => Error | null): Promise<T> {
    let lastReason = '';
    // The node's own word on when to ask again outweighs our backoff when it is the longer wait.
    let askedToWaitMs = 0;
    for (let attempt = 0; attempt <= this.options.retries; attempt++) {
      if (attempt > 0) {
        this.stats.retries++;
        await this.sleep(Math.max(this.backoffMs(attempt), askedToWaitMs));
        askedToWaitMs = 0;
      }
      await this.slot();
      this.stats.requests++;
      try {
        // viem's request type is keyed by method name; ours are plain JSON-RPC.
        return (await this.client.request({ method: method as 'eth_blockNumber', params: params as never })) as T;
      } catch (error) {
        if (error instanceof AbortedError || this.options.signal?.aborted) throw new AbortedError();
        this.stats.failures++;
        lastReason = describe(error);
        askedToWaitMs = nodeRetryAfterMs(error) ?? 0;
        const refusal = rangeRefusal?.(lastReason);
        if (refusal) {
          this.stats.rangeRefusals++;
          throw refusal;
        }
        this.log.warn(
          {
            method,
            attempt: attempt + 1,
            of: this.options.retries + 1,
            reason: lastReason,
            retryAfterMs: askedToWaitMs,
          },
          'node request failed',
        );
      }
    }
    throw new RpcUnavailableError(`${method} failed ${this.options.retries + 1} times: ${lastReason}`);
  }

  async blockNumber(): Promise<number> {
    return Number(BigInt(await this.call<string>('eth_blockNumber', [])));
  }

  /**
   * The node's newest finalized block, or null when the node does not know the `finalized` tag (an older
   * client, or a chain without it): answered at once, not retried, so the archive can fall back to depth.
   */
  async finalizedHeader(): Promise<BlockHeader | null> {
    let unsupported = false;
    let block: RawHeader | null;
    try {
      block = await this.call<RawHeader | null>('eth_getBlockByNumber', ['finalized', false], (reason) =>
        FINALIZED_UNSUPPORTED.test(reason) ? ((unsupported = true), new FinalityUnsupportedError(reason)) : null,
      );
    } catch (error) {
      if (unsupported) return null;
      throw error;
    }
    return block ? headerOf(block) : null;
  }

  /** The newest block's header (number, hash, parent): one request tells a new block and a replaced one. */
  async latestHeader(): Promise<BlockHeader> {
    const block = await this.call<RawHeader | null>('eth_getBlockByNumber', ['latest', false]);
    if (!block) throw new RpcUnavailableError('the node has no latest block');
    return headerOf(block);
  }

  async blockHeader(number: number): Promise<BlockHeader> {
    const block = await this.call<RawHeader | null>('eth_getBlockByNumber', [`0x${number.toString(16)}`, false]);
    if (!block) throw new RpcUnavailableError(`the node has no block ${number}`);
    return headerOf(block);
  }

  /** eth_getLogs over one range; RangeTooLargeError when the node refuses the range or it times out. */
  async getLogs(filter: GetLogsFilter): Promise<RawLog[]> {
    const { fromBlock, toBlock } = filter;
    return this.call<RawLog[]>(
      'eth_getLogs',
      [
        {
          fromBlock: `0x${fromBlock.toString(16)}`,
          toBlock: `0x${toBlock.toString(16)}`,
          address: filter.address,
          topics: filter.topics,
        },
      ],
      (reason) =>
        RANGE_REFUSAL.test(reason) || TIMEOUT.test(reason) ? new RangeTooLargeError(fromBlock, toBlock, reason) : null,
    );
  }

  async close(): Promise<void> {
    // HTTP transports hold no connection; a WebSocket one closes with the process.
  }
}
