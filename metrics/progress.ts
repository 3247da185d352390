/**
 * Progress of the worker roles' loops, for their /healthz: a process can answer HTTP while its loop waits
 * on something that never comes (an answer that never ends, a promise nobody settles). Each loop says
 * when it advanced; one that has not within its period makes the process unhealthy, so an orchestrator
 * restarts it.
 */

interface Watched {
  periodMs: number;
  advancedAt: number;
  /** The loop's own clock (a test's virtual one, or the system's). */
  now: () => number;
}

const loops = new Map<string, Watched>();

export interface LoopWatch {
  /** The loop advanced (a tick finished, a request was answered). */
  advanced(): void;
  /** The loop ended on purpose: no longer watched. */
  stop(): void;
}

/** Watches a loop that must advance at least once every `periodMs`, from now on. */
export function watchLoop(name: string, periodMs: number, now: () => number = Date.now): LoopWatch {
  const watched: Watched = { periodMs, advancedAt: now(), now };
  loops.set(name, watched);
  return {
    advanced: () => {
      watched.advancedAt = now();
    },
    stop: () => {
      if (loops.get(name) === watched) loops.delete(name);
    },
  };
}

export interface StalledLoop {
  loop: string;
  periodMs: number;
  sinceMs: number;
}

/** The watched loops that have not advanced within their period, each by its own clock. */
export function stalledLoops(): StalledLoop[] {
  const stalled: StalledLoop[] = [];
  for (const [loop, { periodMs, advancedAt, now }] of loops) {
    const sinceMs = now() - advancedAt;
    if (sinceMs > periodMs) stalled.push({ loop, periodMs, sinceMs });
  }
  return stalled;
}

/** What a process says about itself on /readyz beside its status (how the archive decides finality, for one). */
const readinessNotes = new Map<string, string>();

export function noteReadiness(name: string, note: string): void {
  readinessNotes.set(name, note);
}

export function readinessDetail(): Record<string, string> {
  return Object.fromEntries(readinessNotes);
}
