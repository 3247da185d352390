/**
 * The archive loop: reads the chain's logs over block ranges that adapt to the node, turns them into events,
 * publishes them, and moves a durable checkpoint only once everything before it is durable on the log.
 *
 * Reorg safety: only blocks at least `confirmations` below the head (or up to the node's `finalized` block)
 * are read. Resumption: the checkpoint is the last block whose events are all durable; after a restart or a
 * crash the archive reads again from the block after it. Events between the checkpoint and the crash are
 * published a second time with the same ids (`txHash:logIndex`), which ingest deduplicates.
 */
import type { Hex } from 'viem';
import type { ArchiveConfig } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import type { Store } from '../../../projections/store.ts';
import type { EventInputOf, TopicId } from '../../contract/topics.ts';
import { INDEXED_TOPIC0S } from './abi.ts';
import { decodeLog, LogDecodeError, type DecodedLog, type RawLog } from './decode.ts';
import { factsOf, SEQ_PER_BLOCK, type ArchiveContracts, type SkipReason } from './facts.ts';
import { AbortedError, RangeTooLargeError, type PolygonRpc } from './rpc.ts';
import { TokenDirectory } from './tokens.ts';
import { recordArchiveProgress } from '../../../metrics/registry.ts';

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

export interface ArchiveProgress {
  nextBlock: number;
  head: number;
  safeHead: number;
  range: number;
  counters: ArchiveCounters;
}

export interface ArchiveOptions {
  config: ArchiveConfig;
  rpc: PolygonRpc;
  sink: ArchiveSink;
  store: Store;
  log: Logger;
  signal: AbortSignal;
  /** Called after every checkpoint (tests await states through it). */
  onCheckpoint?: (block: number, progress: ArchiveProgress) => void;
  /** Called when the archive first reaches the safe head. */
  onCaughtUp?: (progress: ArchiveProgress) => void;
  /** Progress log interval. */
  progressIntervalMs?: number;
  now?: () => number;
}

/** A quiet range (fewer logs than this) lets the next one grow. */
const QUIET_RANGE_LOGS = 5_000;
/** How often, at most, the token directory is reloaded from the store while fills wait for their market. */
const DIRECTORY_RELOAD_MS = 2_000;
const BLOCK_TIMESTAMP_CACHE = 10_000;

export function contractsOf(config: ArchiveConfig): ArchiveContracts {
  const c = config.contracts;
  const exchanges = new Set<string>([c.ctfExchange, c.negRiskExchange, c.ctfExchangeV2, c.negRiskExchangeV2]);
  return {
    exchanges,
    negRiskExchanges: new Set([c.negRiskExchange, c.negRiskExchangeV2]),
    all: new Set([...exchanges, c.conditionalTokens, c.negRiskAdapter]),
    collaterals: config.collaterals,
    v2StartBlock: config.v2StartBlock,
  };
}

export async function readCheckpoint(store: Store, source: string): Promise<number | null> {
  const [row] = await store.query<{ block: string | number }>(
    'SELECT max(block) AS block FROM {db:Identifier}.archive_checkpoints FINAL WHERE source = {source:String} HAVING count() > 0',
    { source },
  );
  return row === undefined ? null : Number(row.block);
}

export async function writeCheckpoint(store: Store, source: string, block: number): Promise<void> {
  await store.insert('archive_checkpoints', [{ source, block, block_hash: '' }], `archive-checkpoint-${source}-${block}`);
}

interface Waiting {
  log: DecodedLog;
  ts: number;
  tokenId: string;
  sinceMs: number;
  raw: RawLog;
}

export class Archive {
  private readonly directory = new TokenDirectory();
  private readonly contracts: ArchiveContracts;
  private readonly counters: ArchiveCounters = { blocks: 0, logs: 0, fills: 0, trades: 0, legs: 0, resolutions: 0, tokens: 0, pending: 0, deadLettered: 0, skipped: {} };
  private readonly timestamps = new Map<number, number>();
  private waiting: Waiting[] = [];
  private lastDirectoryLoad = 0;
  private range: number;
  private head = 0;
  private safeHead = 0;
  private nextBlock = 0;

