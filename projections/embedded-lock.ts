/**
 * One process at a time opens an embedded data directory: chDB, like a ClickHouse server, takes an
 * exclusive `flock` on `<path>/status` (the file names the holder's PID) for as long as the engine is up.
 * A second process that opens the directory anyway gets a lock error from every session, printed by the
 * engine itself, then a stack trace. So before the engine is loaded, the status file is tried here with
 * util-linux's `flock -n` (a lock the kernel drops with its holder, so a crashed process never leaves it
 * held); where that program is missing, a failed open is explained after the fact by the PID in the file.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Another process holds the embedded store's data directory (`npm start`, an `api` role…). */
export class DataDirectoryInUseError extends Error {
  constructor(
    /** The embedded store's directory (DATA_DIR/clickhouse). */
    readonly directory: string,
    /** The holder's process id, as its status file names it (null: unreadable). */
    readonly pid: number | null,
  ) {
    super(
      `the embedded ClickHouse directory ${directory} is in use by another process${pid === null ? '' : ` (pid ${pid})`}`,
    );
    this.name = 'DataDirectoryInUseError';
  }
}

/** The exit code asked of `flock` when the lock is held (apart from its own failures: 64 usage, 66 open…). */
const LOCK_HELD = 75;

const statusFileOf = (directory: string) => path.join(directory, 'status');

function holderOf(directory: string): number | null {
  try {
    const pid = Number(/^PID:\s*(\d+)/m.exec(readFileSync(statusFileOf(directory), 'utf8'))?.[1]);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Whether `flock` finds the status file locked: true, false, or null when it cannot tell (no `flock`, no file, an error). */
function statusLocked(directory: string): Promise<boolean | null> {
  return new Promise((resolve) => {
    execFile(
      'flock',
      ['--nonblock', '--conflict-exit-code', String(LOCK_HELD), statusFileOf(directory), 'true'],
      { timeout: 10_000 },
      (error) => {
        if (!error) return resolve(false);
        resolve((error as { code?: unknown }).code === LOCK_HELD ? true : null);
      },
    );
  });
}

/** Throws DataDirectoryInUseError when another process holds the directory. Call before the engine opens it. */
export async function assertDataDirectoryFree(directory: string): Promise<void> {
  // A directory never opened, or closed cleanly (the engine removes its status file), is free.
  if (!existsSync(statusFileOf(directory))) return;
  if ((await statusLocked(directory)) === true) {
    const pid = holderOf(directory);
    if (pid !== process.pid) throw new DataDirectoryInUseError(directory, pid);
  }
}

/**
 * After the engine failed to open the directory: the failure as DataDirectoryInUseError when the status
 * file names a live process other than this one (where `flock` could not tell beforehand), else the failure.
 */
export function explainOpenFailure(directory: string, failure: unknown): unknown {
  const pid = holderOf(directory);
  if (pid === null || pid === process.pid) return failure;
  try {
    process.kill(pid, 0);
    return new DataDirectoryInUseError(directory, pid);
  } catch (error) {
    // EPERM: alive, another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? new DataDirectoryInUseError(directory, pid) : failure;
  }
}
