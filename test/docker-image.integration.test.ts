/**
 * The image builds and runs, proven without a container engine: deploy/Dockerfile is parsed and its
 * steps are performed as written in a temporary directory (one root per stage; the same files copied in
 * the same order, filtered by .dockerignore the way Docker filters the build context; the same RUN
 * commands through `sh -c` in the stage's WORKDIR with its ENV), then the api role is started from the
 * runtime stage with the image's ENTRYPOINT and answers /healthz, and the image's HEALTHCHECK command
 * passes against it (and fails when nothing listens).
 *
 * What cannot be reproduced here: the base image itself (its Node is the machine's, or the Node 22 of
 * test/tools' `node` package when installed, matching the image's line), and USER (checked, not switched).
 * Cost: `npm ci --omit=dev` from the lock into an empty directory, from the npm cache (prefer-offline):
 * most of the test's time, most of that writing chDB's 540 MB native library.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './harness/child.ts';

interface Instruction {
  keyword: string;
  args: string;
}

/** Dockerfile lines → instructions (comments dropped, `\` continuations joined). */
function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (pending === '' && (line.trim() === '' || line.trimStart().startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    const match = /^(\S+)\s+([\s\S]*)$/.exec(full);
    if (!match) throw new Error(`unreadable Dockerfile line: ${full}`);
    instructions.push({ keyword: match[1]!.toUpperCase(), args: match[2]! });
  }
  return instructions;
}

/** .dockerignore semantics (Go filepath.Match per segment, `**` for any depth, `!` exceptions, last match wins). */
function dockerignore(text: string): (relative: string) => boolean {
  const rules = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = path.posix.normalize((negate ? line.slice(1) : line).trim()).replace(/^\/+/, '');
      let source = '';
      for (let index = 0; index < pattern.length; index++) {
        const char = pattern[index]!;
        if (pattern.startsWith('**/', index)) {
          source += '(?:.*/)?';
          index += 2;
        } else if (pattern.startsWith('**', index)) {
          source += '.*';
          index += 1;
        } else if (char === '*') source += '[^/]*';
        else if (char === '?') source += '[^/]';
        else if ('[]'.includes(char))
          throw new Error(`.dockerignore character classes are not handled by this test: ${line}`);
        else source += char.replace(/[.+^${}()|\\]/g, '\\$&');
      }
      return { negate, regex: new RegExp(`^${source}$`) };
    });
  return (relative) => {
    // A path is excluded when it or one of its parent directories matches (Docker skips an excluded directory's contents).
    const parts = relative.split('/');
    let excluded = false;
    for (const rule of rules) {
      for (let depth = 1; depth <= parts.length; depth++) {
        if (rule.regex.test(parts.slice(0, depth).join('/'))) {
          excluded = !rule.negate;
          break;
        }
      }
    }
    return excluded;
  };
}

interface Stage {
  name: string;
  image: string;
  root: string;
  workdir: string;
  env: Record<string, string>;
  user: string;
  entrypoint: string[];
  cmd: string[];
  healthcheck: string[];
}

const substitute = (text: string, values: Record<string, string>) =>
  text.replace(/\$\{(\w+)\}|\$(\w+)/g, (_match, a: string, b: string) => values[a ?? b] ?? '');

/** COPY's flags and its sources and destination. */
function copyArguments(args: string): { from: string | null; sources: string[]; destination: string } {
  const words = args.split(/\s+/).filter(Boolean);
  let from: string | null = null;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift()!;
    if (flag.startsWith('--from=')) from = flag.slice('--from='.length);
  }
  const destination = words.pop()!;
  return { from, sources: words, destination };
}

async function copyInto(
  source: string,
  target: string,
  relativeToContext: string | null,
  ignored: (relative: string) => boolean,
): Promise<number> {
  const info = await lstat(source);
  if (relativeToContext !== null && relativeToContext !== '' && ignored(relativeToContext)) return 0;
  if (!info.isDirectory()) {
    await mkdir(path.dirname(target), { recursive: true });
    await cp(source, target, { verbatimSymlinks: true });
    return 1;
  }
  await mkdir(target, { recursive: true });
  let copied = 0;
  for (const entry of await readdir(source)) {
    copied += await copyInto(
      path.join(source, entry),
      path.join(target, entry),
      relativeToContext === null ? null : path.posix.join(relativeToContext, entry),
      ignored,
    );
  }
  return copied;
}

