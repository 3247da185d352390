/**
 * Gathers prepared slices from any number of partitions into one write, so that the size of a write
 * (and of a ClickHouse insert) does not depend on how the log happens to cut its fetches. A write
 * happens when the batch is full or `lingerMs` after its first slice. Writes are serialized; while one
 * runs, the next batch fills, and an add() that finds it full waits: at most two batches are held
 * (backpressure, not buffering), besides one whose offsets are being committed.
 *
 * A batch's offsets are committed once its write is durable, in the order of the writes; the next write
 * does not wait for that commit. A commit is a round trip to the log, and during a catch-up it came
 * after every write on the worker's critical path (the answer waits for an event loop busy decoding the
 * next fetch; bench:ingest in test/bench/RESULTS.md). Committing a later
 * batch after an earlier commit failed is safe: both writes are durable, and offsets are positions.
 *
 * When a write or a commit fails, nothing more is committed of it, the accumulator refuses new slices,
 * and `onFailure` tells the consumer to start again from the committed offsets (then `reset()` reopens
 * it); what was written but not committed is read and written again (idempotent: pipeline.ts).
 */
import type { Logger } from '../../log.ts';
import { rangeOf, type BatchProcessor, type PartitionSlice, type SliceRange } from './types.ts';

export interface AccumulatorLimits {
  maxBatchMessages: number;
  maxBatchBytes: number;
  lingerMs: number;
  /** A batch this large is written as soon as the previous write is done, without lingering (default: never early). */
  eagerBatchMessages?: number | undefined;
  /** The most messages prepared in one synchronous step (default PREPARE_PART_MESSAGES). */
  preparePartMessages?: number | undefined;
}

interface Pending<Prepared> {
  prepared: Prepared[];
  ranges: SliceRange[];
  messages: number;
  bytes: number;
}

function sliceBytes(slice: PartitionSlice): number {
  let bytes = 0;
  for (const message of slice.messages) bytes += (message.value?.length ?? 0) + (message.key?.length ?? 0);
  return bytes;
}

/** Pause before reading again after the n-th consecutive failed write: 0.5 s doubling, at most 30 s. */
export function retryDelayMs(consecutiveFailures: number): number {
  return Math.min(30_000, 250 * 2 ** Math.min(Math.max(consecutiveFailures, 1), 7));
}

/**
 * The most messages prepared in one synchronous step: a few milliseconds of decoding (garbage collection
 * included), so a read served by the same process waits at most about that for its turn.
 */
export const PREPARE_PART_MESSAGES = 500;

