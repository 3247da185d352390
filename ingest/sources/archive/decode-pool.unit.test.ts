/**
 * The decode workers give exactly what the main thread's decoder gives, in the same order: over the recorded
 * real logs of ../shared/data/polymarket/onchain/ (with damaged and foreign ones among them) and over a
 * generated chain split across both workers. An error that is not a log's own decode failure comes back as
 * the same error; a worker that dies fails its batch and every later one instead of hanging.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../log.ts';
import { generateWorld } from '../../../test/harness/chain-world.ts';
import { decodeBatch, knownEventOf, positionOfKnown, type Decoding, type LogPosition, type RawLog } from './decode.ts';
import { createLogDecoder, InlineDecoder, WorkerDecoder } from './decode-pool.ts';
import { decodeFacts, packFacts, unpackFacts } from './decode-wire.ts';

const ONCHAIN = path.resolve(import.meta.dirname, '../../../../shared/data/polymarket/onchain');
const log = createLogger('silent');

/** Every recorded log (one per file), in file order. */
function recordedLogs(): RawLog[] {
  return ['vike-trader', 'polyprinter'].flatMap((folder) =>
    readdirSync(path.join(ONCHAIN, folder))
      .filter((file) => file.endsWith('.json'))
      .sort()
      .map((file) => JSON.parse(readFileSync(path.join(ONCHAIN, folder, file), 'utf8')) as RawLog),
  );
}

/** The recorded logs many times over (other log indexes), with logs that fail to decode and foreign ones among them. */
function recordedBatch(copies: number): RawLog[] {
  const recorded = recordedLogs();
  const out: RawLog[] = [];
  for (let copy = 0; copy < copies; copy++) {
    for (const [index, raw] of recorded.entries())
      out.push({ ...raw, logIndex: `0x${(copy * 100 + index).toString(16)}` });
    const fill = recorded.find((raw) => raw.data.length > 200)!;
    // Cut data, a bad transaction hash, a topic too short: decode errors with their reasons.
    out.push({ ...fill, data: fill.data.slice(0, 100), logIndex: `0x${(copy * 100 + 90).toString(16)}` });
    out.push({ ...fill, transactionHash: '0x1234', logIndex: `0x${(copy * 100 + 91).toString(16)}` });
    out.push({
      ...fill,
      topics: [fill.topics[0]!, '0xabc', ...fill.topics.slice(2)],
      logIndex: `0x${(copy * 100 + 92).toString(16)}`,
    });
    // Not one of our events: null.
    out.push({ ...fill, topics: [`0x${'ab'.repeat(32)}`], logIndex: `0x${(copy * 100 + 93).toString(16)}` });
  }
  return out;
}

describe('decode workers', () => {
  let pool: WorkerDecoder;
  beforeAll(() => {
    pool = new WorkerDecoder(2, log);
  });
  afterAll(async () => {
    await pool.close();
  });

  it('the recorded real logs decode in the workers exactly as on the main thread, in order', async () => {
    const recorded = recordedLogs();
    expect(recorded.length).toBe(14);
    expect(await pool.decode(recorded)).toEqual(decodeBatch(recorded));
    // Enough logs to be cut into one slice per worker; failures and foreign logs keep their places.
    const batch = recordedBatch(80);
    const inline = decodeBatch(batch);
    expect(inline.filter((decoding) => decoding?.kind === 'decodeError').length).toBe(3 * 80);
    expect(inline.filter((decoding) => decoding === null).length).toBe(80);
    const pooled = await pool.decode(batch);
    expect(pooled.length).toBe(batch.length);
    expect(pooled).toEqual(inline);
    // The first decode starts the workers, each loading the decoder: seconds on a machine busy with the suite.
  }, 30_000);

  it('a generated chain: the same decodings in the same order, concurrent batches kept apart', async () => {
    const world = generateWorld({ seed: 11, markets: 20, wallets: 50, matches: 1_500 });
    const logs = [...world.blocks.values()].flat();
    const half = Math.floor(logs.length / 2);
    const [first, second, all] = await Promise.all([
      pool.decode(logs.slice(0, half)),
      pool.decode(logs.slice(half)),
      pool.decode(logs),
    ]);
    const inline = decodeBatch(logs);
    expect(all).toEqual(inline);
    expect([...first, ...second]).toEqual(inline);
    expect(await pool.decode([])).toEqual([]);
  });

  it('an error that is not a log decode failure rejects with the error the main thread throws', async () => {
    const garbage = [recordedLogs()[0]!, null as unknown as RawLog];
    let thrown: Error | undefined;
    try {
      decodeBatch(garbage);
    } catch (error) {
      thrown = error as Error;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    await expect(pool.decode(garbage)).rejects.toMatchObject({ name: thrown!.name, message: thrown!.message });
    await expect(new InlineDecoder().decode(garbage)).rejects.toThrow(thrown!.message);
    // The pool is still usable: the failure was the batch's, not the worker's.
    expect(await pool.decode(recordedLogs())).toEqual(decodeBatch(recordedLogs()));
  });

  it('a worker that dies fails its batch and every later one', async () => {
    const dying = new WorkerDecoder(
      1,
      log,
      `require('node:worker_threads').parentPort.once('message', () => process.exit(7));`,
    );
    try {
      await expect(dying.decode(recordedLogs())).rejects.toThrow('archive decode worker 0 exited (code 7)');
      await expect(dying.decode(recordedLogs())).rejects.toThrow('archive decode worker 0 exited (code 7)');
    } finally {
      await dying.close();
    }
  });

  it('facts cross packed (fills in columns) and, with the positions checked here, equal decodeLog: both eras, both sides, fees in USD and in tokens, with and without a block timestamp', () => {
    const recorded = recordedBatch(2);
    const logs = [...recorded, ...recorded.map(({ blockTimestamp: _, ...raw }) => raw)];
    const decodings = decodeBatch(logs);
    const fills = decodings.filter((decoding) => decoding?.kind === 'orderFilled');
    expect(
      new Set(fills.map((fill) => `${fill.era} ${fill.side} ${fill.feeUnit} ${fill.blockTimestamp === null}`)).size,
    ).toBeGreaterThanOrEqual(6);
    // What the pool does around the worker: which event and where on this side, the facts on the other.
    const out = new Array<Decoding>(logs.length).fill(null);
    const at: number[] = [];
    const positions: LogPosition[] = [];
    for (const [index, log] of logs.entries()) {
      const known = knownEventOf(log);
      if (known === undefined) continue;
      try {
        positions.push(positionOfKnown(known, log));
        at.push(index);
      } catch (error) {
        out[index] = { kind: 'decodeError', reason: (error as { reason: string }).reason };
      }
    }
    const packed = structuredClone(
      packFacts(
        decodeFacts({ topics: at.map((index) => logs[index]!.topics), data: at.map((index) => logs[index]!.data) }),
      ),
    );
    expect(packed.strings.length).toBe(fills.length * 3);
    unpackFacts(packed, positions, at, out);
    expect(out).toEqual(decodings);
  });

  it('decodeWorkers 0 decodes on the main thread', async () => {
    const decoder = createLogDecoder(0, log);
    expect(decoder.workers).toBe(0);
    expect(await decoder.decode(recordedLogs())).toEqual(decodeBatch(recordedLogs()));
    await decoder.close();
  });
});
