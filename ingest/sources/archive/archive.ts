/**
 * The archive loop: reads the chain's logs over block ranges that adapt to the node, turns them into events,
 * publishes them, and moves a durable checkpoint only once everything before it is durable on the log.
 *
 * Throughput: the next range is requested while the current one is decoded and published (the node's
 * latency and JSON overlap the archive's work); each log is decoded and checked once, at the boundary
 * (decode.ts), and the events built from it are published as they are, in one batch per topic and range.
 *
 * Reorg safety: only blocks at least `confirmations` below the head (or up to the node's `finalized` block)
 * are read. The checkpoint keeps the hash of its block and a window of recent (block, hash) pairs; each
 * range's first block must name the last published block's hash as its parent, and a restart compares the
 * checkpoint's hash with the node's. A mismatch is a reorg deeper than the confirmations: the events of the
 * replaced blocks are already ingested and the contract has no retraction, so the archive stops with
 * ArchiveReorgError (logged with both hashes and the common ancestor it can find, counted in a metric)
 * rather than publish a second history on top of the first.
 *
 * Resumption: the checkpoint is the last block whose events are all durable; after a restart or a crash the
 * archive reads again from the block after it. Events between the checkpoint and the crash are published a
 * second time with the same ids (`txHash:logIndex`), which ingest deduplicates.
 */
import type { ArchiveConfig } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import type { Store } from '../../../projections/store.ts';
import type { Decoding, RawLog } from './decode.ts';
import { createLogDecoder, type LogDecoder } from './decode-pool.ts';
import type { ArchiveContracts } from './facts.ts';
import { AbortedError, RangeTooLargeError, type BlockHeader, type PolygonRpc } from './rpc.ts';
import { Finality } from './finality.ts';
import { HeadStage } from './head.ts';
import { readCheckpoint, writeCheckpoint, type BlockRef, type Checkpoint } from './checkpoint.ts';
import { contractsOf, intermediaryTransfersFilter, logsFilter } from './contracts.ts';
import { FactPublisher, type ArchiveCounters, type ArchiveSink } from './fact-publisher.ts';
import { ArchiveReorgError, disagreementOf, UNSETTLED_READS, type Disagreement } from './reorg.ts';
import { sleepUnlessAborted } from '../../sleep.ts';
import { MAX_RETRY_AFTER_MS } from '../../retry-after.ts';
import { watchLoop } from '../../../metrics/progress.ts';
import { recordArchiveProgress, recordArchiveReorg, recordFinalizedLag } from '../../../metrics/registry.ts';

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
  /** Where logs are decoded (default: `decodeWorkers` worker threads, closed when run() returns). */
  decoder?: LogDecoder;
  /** Progress log interval. */
  progressIntervalMs?: number;
  /** Checkpoints (each one waits until everything before it is durable) at most this often while backfilling. */
  checkpointIntervalMs?: number;
  now?: () => number;
}

/** A quiet range (fewer logs than this) lets the next one grow. */
const QUIET_RANGE_LOGS = 5_000;
/**
 * A backfill checkpoints at most once a second (and always at the safe head, at the end and after a stop):
 * each checkpoint waits for everything before it to be durable (in process: ingested) and writes a row, which
 * every range would otherwise pay. A crash republishes at most that much, with the same ids.
 */
const CHECKPOINT_INTERVAL_MS = 1_000;
/** Recent (block, hash) pairs kept in the checkpoint: how far back a reorg's common ancestor can be found. */
const RECENT_HASHES = 32;

/** One range as the node answered it: its logs and the headers of its first and last block. */
interface Fetched {
  from: number;
  to: number;
  logs: RawLog[];
  first: BlockHeader;
  last: BlockHeader;
  /** The logs not marked `removed`, in the node's order. */
  live: RawLog[];
  /** Their decodings, in the same order: started as soon as the logs arrive (on the decode workers). */
  decodings: Promise<Decoding[]>;
}

/** A range requested ahead, while the previous one is processed. */
interface Ahead {
  from: number;
  to: number;
  result: Promise<Fetched>;
}

export class Archive {
  private readonly contracts: ArchiveContracts;
  /** The ranges' facts to topics, and the fills and legs waiting for their market. */
  private readonly facts: FactPublisher;
  private decoder: LogDecoder | null = null;
  private range: number;
  private head = 0;
  private safeHead = 0;
  private headReadAt = Number.NEGATIVE_INFINITY;
  private checkpointedAt = Number.NEGATIVE_INFINITY;
  /** The checkpoint being written (durability awaited, then the row). */
  private checkpointing: Promise<void> = Promise.resolve();
  private nextBlock = 0;
  /** The last block published (the end of the last range), whose hash the next range's parent must be. */
  private last: BlockRef | null = null;
  /** Recent range ends, oldest first (at most RECENT_HASHES). */
  private recent: BlockRef[] = [];
  /** Where this source started (null: unknown, its checkpoint predates the record). */
  private startBlock: number | null = null;