describe('the image (deploy/Dockerfile performed without a container engine)', () => {
  let buildRoot = '';
  afterAll(async () => {
    if (buildRoot) await rm(buildRoot, { recursive: true, force: true });
  });

  it('builds every stage as written, and its api role answers /healthz and the HEALTHCHECK', async () => {
    const instructions = parseDockerfile(await readFile(path.join(REPO_ROOT, 'deploy/Dockerfile'), 'utf8'));
    const ignored = dockerignore(await readFile(path.join(REPO_ROOT, '.dockerignore'), 'utf8'));
    buildRoot = await mkdtemp(path.join(os.tmpdir(), 'ta-image-'));
    const stages: Stage[] = [];
    const globalArgs: Record<string, string> = {};
    const steps: string[] = [];
    let stage: Stage | undefined;
    const inStage = (target: string) => path.join(stage!.root, path.posix.resolve(stage!.workdir, target));

    for (const { keyword, args } of instructions) {
      steps.push(`${keyword} ${args}`.slice(0, 80));
      if (keyword === 'ARG') {
        const [name, value = ''] = args.split('=');
        if (!stage) globalArgs[name!] = value;
        continue;
      }
      if (keyword === 'FROM') {
        const [image, as, name] = args.split(/\s+/);
        const root = path.join(buildRoot, `stage-${stages.length}`);
        await mkdir(root);
        stage = {
          name: as?.toUpperCase() === 'AS' ? name! : String(stages.length),
          image: substitute(image!, globalArgs),
          root,
          workdir: '/',
          env: {},
          user: 'root',
          entrypoint: [],
          cmd: [],
          healthcheck: [],
        };
        stages.push(stage);
        continue;
      }
      if (!stage) throw new Error(`${keyword} before FROM`);
      switch (keyword) {
        case 'WORKDIR':
          stage.workdir = path.posix.resolve(stage.workdir, args.trim());
          await mkdir(path.join(stage.root, stage.workdir), { recursive: true });
          break;
        case 'ENV':
          for (const pair of args.split(/\s+/)) {
            const [name, value = ''] = pair.split('=');
            stage.env[name!] = value;
          }
          break;
        case 'COPY': {
          const { from, sources, destination } = copyArguments(args);
          const fromStage = from === null ? null : stages.find((candidate) => candidate.name === from);
          if (from !== null && !fromStage) throw new Error(`COPY --from=${from}: no such stage`);
          const intoDirectory = destination.endsWith('/') || sources.length > 1;
          for (const source of sources) {
            const sourcePath = fromStage ? path.join(fromStage.root, source) : path.join(REPO_ROOT, source);
            expect(existsSync(sourcePath), `COPY source ${source}`).toBe(true);
            const relative = fromStage ? null : path.posix.normalize(source).replace(/\/+$/, '').replace(/^\.$/, '');
            const isDirectory = (await stat(sourcePath)).isDirectory();
            // A directory's contents go into the destination; a file goes into it (…/) or becomes it.
            const target =
              isDirectory || !intoDirectory
                ? inStage(destination)
                : path.join(inStage(destination), path.basename(source));
            // From another stage nothing is filtered: what that stage holds, as hard links (cp -al: the same
            // bytes without writing chDB's 540 MB twice; nothing modifies them afterwards).
            const copied = fromStage
              ? (await mkdir(target, { recursive: true }),
                spawnSync('cp', ['-al', isDirectory ? `${sourcePath}/.` : sourcePath, target]).status === 0 ? 1 : 0)
              : await copyInto(sourcePath, target, relative, ignored);
            expect(copied, `COPY ${source} copied nothing`).toBeGreaterThan(0);
          }
          break;
        }
        case 'RUN': {
          const cwd = path.join(stage.root, stage.workdir);
          // prefer-offline: npm answers from its cache when it can (the machine's npm cache is warm).
          const result = spawnSync('sh', ['-c', args], {
            cwd,
            env: {
              PATH: process.env.PATH ?? '',
              HOME: process.env.HOME ?? '',
              npm_config_prefer_offline: 'true',
              npm_config_update_notifier: 'false',
              ...stage.env,
            },
            encoding: 'utf8',
            maxBuffer: 64 * 1024 * 1024,
          });
          expect(result.status, `RUN ${args}\n${result.stderr.slice(-3000)}`).toBe(0);
          break;
        }
        case 'USER':
          stage.user = args.trim();
          break;
        case 'ENTRYPOINT':
          stage.entrypoint = JSON.parse(args) as string[];
          break;
        case 'CMD':
          stage.cmd = JSON.parse(args) as string[];
          break;
        case 'HEALTHCHECK': {
          const command = /CMD\s+(\[.*\])\s*$/.exec(args);
          if (!command) throw new Error(`HEALTHCHECK without an exec-form CMD: ${args}`);
          stage.healthcheck = JSON.parse(command[1]!) as string[];
          break;
        }
        case 'EXPOSE':
        case 'LABEL':
          break;
        default:
          throw new Error(`Dockerfile instruction ${keyword} is not performed by this test`);
      }
    }

    const runtime = stages.at(-1)!;
    expect(stages.length).toBeGreaterThanOrEqual(2);
    // A supported Node LTS line for every stage (even majors from 22 on; 20 is past its end of life).
    for (const { image } of stages) {
      const major = Number(/^node:(\d+)/.exec(image)?.[1]);
      expect(major % 2 === 0 && major >= 22, image).toBe(true);
    }
    expect(runtime.user).not.toBe('root');
    expect(runtime.user).not.toBe('0');
    expect(runtime.healthcheck.length).toBeGreaterThan(0);
    const app = path.join(runtime.root, runtime.workdir);
    // Only the program: no tests, no deployment files, no devDependencies, and no Node binary among the modules.
    expect(existsSync(path.join(app, 'main.ts'))).toBe(true);
    expect(existsSync(path.join(app, 'metrics/registry.ts'))).toBe(true);
    expect(existsSync(path.join(app, 'test'))).toBe(false);
    expect(existsSync(path.join(app, 'deploy'))).toBe(false);
    expect(existsSync(path.join(app, 'node_modules/vitest'))).toBe(false);
    expect(existsSync(path.join(app, 'node_modules/tsx'))).toBe(true);
    expect(existsSync(path.join(app, 'node_modules/.bin/node'))).toBe(false);

    // The image's Node line, when test/tools' `node` package provides it; else the machine's.
    const node22 = path.join(REPO_ROOT, 'test/tools/node_modules/node/bin/node');
    const nodeBinary = existsSync(node22) ? node22 : process.execPath;
    const [entry, ...entryArgs] = runtime.entrypoint;
    expect(entry).toBe('node');
    const environment = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...runtime.env,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
    };
    const child = spawn(nodeBinary, [...entryArgs, 'api'], {
      cwd: app,
      env: environment,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-10_000)));
    const exited = new Promise<number | string>((resolve) =>
      child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
    );
    try {
      const address = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          try {
            const entry = JSON.parse(line) as { msg?: string; address?: string };
            if (entry.msg === 'listening' && entry.address) resolve(entry.address);
          } catch {
            // not a log line
          }
        });
        void exited.then((code) => reject(new Error(`api role exited (${code}) before listening: ${stderr}`)));
      });
      const health = await fetch(`${address}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });
      expect((await fetch(`${address}/readyz`)).status).toBe(200);
      expect((await fetch(`${address}/metrics`)).status).toBe(200);

      const [healthBinary, ...healthArgs] = runtime.healthcheck;
      expect(healthBinary).toBe('node');
      const port = new URL(address).port;
      const healthy = spawnSync(nodeBinary, healthArgs, { env: { ...environment, PORT: port }, encoding: 'utf8' });
      expect(healthy.status, healthy.stderr).toBe(0);
      // Nothing on either port: the check fails.
      const unhealthy = spawnSync(nodeBinary, healthArgs, {
        env: { ...environment, PORT: '1', METRICS_PORT: '2' },
        encoding: 'utf8',
      });
      expect(unhealthy.status).toBe(1);
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });
});
