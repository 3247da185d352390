/**
 * Recomputes the rollups (trader_markets, whale accumulations, the change-only tapes) of the
 * batches this worker staged, many at a time.
 * Coalescing is the point: a market maker's (wallet, market) pair touched by ten consecutive writes is
 * recomputed once, and a career once per refresh instead of once per write. The pause between
 * refreshes adapts to their cost: at least `intervalMs`, and long enough that refreshing takes at most
 * 1/REFRESH_SHARE_DIVISOR of the store's time, so a backfill is not slowed by its own rollups while
 * live traffic (cheap refreshes) stays fresh within about `intervalMs`. The pause only lasts while
 * writes keep queueing batches: once none came for `intervalMs` (a backfill ended, a burst passed),
 * there is nothing left to coalesce with and the refresh runs at once.
 *
 * Durability does not depend on this loop: keys are staged in ClickHouse with the events, before the
 * offsets are committed. Batches whose worker died before refreshing them are found by a periodic sweep
 * (staged long ago, never marked done) and refreshed by whichever worker sweeps first.
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import {
  orphanRollupBatches,
  refreshRollups,
  type RefreshTimings,
  type RollupSettings,
} from '../projections/rollups.ts';
import type { Store } from '../projections/store.ts';
import { EVERYTHING_CHANGED, type ChangeListener } from '../projections/changes.ts';
import { retryDelayMs } from './bus/accumulator.ts';
import { deadLetters, rollupPendingBatches, rollupRefreshDuration } from '../metrics/registry.ts';
import { CONTRADICTION_TOPIC } from '../projections/resolution-inference.ts';

/** Refreshing may take one part in this many of the store's time while writes keep coming. */
const REFRESH_SHARE_DIVISOR = 5;
/** However expensive the refreshes, rollups trail the landing tables by at most this (plus one refresh). */
const MAX_PAUSE_MS = 5_000;

export interface RollupRefresherOptions {
  store: Store;
  log: Logger;
  intervalMs: number;
  /** A staged batch not marked done after this long is an orphan. */
  orphanAfterSeconds: number;
  settings: RollupSettings;
  /** Told whose rollups each refresh recomputed (the read caches of this process drop their answers). */
  changes?: ChangeListener | undefined;
}

/** Whose data a staged batch changes: these wallets, or anyone's (a resolution's holders, a dead worker's batches). */
export type BatchWallets = ReadonlySet<string> | 'everyone';

export class RollupRefresher {
  /** Emits 'refreshed' (batch count, how long it took) after each successful recomputation. */
  readonly events = new EventEmitter<{ refreshed: [number, RefreshTimings & { totalMs: number }] }>();
  /** Staged batches not yet recomputed, with whose data they change. */
  private readonly pending = new Map<string, BatchWallets>();
  /** When enqueue() last queued a batch (ms since the epoch). */
  private lastEnqueuedAt = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: () => void = () => {};
  private idleWaiters: (() => void)[] = [];
  private busy = false;
  /** The first sweep (at start) takes every batch not done, whatever its age. */
  private lastSweep: number | undefined;
  private firstSweep: Promise<void> = Promise.resolve();

  constructor(private readonly options: RollupRefresherOptions) {}

  start(): void {
    this.running = true;
    // Until the first sweep is done, batches a stopped worker left behind may be pending: not settled.
    this.busy = true;
    this.firstSweep = this.sweepOrphans();
    this.loop = this.run();
  }

  /**
   * Resolves once every batch queued so far (and those the start's sweep found) has been recomputed.
   * Unlike `settled`, batches queued later do not delay it, so a steady live stream cannot keep it open.
   */
  async caughtUp(): Promise<void> {
    await this.firstSweep;
    const waiting = [...this.pending.keys()];
    while (waiting.some((batch) => this.pending.has(batch))) {
      await new Promise<void>((resolve) => this.events.once('refreshed', () => resolve()));
    }
  }

  /** Queues a batch the worker staged (after its write is durable), with the wallets it touches. */
  enqueue(batch: string, wallets: BatchWallets = 'everyone'): void {
    const known = this.pending.get(batch);
    this.pending.set(batch, known === undefined ? wallets : mergeWallets(known, wallets));
    this.lastEnqueuedAt = Date.now();
    rollupPendingBatches.set(this.pending.size);
    this.wake();
  }