/** One turn of the event loop (I/O callbacks run before it resolves). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

const empty = <Prepared>(): Pending<Prepared> => ({ prepared: [], ranges: [], messages: 0, bytes: 0 });

export class SliceAccumulator<Prepared> {
  private pending: Pending<Prepared> = empty();
  private writing: Promise<void> = Promise.resolve();
  /** The commits of written batches, in the order of their writes. */
  private committing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  /** A write of the pending batch is already chained (it takes the batch when it starts). */
  private flushQueued = false;
  private failure: unknown;
  /** Set by close(): the consumer is stopping, and nothing offered after its final write may be written. */
  private closing = false;
  /** Bumped by reset(): a write that started before a reset must not commit into the new generation. */
  private generation = 0;

  constructor(
    private readonly processor: BatchProcessor<Prepared>,
    private readonly commit: (ranges: SliceRange[]) => Promise<void>,
    private readonly limits: AccumulatorLimits,
    private readonly log: Logger,
    /** Called once per failed write; the consumer rewinds to its committed offsets and calls reset(). */
    private readonly onFailure: (error: unknown) => void = () => {},
  ) {}

  /** True from a failed write until reset(): slices offered meanwhile are refused. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /**
   * Prepares a slice and adds it to the next write; waits while the batch is full. Returns false when
   * the slice was refused (after a failed write, or a reset while it was being added): the caller must
   * not advance past it. A long slice is prepared in parts of at most `preparePartMessages`, with a turn
   * of the event loop between parts: decoding is synchronous, and the API served by the same process
   * (the `all` role) must not wait behind a whole fetch of it. Between parts, `stillOwned` (the
   * consumer still runs and holds the partition) must hold, or the rest is refused.
   */
  async add(slice: PartitionSlice, stillOwned: () => boolean = () => true): Promise<boolean> {
    const count = slice.messages.length;
    const part = this.limits.preparePartMessages ?? PREPARE_PART_MESSAGES;
    if (count <= part) return this.addPart(slice);
    const generation = this.generation;
    for (let start = 0; start < count; start += part) {
      if (start > 0) {
        await turn();
        // A reset meanwhile dropped the parts held so far: the rest must not be written after them.
        if (generation !== this.generation || !stillOwned()) return false;
      }
      if (!(await this.addPart({ ...slice, messages: slice.messages.slice(start, start + part) }))) return false;
    }
    return true;
  }

  private async addPart(slice: PartitionSlice): Promise<boolean> {
    if (this.failure !== undefined || this.closing) return false;
    this.pending.prepared.push(this.processor.prepare(slice));
    this.pending.ranges.push(rangeOf(slice));
    this.pending.messages += slice.messages.length;
    this.pending.bytes += sliceBytes(slice);
    if (this.pending.messages >= this.limits.maxBatchMessages || this.pending.bytes >= this.limits.maxBatchBytes) {
      await this.flush().catch(() => {
        // The failure is handled once, in flush (onFailure); this caller only needs to stop.
      });
      return this.failure === undefined;
    }
    if (this.pending.messages >= (this.limits.eagerBatchMessages ?? Number.POSITIVE_INFINITY)) {
      if (!this.flushQueued) this.flush().catch(() => {});
      return true;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.flush().catch(() => {});
    }, this.limits.lingerMs);
    return true;
  }

  /**
   * Writes and commits everything added so far; resolves when that is durable, rejects if it failed.
   * The batch is taken when its write starts, not when flush() is called: while a write runs, the
   * next batch keeps growing (up to the limits), so a busy store gets fewer, larger writes.
   */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const generation = this.generation;
    this.flushQueued = true;
    let committed: Promise<void> = Promise.resolve();
    const written = this.writing.then(async () => {
      this.flushQueued = false;
      if (generation !== this.generation || this.failure !== undefined) return;
      const batch = this.pending;
      this.pending = empty();
      if (batch.ranges.length === 0) return;
      try {
        await this.processor.write(batch.prepared, batch.ranges);
      } catch (error) {
        this.fail(error, batch, generation, 'write failed; nothing of it was committed');
        throw error;
      }
      // After the commits of the writes before it; the next write starts meanwhile.
      committed = this.committing.then(async () => {
        // A reset since: these offsets belong to a generation the consumer has left.
        if (generation !== this.generation) return;
        try {
          await this.commit(batch.ranges);
        } catch (error) {
          this.fail(error, batch, generation, 'commit failed; the write is durable and will be read and written again');
          throw error;
        }
        this.processor.committed?.(batch.prepared, batch.ranges);
      });
      this.committing = committed.catch(() => {});
    });
    this.writing = written.catch(() => {});
    return written.then(() => committed);
  }

  /** The first failure of a generation: refuse slices, drop what is held, tell the consumer. */
  private fail(error: unknown, batch: Pending<Prepared>, generation: number, message: string): void {
    if (this.failure !== undefined || generation !== this.generation) return;
    this.failure = error;
    // Whatever else is held follows the failed batch in its partitions: drop it too.
    this.pending = empty();
    this.log.error({ err: error, ranges: batch.ranges.length, messages: batch.messages }, message);
    this.onFailure(error);
  }

  /**
   * The consumer's stop: refuses every slice (and part of one) offered from now on, then writes and
   * commits what it holds. Without the refusal, a handler still adding the parts of a long fetch would
   * write them after this final write, while the consumer leaves its group: rows in the store whose
   * offsets may never be committed, read and written again by the next worker.
   */
  close(): Promise<void> {
    this.closing = true;
    return this.flush();
  }

  /**
   * Forgets what is held but not yet written (after a rebalance, or to recover from a failure): those
   * messages are uncommitted and will be read again from the committed offsets.
   */
  async reset(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.generation += 1;
    this.pending = empty();
    // A write or commit under way finishes first (a commit that started before the reset may land).
    await this.writing;
    await this.committing;
    this.failure = undefined;
  }
}
