/**
 * The ingest pipeline. `prepare` decodes and validates one slice of one partition as it arrives (bad
 * messages become dead letters, the rest landing rows); `write` makes the slices of all partitions that
 * one write gathered durable:
 *   1. inserts the rows, one insert per table, with a deduplication token built from the slices' topic,
 *      partition and offset ranges (views on fills, position_legs and trades stage the touched keys
 *      with the insert, under the same token),
 *   2. stages the holders of markets that resolved, and queues the staged batches for the refresher,
 *   3. publishes the dead letters (topic + table) with their reason and original bytes,
 * and only then returns, so that the consumer commits offsets after ClickHouse acknowledged everything.
 *
 * Why an event seen twice changes nothing: a redelivery of the same offset ranges repeats the same
 * tokens, so ClickHouse drops the repeated inserts and the stagings fed by them. Anything else seen
 * twice (offsets cut into other writes, a replay of exported files, one fill from both sources) lands
 * again but collapses on its event id (ReplacingMergeTree, read with FINAL); the rollups are recomputed
 * from those deduplicated tables, never added to, so a repeated staging recomputes the same values.
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { stageResolvedMarkets } from '../projections/rollups.ts';
import type { RollupRefresher } from './rollup-refresher.ts';
import { EVERYTHING_CHANGED, type ChangeListener } from '../projections/changes.ts';
import { createHash } from 'node:crypto';
import type { BatchProcessor, LogProducer, PartitionSlice, SliceRange } from './bus/types.ts';
import { TOPICS, type LandingTable, type TopicNames } from './contract/topics.ts';
import { decodeBatch, type DecodedBatch, type DeadLetter, type TableRows } from './decode.ts';
import {
  deadLetters as deadLetterCount,
  ingestBatchEvents,
  recordFreshness,
  ingestEvents,
  ingestInsertDuration,
  ingestWriteDuration,
  ingestWriteRetries,
} from '../metrics/registry.ts';

export interface PipelineOptions {
  store: Store;
  topics: TopicNames;
  /** Where dead letters are published (the dead-letter topic of the same log). */
  deadLetterProducer: LogProducer;
  log: Logger;
  writeRetries: number;
  retryBaseMs: number;
  /** Recomputes the rollups of staged batches. */
  rollups: Pick<RollupRefresher, 'enqueue'>;
  /** Told what each write changed, once its rows are readable (the read cache of this process drops its answers). */
  changes?: ChangeListener | undefined;
}

/** One deterministic token per set of offset ranges: a redelivery of the same ranges is a no-op. */
function writeToken(ranges: readonly SliceRange[]): string {
  return createHash('sha256')
    .update(
      ranges.map((range) => `${range.topic}|${range.partition}|${range.firstOffset}-${range.lastOffset}`).join(','),
    )
    .digest('hex')
    .slice(0, 40);
}

/**
 * ClickHouse error codes that blame the inserted data (parsing, types, values), as opposed to the
 * server's state: only these make the pipeline split an insert to dead-letter the offending rows.
 */
const BAD_DATA_ERROR_CODES = new Set(['6', '26', '27', '32', '38', '41', '53', '69', '70', '72', '117', '131', '135']);

function isBadDataError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && BAD_DATA_ERROR_CODES.has(code);
}

/** Landing tables whose inserts stage keys for the rollup refresher (migrations 0002 and 0003). */
const STAGING_TABLES: ReadonlySet<LandingTable> = new Set(['fills', 'position_legs', 'trades']);

/** Rows ClickHouse refused (by index) and the tokens of the inserts that went in. */
interface IsolatedInsert {
  rejected: { index: number; reason: string }[];
  tokens: string[];
}

export interface PipelineStats {
  batches: number;
  events: number;
  deadLetters: number;
  rowsIsolated: number;
}

/** Reported once per slice of the log, after the write that covered it is durable and committed. */
export interface BatchIngested {
  topic: string;
  partition: number;
  firstOffset: string;
  lastOffset: string;
  valid: number;
  deadLetters: number;
}

/** Fills younger than this are live: their ingest is measured for freshness. */
const LIVE_FILL_AGE_S = 600;

