import { describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { rangeOf, type LogProducer, type OutgoingMessage, type PartitionSlice } from './bus/types.ts';
import { TopicNames } from './contract/topics.ts';
import type { ChangeListener } from '../projections/changes.ts';
import { IngestPipeline } from './pipeline.ts';

const topics = new TopicNames('');

/** The transaction of the test's fill with this log index (one per fill: fills are identified by their transaction and content). */
const txOf = (logIndex: number) => `0x${'ab'.repeat(31)}${logIndex.toString(16).padStart(2, '0')}`;

function fill(logIndex: number, overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    tx_hash: txOf(logIndex),
    log_index: logIndex,
    wallet: `0x${'12'.repeat(20)}`,
    condition_id: `0x${'34'.repeat(32)}`,
    side: 'BUY',
    token_side: 1,
    price: 0.5,
    size_tokens: 2,
    usd: 1,
    role: 'taker',
    era: 'v2',
    ts: 1_767_556_800,
    ...overrides,
  });
}

function slice(values: string[]): PartitionSlice {
  return {
    topic: topics.of('fillsArchive'),
    partition: 0,
    messages: values.map((value, index) => ({
      offset: String(100 + index),
      key: null,
      value: Buffer.from(value),
      headers: {},
    })),
  };
}

/** A store that refuses, for its data, any insert holding a row with log index 13 (as ClickHouse would with code 117). */
function fakeStore(failure: 'bad data' | 'unreachable') {
  const inserted: { table: string; lines: readonly string[]; token: string | undefined }[] = [];
  const store = {
    database: 'fake',
    kind: 'embedded',
    query: async () => [],
    command: async () => {},
    ensureDatabase: async () => {},
    close: async () => {},
    insert: async (table: string, rows: readonly Record<string, unknown>[], token?: string) =>
      void inserted.push({ table, lines: rows.map((row) => JSON.stringify(row)), token }),
    insertJsonLines: async (table: string, lines: readonly string[], token?: string) => {
      if (table === 'fills' && lines.some((line) => line.includes(`"fill_id":"${txOf(13)}:`))) {
        throw Object.assign(
          new Error(failure === 'bad data' ? 'Cannot parse input (simulated)' : 'connect ECONNREFUSED (simulated)'),
          {
            code: failure === 'bad data' ? '117' : undefined,
          },
        );
      }
      inserted.push({ table, lines, token });
    },
  } satisfies Store;
  return { store, inserted };
}

function recordingProducer() {
  const sent: { topic: string; messages: readonly OutgoingMessage[] }[] = [];
  const producer: LogProducer = {
    send: async (topic, messages) => void sent.push({ topic, messages }),
    close: async () => {},
  };
  return { producer, sent };
}

function pipelineWith(store: Store, producer: LogProducer, enqueued: string[], changes?: ChangeListener) {
  return new IngestPipeline({
    changes,
    store,
    topics,
    deadLetterProducer: producer,
    log: createLogger('silent'),
    writeRetries: 1,
    retryBaseMs: 1,
    rollups: { enqueue: (batch) => void enqueued.push(batch) },
  });
}

describe('IngestPipeline.write', () => {
  it('isolates a row ClickHouse refuses for its data, dead-letters it, and lands every other row', async () => {
    const { store, inserted } = fakeStore('bad data');
    const { producer, sent } = recordingProducer();
    const enqueued: string[] = [];
    const pipeline = pipelineWith(store, producer, enqueued);
    const values = Array.from({ length: 20 }, (_, index) => fill(index));
    const prepared = pipeline.prepare(slice(values));
    await pipeline.write([prepared], [rangeOf(slice(values))]);

    const landed = inserted.filter((insert) => insert.table === 'fills').flatMap((insert) => insert.lines);
    expect(landed).toHaveLength(19);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.topic).toBe('dead-letter');
    expect(sent[0]!.messages).toHaveLength(1);
    expect(String(sent[0]!.messages[0]!.value)).toBe(values[13]);
    expect(sent[0]!.messages[0]!.headers?.['dlq.reason']).toMatch(/ClickHouse refused the row/);
    expect(sent[0]!.messages[0]!.headers?.['dlq.offset']).toBe('113');
    // The rollups of every part that went in are queued (their keys were staged by the insert).
    const fillTokens = inserted.filter((insert) => insert.table === 'fills').map((insert) => insert.token);
    expect(enqueued.sort()).toEqual([...fillTokens].sort());
  });

  it("tells whose data a write changed once its rows are in, and nobody's when the write fails", async () => {
    const walletA = `0x${'aa'.repeat(20)}`;
    const walletB = `0x${'bb'.repeat(20)}`;
    const values = [
      fill(1, { wallet: walletA }),
      fill(2, { wallet: walletB, name: 'Bee' }),
      fill(13, { wallet: walletA }),
    ];
    for (const failure of ['bad data', 'unreachable'] as const) {
      const { store, inserted } = fakeStore(failure);
      const told: { wallets: string[]; named: string[]; landedBefore: number }[] = [];
      const changes: ChangeListener = {
        changed: ({ wallets, named }) =>
          void told.push({
            wallets: wallets === 'all' ? ['all'] : [...wallets].sort(),
            named: named === undefined || named === 'all' ? ['?'] : [...named],
            landedBefore: inserted.filter((insert) => insert.table === 'fills').length,
          }),
      };
      const pipeline = pipelineWith(store, recordingProducer().producer, [], changes);
      const write = pipeline.write([pipeline.prepare(slice(values))], [rangeOf(slice(values))]);
      if (failure === 'unreachable') {
        await expect(write).rejects.toThrow('ECONNREFUSED');
        expect(told).toEqual([]);
      } else {
        await write;
        expect(told).toHaveLength(1);
        expect(told[0]!.wallets).toEqual([walletA, walletB]);
        // One notice per write; only the fill carrying a display name names its wallet's name.
        expect(told[0]!.named).toEqual([walletB]);
        expect(told[0]!.landedBefore).toBeGreaterThan(0);
      }
    }
  });

  it('throws (so nothing is committed) when ClickHouse fails for any other reason: no row is given up', async () => {
    const { store, inserted } = fakeStore('unreachable');
    const { producer, sent } = recordingProducer();
    const pipeline = pipelineWith(store, producer, []);
    const values = Array.from({ length: 20 }, (_, index) => fill(index));
    await expect(pipeline.write([pipeline.prepare(slice(values))], [rangeOf(slice(values))])).rejects.toThrow(
      'ECONNREFUSED',
    );
    expect(inserted.filter((insert) => insert.table === 'fills')).toHaveLength(0);
    expect(sent).toHaveLength(0);
  });

  it('gives the same ranges the same insert token, and different ranges different ones', async () => {
    const tokens: (string | undefined)[] = [];
    const { store } = fakeStore('bad data');
    const recording: Store = { ...store, insertJsonLines: async (_table, _lines, token) => void tokens.push(token) };
    const pipeline = pipelineWith(recording, recordingProducer().producer, []);
    const first = slice([fill(1), fill(2)]);
    await pipeline.write([pipeline.prepare(first)], [rangeOf(first)]);
    await pipeline.write([pipeline.prepare(first)], [rangeOf(first)]);
    const later = {
      ...first,
      messages: first.messages.map((message, index) => ({ ...message, offset: String(200 + index) })),
    };
    await pipeline.write([pipeline.prepare(later)], [rangeOf(later)]);
    expect(tokens[0]).toBe(tokens[1]);
    expect(tokens[2]).not.toBe(tokens[0]);
  });
});
