/**
 * The archive's facts to topics: a range's decoded logs become events (facts.ts), published in chain order
 * in one batch per topic, with the markets first. A fill or leg whose market the token directory does not
 * know yet waits (bounded) until a registration or another source's `tokens` event names it, and is
 * dead-lettered with its reason when it waited too long; the archive checkpoints below the oldest waiting.
 */
import type { ArchiveConfig } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import { BACKGROUND_READ, type Store } from '../../../projections/store.ts';
import type { EventInputOf, TopicId } from '../../contract/topics.ts';
import type { DecodedLog, Decoding, RawLog } from './decode.ts';
import { factsOf, principalsOf, SEQ_PER_BLOCK, type ArchiveContracts, type SkipReason } from './facts.ts';
import type { HeadSink } from './head.ts';
import type { PolygonRpc } from './rpc.ts';
import { TokenDirectory } from './tokens.ts';

export interface ArchiveDeadLetter {
  /** Stable position of the log (block × 100000 + log index): a dead letter written twice is one row. */
  position: number;
  key: string;
  value: string;
  reason: string;
}

/** Where the archive's events go. */
export interface ArchiveSink {
  publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void>;
  deadLetter(letters: readonly ArchiveDeadLetter[]): Promise<void>;
  /** Resolves once everything published so far is durable (Kafka: acknowledged; in process: ingested). */
  durable(): Promise<void>;
  /** The head stage's provisional events and marks (head.ts); without it, no head stage runs. */
  publishHead?: HeadSink['publishHead'];
}

export interface ArchiveCounters {
  blocks: number;
  logs: number;
  fills: number;
  trades: number;
  legs: number;
  resolutions: number;
  tokens: number;
  pending: number;
  deadLettered: number;
  skipped: Partial<Record<SkipReason | 'decode_error', number>>;
}

/** How often, at most, the token directory is reloaded from the store while fills wait for their market. */
const DIRECTORY_RELOAD_MS = 2_000;
const BLOCK_TIMESTAMP_CACHE = 10_000;
/** Conditions this archive saw resolve YES, kept to tell a derived NO from a settled YES (bounded: the store also knows). */
const RESOLVED_YES_KEPT = 100_000;

interface Waiting {
  log: DecodedLog;
  ts: number;
  waitingFor: string;
  sinceMs: number;
  raw: RawLog;
  /** The user its transaction acts for, when an intermediary's logs named one. */
  principal: string | undefined;
}

export interface FactPublisherOptions {
  config: ArchiveConfig;
  rpc: PolygonRpc;
  sink: ArchiveSink;
  store: Store;
  log: Logger;
  contracts: ArchiveContracts;
  now: () => number;
}

export class FactPublisher {
  readonly directory = new TokenDirectory();
  readonly counters: ArchiveCounters = {
    blocks: 0,
    logs: 0,
    fills: 0,
    trades: 0,
    legs: 0,
    resolutions: 0,
    tokens: 0,
    pending: 0,
    deadLettered: 0,
    skipped: {},
  };
  /** Block times by number (from the logs, the ranges' headers, else asked for). */
  readonly timestamps = new Map<number, number>();
  private readonly resolvedYes = new Set<string>();
  private waiting: Waiting[] = [];
  private lastDirectoryLoad = 0;
  private readonly contracts: ArchiveContracts;

  constructor(private readonly options: FactPublisherOptions) {
    this.contracts = options.contracts;
  }

  private now(): number {
    return this.options.now();
  }

  /** Fills and legs waiting for their market. */
  get pending(): number {
    return this.waiting.length;
  }

  /** The block of the oldest fill or leg still waiting (Infinity: none). */
  get oldestWaitingBlock(): number {
    return this.waiting.reduce((oldest, entry) => Math.min(oldest, entry.log.blockNumber), Number.POSITIVE_INFINITY);
  }

  /** Loads the token directory from the store; the markets it knows. */
  async loadDirectory(): Promise<number> {
    const known = await this.directory.load(this.options.store);
    this.lastDirectoryLoad = this.now();
    return known;
  }