export class IngestPipeline implements BatchProcessor<DecodedBatch> {
  readonly stats: PipelineStats = { batches: 0, events: 0, deadLetters: 0, rowsIsolated: 0 };
  /** Emits 'batch' (BatchIngested) for each slice once it is durable and its offsets are committed. */
  readonly events = new EventEmitter<{ batch: [BatchIngested] }>();
  private readonly log: Logger;

  constructor(private readonly options: PipelineOptions) {
    this.log = options.log.child({ name: 'pipeline' });
  }

  /** CPU work as a slice arrives: decode and validate (overlaps with the previous write). */
  prepare(slice: PartitionSlice): DecodedBatch {
    return decodeBatch(this.options.topics.idOf(slice.topic), slice.topic, slice.partition, slice.messages);
  }

  /** Makes prepared slices durable; the consumer commits their offsets after this resolves. */
  async write(slices: DecodedBatch[], ranges: SliceRange[]): Promise<void> {
    const { store, rollups } = this.options;
    const token = writeToken(ranges);

    const rowsByTable = new Map<LandingTable, TableRows>();
    const deadLetters: DeadLetter[] = [];
    const resolvedMarkets: string[] = [];
    const wallets = new Set<string>();
    const markets = new Set<string>();
    const named = new Set<string>();
    const upstream = new Set<string>();
    for (const slice of slices) {
      for (const wallet of slice.named) named.add(wallet);
      for (const wallet of slice.upstream) upstream.add(wallet);
      for (const wallet of slice.wallets) wallets.add(wallet);
      for (const conditionId of slice.markets) markets.add(conditionId);
      for (const [table, tableRows] of slice.rowsByTable) {
        const merged = rowsByTable.get(table);
        if (merged) {
          for (const line of tableRows.lines) merged.lines.push(line);
          for (const source of tableRows.sources) merged.sources.push(source);
        } else {
          rowsByTable.set(table, { lines: [...tableRows.lines], sources: [...tableRows.sources] });
        }
      }
      deadLetters.push(...slice.deadLetters);
      resolvedMarkets.push(...slice.resolvedMarkets);
    }

    const started = performance.now();
    ingestBatchEvents.observe(ranges.reduce((sum, range) => sum + range.messageCount, 0));
    for (const [table, { lines, sources }] of rowsByTable) {
      const endInsert = ingestInsertDuration.startTimer({ table });
      const { rejected, tokens } = await this.insertIsolatingBadRows(table, lines, `${token}|${table}`);
      endInsert();
      for (const { index, reason } of rejected) deadLetters.push({ ...sources[index]!, reason, kind: 'store_refused' });
      // Views on fills, position_legs and trades staged the touched keys under each insert's token.
      if (STAGING_TABLES.has(table)) for (const batch of tokens) rollups.enqueue(batch, wallets);
    }
    let holders: ReadonlySet<string> | 'everyone' = new Set();
    if (resolvedMarkets.length > 0) {
      const batch = `${token}|resolutions`;
      // Every holder of those markets: their results change.
      holders = await this.withRetries('stage resolved markets', () =>
        stageResolvedMarkets(store, batch, resolvedMarkets),
      );
      rollups.enqueue(batch, holders);
    }
    // The rows are readable now (the rollups built from them follow, and tell again).
    if (holders === 'everyone') this.options.changes?.changed(EVERYTHING_CHANGED);
    else if (wallets.size > 0 || holders.size > 0 || markets.size > 0)
      this.options.changes?.changed({ wallets: new Set([...wallets, ...holders]), markets, named, upstream });
    if (deadLetters.length > 0) await this.deadLetter(deadLetters, token);
    // Block time → in the store, for fills of the last minutes (a backfill's would only say how old history is).
    const nowMs = Date.now();
    for (const slice of slices)
      for (const ts of slice.fillTimes)
        if (nowMs / 1000 - ts < LIVE_FILL_AGE_S) recordFreshness('ingested', 'final', ts, nowMs);

    this.stats.batches += 1;
    ingestWriteDuration.observe((performance.now() - started) / 1000);
    this.log.debug(
      {
        slices: ranges.length,
        events: slices.reduce((sum, slice) => sum + slice.validCount, 0),
        writeMs: Math.round(performance.now() - started),
      },
      'write done',
    );
  }

