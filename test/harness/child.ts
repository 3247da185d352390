/**
 * Runs a role of the program in a child process (the way operators run it) and follows its JSON log.
 * Used where a test must kill a worker for real, or start the whole program.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ConfigOverrides } from '../../config.ts';
import { LAUNCHER_THREAD_POOL_SIZE } from '../../projections/store.ts';

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface LogLine {
  msg?: string;
  [field: string]: unknown;
}

export interface RoleProcess {
  child: ChildProcess;
  /** Every log line so far (JSON lines of stdout; other stdout lines as `{ text }`). */
  lines: LogLine[];
  /** Resolves with the first line (past or future) that satisfies the predicate. */
  waitFor(predicate: (line: LogLine) => boolean): Promise<LogLine>;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  stderr(): string;
  /** Resolves with performance.now() when stderr (so far, or later) first matches the pattern. */
  stderrMatches(pattern: RegExp): Promise<number>;
}

export interface StartOptions {
  /** Node's own flags (before the script). */
  nodeArgs?: string[];
  /**
   * Settings on the child's parsed config (internals that are constants in production, such as
   * TEST_OVERRIDES): the child runs main.ts through test/harness/role.ts, which applies them.
   */
  overrides?: ConfigOverrides;
}

export function startRole(
  role: string,
  args: string[],
  environment: Record<string, string>,
  options: StartOptions = {},
): RoleProcess {
  const entry = options.overrides ? ['test/harness/role.ts', JSON.stringify(options.overrides)] : ['main.ts'];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', ...entry, role, ...args], {
    cwd: REPO_ROOT,
    // As the launchers start it (package.json, the Dockerfile): libuv's pool sized for the embedded store.
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      UV_THREADPOOL_SIZE: String(LAUNCHER_THREAD_POOL_SIZE),
      ...environment,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const waiters: { predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  let stderrText = '';
  const stderrWaiters: { pattern: RegExp; resolve: (at: number) => void }[] = [];
  child.stderr!.on('data', (chunk: Buffer) => {
    stderrText = (stderrText + chunk.toString()).slice(-20_000);
    const at = performance.now();
    for (let index = stderrWaiters.length - 1; index >= 0; index--) {
      const waiter = stderrWaiters[index]!;
      if (waiter.pattern.test(stderrText)) {
        stderrWaiters.splice(index, 1);
        waiter.resolve(at);
      }
    }
  });
  createInterface({ input: child.stdout! }).on('line', (text) => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      line = { text };
    }
    lines.push(line);
    for (let index = waiters.length - 1; index >= 0; index--) {
      const waiter = waiters[index]!;
      if (waiter.predicate(line)) {
        waiters.splice(index, 1);
        waiter.resolve(line);
      }
    }
  });
  // A test that times out never reaches its own kill: the child must not outlive the test process (a
  // stray `main.ts all` once kept simulating and slowed every later run on the machine).
  running.add(child);
  // On 'close', not 'exit': a process's last lines may still be in its pipes when it exits.
  const exited = new Promise<number | string>((resolve) =>
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  return {
    child,
    lines,
    exited,
    stderr: () => stderrText,
    stderrMatches(pattern) {
      if (pattern.test(stderrText)) return Promise.resolve(performance.now());
      return new Promise((resolve) => stderrWaiters.push({ pattern, resolve }));
    },
    waitFor(predicate) {
      const seen = lines.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiters.push({ predicate, resolve });
        void exited.then((code) =>
          reject(new Error(`process exited (${code}) before the awaited log line; stderr: ${stderrText.slice(-2000)}`)),
        );
      });
    },
  };
}

/** Runs a TypeScript script of the repository to its end (stdout dropped, stderr shown): its exit code. */
export function runScript(args: string[]): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.once('exit', (code) => resolve(code));
  });
}
