/**
 * Where the archive's logs are ABI-decoded: on worker threads (`decodeWorkers`, default the machine's
 * cores), so that the main thread only fetches, maps and publishes; or on the main thread (0 workers).
 *
 * decodeLog's cheap steps (which event the topic0 names, where the log sits, its node fields checked) run
 * here; the logs' topics and data go to the workers in one contiguous slice per worker (the least-loaded one
 * first) for the third (viem's ABI decoding and the rules: decode-wire.ts), and each fact comes back to its
 * log's place with its position written on it: the caller sees exactly what decodeBatch returns on the main
 * thread. A log that does not fit its event is a `decodeError` decoding (dead-lettered by the archive, as
 * before); any other error thrown while decoding rejects the batch with an Error of the same name and message
 * (the archive stops with it, as before); a worker that dies fails what it held and every later batch, and the
 * archive stops.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../../log.ts';
import {
  decodeBatch,
  knownEventOf,
  LogDecodeError,
  positionOfKnown,
  type Decoding,
  type LogPosition,
  type RawLog,
} from './decode.ts';
import { unpackFacts, type DecodeReply, type DecodeRequest, type PackedFacts } from './decode-wire.ts';

export interface LogDecoder {
  /** The decodings of `logs`, in their order. */
  decode(logs: readonly RawLog[]): Promise<Decoding[]>;
  /** Worker threads decoding (0: the main thread). */
  readonly workers: number;
  /** Milliseconds the workers' event loops were busy so far, summed (0 without workers). */
  busyMs(): number;
  close(): Promise<void>;
}

/** Decodes on the calling thread. */
export class InlineDecoder implements LogDecoder {
  readonly workers = 0;

  async decode(logs: readonly RawLog[]): Promise<Decoding[]> {
    return decodeBatch(logs);
  }

  busyMs(): number {
    return 0;
  }

  async close(): Promise<void> {}
}

/** Fewer logs than this are not split over several workers (a message costs more than decoding them). */
const MIN_SLICE = 512;

const WORKER_URL = new URL('./decode-worker.ts', import.meta.url).href;

/**
 * The worker's module is TypeScript, and on Node 20 a worker thread does not inherit the loader hooks of the
 * process (`node --import tsx`, the tsx CLI, a test runner's transform), nor does `--import tsx` in its own
 * execArgv reach its entry: the worker starts as a line of JavaScript that imports it through tsx's API.
 */
function workerBoot(): string {
  const tsxApi = import.meta.resolve('tsx/esm/api');
  return `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER_URL)}); })`;
}

interface Request {
  resolve: (facts: PackedFacts) => void;
  reject: (error: Error) => void;
  slot: Slot;
  logs: number;
}

interface Slot {
  worker: Worker;
  /** Logs posted and not answered yet. */
  load: number;
  requests: number;
}

export class WorkerDecoder implements LogDecoder {
  private readonly slots: Slot[] = [];
  private readonly requests = new Map<number, Request>();
  private nextId = 0;
  private failure: Error | null = null;
  private closing = false;