  /** After the commit: report each slice as ingested (tests and operators wait on these). */
  committed(slices: DecodedBatch[], ranges: SliceRange[]): void {
    for (const [index, range] of ranges.entries()) {
      const slice = slices[index]!;
      const ingested: BatchIngested = {
        topic: range.topic,
        partition: range.partition,
        firstOffset: range.firstOffset,
        lastOffset: range.lastOffset,
        valid: slice.validCount,
        deadLetters: slice.deadLetters.length,
      };
      this.stats.events += slice.validCount;
      ingestEvents.inc({ topic: this.topicLabel(range.topic) }, slice.validCount);
      this.log.debug(ingested, 'batch ingested');
      this.events.emit('batch', ingested);
    }
  }

  /** The contract's topic name (prefix removed), or `unknown`: a bounded label whatever is on the log. */
  private topicLabel(physicalTopic: string): string {
    const topicId = this.options.topics.idOf(physicalTopic);
    return topicId === undefined ? 'unknown' : TOPICS[topicId].name;
  }

  private async withRetries<T>(what: string, work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (attempt >= this.options.writeRetries) throw error;
        ingestWriteRetries.inc();
        const delayMs = this.options.retryBaseMs * 2 ** attempt;
        this.log.warn(
          { err: error, what, attempt: attempt + 1, retryInMs: delayMs },
          'ClickHouse write failed; retrying',
        );
        await sleep(delayMs);
      }
    }
  }

  /**
   * Inserts one block. If ClickHouse refuses it for its data (not for being unreachable or busy), splits
   * it to find the rows it refuses (a bad row must not stop the stream) and returns those. Each part has
   * its own deterministic token, so a redelivered batch splits the same way and deduplicates. Any other
   * failure is thrown after the retries: nothing is committed and the consumer reads the batch again.
   */
  private async insertIsolatingBadRows(table: string, lines: string[], token: string): Promise<IsolatedInsert> {
    const store = this.options.store;
    try {
      await this.withRetries(`insert ${table}`, () => store.insertJsonLines(table, lines, token));
      return { rejected: [], tokens: [token] };
    } catch (error) {
      if (!isBadDataError(error)) throw error;
      if (lines.length === 1) {
        return {
          rejected: [{ index: 0, reason: `ClickHouse refused the row: ${(error as Error).message.slice(0, 500)}` }],
          tokens: [],
        };
      }
    }
    const middle = Math.floor(lines.length / 2);
    const left = await this.insertIsolatingBadRows(table, lines.slice(0, middle), `${token}|a`);
    const right = await this.insertIsolatingBadRows(table, lines.slice(middle), `${token}|b`);
    this.stats.rowsIsolated += left.rejected.length + right.rejected.length;
    return {
      rejected: [
        ...left.rejected,
        ...right.rejected.map((rejected) => ({ ...rejected, index: rejected.index + middle })),
      ],
      tokens: [...left.tokens, ...right.tokens],
    };
  }

  private async deadLetter(letters: DeadLetter[], range: string): Promise<void> {
    const topic = this.options.topics.deadLetter();
    await this.withRetries('publish dead letters', () =>
      this.options.deadLetterProducer.send(
        topic,
        letters.map((letter) => ({
          key: letter.key === null ? null : letter.key.toString('utf8'),
          value: letter.original ?? Buffer.alloc(0),
          headers: {
            'dlq.reason': letter.reason,
            'dlq.topic': letter.topic,
            'dlq.partition': String(letter.partition),
            'dlq.offset': letter.offset,
          },
        })),
      ),
    );
    const receivedAt = Math.floor(Date.now() / 1000);
    await this.withRetries('record dead letters', () =>
      this.options.store.insert(
        'dead_letters',
        letters.map((letter) => ({
          topic: letter.topic,
          partition: letter.partition,
          offset: letter.offset,
          reason: letter.reason,
          original_base64: (letter.original ?? Buffer.alloc(0)).toString('base64'),
          received_at: receivedAt,
        })),
        `${range}|dead_letters`,
      ),
    );
    this.stats.deadLetters += letters.length;
    // Counted as they reach the dead-letter topic (a redelivered batch publishes and counts them again).
    for (const letter of letters) deadLetterCount.inc({ topic: this.topicLabel(letter.topic), reason: letter.kind });
    for (const letter of letters) {
      this.log.warn(
        { topic: letter.topic, partition: letter.partition, offset: letter.offset, reason: letter.reason },
        'event dead-lettered',
      );
    }
  }
}
