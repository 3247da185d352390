/**
 * Test tools that need Node 22 live in their own package, test/tools (the MCP Inspector's CLI, the MCP
 * conformance suite, npm's `node` package with the Node 22 they run on, kubernetes-models), so that the
 * root `npm ci` installs no Node binary and warns about no engine. `.ci/run` installs it
 * (`npm ci --prefix test/tools`); a test that needs it fails with that command when it is missing.
 * Programs run on that package's binary, taken by path; the service and the tests stay on the machine's Node.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from './child.ts';

/** The tools package's folder (its own package.json and package-lock.json). */
const TOOLS_DIR = path.join(REPO_ROOT, 'test', 'tools');

/** A package's folder under test/tools/node_modules; throws with the install command when it is not there. */
function toolDirectory(packageName: string): string {
  const directory = path.join(TOOLS_DIR, 'node_modules', packageName);
  if (!existsSync(path.join(directory, 'package.json'))) {
    throw new Error(
      `test/tools/node_modules/${packageName} is missing: the test tools that need Node 22 are a package of their own; run npm ci --prefix test/tools`,
    );
  }
  return directory;
}

/** A package's bin entry, resolved to a path under test/tools/node_modules (the package's own file, not the .bin link). */
export function binOf(packageName: string, bin: string): string {
  const directory = toolDirectory(packageName);
  const manifest = JSON.parse(readFileSync(path.join(directory, 'package.json'), 'utf8')) as {
    bin?: string | Record<string, string>;
  };
  const relative = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin];
  if (!relative) throw new Error(`${packageName} has no bin "${bin}"`);
  return path.join(directory, relative);
}

/** Imports `packageName/subpath` from test/tools through the package's `exports` map (its `import` condition). */
export async function importTool<T>(packageName: string, subpath: string): Promise<T> {
  const directory = toolDirectory(packageName);
  const manifest = JSON.parse(readFileSync(path.join(directory, 'package.json'), 'utf8')) as {
    exports?: Record<string, string | { import?: string }>;
  };
  const entry = manifest.exports?.[`./${subpath}`];
  const relative = typeof entry === 'string' ? entry : entry?.import;
  if (!relative) throw new Error(`${packageName} exports no "./${subpath}"`);
  return (await import(pathToFileURL(path.join(directory, relative)).href)) as T;
}

/** The Node 22 binary of test/tools' `node` package (resolved when first asked, so that importing this file never throws). */
export function node22(): string {
  return binOf('node', 'node');
}

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
export function run(
  file: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs = 120_000,
  cwd = REPO_ROOT,
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        running.delete(child);
        const failure = error as (Error & { code?: number | string; signal?: string | null }) | null;
        const exit = failure ? (failure.signal ?? failure.code ?? 'unknown') : 0;
        resolve({ exit, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    child.stdin?.end();
    running.add(child);
  });
}
