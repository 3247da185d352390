/** What the benchmarks share: medians, running a main function with a clean exit code, and a look at the filesystem. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

export function median(numbers: readonly number[]): number {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Runs a benchmark's main; exits 0 when it finishes, 1 with the error when it throws. */
/** Nearest-rank percentile (p in 0..1); NaN for no numbers. */
export function percentile(numbers: readonly number[], p: number): number {
  if (numbers.length === 0) return Number.NaN;
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export function runBenchmark(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}

/** Creates `count` one-byte files in a fresh directory under `parent`; µs per file. Removes them after. */
function fileCreationMicros(parent: string, count: number): number {
  const dir = mkdtempSync(path.join(parent, 'ta-fs-probe-'));
  try {
    const started = performance.now();
    for (let index = 0; index < count; index++) writeFileSync(path.join(dir, String(index)), 'x');
    return ((performance.now() - started) * 1000) / count;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** In RAM, where this machine has it (tmpfs): the baseline a disk's file creation is compared with. */
const RAM_DIRECTORY = '/dev/shm';
/** A disk this many times slower than RAM at creating files inflates every insert (see probeFilesystem). */
const SLOW_FILESYSTEM_RATIO = 4;

/**
 * How fast files can be created where the benchmark keeps its store (`parent`), beside the same in RAM,
 * µs per file (median of 3 rounds of 200). The embedded store writes about a dozen files per part, so a
 * filesystem that creates files slowly makes every insert slower. On ext4 mounted without a journal
 * (which skips every inode freed in the last minutes when it allocates one), after a run deleted its data
 * directory (tens of thousands of files), creating a file was several times slower for minutes, and so
 * was a small insert, and a benchmark started right after another measured the other's cleanup
 * (test/bench/RESULTS.md, the filesystem). Printed at the start of a run, with a warning when slow.
 */
export function probeFilesystem(parent: string): { diskUs: number; ramUs: number | null; slow: boolean } {
  const rounds = (where: string) => median([0, 1, 2].map(() => fileCreationMicros(where, 200)));
  const diskUs = rounds(parent);
  const ramUs = existsSync(RAM_DIRECTORY) ? rounds(RAM_DIRECTORY) : null;
  const slow = ramUs !== null && diskUs > SLOW_FILESYSTEM_RATIO * ramUs;
  console.log(
    `filesystem: creating a file in ${parent} takes ${diskUs.toFixed(0)} µs` +
      (ramUs === null ? '' : ` (in RAM ${ramUs.toFixed(0)} µs)`) +
      (slow
        ? ` — WARNING: ${SLOW_FILESYSTEM_RATIO}× slower than RAM or more: inserts will cost more than usual (recent mass deletions on a journal-less ext4 do this for minutes; wait, or compare code with TMPDIR=${RAM_DIRECTORY})`
        : ''),
  );
  return { diskUs, ramUs, slow };
}

/** A port free on the loopback now (a child process is started on it next). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resident set size of a process, bytes (Linux /proc). */
export async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb) * 1024;
}
