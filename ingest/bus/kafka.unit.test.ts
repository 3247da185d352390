/**
 * The Kafka consumer's own recovery, driven by a fake kafkajs: a crash that kafkajs does not restart
 * (it disconnects the consumer and stops there after an error it deems non-retriable, such as the
 * INVALID_REQUEST the mock brokers give a rejoin's SyncGroup now and then) must not leave the worker
 * running without a consumer.
 */
import { EventEmitter, once } from 'node:events';
import { Writable } from 'node:stream';
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../log.ts';
import { KafkaConsumer } from './kafka.ts';
import type { BatchProcessor, LogConsumerOptions } from './types.ts';

const EVENTS = { GROUP_JOIN: 'consumer.group_join', CRASH: 'consumer.crash' } as const;

/** What KafkaConsumer uses of a kafkajs consumer; every join is announced as kafkajs does (GROUP_JOIN). */
class FakeKafkaConsumer extends EventEmitter {
  readonly events = EVENTS;
  connects = 0;
  runs = 0;
  connected = false;

  async connect(): Promise<void> {
    this.connects += 1;
    this.connected = true;
  }
  async subscribe(): Promise<void> {}
  async run(): Promise<void> {
    if (!this.connected) throw new Error('run() on a disconnected consumer');
    this.runs += 1;
    this.emit(EVENTS.GROUP_JOIN, { payload: {} });
    this.emit('ran', this.runs);
  }
  async stop(): Promise<void> {}
  async disconnect(): Promise<void> {
    this.connected = false;
  }
  async commitOffsets(): Promise<void> {}
  /** kafkajs's crash: it has disconnected the consumer, then says whether it restarts it itself. */
  crash(restart: boolean): void {
    this.connected = restart;
    this.emit(EVENTS.CRASH, { payload: { error: new Error('INVALID_REQUEST (simulated)'), groupId: 'g', restart } });
  }
}

const OPTIONS: LogConsumerOptions = {
  groupId: 'g',
  fromBeginning: true,
  maxBytesPerPartition: 1_000_000,
  maxBytes: 10_000_000,
  partitionsConsumedConcurrently: 1,
  maxBatchMessages: 100,
  maxBatchBytes: 1_000_000,
  lingerMs: 10,
};

const PROCESSOR: BatchProcessor<number> = { prepare: (slice) => slice.messages.length, write: async () => {} };

function setUp() {
  const fake = new FakeKafkaConsumer();
  const kafka = { consumer: () => fake } as unknown as Kafka;
  const lines: { msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as { msg: string });
      done();
    },
  });
  const consumer = new KafkaConsumer(kafka, OPTIONS, createLogger('debug', sink));
  return { fake, consumer, lines };
}

describe('KafkaConsumer after a crash', () => {
  it('connects and runs a consumer again that kafkajs left disconnected after a non-retriable error', async () => {
    const { fake, consumer, lines } = setUp();
    await consumer.start(['t'], PROCESSOR);
    expect([fake.connects, fake.runs]).toEqual([1, 1]);

    const ranAgain = once(fake, 'ran');
    fake.crash(false);
    expect(await ranAgain).toEqual([2]);
    expect(fake.connects).toBe(2);
    expect(fake.connected).toBe(true);
    expect(lines.filter((line) => line.msg === 'the consumer crashed on an error kafkajs does not retry')).toHaveLength(
      1,
    );
    await consumer.stop();
  });

  it('leaves a crash kafkajs restarts itself to kafkajs', async () => {
    const { fake, consumer, lines } = setUp();
    await consumer.start(['t'], PROCESSOR);
    fake.crash(true);
    // A crash it does not restart afterwards is handled once: the first one queued nothing.
    const ranAgain = once(fake, 'ran');
    fake.crash(false);
    expect(await ranAgain).toEqual([2]);
    expect(lines.filter((line) => line.msg === 'the consumer crashed on an error kafkajs does not retry')).toHaveLength(
      1,
    );
    expect(lines.filter((line) => line.msg === 'restarting the consumer from the committed offsets')).toHaveLength(1);
    await consumer.stop();
  });

  it('restarts again after a crash during its own restart', async () => {
    const { fake, consumer } = setUp();
    await consumer.start(['t'], PROCESSOR);
    // The restart's run crashes again (a rejoin refused twice in a row): a second restart follows it.
    fake.once('ran', () => fake.crash(false));
    const ranThrice = new Promise<void>((resolve) => fake.on('ran', (runs: number) => runs === 3 && resolve()));
    fake.crash(false);
    await ranThrice;
    expect(fake.connects).toBe(3);
    expect(fake.connected).toBe(true);
    await consumer.stop();
  });

  it('does not restart a consumer that is stopping', async () => {
    const { fake, consumer } = setUp();
    await consumer.start(['t'], PROCESSOR);
    fake.crash(false);
    await consumer.stop();
    expect(fake.runs).toBe(1);
  });
});