  private readonly finality: Finality;
  /** The node's final block, as last read (the final stage reads up to it). */
  private finalBlock = 0;
  /** The head stage while it runs (null: not configured, or a bounded run). */
  private headStage: HeadStage | null = null;
  /** Ends the final stage's wait at the head (a newer final block is known). */
  private wake: (() => void) | null = null;
  /** The head stage learned of a newer final block since the final stage last read its safe head. */
  private newerFinal = false;

  constructor(private readonly options: ArchiveOptions) {
    this.contracts = contractsOf(options.config);
    this.facts = new FactPublisher({
      config: options.config,
      rpc: options.rpc,
      sink: options.sink,
      store: options.store,
      log: options.log,
      contracts: this.contracts,
      now: () => this.now(),
    });
    this.range = options.config.range.initial;
    this.finality = new Finality(options.config, options.rpc, options.log);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  get progress(): ArchiveProgress {
    return {
      nextBlock: this.nextBlock,
      head: this.head,
      safeHead: this.safeHead,
      range: this.range,
      counters: { ...this.facts.counters, skipped: { ...this.facts.counters.skipped } },
    };
  }

  private async readSafeHead(): Promise<void> {
    this.head = await this.options.rpc.blockNumber();
    this.finalBlock = (await this.finality.final(this.head)).number;
    this.safeHead = this.finalBlock;
    this.headReadAt = this.now();
  }

  /**
   * Requests one range: its logs and its last block's header together, then its first block's header. The
   * first header is read last on purpose: if a reorg replaced the block before the range at any moment up to
   * then, that header names the new parent and the continuity check stops the archive.
   */
  private async fetchRange(from: number, to: number): Promise<Fetched> {
    const { rpc } = this.options;
    // Decoding starts as soon as the logs arrive, while the headers are read and earlier ranges published.
    const logs = Promise.all([
      rpc.getLogs(logsFilter(this.options.config, from, to)),
      rpc.getLogs(intermediaryTransfersFilter(this.options.config, from, to)),
    ]).then(([ours, transfers]) => {
      const logs = transfers.length === 0 ? ours : ours.concat(transfers);
      return { logs, ...this.startDecoding(logs) };
    });
    const [{ logs: all, live, decodings }, last] = await Promise.all([logs, rpc.blockHeader(to)]);
    const first = from === to ? last : await rpc.blockHeader(from);
    return { from, to, logs: all, first, last, live, decodings };
  }

  /**
   * The range's live logs handed to the decoder. Whatever fails here (an answer that is not a list of logs)
   * fails in process(), where decoding always failed: the range's checks run first, as they did.
   */
  private startDecoding(logs: RawLog[]): { live: RawLog[]; decodings: Promise<Decoding[]> } {
    let live: RawLog[] = [];
    let decodings: Promise<Decoding[]>;
    try {
      live = logs.filter((raw) => !raw.removed);
      decodings = this.decoder!.decode(live);
    } catch (error) {
      decodings = Promise.reject(error);
    }
    // Awaited by process(), or dropped with the range (a refused or inconsistent read): never unhandled.
    decodings.catch(() => {});
    return { live, decodings };
  }

  private ahead(from: number, to: number): Ahead {
    const result = this.fetchRange(from, to);
    // Settled later (or dropped when the range changes); never an unhandled rejection meanwhile.
    result.catch(() => {});
    return { from, to, result };
  }

  /** Runs until aborted, or until ARCHIVE_END_BLOCK is checkpointed. Returns the last checkpoint. */
  async run(): Promise<number | null> {
    const { config, log } = this.options;
    const decoder = this.options.decoder ?? createLogDecoder(config.decodeWorkers, log);
    this.decoder = decoder;
    // The head stage stops with the final stage, whichever way that ends.
    const stopHead = new AbortController();
    const stopOnAbort = () => stopHead.abort();
    this.options.signal.addEventListener('abort', stopOnAbort, { once: true });
    let head: Promise<void> = Promise.resolve();
    try {
      await this.finality.probe();
      const publishHead = this.options.sink.publishHead;
      if (config.head && config.endBlock === null && publishHead) {
        this.headStage = new HeadStage({
          config,
          rpc: this.options.rpc,
          finality: this.finality,
          decoder,
          directory: this.facts.directory,
          contracts: this.contracts,
          store: this.options.store,
          sink: { publishHead },
          log: log.child({ stage: 'head' }),
          signal: stopHead.signal,
          filters: (from, to) => [logsFilter(config, from, to), intermediaryTransfersFilter(config, from, to)],
          onFinal: (block) => {
            if (block <= this.safeHead) return;
            this.newerFinal = true;
            this.wake?.();
          },
          ...(this.options.now ? { now: this.options.now } : {}),
        });
        head = this.headStage.run();
        head.catch(() => {});
      }
      return await this.backfill();
    } finally {
      stopHead.abort();
      this.options.signal.removeEventListener('abort', stopOnAbort);
      await head.catch((error: unknown) => log.warn({ err: error }, 'archive head stage stopped with an error'));
      if (this.options.decoder === undefined) await decoder.close();
    }
  }

  private async backfill(): Promise<number | null> {
    const { config, store, log, signal } = this.options;
    const checkpoint = await readCheckpoint(store, config.source);
    this.nextBlock = checkpoint === null ? config.startBlock : checkpoint.block + 1;
    // Only a first run knows where the source starts; a resumed one carries what its checkpoint says.
    this.startBlock = checkpoint === null ? config.startBlock : checkpoint.startBlock;
    const known = await this.facts.loadDirectory();
    log.info(
      {
        source: config.source,
        fromBlock: this.nextBlock,
        checkpoint: checkpoint?.block ?? null,
        checkpointHash: checkpoint?.hash || null,
        marketsKnown: known,
        endpoints: config.rpcUrls.length,
        decodeWorkers: this.decoder!.workers,
        finality: this.finality.mode,
        confirmations: this.finality.mode === 'confirmations' ? config.confirmations : null,
        headStage: this.headStage !== null,
      },
      'archive starting',
    );

    const startedAt = this.now();
    const startBlock = this.nextBlock;
    let lastReport = 0;
    let caughtUp = false;
    let lastCheckpoint = checkpoint?.block ?? null;
    let refusalsAtOneBlock = 0;
    let inconsistentAnswers = 0;
    let ahead: Ahead | null = null;
    const report = (force = false) => {
      recordArchiveProgress(this.head, this.nextBlock - 1);
      recordFinalizedLag(this.last?.ts ?? null, this.finalBlock - (this.nextBlock - 1));
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
          logs: this.facts.counters.logs,
          fills: this.facts.counters.fills,
          legs: this.facts.counters.legs,
          pending: this.facts.pending,
          deadLettered: this.facts.counters.deadLettered,
          requests: this.options.rpc.stats.requests,
        },
        'archive progress',
      );
    };