  /** Resolves once nothing is queued and no recomputation runs. */
  settled(): Promise<void> {
    if (this.pending.size === 0 && !this.busy) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async run(): Promise<void> {
    const log = this.options.log;
    let failures = 0;
    // At start, at once: a restart after a crash recomputes what the dead process staged before it
    // serves (instead of a sweep interval later, or on the next write).
    await this.firstSweep;
    this.busy = false;
    while (this.running || this.pending.size > 0) {
      if (this.pending.size === 0) {
        this.notifyIdle();
        if (!this.running) break;
        await this.waitForWork(this.options.orphanAfterSeconds * 1000);
      }
      await this.sweepOrphans();
      if (this.pending.size === 0) continue;
      const started = Date.now();
      const batches = [...this.pending.keys()];
      this.busy = true;
      try {
        const { inference, holders, ...timings } = await refreshRollups(
          this.options.store,
          batches,
          this.options.settings,
        );
        this.tellChanged(batches, holders);
        for (const { condition_id: market, reason } of inference.contradictions) {
          deadLetters.inc({ topic: CONTRADICTION_TOPIC, reason: 'contradiction' });
          log.warn({ market, reason }, 'redemptions dead-lettered');
        }
        if (inference.resolved.length > 0)
          log.info({ markets: inference.resolved.length }, 'resolutions inferred from redemptions');
        for (const batch of batches) this.pending.delete(batch);
        rollupRefreshDuration.observe({ outcome: 'ok' }, (Date.now() - started) / 1000);
        rollupPendingBatches.set(this.pending.size);
        failures = 0;
        log.debug(
          { batches: batches.length, ms: Date.now() - started, ...timings, pending: this.pending.size },
          'rollups refreshed',
        );
        this.events.emit('refreshed', batches.length, { ...timings, totalMs: Date.now() - started });
      } catch (error) {
        failures += 1;
        rollupRefreshDuration.observe({ outcome: 'error' }, (Date.now() - started) / 1000);
        log.warn({ err: error, batches: batches.length, failures }, 'rollup refresh failed; retrying');
        await sleep(retryDelayMs(failures));
      } finally {
        this.busy = false;
      }
      // Coalesce: let the next writes stage their keys before recomputing again.
      const took = Date.now() - started;
      const pause = Math.min(MAX_PAUSE_MS, Math.max(this.options.intervalMs, took * (REFRESH_SHARE_DIVISOR - 1)));
      await this.coalesce(started + pause);
    }
    this.notifyIdle();
  }

  /**
   * Waits until `until` (ms since the epoch) while writes keep queueing batches; returns early once none
   * came for `intervalMs` (nothing more to coalesce with) or when stopping.
   */
  private async coalesce(until: number): Promise<void> {
    const quietMs = Math.max(1, this.options.intervalMs);
    while (this.running) {
      const now = Date.now();
      if (now >= until) return;
      const quietSince = this.lastEnqueuedAt + quietMs;
      if (now >= quietSince) return;
      await sleep(Math.min(until, quietSince) - now);
    }
  }

  /** Tells whose rollups these batches recomputed (and the holders of markets the refresh resolved by inference). */
  private tellChanged(batches: readonly string[], holders: BatchWallets): void {
    const changes = this.options.changes;
    if (!changes) return;
    if (holders === 'everyone') return changes.changed(EVERYTHING_CHANGED);
    const wallets = new Set<string>(holders);
    for (const batch of batches) {
      const touched = this.pending.get(batch) ?? 'everyone';
      if (touched === 'everyone') return changes.changed(EVERYTHING_CHANGED);
      for (const wallet of touched) wallets.add(wallet);
    }
    if (wallets.size > 0) changes.changed({ wallets });
  }

  /** Until enqueue() or stop() wakes the loop, or the sweep is due. */
  private waitForWork(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = () => {};
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private async sweepOrphans(): Promise<void> {
    const now = Date.now();
    if (this.lastSweep !== undefined && now - this.lastSweep < this.options.orphanAfterSeconds * 1000) return;
    const olderThanSeconds = this.lastSweep === undefined ? 0 : this.options.orphanAfterSeconds;
    this.lastSweep = now;
    try {
      const orphans = await orphanRollupBatches(this.options.store, olderThanSeconds);
      for (const batch of orphans) this.pending.set(batch, 'everyone');
      if (orphans.length > 0)
        this.options.log.info({ batches: orphans.length }, 'recomputing rollups of batches staged by a stopped worker');
    } catch (error) {
      this.options.log.warn({ err: error }, 'orphan sweep failed');
    }
  }

  private notifyIdle(): void {
    if (this.pending.size > 0 || this.busy) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Finishes what is queued, then stops. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
  }
}

function mergeWallets(a: BatchWallets, b: BatchWallets): BatchWallets {
  if (a === 'everyone' || b === 'everyone') return 'everyone';
  if (b.size === 0) return a;
  return new Set([...a, ...b]);
}