  constructor(
    size: number,
    private readonly log: Logger,
    /** Test seam: the workers' start-up code (default: decode-worker.ts through tsx). */
    boot: string = workerBoot(),
  ) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`a decode pool needs at least one worker, not ${size}`);
    for (let index = 0; index < size; index++) {
      const worker = new Worker(boot, { eval: true, name: `archive-decode-${index}` });
      const slot: Slot = { worker, load: 0, requests: 0 };
      // Idle workers do not keep the process alive; one holding a batch does (see post).
      worker.unref();
      worker.on('message', (reply: DecodeReply) => this.settle(reply));
      worker.on('error', (error) =>
        this.fail(new Error(`archive decode worker ${index} failed: ${error.message}`, { cause: error })),
      );
      worker.on('exit', (code) => {
        if (!this.closing) this.fail(new Error(`archive decode worker ${index} exited (code ${code})`));
      });
      this.slots.push(slot);
    }
    log.debug({ workers: size }, 'archive decode workers started');
  }

  get workers(): number {
    return this.slots.length;
  }

  async decode(logs: readonly RawLog[]): Promise<Decoding[]> {
    if (this.failure) throw this.failure;
    // decodeLog's first two steps here (which event, where the log sits: cheap), its third in the workers.
    const out = new Array<Decoding>(logs.length);
    const at: number[] = [];
    const positions: LogPosition[] = [];
    const topics: RawLog['topics'][] = [];
    const data: RawLog['data'][] = [];
    for (let index = 0; index < logs.length; index++) {
      const log = logs[index]!;
      const known = knownEventOf(log);
      if (known === undefined) {
        out[index] = null;
        continue;
      }
      try {
        positions.push(positionOfKnown(known, log));
      } catch (error) {
        if (!(error instanceof LogDecodeError)) throw error;
        out[index] = { kind: 'decodeError', reason: error.reason };
        continue;
      }
      at.push(index);
      topics.push(log.topics);
      data.push(log.data);
    }
    if (at.length === 0) return out;
    const parts = Math.max(1, Math.min(this.slots.length, Math.floor(at.length / MIN_SLICE)));
    const size = Math.ceil(at.length / parts);
    const pending: Promise<void>[] = [];
    for (let start = 0; start < at.length; start += size) {
      const end = Math.min(at.length, start + size);
      const slice = { topics: topics.slice(start, end), data: data.slice(start, end) };
      pending.push(
        this.post(slice).then((facts) => unpackFacts(facts, positions.slice(start, end), at.slice(start, end), out)),
      );
    }
    await Promise.all(pending);
    return out;
  }

  busyMs(): number {
    let busy = 0;
    for (const slot of this.slots) busy += slot.worker.performance.eventLoopUtilization().active;
    return busy;
  }

  private post(batch: Omit<DecodeRequest, 'id'>): Promise<PackedFacts> {
    let slot = this.slots[0]!;
    for (const candidate of this.slots) if (candidate.load < slot.load) slot = candidate;
    const id = this.nextId++;
    const logs = batch.topics.length;
    return new Promise<PackedFacts>((resolve, reject) => {
      this.requests.set(id, { resolve, reject, slot, logs });
      if (slot.requests++ === 0) slot.worker.ref();
      slot.load += logs;
      const request: DecodeRequest = { id, topics: batch.topics, data: batch.data };
      slot.worker.postMessage(request);
    });
  }

  private done(id: number): Request | undefined {
    const request = this.requests.get(id);
    if (request === undefined) return undefined;
    this.requests.delete(id);
    const { slot } = request;
    slot.load -= request.logs;
    if (--slot.requests === 0) slot.worker.unref();
    return request;
  }

  private settle(reply: DecodeReply): void {
    const request = this.done(reply.id);
    if (request === undefined) return;
    if ('error' in reply) {
      // The error as the main thread's decoder would have thrown it: its name and message (and the worker's stack).
      const error = new Error(reply.error.message);
      error.name = reply.error.name;
      error.stack = reply.error.stack;
      request.reject(error);
    } else request.resolve(reply.facts);
  }

  /** A worker died: what it held fails, and so does every later batch (the archive stops). */
  private fail(error: Error): void {
    if (this.failure === null) {
      this.failure = error;
      this.log.error({ err: error }, 'archive decode worker failed');
    }
    for (const id of [...this.requests.keys()]) this.done(id)?.reject(error);
  }

  async close(): Promise<void> {
    this.closing = true;
    const error = this.failure ?? new Error('the archive decode pool is closed');
    this.failure = error;
    for (const id of [...this.requests.keys()]) this.done(id)?.reject(error);
    await Promise.all(this.slots.map((slot) => slot.worker.terminate()));
  }
}

/** The decoder `decodeWorkers` asks for. */
export function createLogDecoder(workers: number, log: Logger): LogDecoder {
  return workers === 0 ? new InlineDecoder() : new WorkerDecoder(workers, log);
}