  constructor(private readonly options: ArchiveOptions) {
    this.contracts = contractsOf(options.config);
    this.range = options.config.range.initial;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  get progress(): ArchiveProgress {
    return { nextBlock: this.nextBlock, head: this.head, safeHead: this.safeHead, range: this.range, counters: { ...this.counters, skipped: { ...this.counters.skipped } } };
  }

  private filter(fromBlock: number, toBlock: number) {
    const c = this.options.config.contracts;
    return {
      fromBlock,
      toBlock,
      address: [c.ctfExchange, c.negRiskExchange, c.ctfExchangeV2, c.negRiskExchangeV2, c.conditionalTokens, c.negRiskAdapter] as Hex[],
      topics: [[...INDEXED_TOPIC0S.exchange, ...INDEXED_TOPIC0S.conditionalTokens, ...INDEXED_TOPIC0S.negRiskAdapter]] as Hex[][],
    };
  }

  private async readSafeHead(): Promise<void> {
    const { config, rpc } = this.options;
    this.head = await rpc.blockNumber('latest');
    this.safeHead = config.finalized ? await rpc.blockNumber('finalized') : this.head - config.confirmations;
  }

  /** Runs until aborted, or until ARCHIVE_END_BLOCK is checkpointed. Returns the last checkpoint. */
  async run(): Promise<number | null> {
    const { config, store, log, signal } = this.options;
    const checkpoint = await readCheckpoint(store, config.source);
    this.nextBlock = checkpoint === null ? config.startBlock : checkpoint + 1;
    const known = await this.directory.load(store);
    this.lastDirectoryLoad = this.now();
    log.info({ source: config.source, fromBlock: this.nextBlock, checkpoint, marketsKnown: known, endpoints: config.rpcUrls.length }, 'archive starting');

    const startedAt = this.now();
    const startBlock = this.nextBlock;
    let lastReport = 0;
    let caughtUp = false;
    let lastCheckpoint = checkpoint;
    let refusalsAtOneBlock = 0;
    const report = (force = false) => {
      recordArchiveProgress(this.head, this.nextBlock - 1);
      const now = this.now();
      if (!force && now - lastReport < (this.options.progressIntervalMs ?? 2_000)) return;
      lastReport = now;
      const seconds = Math.max(0.001, (now - startedAt) / 1000);
      const blocksPerSecond = (this.nextBlock - startBlock) / seconds;
      const lag = Math.max(0, this.safeHead - this.nextBlock + 1);
      log.info(
        {
          block: this.nextBlock - 1,
          head: this.head,
          lagBlocks: lag,
          blocksPerSecond: Math.round(blocksPerSecond * 10) / 10,
          etaSeconds: blocksPerSecond > 0 ? Math.round(lag / blocksPerSecond) : null,
          range: this.range,
          logs: this.counters.logs,
          fills: this.counters.fills,
          legs: this.counters.legs,
          pending: this.waiting.length,
          deadLettered: this.counters.deadLettered,
          requests: this.options.rpc.stats.requests,
        },
        'archive progress',
      );
    };

    try {
      while (!signal.aborted) {
        if (config.endBlock !== null && this.nextBlock > config.endBlock) break;
        await this.readSafeHead();
        const target = Math.min(this.safeHead, config.endBlock ?? Number.POSITIVE_INFINITY);
        if (this.nextBlock > target) {
          if (!caughtUp) {
            caughtUp = true;
            report(true);
            this.options.onCaughtUp?.(this.progress);
          }
          // Waiting fills may find their market meanwhile; then the checkpoint can move on.
          if (this.waiting.length > 0) lastCheckpoint = await this.settle(this.nextBlock - 1, lastCheckpoint);
          await sleep(config.pollMs, signal);
          continue;
        }
        const fromBlock = this.nextBlock;
        const toBlock = Math.min(fromBlock + this.range - 1, target);
        let logs: RawLog[];
        try {
          logs = await this.options.rpc.getLogs(this.filter(fromBlock, toBlock));
          refusalsAtOneBlock = 0;
        } catch (error) {
          if (!(error instanceof RangeTooLargeError)) throw error;
          if (toBlock > fromBlock) {
            this.range = Math.max(1, Math.floor((toBlock - fromBlock + 1) / 2));
            log.info({ fromBlock, toBlock, range: this.range, reason: error.message }, 'range refused: halving');
            continue;
          }
          // One block refused: nothing smaller to ask for; a bounded number of patient retries.
          if (++refusalsAtOneBlock > config.retries) throw error;
          await sleep(this.options.rpc.backoffMs(refusalsAtOneBlock), signal);
          continue;
        }
        await this.process(logs);
        this.nextBlock = toBlock + 1;
        this.counters.blocks += toBlock - fromBlock + 1;
        lastCheckpoint = await this.settle(toBlock, lastCheckpoint);
        if (logs.length < QUIET_RANGE_LOGS && this.range < config.range.max) this.range = Math.min(config.range.max, this.range * 2);
        report();
      }
      if (!signal.aborted && this.waiting.length > 0) {
        // A bounded run ends: what still waits is dead-lettered with its reason, never dropped.
        await this.expireWaiting(true);
        lastCheckpoint = await this.settle(this.nextBlock - 1, lastCheckpoint);
      }
    } catch (error) {
      if (!(error instanceof AbortedError)) throw error;
    }
    report(true);
    log.info({ checkpoint: lastCheckpoint, counters: this.counters }, 'archive stopped');
    return lastCheckpoint;
  }

  /** Decodes and publishes one range's logs, in chain order. */
  private async process(logs: RawLog[]): Promise<void> {
    const decoded: { log: DecodedLog; raw: RawLog }[] = [];
    const deadLetters: ArchiveDeadLetter[] = [];
    for (const raw of logs) {
      if (raw.removed) continue;
      this.counters.logs++;
      try {
        const log = decodeLog(raw);
        if (log) decoded.push({ log, raw });
        else this.skip('not_indexed');
      } catch (error) {
        if (!(error instanceof LogDecodeError)) throw error;
        this.skip('decode_error');
        deadLetters.push(letterOf(raw, error.reason));
      }
    }
    decoded.sort((a, b) => a.log.blockNumber - b.log.blockNumber || a.log.logIndex - b.log.logIndex);
    await this.fillTimestamps(decoded.map((entry) => entry.log));

    const batch = emptyBatch();
    for (const { log, raw } of decoded) this.apply(log, raw, this.timestamps.get(log.blockNumber)!, batch);
    // Registrations of this range may be what earlier waiting fills needed.
    this.retryWaiting(batch);
    await this.publish(batch);
    if (deadLetters.length > 0) await this.deadLetter(deadLetters);
  }

  private apply(log: DecodedLog, raw: RawLog, ts: number, batch: Batch, waitingSince = this.now()): boolean {
    const outcome = factsOf(log, ts, this.directory, this.contracts);
    switch (outcome.kind) {
      case 'skipped':
        this.skip(outcome.reason);
        return true;
      case 'pending':
        this.waiting.push({ log, ts, tokenId: outcome.tokenId, sinceMs: waitingSince, raw });
        return false;
      case 'events':
        batch.markets.push(...outcome.markets);
        batch.fills.push(...outcome.fills);
        batch.trades.push(...outcome.trades);
        batch.legs.push(...outcome.legs);
        return true;
    }
  }

  private retryWaiting(batch: Batch): void {
    if (this.waiting.length === 0) return;
    const still = this.waiting;
    this.waiting = [];
    for (const entry of still) this.apply(entry.log, entry.raw, entry.ts, batch, entry.sinceMs);
  }

  private async publish(batch: Batch): Promise<void> {
    const { sink } = this.options;
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
   * `tokens` events land), dead-letters what waited too long, makes everything durable, and checkpoints up
   * to the block before the oldest fill still waiting.
   */
  private async settle(toBlock: number, lastCheckpoint: number | null): Promise<number | null> {
    if (this.waiting.length > 0 && this.now() - this.lastDirectoryLoad >= DIRECTORY_RELOAD_MS) {
      await this.directory.load(this.options.store);
      this.lastDirectoryLoad = this.now();
      const batch = emptyBatch();
      this.retryWaiting(batch);
      await this.publish(batch);
    }
    await this.expireWaiting(false);
    this.counters.pending = this.waiting.length;
    await this.options.sink.durable();
    const oldestWaiting = this.waiting.reduce((oldest, entry) => Math.min(oldest, entry.log.blockNumber), Number.POSITIVE_INFINITY);
    const checkpoint = Math.min(toBlock, oldestWaiting - 1);
    if (lastCheckpoint !== null && checkpoint <= lastCheckpoint) return lastCheckpoint;
    await writeCheckpoint(this.options.store, this.options.config.source, checkpoint);
    this.options.onCheckpoint?.(checkpoint, this.progress);
    return checkpoint;
  }

  private async expireWaiting(all: boolean): Promise<void> {
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
        letterOf(entry.raw, `unknown token ${entry.tokenId}: no market claims it (no TokenRegistered, no tokens event) after ${Math.round((now - entry.sinceMs) / 1000)} s`),
      ),
    );
  }

  private async deadLetter(letters: ArchiveDeadLetter[]): Promise<void> {
    await this.options.sink.deadLetter(letters);
    this.counters.deadLettered += letters.length;
    for (const letter of letters.slice(0, 20)) this.options.log.warn({ log: letter.key, reason: letter.reason }, 'archive log dead-lettered');
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
}

function emptyBatch(): Batch {
  return { markets: [], fills: [], trades: [], legs: [] };
}

function letterOf(raw: RawLog, reason: string): ArchiveDeadLetter {
  const block = Number(BigInt(raw.blockNumber));
  const logIndex = raw.logIndex === undefined ? 0 : Number(BigInt(raw.logIndex));
  return { position: block * SEQ_PER_BLOCK + logIndex, key: `${raw.transactionHash.toLowerCase()}:${logIndex}`, value: JSON.stringify(raw), reason };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