  /** Publishes one range's decoded logs, in chain order. */
  async process(fetched: { live: RawLog[]; decodings: Promise<Decoding[]> }): Promise<void> {
    const { live } = fetched;
    const decodings = await fetched.decodings;
    const decoded: DecodedLog[] = [];
    const raws: RawLog[] = [];
    const deadLetters: ArchiveDeadLetter[] = [];
    let ordered = true;
    for (let index = 0; index < live.length; index++) {
      const raw = live[index]!;
      const log = decodings[index]!;
      this.counters.logs++;
      if (log === null) {
        this.skip('not_indexed');
        continue;
      }
      if (log.kind === 'decodeError') {
        this.skip('decode_error');
        deadLetters.push(letterOf(raw, log.reason));
        continue;
      }
      const previous = decoded.at(-1);
      if (
        previous !== undefined &&
        (previous.blockNumber > log.blockNumber ||
          (previous.blockNumber === log.blockNumber && previous.logIndex > log.logIndex))
      )
        ordered = false;
      decoded.push(log);
      raws.push(raw);
    }
    // Nodes answer in chain order; sort only when one did not.
    const order = decoded.map((_, index) => index);
    if (!ordered)
      order.sort(
        (a, b) => decoded[a]!.blockNumber - decoded[b]!.blockNumber || decoded[a]!.logIndex - decoded[b]!.logIndex,
      );
    await this.fillTimestamps(decoded);

    const principals = principalsOf(decoded, this.contracts);
    const batch = emptyBatch();
    for (const index of order) {
      const log = decoded[index]!;
      this.apply(log, raws[index]!, this.timestamps.get(log.blockNumber)!, batch, principals.get(log.txHash));
    }
    // Registrations of this range may be what earlier waiting fills needed.
    this.retryWaiting(batch);
    await this.publish(batch);
    if (deadLetters.length > 0) await this.deadLetter(deadLetters);
  }

  private apply(
    log: DecodedLog,
    raw: RawLog,
    ts: number,
    batch: Batch,
    principal: string | undefined,
    waitingSince = this.now(),
  ): boolean {
    const outcome = factsOf(log, ts, this.directory, this.contracts, principal);
    switch (outcome.kind) {
      case 'skipped':
        this.skip(outcome.reason);
        return true;
      case 'pending':
        this.waiting.push({ log, ts, waitingFor: outcome.waitingFor, sinceMs: waitingSince, raw, principal });
        return false;
      case 'events':
        for (const event of outcome.markets) {
          batch.markets.push(event);
          if (event.type === 'resolution' && event.winner_token_side === 1) this.resolvedYes.add(event.condition_id);
        }
        for (const event of outcome.fills) batch.fills.push(event);
        for (const event of outcome.trades) batch.trades.push(event);
        for (const event of outcome.legs) batch.legs.push(event);
        if (outcome.derivedNo) batch.derivedNo.push(outcome.derivedNo);
        return true;
    }
  }
  private retryWaiting(batch: Batch): void {
    if (this.waiting.length === 0) return;
    const still = this.waiting;
    this.waiting = [];
    for (const entry of still) this.apply(entry.log, entry.raw, entry.ts, batch, entry.principal, entry.sinceMs);
  }

  /**
   * A derived neg-risk result: each condition of the event resolves NO unless it resolved YES (in this
   * archive's history, or in the store: another source's or an earlier run's).
   */
  private async resolveDerivedNo(batch: Batch): Promise<void> {
    if (batch.derivedNo.length === 0) return;
    const candidates = [...new Set(batch.derivedNo.flatMap((derived) => derived.conditionIds))];
    const stored = await this.options.store.query<{ condition_id: string }>(
      'SELECT condition_id FROM {db:Identifier}.market_resolutions FINAL WHERE condition_id IN {ids:Array(String)} AND winner_token_side = 1',
      { ids: candidates },
      BACKGROUND_READ,
    );
    for (const row of stored) this.resolvedYes.add(row.condition_id);
    for (const derived of batch.derivedNo)
      for (const conditionId of derived.conditionIds)
        if (!this.resolvedYes.has(conditionId))
          batch.markets.push({
            type: 'resolution',
            condition_id: conditionId,
            winner_token_side: 2,
            payout_numerators: [0, 1_000_000],
            ts: derived.ts,
            source: 'chain',
          });
    batch.derivedNo = [];
    if (this.resolvedYes.size > RESOLVED_YES_KEPT) this.resolvedYes.clear();
  }

