/**
 * A deterministic simulator of a Polymarket-like world: crypto Up/Down windows, politics and sports
 * markets, anonymous order flow, and named traders with distinct habits, published through an
 * EventSink on every topic the read API needs.
 *
 * The simulated period starts at its genesis (by default the start of the first emit): named traders
 * hold nothing before it, and their books (profiles, equity) are kept from it on. Emitting [a, b) then
 * [b, c) publishes exactly what one emit of [a, c) does: on every topic the same events in the same
 * order. Publishes happen every ten simulated minutes (on absolute multiples of 600 s) and at the end of
 * each emit, so when b is such a multiple even the publish calls are the same.
 */
import type { EventSink } from '../../publisher.ts';
import { sleepUnlessAborted } from '../../sleep.ts';
import { SimulationEngine } from './engine.ts';
import { DISCARD, EventBuffers, addCounts, zeroCounts, type SimulationCounts } from './output.ts';
import { createTraders, type SimulatedTrader } from './traders.ts';

export type { SimulationCounts } from './output.ts';
export type { SimulatedTrader, TraderHabit } from './traders.ts';

export interface SimulatorOptions {
  /** Same seed + same time window (and genesis) => byte-identical event sequence. */
  seed: number;
  /** Number of named traders (the default configuration uses 120). */
  traders: number;
  /** Scale factor for activity (1 = demo default). Tests use small values. */
  intensity?: number;
  /**
   * Start of the simulated period, epoch seconds. Defaults to the `fromTs` of the first emit. Pass it
   * when resuming a world published earlier, so that books continue instead of starting afresh.
   */
  genesisTs?: number;
}

export interface Simulator {
  /** The simulated traders (wallet, name, habit, …) — for tests and for the demo's popular shelf. */
  readonly traders: readonly SimulatedTrader[];
  /** Start of the simulated period; undefined until set by the options or by the first emit. */
  readonly genesisTs: number | undefined;
  /**
   * Emits, in time order and in chunks, every event with fromTs <= ts < toTs. Calling it for [a,b)
   * then [b,c) emits exactly what a single call for [a,c) emits (same events, same order on every
   * topic). Within one publish round, markets go first, so a market is on the log before its trades.
   * `onProgress` is called after each round is published, with the instant it covers up to.
   * A failed publish rewinds the books to genesis: the next emit may then start where it likes.
   */
  emit(fromTs: number, toTs: number, sink: EventSink, onProgress?: (doneTs: number) => void): Promise<SimulationCounts>;
}

/** Buffers are published on multiples of this (simulated seconds): about 6k events at intensity 1. */
const FLUSH_INTERVAL_SECONDS = 600;
/** …or earlier when a high intensity fills them beyond this, to keep memory bounded. */
const FLUSH_MAX_EVENTS = 200_000;
const SECONDS_PER_DAY = 86_400;
/** Catching up from genesis yields to the event loop after each such step (simulated seconds). */
const CATCH_UP_STEP_SECONDS = 3_600;

class DeterministicSimulator implements Simulator {
  readonly traders: readonly SimulatedTrader[];
  private genesis: number | undefined;
  private engine: SimulationEngine | undefined;
  private emitting = false;

  constructor(private readonly options: Required<Omit<SimulatorOptions, 'genesisTs'>> & { genesisTs?: number }) {
    this.traders = createTraders(options.seed, options.traders);
    this.genesis = options.genesisTs;
  }

  get genesisTs(): number | undefined {
    return this.genesis;
  }

  async emit(
    fromTs: number,
    toTs: number,
    sink: EventSink,
    onProgress?: (doneTs: number) => void,
  ): Promise<SimulationCounts> {
    if (!Number.isInteger(fromTs) || !Number.isInteger(toTs) || toTs < fromTs) {
      throw new RangeError(`emit needs whole seconds with fromTs <= toTs (got ${fromTs}, ${toTs})`);
    }
    if (this.emitting) throw new Error('emit is already running on this simulator');
    this.emitting = true;
    try {
      const engine = await this.engineAt(fromTs);
      const counts = zeroCounts();
      const buffers = new EventBuffers();
      while (engine.cursorTs < toTs) {
        // A minute at a time, so that an unusually busy stretch is published before it grows large.
        const chunkEnd = Math.min(toTs, (Math.floor(engine.cursorTs / 60) + 1) * 60);
        engine.advance(chunkEnd, buffers);
        if (chunkEnd < toTs && (chunkEnd % FLUSH_INTERVAL_SECONDS === 0 || buffers.size >= FLUSH_MAX_EVENTS)) {
          await this.publish(buffers, sink, counts);
          onProgress?.(chunkEnd);
        }
      }
      await this.publish(buffers, sink, counts);
      onProgress?.(toTs);
      return counts;
    } finally {
      this.emitting = false;
    }
  }

