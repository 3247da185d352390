/**
 * The bounds of a process's end, shared by main.ts (which loads no role before it knows which) and the
 * roles' shutdown signal (runtime.ts).
 */

/**
 * How long a role may drain after SIGINT / SIGTERM (or after it returned) before the process exits
 * regardless: an orchestrator that sends SIGTERM must see the process go, even when a drain waits on
 * something that never answers.
 */
export const SHUTDOWN_GRACE_MS = 20_000;

/** The exit code of a drain that did not finish within the grace. */
export const EXIT_SHUTDOWN_FORCED = 124;
