/**
 * Programs that need Node 22 (the MCP Inspector's CLI, the MCP conformance suite) run on the binary of
 * npm's `node` package (a devDependency, node_modules/node/bin/node), taken by path. The service and the
 * tests stay on the machine's Node: the root postinstall (.ci/unshadow-node.mjs) removes
 * node_modules/.bin/node, which would otherwise put Node 22 first on PATH in npm scripts and npx.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './child.ts';

/** A package's bin entry, resolved to a path under node_modules (the package's own file, not the .bin link). */
export function binOf(packageName: string, bin: string): string {
  const directory = path.join(REPO_ROOT, 'node_modules', packageName);
  const manifest = JSON.parse(readFileSync(path.join(directory, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> };
  const relative = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin];
  if (!relative) throw new Error(`${packageName} has no bin "${bin}"`);
  return path.join(directory, relative);
}

export const NODE_22 = binOf('node', 'node');

/** Every program still running: killed when the test process exits, whatever happened to the test. */
const running = new Set<ChildProcess>();
process.once('exit', killAll);

export function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
}

export interface Run {
  /** The exit code, or the signal's name when it was killed (the time limit). */
  exit: number | string;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (at most `timeoutMs`, then SIGKILL), with the environment given, in the repository root unless told. */
export function run(file: string, args: string[], env: Record<string, string>, timeoutMs = 120_000, cwd = REPO_ROOT): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      running.delete(child);
      const failure = error as (Error & { code?: number | string; signal?: string | null }) | null;
      const exit = failure ? (failure.signal ?? failure.code ?? 'unknown') : 0;
      resolve({ exit, stdout: String(stdout), stderr: String(stderr) });
    });
    child.stdin?.end();
    running.add(child);
  });
}
