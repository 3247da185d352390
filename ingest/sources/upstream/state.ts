/**
 * The poller's cursors and schedules, kept so that a restarted poller resumes where it stopped: the Gamma
 * sweeps' (markets, events) keyset cursors and high-water marks, when each task is next due, and per tracked wallet the time
 * of its next refresh and of its last fill seen. Written after every page (atomically: a temporary file
 * renamed over the old one), so a crash loses at most one page, which is then fetched and published
 * again: harmless, every event has a stable id.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

const walletStateSchema = z.object({
  /** Epoch seconds: when this wallet is refreshed next. */
  nextAt: z.number(),
  /** Timestamp of the newest activity row published (the next poll starts there, inclusive). */
  activityFrom: z.number().default(0),
});

/** A Gamma sweep (markets, or events): newest-updated first, by keyset cursor, down to the last finished sweep's newest. */
const sweepStateSchema = z
  .object({
    /** Keyset cursor of the sweep in progress (null: the next sweep starts at the newest). */
    cursor: z.string().nullable().default(null),
    /** Items updated at or before this (epoch s) were published by a finished sweep. */
    highWater: z.number().default(0),
    /** The newest updatedAt of the sweep in progress: the high-water mark once it finishes. */
    sweepMax: z.number().default(0),
    nextAt: z.number().default(0),
  })
  .default({ cursor: null, highWater: 0, sweepMax: 0, nextAt: 0 });

const pollerStateSchema = z.object({
  version: z.literal(1),
  /** Gamma `/markets/keyset`. */
  markets: sweepStateSchema,
  /** Gamma `/events/keyset` (absent from a state file written before events were polled: a first full sweep). */
  events: sweepStateSchema,
  leaderboard: z
    .object({ nextAt: z.number().default(0), wallets: z.array(z.string()).default([]) })
    .default({ nextAt: 0, wallets: [] }),
  wallets: z.record(z.string(), walletStateSchema).default({}),
});
export type PollerState = z.infer<typeof pollerStateSchema>;

export function emptyState(): PollerState {
  return pollerStateSchema.parse({ version: 1 });
}

export interface StateStore {
  load(): Promise<PollerState>;
  save(state: PollerState): Promise<void>;
}

export class FileStateStore implements StateStore {
  constructor(private readonly file: string) {}

  async load(): Promise<PollerState> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyState();
      throw error;
    }
    const parsed = pollerStateSchema.safeParse(JSON.parse(text) as unknown);
    // A state file from another version is not trusted: start over (republishing is harmless).
    return parsed.success ? parsed.data : emptyState();
  }

  async save(state: PollerState): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(state));
    await rename(temporary, this.file);
  }
}

export class MemoryStateStore implements StateStore {
  private saved: string = JSON.stringify(emptyState());

  async load(): Promise<PollerState> {
    return pollerStateSchema.parse(JSON.parse(this.saved) as unknown);
  }

  async save(state: PollerState): Promise<void> {
    this.saved = JSON.stringify(state);
  }
}