  private async publish(batch: Batch): Promise<void> {
    const { sink } = this.options;
    await this.resolveDerivedNo(batch);
    // Markets first: a fill's market (tokens) and resolution land with or before it.
    if (batch.markets.length > 0) await sink.publish('markets', batch.markets);
    if (batch.fills.length > 0) await sink.publish('fillsArchive', batch.fills);
    if (batch.trades.length > 0) await sink.publish('trades', batch.trades);
    if (batch.legs.length > 0) await sink.publish('positions', batch.legs);
    this.counters.fills += batch.fills.length;
    this.counters.trades += batch.trades.length;
    this.counters.legs += batch.legs.length;
    for (const event of batch.markets) {
      if (event.type === 'tokens') this.counters.tokens++;
      else if (event.type === 'resolution') this.counters.resolutions++;
    }
  }

  /**
   * After a range: resolves what waits if it can (the directory reloaded from the store, where other sources'
   * `tokens` events land) and dead-letters what waited too long.
   */
  async settleWaiting(): Promise<void> {
    if (this.waiting.length > 0 && this.now() - this.lastDirectoryLoad >= DIRECTORY_RELOAD_MS) {
      await this.loadDirectory();
      const batch = emptyBatch();
      this.retryWaiting(batch);
      await this.publish(batch);
    }
    await this.expireWaiting(false);
    this.counters.pending = this.waiting.length;
  }

  async expireWaiting(all: boolean): Promise<void> {
    const { unknownTokenWaitSeconds, pendingMax } = this.options.config;
    const now = this.now();
    const expired: Waiting[] = [];
    const kept: Waiting[] = [];
    for (const entry of this.waiting) {
      if (all || now - entry.sinceMs >= unknownTokenWaitSeconds * 1000) expired.push(entry);
      else kept.push(entry);
    }
    // Over the bound: the oldest go first.
    while (kept.length > pendingMax) expired.push(kept.shift()!);
    this.waiting = kept;
    if (expired.length === 0) return;
    await this.deadLetter(
      expired.map((entry) =>
        letterOf(
          entry.raw,
          `unknown ${entry.waitingFor}: no market claims it (no TokenRegistered, no tokens event) after ${Math.round((now - entry.sinceMs) / 1000)} s`,
        ),
      ),
    );
  }

  private async deadLetter(letters: ArchiveDeadLetter[]): Promise<void> {
    await this.options.sink.deadLetter(letters);
    this.counters.deadLettered += letters.length;
    for (const letter of letters.slice(0, 20))
      this.options.log.warn({ log: letter.key, reason: letter.reason }, 'archive log dead-lettered');
  }

  private skip(reason: SkipReason | 'decode_error'): void {
    this.counters.skipped[reason] = (this.counters.skipped[reason] ?? 0) + 1;
  }

  /** Block timestamps: from the logs when the node includes them, else from the block headers. */
  private async fillTimestamps(logs: readonly DecodedLog[]): Promise<void> {
    const missing = new Set<number>();
    for (const log of logs) {
      if (log.blockTimestamp !== null) this.timestamps.set(log.blockNumber, log.blockTimestamp);
      else if (!this.timestamps.has(log.blockNumber)) missing.add(log.blockNumber);
    }
    for (const block of missing) this.timestamps.set(block, (await this.options.rpc.blockHeader(block)).timestamp);
    if (this.timestamps.size > BLOCK_TIMESTAMP_CACHE) {
      const keep = [...this.timestamps.entries()].slice(-BLOCK_TIMESTAMP_CACHE / 2);
      this.timestamps.clear();
      for (const [block, ts] of keep) this.timestamps.set(block, ts);
    }
  }
}

interface Batch {
  markets: EventInputOf<'markets'>[];
  fills: EventInputOf<'fillsArchive'>[];
  trades: EventInputOf<'trades'>[];
  legs: EventInputOf<'positions'>[];
  derivedNo: { conditionIds: string[]; ts: number }[];
}

function emptyBatch(): Batch {
  return { markets: [], fills: [], trades: [], legs: [], derivedNo: [] };
}

function letterOf(raw: RawLog, reason: string): ArchiveDeadLetter {
  // A log that failed at its position fields still gets a letter (position 0 when unreadable).
  const number = (value: unknown) =>
    typeof value === 'string' && /^0x[0-9a-fA-F]{1,15}$/.test(value) ? Number(value) : 0;
  const block = number(raw.blockNumber);
  const logIndex = number(raw.logIndex);
  return {
    position: block * SEQ_PER_BLOCK + logIndex,
    key: `${String(raw.transactionHash).toLowerCase()}:${logIndex}`,
    value: JSON.stringify(raw),
    reason,
  };
}