    // Every pass of the loop is one range (or one poll at the head); one range waits at most on one
    // request's retries, each bounded by its timeout and the longest backoff or Retry-After honoured.
    const progress = watchLoop(
      'archive',
      (config.retries + 1) * (config.timeoutMs + Math.max(config.retryMaxMs, MAX_RETRY_AFTER_MS)) + config.pollMs,
      () => this.now(),
    );
    try {
      if (checkpoint !== null) await this.resumeFrom(checkpoint);
      while (!signal.aborted) {
        progress.advanced();
        if (config.endBlock !== null && this.nextBlock > config.endBlock) break;
        // The head is read when the known safe head would cut the next range short, and at least every poll.
        if (this.nextBlock + this.range - 1 > this.safeHead || this.now() - this.headReadAt >= config.pollMs)
          await this.readSafeHead();
        const target = Math.min(this.safeHead, config.endBlock ?? Number.POSITIVE_INFINITY);
        if (this.nextBlock > target) {
          ahead = null;
          if (!caughtUp) {
            caughtUp = true;
            report(true);
            this.options.onCaughtUp?.(this.progress);
          }
          // Waiting fills may find their market meanwhile; then the checkpoint can move on.
          if (this.facts.pending > 0) lastCheckpoint = await this.settle(this.nextBlock - 1, lastCheckpoint, true);
          // The head stage wakes the final stage as soon as it learns of a newer final block (also when it
          // learned it while the final stage was busy: then the final stage does not sleep at all).
          if (!this.newerFinal)
            await Promise.race([
              sleepUnlessAborted(config.pollMs, signal),
              new Promise<void>((resolve) => (this.wake = resolve)),
            ]);
          this.wake = null;
          if (this.newerFinal) this.headReadAt = Number.NEGATIVE_INFINITY;
          this.newerFinal = false;
          continue;
        }
        const fromBlock = this.nextBlock;
        const request: Ahead =
          ahead !== null && ahead.from === fromBlock && ahead.to <= target
            ? ahead
            : this.ahead(fromBlock, Math.min(fromBlock + this.range - 1, target));
        ahead = null;
        let fetched: Fetched;
        try {
          fetched = await request.result;
          refusalsAtOneBlock = 0;
        } catch (error) {
          if (!(error instanceof RangeTooLargeError)) throw error;
          if (request.to > fromBlock) {
            this.range = Math.max(1, Math.floor((request.to - fromBlock + 1) / 2));
            log.info(
              { fromBlock, toBlock: request.to, range: this.range, reason: error.message },
              'range refused: halving',
            );
            continue;
          }
          // One block refused: nothing smaller to ask for; a bounded number of patient retries.
          if (++refusalsAtOneBlock > config.retries) throw error;
          await sleepUnlessAborted(this.options.rpc.backoffMs(refusalsAtOneBlock), signal);
          continue;
        }
        // Ask for the next range now: the node works on it while this one is decoded and published.
        if (fetched.logs.length < QUIET_RANGE_LOGS && this.range < config.range.max)
          this.range = Math.min(config.range.max, this.range * 2);
        const nextTo = Math.min(fetched.to + this.range, target);
        if (fetched.to + 1 <= nextTo && !signal.aborted) ahead = this.ahead(fetched.to + 1, nextTo);

        await this.checkContinuity(fetched);
        const disagreement = disagreementOf(fetched);
        if (disagreement !== null) {
          // The node answered the logs and the headers from different forks (a reorg while it was asked):
          // nothing of the range is published; it is read again after a pause, a bounded number of times,
          // then it is a reorg below the safe head and the archive stops as for any deeper reorg.
          ahead = null;
          if (++inconsistentAnswers >= UNSETTLED_READS) await this.unsettled(disagreement, inconsistentAnswers);
          log.warn(
            {
              fromBlock: fetched.from,
              toBlock: fetched.to,
              block: disagreement.block,
              logsHash: disagreement.logsHash,
              headerHash: disagreement.headerHash,
              read: inconsistentAnswers,
            },
            'logs and headers of a range name different block hashes: reading it again',
          );
          await sleepUnlessAborted(this.options.rpc.backoffMs(inconsistentAnswers), signal);
          continue;
        }
        inconsistentAnswers = 0;
        this.seedTimestamps(fetched);
        await this.facts.process(fetched);
        this.nextBlock = fetched.to + 1;
        this.facts.counters.blocks += fetched.to - fetched.from + 1;
        this.published({ block: fetched.to, hash: fetched.last.hash, ts: fetched.last.timestamp });
        lastCheckpoint = await this.settle(fetched.to, lastCheckpoint, fetched.to >= target);
        report();
      }
      if (!signal.aborted && this.facts.pending > 0) {
        // A bounded run ends: what still waits is dead-lettered with its reason, never dropped.
        await this.facts.expireWaiting(true);
      }
    } catch (error) {
      progress.stop();
      if (!(error instanceof AbortedError)) {
        // A checkpoint in flight lands (or fails) before the archive stops with the error.
        await this.checkpointing.catch(() => {});
        throw error;
      }
    }
    progress.stop();
    // Whatever was processed is checkpointed before returning (ranges are processed whole or not at all).
    try {
      lastCheckpoint = await this.settle(this.nextBlock - 1, lastCheckpoint, true);
    } catch (error) {
      if (!(error instanceof AbortedError)) throw error;
    }
    report(true);
    log.info(
      { checkpoint: lastCheckpoint, counters: this.facts.counters, head: this.headStage?.counters ?? null },
      'archive stopped',
    );
    return lastCheckpoint;
  }

  /** A restart: the checkpoint's block must still be the node's (a reorg while the archive was away). */
  private async resumeFrom(checkpoint: Checkpoint): Promise<void> {
    this.recent = checkpoint.recent.slice(-RECENT_HASHES);
    if (checkpoint.hash === '') {
      this.options.log.info(
        { checkpoint: checkpoint.block },
        'checkpoint without a block hash (written before hashes were kept): continuity is checked from the next range on',
      );
      return;
    }
    const header = await this.options.rpc.blockHeader(checkpoint.block);
    if (header.hash !== checkpoint.hash.toLowerCase())
      await this.reorg({ block: checkpoint.block, hash: checkpoint.hash }, header.hash);
    this.last = { block: checkpoint.block, hash: checkpoint.hash };
  }

  /** The range's first block must be the child of the last block published. */
  private async checkContinuity(fetched: Fetched): Promise<void> {
    const last = this.last;
    // A node that names no parent (none we know of) cannot be checked here; the restart check still holds.
    if (last === null || last.block !== fetched.from - 1 || fetched.first.parentHash === '') return;
    if (fetched.first.parentHash !== last.hash.toLowerCase()) await this.reorg(last, fetched.first.parentHash);
  }

  private published(ref: BlockRef): void {
    this.last = ref;
    this.recent.push(ref);
    if (this.recent.length > RECENT_HASHES) this.recent.splice(0, this.recent.length - RECENT_HASHES);
  }

  /**
   * A published block's hash is not the node's any more. Finds the newest block of the window the node still
   * agrees with, says everything loudly, counts it, and stops.
   */
  private async reorg(published: BlockRef, nodeHash: string): Promise<never> {
    this.stop(
      new ArchiveReorgError(
        published.block,
        published.hash,
        nodeHash,
        await this.commonAncestorBefore(published.block),
      ),
    );
  }

  /** A range's logs and headers kept disagreeing on a block's hash: a reorg below the safe head. */
  private async unsettled(disagreement: Disagreement, reads: number): Promise<never> {
    const { block, logsHash, headerHash } = disagreement;
    this.stop(
      new ArchiveReorgError(block, logsHash, headerHash, await this.commonAncestorBefore(block), 'unsettled', reads),
    );
  }

  /** The newest block of the window before `block` whose hash the node still has. */
  private async commonAncestorBefore(block: number): Promise<number | null> {
    for (let index = this.recent.length - 1; index >= 0; index--) {
      const ref = this.recent[index]!;
      if (ref.block >= block) continue;
      const header = await this.options.rpc.blockHeader(ref.block);
      if (header.hash === ref.hash.toLowerCase()) return ref.block;
    }
    return null;
  }

  private stop(error: ArchiveReorgError): never {
    recordArchiveReorg();
    this.options.log.error(
      {
        block: error.block,
        publishedHash: error.publishedHash,
        nodeHash: error.nodeHash,
        commonAncestor: error.commonAncestor,
        kind: error.kind,
        confirmations: this.options.config.confirmations,
        finalized: this.options.config.finalized,
      },
      `REORG DEEPER THAN THE CONFIRMATIONS: ${error.message}`,
    );
    throw error;
  }

  /** Block timestamps the headers of the range already told. */
  private seedTimestamps(fetched: Fetched): void {
    this.facts.timestamps.set(fetched.first.number, fetched.first.timestamp);
    this.facts.timestamps.set(fetched.last.number, fetched.last.timestamp);
  }

  /**
   * After a range: settles what waits (fact-publisher.ts), makes everything durable, and checkpoints up to
   * the block before the oldest fill still waiting.
   */
  private async settle(toBlock: number, lastCheckpoint: number | null, force: boolean): Promise<number | null> {
    await this.facts.settleWaiting();
    if (!force && this.now() - this.checkpointedAt < (this.options.checkpointIntervalMs ?? CHECKPOINT_INTERVAL_MS))
      return lastCheckpoint;
    this.checkpointedAt = this.now();
    // One checkpoint at a time; a failed one fails the archive here.
    await this.checkpointing;
    const checkpoint = Math.min(toBlock, this.facts.oldestWaitingBlock - 1);
    if (lastCheckpoint !== null && checkpoint <= lastCheckpoint) return lastCheckpoint;
    const { hash, ts } = await this.headerOf(checkpoint);
    const recent = this.recent.filter((ref) => ref.block <= checkpoint).map(({ block, hash }) => ({ block, hash }));
    // Everything published so far, the checkpoint's range included, must be durable first; the archive reads
    // and publishes on meanwhile (a backfill does not stall on the log's acknowledgements and the row's write).
    const durable = this.options.sink.durable();
    const write = durable
      .then(() =>
        writeCheckpoint(this.options.store, this.options.config.source, {
          block: checkpoint,
          hash,
          recent,
          startBlock: this.startBlock,
          blockTs: ts,
        }),
      )
      .then(() => this.options.onCheckpoint?.(checkpoint, this.progress));
    this.checkpointing = write;
    write.catch(() => {});
    if (force) await write;
    return checkpoint;
  }

  /** The hash and time of a block at or before the last published one: from the window, else from the node. */
  private async headerOf(block: number): Promise<{ hash: string; ts: number | null }> {
    for (let index = this.recent.length - 1; index >= 0; index--) {
      const ref = this.recent[index]!;
      if (ref.block === block) return { hash: ref.hash, ts: ref.ts ?? this.facts.timestamps.get(block) ?? null };
    }
    if (block < this.options.config.startBlock) return { hash: '', ts: null };
    const header = await this.options.rpc.blockHeader(block);
    return { hash: header.hash, ts: header.timestamp };
  }
}
