/**
 * The ingest pipeline: one batch of one partition at a time, durably. For each batch it
 *   1. decodes and validates every message (bad ones become dead letters, the rest landing rows),
 *   2. inserts the rows per table with a deduplication token built from topic, partition and offset range,
 *   3. publishes the dead letters (topic + table) with their reason and original bytes,
 *   4. recomputes the rollups the batch touched,
 * and only then returns, so that the consumer commits offsets after ClickHouse acknowledged everything.
 * A replayed batch repeats the same tokens and recomputations: it changes nothing.
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { distinctKeys, refreshCareers, refreshTraderMarkets, traderMarketsOfMarkets } from '../projections/rollups.ts';
import type { LogProducer, MessageBatch } from './bus/types.ts';
import { type TopicNames } from './contract/topics.ts';
import { decodeBatch, type DeadLetter } from './decode.ts';

export interface PipelineOptions {
  store: Store;
  topics: TopicNames;
  /** Where dead letters are published (the dead-letter topic of the same log). */
  deadLetterProducer: LogProducer;
  log: Logger;
  writeRetries: number;
  retryBaseMs: number;
  includeV1InCards: boolean;
}

export interface PipelineStats {
  batches: number;
  events: number;
  deadLetters: number;
  rowsIsolated: number;
}

export interface BatchIngested {
  topic: string;
  partition: number;
  firstOffset: string;
  lastOffset: string;
  valid: number;
  deadLetters: number;
}

export class IngestPipeline {
  readonly stats: PipelineStats = { batches: 0, events: 0, deadLetters: 0, rowsIsolated: 0 };
  /** Emits 'batch' (BatchIngested) after each batch is durable, just before its offsets are committed. */
  readonly events = new EventEmitter<{ batch: [BatchIngested] }>();
  private readonly log: Logger;

  constructor(private readonly options: PipelineOptions) {
    this.log = options.log.child({ name: 'pipeline' });
  }

  /** The consumer's batch handler. */
  readonly handle = async (batch: MessageBatch): Promise<void> => {
    const { store, topics } = this.options;
    const first = batch.messages[0]!.offset;
    const last = batch.messages[batch.messages.length - 1]!.offset;
    const range = `${batch.topic}|${batch.partition}|${first}-${last}`;
    const decoded = decodeBatch(topics.idOf(batch.topic), batch.topic, batch.partition, batch.messages);

    for (const [table, { rows, sources }] of decoded.rowsByTable) {
      const rejected = await this.insertIsolatingBadRows(table, rows, `${range}|${table}`);
      for (const { index, reason } of rejected) {
        const source = sources[index]!;
        decoded.deadLetters.push({
          topic: batch.topic,
          partition: batch.partition,
          offset: source.offset,
          reason,
          key: source.key,
          original: source.value,
        });
      }
    }

    if (decoded.deadLetters.length > 0) await this.deadLetter(decoded.deadLetters, range);

    let keys = decoded.touchedTraderMarkets;
    if (decoded.resolvedMarkets.length > 0) {
      keys = keys.concat(await this.withRetries('find wallets of resolved markets', () => traderMarketsOfMarkets(store, decoded.resolvedMarkets)));
    }
    if (keys.length > 0) {
      const unique = distinctKeys(keys);
      const wallets = await this.withRetries('refresh trader_markets', () => refreshTraderMarkets(store, unique));
      await this.withRetries('refresh careers', () => refreshCareers(store, wallets, this.options.includeV1InCards));
    }

    this.stats.batches += 1;
    this.stats.events += decoded.validCount;
    const ingested: BatchIngested = {
      topic: batch.topic,
      partition: batch.partition,
      firstOffset: first,
      lastOffset: last,
      valid: decoded.validCount,
      deadLetters: decoded.deadLetters.length,
    };
    this.log.debug(ingested, 'batch ingested');
    this.events.emit('batch', ingested);
  };

  private async withRetries<T>(what: string, work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (attempt >= this.options.writeRetries) throw error;
        const delayMs = this.options.retryBaseMs * 2 ** attempt;
        this.log.warn({ err: error, what, attempt: attempt + 1, retryInMs: delayMs }, 'ClickHouse write failed; retrying');
        await sleep(delayMs);
      }
    }
  }

  /**
   * Inserts one block; if ClickHouse keeps refusing it, splits it to find the rows it refuses (a bad
   * row must not stop the stream) and returns those. Each part has its own deterministic token, so a
   * redelivered batch splits the same way and deduplicates.
   */
  private async insertIsolatingBadRows(
    table: string,
    rows: Record<string, unknown>[],
    token: string,
  ): Promise<{ index: number; reason: string }[]> {
    const store = this.options.store;
    try {
      await this.withRetries(`insert ${table}`, () => store.insert(table, rows, token));
      return [];
    } catch (error) {
      if (rows.length === 1 || !(await this.storeIsReachable())) {
        if (rows.length === 1 && (await this.storeIsReachable())) {
          return [{ index: 0, reason: `ClickHouse refused the row: ${(error as Error).message.slice(0, 500)}` }];
        }
        throw error;
      }
    }
    const middle = Math.floor(rows.length / 2);
    const left = await this.insertIsolatingBadRows(table, rows.slice(0, middle), `${token}|a`);
    const right = await this.insertIsolatingBadRows(table, rows.slice(middle), `${token}|b`);
    this.stats.rowsIsolated += left.length + right.length;
    return [...left, ...right.map((rejected) => ({ ...rejected, index: rejected.index + middle }))];
  }

  private async storeIsReachable(): Promise<boolean> {
    try {
      await this.options.store.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
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
    for (const letter of letters) {
      this.log.warn({ topic: letter.topic, partition: letter.partition, offset: letter.offset, reason: letter.reason }, 'event dead-lettered');
    }
  }
}