  private async publish(buffers: EventBuffers, sink: EventSink, counts: SimulationCounts): Promise<void> {
    try {
      await buffers.drainInto(sink, counts);
    } catch (error) {
      // The books ran ahead of what reached the sink: start over from genesis on the next emit.
      this.engine = undefined;
      throw error;
    }
  }

  /**
   * An engine positioned at `fromTs`: the current one, or a new one caught up from genesis. Catching up
   * (a resumed world replays its books from genesis: seconds for days) yields to the event loop every
   * simulated hour, so that a restarted service answers its probes and reads meanwhile.
   */
  private async engineAt(fromTs: number): Promise<SimulationEngine> {
    this.genesis ??= fromTs;
    if (fromTs < this.genesis) throw new RangeError(`cannot emit before the simulated period starts (${this.genesis})`);
    if (!this.engine || this.engine.cursorTs > fromTs)
      this.engine = new SimulationEngine(this.worldSettings(), this.genesis);
    const engine = this.engine;
    while (engine.cursorTs < fromTs) {
      engine.advance(Math.min(fromTs, engine.cursorTs + CATCH_UP_STEP_SECONDS), DISCARD);
      await yieldToEventLoop();
    }
    return engine;
  }

  private worldSettings() {
    return { seed: this.options.seed, intensity: this.options.intensity, traders: this.traders };
  }
}

export function createSimulator(options: SimulatorOptions): Simulator {
  if (!Number.isInteger(options.seed)) throw new RangeError('seed must be an integer');
  if (!Number.isInteger(options.traders) || options.traders < 1)
    throw new RangeError('traders must be a positive integer');
  const intensity = options.intensity ?? 1;
  if (!(intensity > 0) || !Number.isFinite(intensity)) throw new RangeError('intensity must be a positive number');
  if (options.genesisTs !== undefined && !Number.isInteger(options.genesisTs))
    throw new RangeError('genesisTs must be whole seconds');
  return new DeterministicSimulator({
    seed: options.seed,
    traders: options.traders,
    intensity,
    genesisTs: options.genesisTs,
  });
}

export interface RunOptions {
  backfillDays: number;
  live: boolean;
  signal?: AbortSignal;
  /** Wall clock in epoch milliseconds (Date.now by default); injectable for tests. */
  now?: () => number;
  /** Resume exactly here instead of at now − backfillDays (epoch seconds). */
  fromTs?: number;
  /** Publish nothing at or after this instant (epoch seconds): the backfill ends here if it is past, the live phase when it comes. */
  stopTs?: number;
  onProgress?: (info: { phase: 'backfill' | 'live'; doneTs: number; counts: SimulationCounts }) => void;
}

/** Backfill pieces: an hour of simulated time, so that progress shows and the event loop breathes. */
const BACKFILL_PIECE_SECONDS = 3_600;

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Backfills [now − days, now) as fast as possible, then keeps emitting in real time (1-second steps,
 * wall clock) until the signal aborts. Returns what was published in total.
 */
export async function runSimulator(sim: Simulator, sink: EventSink, options: RunOptions): Promise<SimulationCounts> {
  const now = options.now ?? Date.now;
  const nowSeconds = () => Math.floor(now() / 1000);
  const total = zeroCounts();
  const aborted = () => options.signal?.aborted === true;

  const stopTs = options.stopTs ?? Number.POSITIVE_INFINITY;
  const backfillEnd = Math.min(nowSeconds(), stopTs);
  let cursor = options.fromTs ?? Math.floor(backfillEnd - options.backfillDays * SECONDS_PER_DAY);
  while (cursor < backfillEnd && !aborted()) {
    const pieceEnd = Math.min(backfillEnd, (Math.floor(cursor / BACKFILL_PIECE_SECONDS) + 1) * BACKFILL_PIECE_SECONDS);
    addCounts(total, await sim.emit(cursor, pieceEnd, sink));
    cursor = pieceEnd;
    options.onProgress?.({ phase: 'backfill', doneTs: cursor, counts: { ...total } });
    await yieldToEventLoop();
  }
  if (!options.live) return total;

  while (!aborted() && cursor < stopTs) {
    const target = Math.min(nowSeconds(), stopTs);
    if (target > cursor) {
      addCounts(total, await sim.emit(cursor, target, sink));
      cursor = target;
      options.onProgress?.({ phase: 'live', doneTs: cursor, counts: { ...total } });
    }
    await sleepUnlessAborted((cursor + 1) * 1000 - now(), options.signal);
  }
  return total;
}
