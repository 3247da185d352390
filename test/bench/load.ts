/**
 * Load generation of bench:overload and bench:soak: an open loop (requests start on a fixed schedule,
 * whatever the answers: the offered rate is the rate, as clients in the wild behave) or a closed loop
 * (N workers, each sending its next request when the last is answered: the service's capacity). Every
 * answer is recorded with its status and latency. Run it in a process of its own (forkLoadDriver) when
 * the server shares this process, so that the generator's event loop does not slow the server's.
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

export interface LoadJob {
  url: string;
  /** One key, or several taken round-robin with the paths (several accounts share the load). */
  authorization: string | string[];
  /** Request paths, taken round-robin. */
  paths: string[];
  durationS: number;
  /** Open loop: requests per second, evenly spaced. Closed loop: `concurrency` workers back to back. */
  mode: { kind: 'open'; rate: number } | { kind: 'closed'; concurrency: number };
  /** A closed loop ends after this many requests, if that comes before the duration. */
  maxRequests?: number;
  /** A request not answered within this long counts as a timeout. */
  timeoutMs?: number;
}

interface Answer {
  status: number;
  ms: number;
  /** The request's place in `paths`. */
  path: number;
  /** When it was sent, ms after the run started. */
  sentAtMs: number;
}

export interface LoadResult {
  seconds: number;
  /** When the run started, ms since the epoch (performance.timeOrigin + now: comparable across processes). */
  startedAtEpochMs: number;
  answers: Answer[];
  /** Connection errors and timeouts. */
  errors: number;
  /** The generator's own event-loop delay p99, ms: a starved generator adds its own wait to every latency it records. */
  generatorLoopDelayP99: number;
  /** The generator process's CPU per second of the run (1.0 = one core). */
  generatorCpuCores: number;
}

export async function runLoad(job: LoadJob): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const target = new URL(job.url);
  const answers: Answer[] = [];
  let errors = 0;
  let next = 0;
  const send = () =>
    new Promise<void>((resolve) => {
      const sequence = next++;
      const pathIndex = sequence % job.paths.length;
      const path = job.paths[pathIndex]!;
      const authorization = Array.isArray(job.authorization)
        ? job.authorization[sequence % job.authorization.length]!
        : job.authorization;
      const sentAt = performance.now();
      const request = http.get(
        { agent, host: target.hostname, port: target.port, path, headers: { authorization } },
        (response) => {
          response.resume();
          response.on('end', () => {
            answers.push({
              status: response.statusCode ?? 0,
              ms: performance.now() - sentAt,
              path: pathIndex,
              sentAtMs: sentAt - startedAt,
            });
            resolve();
          });
        },
      );
      request.setTimeout(job.timeoutMs ?? 30_000, () => request.destroy(new Error('timeout')));
      request.on('error', () => {
        errors += 1;
        resolve();
      });
    });

  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const cpu = process.cpuUsage();
  const startedAt = performance.now();
  const endsAt = startedAt + job.durationS * 1000;
  const pending: Promise<void>[] = [];
  if (job.mode.kind === 'closed') {
    const worker = async () => {
      while (performance.now() < endsAt && next < (job.maxRequests ?? Infinity)) await send();
    };
    await Promise.all(Array.from({ length: job.mode.concurrency }, worker));
  } else {
    // Every tick sends the requests whose start time has come: drift-free even when a tick is late.
    const intervalMs = 1000 / job.mode.rate;
    let sent = 0;
    await new Promise<void>((resolve) => {
      const tick = () => {
        const now = performance.now();
        while (startedAt + sent * intervalMs <= Math.min(now, endsAt)) {
          pending.push(send());
          sent += 1;
        }
        if (now >= endsAt) resolve();
        else setTimeout(tick, Math.max(0, Math.min(5, startedAt + sent * intervalMs - now)));
      };
      tick();
    });
    await Promise.all(pending);
  }
  agent.destroy();
  loop.disable();
  const used = process.cpuUsage(cpu);
  return {
    generatorLoopDelayP99: loop.percentile(99) / 1e6,
    generatorCpuCores: (used.user + used.system) / 1000 / (performance.now() - startedAt),
    seconds: (performance.now() - startedAt) / 1000,
    startedAtEpochMs: performance.timeOrigin + startedAt,
    answers,
    errors,
  };
}

/** This file forked: runs the jobs it is sent. */
if (process.argv.includes('--load-driver')) {
  process.on('message', (job: LoadJob) => {
    runLoad(job).then(
      (result) => process.send!({ ok: true, result }),
      (error: unknown) => process.send!({ ok: false, error: String(error) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
}

/**
 * A job runner in a forked child of a bench module (same loader: tsx's flags are in execArgv): the module,
 * started with `flag`, answers each job message with {ok, result} or {ok: false, error}.
 */
export class ForkedRunner<Job, Result> {
  readonly #child: ChildProcess;

  constructor(moduleUrl: string, flag: string) {
    this.#child = fork(fileURLToPath(moduleUrl), [flag], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  }

  run(job: Job): Promise<Result> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the load generator exited (${code})`));
      this.#child.once('exit', onExit);
      this.#child.once('message', (message: { ok: true; result: Result } | { ok: false; error: string }) => {
        this.#child.off('exit', onExit);
        if (message.ok) resolve(message.result);
        else reject(new Error(message.error));
      });
      this.#child.send(job as object);
    });
  }

  close(): void {
    this.#child.disconnect();
  }
}

/** The paced load generator of this module in a child process (a second one is an independent probe client). */
export class LoadDriver extends ForkedRunner<LoadJob, LoadResult> {
  constructor() {
    super(import.meta.url, '--load-driver');
  }
}
