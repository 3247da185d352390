/**
 * The README's commands, run as written. The test starts the service the way the README says (`npm start`,
 * with a temporary DATA_DIR and a free port in place of the README's 8080), takes the Pro key from the
 * startup output as the README tells a person to, and runs every command of the README's shell blocks in
 * order, in one shell, as a person would in a second terminal. Each curl must answer 200 with the body the
 * README promises (values, not only a status).
 *
 * How README.md marks its blocks (the info string after ```):
 *   sh          run, command by command;
 *   sh start    installs and starts the service: `npm ci` is what a clone has done before the suite runs, and
 *               the test runs `npm start` itself, in the background;
 *   sh import   the import of the sample exports beside the repository and `npm start` on them: run as
 *               written, from the repository root, in a data directory of its own (not the demo one). The
 *               import must print the block's `#   read …` line; then the service starts once without the
 *               start command's `CARD_INCLUDE_V1=1` prefix and once as written, and the prose after the block
 *               is checked (the card of zeros and the markets list without it, the card's market count with
 *               it, every market open). The start runs with no simulated history (SIM_BACKFILL_DAYS=0,
 *               SIM_LIVE=0), so what is checked is the imported data;
 *   sh no-run   not run: needs an external service (Kafka, a ClickHouse server, Redis), or is the install or
 *               test command itself.
 * A command with no check below fails the test, so a new README command comes with its check.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { API_KEY_PATTERN } from '../ingest/sources/accounts.ts';
import { REPO_ROOT } from './harness/child.ts';

/** The README's address; the test's service listens on a free port instead. */
const README_ORIGIN = 'localhost:8080';
/** Where the README asks a person to paste the Pro key that `npm start` printed. */
const KEY_PLACEHOLDER = 'KEY=tak_...';
/** Fewer commands than this means the parser or the markers went wrong, not that the README is short. */
const AT_LEAST_COMMANDS = 14;
/**
 * A small demo world (a tenth of a simulated day) so that the start takes seconds; the two-day default
 * start, timed, is test/start.e2e's.
 */
const DEMO_WORLD = { SIM_BACKFILL_DAYS: '0.1' };
/**
 * The start on the imported exports simulates nothing (no history, no live world): the store holds the import
 * and the demo accounts only, so every answer checked there is about the imported data.
 */
const NO_WORLD = { SIM_BACKFILL_DAYS: '0', SIM_LIVE: '0' };
/** The prefix of the import block's start command that the README's prose contrasts with a plain `npm start`. */
const INCLUDE_V1 = 'CARD_INCLUDE_V1=1 ';
/**
 * The README's claims about the imported exports, in the prose after the import block (whitespace folded):
 * the trader, and the markets its card counts with CARD_INCLUDE_V1.
 */
const IMPORT_PROSE =
  /without it, `\$B\/traders\/([^`/]+)` answers a card of zeros while `\$B\/traders\/\1\/markets` lists the imported markets; with it, the card counts (\d+) markets\. The exports hold no resolutions, so every imported market stays open\./;
const WALLET = /^0x[0-9a-f]{40}$/;
const CONDITION_ID = /^0x[0-9a-f]{64}$/;

interface ShellBlock {
  flags: string[];
  line: number;
  commands: string[];
  /** The block's comment lines, without the leading `#` and blanks. */
  comments: string[];
}

/** The fenced sh/bash blocks of a Markdown document, each as its commands (continuations joined, comments and blank lines dropped). */
function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  const lines = markdown.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const fence = /^```(\S*)\s*(.*)$/.exec(lines[index]!);
    if (!fence) continue;
    const body: string[] = [];
    let end = index + 1;
    while (end < lines.length && !lines[end]!.startsWith('```')) body.push(lines[end++]!);
    if (['sh', 'bash', 'shell'].includes(fence[1]!)) {
      const commands: string[] = [];
      const comments: string[] = [];
      let pending = '';
      for (const text of body) {
        if (text.endsWith('\\')) {
          pending += `${text.slice(0, -1)} `;
          continue;
        }
        const command = (pending + text).trim();
        pending = '';
        if (command.startsWith('#')) comments.push(command.replace(/^#\s*/, ''));
        else if (command !== '') commands.push(command);
      }
      blocks.push({ flags: fence[2]!.split(/\s+/).filter(Boolean), line: index + 1, commands, comments });
    }
    index = end;
  }
  return blocks;
}

interface Ran {
  command: string;
  stdout: string;
  stderr: string;
  exitCode: number;
  /** The HTTP status of every curl the command made, in order. */
  statuses: number[];
  /** For an assignment `NAME=...`: the value NAME holds afterwards. */
  value?: string;
}

interface Seen {
  key: string;
  port: number;
  wallet?: string;
  conditionId?: string;
}

const json = (ran: Ran): any => JSON.parse(ran.stdout);

/** What each README command must give. Matched against the command as the README writes it. */
const CHECKS: { name: string; matches: RegExp; check: (ran: Ran, seen: Seen) => void }[] = [
  {
    name: 'the pasted key',
    matches: /^KEY=/,
    check: (ran, seen) => {
      expect(ran.value).toBe(seen.key);
      expect(ran.value).toMatch(API_KEY_PATTERN);
    },
  },
  {
    name: 'the API base',
    matches: /^B=/,
    check: (ran, seen) => expect(ran.value).toBe(`http://localhost:${seen.port}/api/agent/v1`),
  },
  {
    name: 'liveness',
    matches: /\/healthz\b/,
    check: (ran) => {
      expect(ran.statuses).toEqual([200]);
      expect(json(ran)).toEqual({ status: 'ok' });
    },
  },
  {
    name: 'readiness',
    matches: /\/readyz\b/,
    check: (ran) => {
      expect(ran.statuses).toEqual([200]);
      const body = json(ran);
      expect(body.status).toBe('ready');
      expect(body.rows_stored).toBeGreaterThan(1000);
      expect(['live', 'catching_up']).toContain(body.phase);
    },
  },
  {
    name: 'the plan behind the key',
    matches: /\$B\/me$/,
    check: (ran, seen) => {
      expect(ran.statuses).toEqual([200]);
      const body = json(ran);
      expect(body.plan).toMatch(/^Pro\b/);
      expect(body.key.last4).toBe(seen.key.slice(-4));
      expect(body.limits.history_depth).toBe(-1);
      expect(body.usage.month.requests).toBeGreaterThanOrEqual(1);
    },
  },
  {
    name: 'popular traders',
    matches: /^curl .*\$B\/popular$/,
    check: (ran) => {
      expect(ran.statuses).toEqual([200]);
      const body = json(ran);
      expect(body.traders.length).toBeGreaterThan(0);
      expect(body.count).toBe(body.traders.length);
      for (const trader of body.traders) expect(trader.wallet).toMatch(WALLET);
    },
  },
  {
    name: "the first popular trader's wallet",
    matches: /^W=/,
    check: (ran, seen) => {
      expect(ran.statuses).toEqual([200]);
      expect(ran.value).toMatch(WALLET);
      seen.wallet = ran.value;
    },
  },
  {
    name: 'the career card',
    matches: /\$B\/traders\/\$W$/,
    check: (ran, seen) => {
      expect(ran.statuses).toEqual([200]);
      const body = json(ran);
      expect(body.trader.wallet).toBe(seen.wallet);
      expect(body.card.markets_total).toBeGreaterThan(0);
      expect(body.card.markets_total).toBeGreaterThanOrEqual(body.card.resolved_total);
      expect(body.card.volume_usd).toBeGreaterThan(0);
    },
  },
  {
    name: "the trader's markets",
    matches: /^curl .*\/markets\?limit=3"$/,
    check: (ran, seen) => {
      expect(ran.statuses).toEqual([200]);
      const body = json(ran);
      expect(body.trader.wallet).toBe(seen.wallet);
      expect(body.markets.length).toBeGreaterThanOrEqual(1);
      expect(body.markets.length).toBeLessThanOrEqual(3);
      for (const market of body.markets) {
        expect(market.condition_id).toMatch(CONDITION_ID);
        expect(market.fills_count).toBeGreaterThan(0);
      }
    },
  },
  {
    name: "the trader's latest market",
    matches: /^C=/,
    check: (ran, seen) => {
      expect(ran.statuses).toEqual([200]);
      expect(ran.value).toMatch(CONDITION_ID);
      seen.conditionId = ran.value;
    },
  },
  {
    name: "one market's statistics",
    matches: /\/summary$/,
    check: (ran, seen) => {
      expect(ran.statuses).toEqual([200]);
      const body = json(ran);
      expect(body.trader.wallet).toBe(seen.wallet);
      expect(body.market.condition_id).toBe(seen.conditionId);
      expect(body.summary.fills_count).toBeGreaterThan(0);
      expect(body.summary.buy_count + body.summary.sell_count).toBe(body.summary.fills_count);
    },
  },
  {
    name: 'an MCP tool call',
    matches: /\/mcp$/,
    check: (ran, seen) => {
      expect(ran.statuses).toEqual([200]);
      const body = json(ran);
      expect(body.result.isError).toBeFalsy();
      expect(body.result.structuredContent.plan).toMatch(/^Pro\b/);
      expect(body.result.structuredContent.key.last4).toBe(seen.key.slice(-4));
    },
  },
  {
    name: 'the OpenAPI document',
    matches: /\/openapi\.json$/,
    check: (ran) => {
      expect(ran.statuses).toEqual([200]);
      const body = json(ran);
      expect(body.openapi).toBe('3.1.0');
      expect(Object.keys(body.paths)).toEqual(
        expect.arrayContaining(['/api/agent/v1/me', '/api/agent/v1/traders/{trader}']),
      );
    },
  },
  {
    name: 'Prometheus metrics',
    matches: /\/metrics\b/,
    check: (ran) => {
      expect(ran.statuses).toEqual([200]);
      // Every metered call so far was admitted by the gates: /me, /popular twice, the card, markets twice,
      // the summary, the MCP call (the OpenAPI document is free).
      const admitted = /^trader_analytics_gate_decisions_total\{outcome="admitted"\} (\d+)$/m.exec(ran.stdout);
      expect(Number(admitted?.[1])).toBeGreaterThanOrEqual(8);
    },
  },
];

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitUntil<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Runs the commands in one bash, in order, and collects each one's output, exit code and curl statuses. */
async function runInOneShell(commands: string[], outDir: string): Promise<Ran[]> {
  const script = [
    // Each curl also reports its status on stderr; what it prints on stdout is unchanged.
    `curl() { command curl -w '%{stderr}HTTP_STATUS %{http_code}\\n' "$@"; }`,
    ...commands.map((command, index) => {
      const variable = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(command)?.[1];
      return [
        `{ ${command}`,
        `} >"${outDir}/${index}.out" 2>"${outDir}/${index}.err"`,
        `echo $? >"${outDir}/${index}.rc"`,
        ...(variable ? [`printf '%s' "$${variable}" >"${outDir}/${index}.var"`] : []),
      ].join('\n');
    }),
  ].join('\n');
  const shell = spawn('bash', ['-c', script], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await new Promise((resolve) => shell.once('exit', resolve));
  return Promise.all(
    commands.map(async (command, index) => {
      const read = (suffix: string) => readFile(path.join(outDir, `${index}.${suffix}`), 'utf8');
      const stderr = await read('err');
      const value = await read('var').catch(() => undefined);
      return {
        command,
        stdout: await read('out'),
        stderr,
        exitCode: Number((await read('rc')).trim()),
        statuses: [...stderr.matchAll(/^HTTP_STATUS (\d+)$/gm)].map((match) => Number(match[1])),
        ...(value !== undefined ? { value } : {}),
      };
    }),
  );
}

/** The environment of a command run as a person would run it: only PATH and HOME of this process. */
const personEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  ...extra,
});

/** Runs one command as written, in bash from the repository root, to its end. */
async function runCommand(
  command: string,
  env: Record<string, string>,
): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
  const child = spawn('bash', ['-c', command], {
    cwd: REPO_ROOT,
    env: personEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exitCode = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { stdout, stderr, exitCode };
}

interface Service {
  port: number;
  /** The Pro key the startup output printed. */
  key: string;
  /** Ctrl-C, as a person stops it; idempotent. */
  stop: () => Promise<void>;
}

/**
 * Starts the service with the start command as written (`npm start`, maybe with a prefix), in `dataDir` on a
 * free port, and waits for the Pro key in its output and for /readyz to answer 200. Stopped by `cleanup` at
 * the latest.
 */
async function startService(
  command: string,
  dataDir: string,
  world: Record<string, string>,
  cleanup: (() => Promise<void>)[],
): Promise<Service> {
  const port = await freePort();
  const service = spawn('bash', ['-c', command], {
    cwd: REPO_ROOT,
    env: personEnv({ DATA_DIR: dataDir, PORT: String(port), ...world }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<number | string>((resolve) =>
    service.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const stop = async () => {
    // Ctrl-C for the whole process group (npm, the shell, node); a service still up after 20 s is killed.
    const stopped = () => service.exitCode !== null || service.signalCode !== null;
    if (!stopped()) process.kill(-service.pid!, 'SIGINT');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20_000))]);
    if (!stopped()) process.kill(-service.pid!, 'SIGKILL');
  };
  cleanup.push(stop);
  let output = '';
  service.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  service.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });

  // The key a person copies from the startup output ("pro   tak_..."), and the service ready.
  const key = await waitUntil(
    `the demo keys in the output of ${command}`,
    60_000,
    async () => /^\s+pro\s+(tak_\S+)$/m.exec(output)?.[1],
  );
  expect(output).toMatch(new RegExp(`listening on http://\\S+:${port}\\b`));
  await waitUntil(`/readyz of ${command} to answer 200`, 90_000, async () =>
    (await fetch(`http://localhost:${port}/readyz`)).status === 200 ? true : undefined,
  );
  expect(JSON.parse(await readFile(path.join(dataDir, 'demo-keys.json'), 'utf8')).pro).toBe(key);
  return { port, key, stop };
}

/** GET of the API as the README's curl does it, with the key; the body of a 200. */
async function apiGet(service: Service, route: string): Promise<any> {
  const response = await fetch(`http://localhost:${service.port}/api/agent/v1${route}`, {
    headers: { Authorization: `Bearer ${service.key}` },
  });
  const body = await response.json();
  expect(response.status, `${route}: ${JSON.stringify(body).slice(0, 500)}`).toBe(200);
  return body;
}

describe('README.md', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it('runs as written: npm start, the key it prints, and every curl answering what the README says', async () => {
    const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
    const blocks = shellBlocks(readme);
    for (const block of blocks) {
      expect(
        block.flags.filter((flag) => !['start', 'import', 'no-run'].includes(flag)),
        `flags of the block at README.md:${block.line}`,
      ).toEqual([]);
    }
    const startBlocks = blocks.filter((block) => block.flags.includes('start'));
    expect(startBlocks.map((block) => block.commands)).toEqual([['npm ci', 'npm start']]);
    const runnable = blocks.filter((block) => block.flags.length === 0).flatMap((block) => block.commands);
    expect(runnable.length).toBeGreaterThanOrEqual(AT_LEAST_COMMANDS);
    expect(runnable.filter((command) => command.startsWith(KEY_PLACEHOLDER))).toHaveLength(1);

    // `npm start`, as the README's start block has it, in a fresh data directory on a free port.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-readme-'));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const { port, key } = await startService(startBlocks[0]!.commands[1]!, dataDir, DEMO_WORLD, cleanup);

    const commands = runnable.map((command) =>
      command.replaceAll(README_ORIGIN, `localhost:${port}`).replace(KEY_PLACEHOLDER, `KEY=${key}`),
    );
    const outDir = await mkdtemp(path.join(os.tmpdir(), 'ta-readme-out-'));
    cleanup.push(() => rm(outDir, { recursive: true, force: true }));
    const results = await runInOneShell(commands, outDir);

    const seen: Seen = { key, port };
    const used = new Set<string>();
    for (const [index, ran] of results.entries()) {
      // Matched without the README's trailing comment.
      const written = runnable[index]!.replace(/\s+#.*$/, '');
      const checks = CHECKS.filter((candidate) => candidate.matches.test(written));
      expect(
        checks.map((check) => check.name),
        `checks of the README command: ${written}`,
      ).toHaveLength(1);
      const check = checks[0]!;
      used.add(check.name);
      expect(ran.exitCode, `${written}\n${ran.stderr}`).toBe(0);
      try {
        check.check(ran, seen);
      } catch (error) {
        throw new Error(
          `README command ${written}\n  (${check.name}) ${(error as Error).message}\n  stdout: ${ran.stdout.slice(0, 2000)}`,
        );
      }
    }
    // Every check met a command: the README still shows each endpoint it promises.
    expect([...used].sort()).toEqual(CHECKS.map((check) => check.name).sort());
  }, 150_000);

  it('imports the sample exports as written, and serves them as the prose after the import block says', async () => {
    const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
    const importBlocks = shellBlocks(readme).filter((block) => block.flags.includes('import'));
    expect(importBlocks, 'one ```sh import block').toHaveLength(1);
    const [importCommand, startCommand] = importBlocks[0]!.commands;
    expect(importBlocks[0]!.commands).toHaveLength(2);
    expect(importCommand).toMatch(/^npx tsx main\.ts import \S/);
    expect(startCommand).toBe(`${INCLUDE_V1}npm start`);
    const summary = importBlocks[0]!.comments.filter((comment) => comment.startsWith('read '));
    expect(summary, "the import block's `#   read …` line").toHaveLength(1);
    const claims = IMPORT_PROSE.exec(readme.replace(/\s+/g, ' '));
    expect(claims, 'the prose after the import block').not.toBeNull();
    const trader = claims![1]!;
    const marketsWithV1 = Number(claims![2]);

    // The import, as written from the repository root, into a data directory of its own.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-readme-import-'));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const imported = await runCommand(importCommand!, { DATA_DIR: dataDir });
    expect(imported.exitCode, `${importCommand}\n${imported.stderr}`).toBe(0);
    expect(imported.stdout.split('\n').filter((line) => line.startsWith('read '))).toEqual(summary);

    // Without CARD_INCLUDE_V1: a card of zeros, and the imported markets in the list, all open.
    const plain = await startService(startCommand!.slice(INCLUDE_V1.length), dataDir, NO_WORLD, cleanup);
    const zeros = await apiGet(plain, `/traders/${trader}`);
    expect(zeros.trader.name).toBe(trader);
    expect(zeros.card.markets_total).toBe(0);
    expect(zeros.card.volume_usd).toBe(0);
    // The card says which eras it counts, and the provider never reported on an imported wallet.
    expect(zeros.card.coverage.eras).toEqual(['v2']);
    expect(zeros.upstream).toEqual({ status: 'upstream_offline' });
    const prose = readme.replace(/\s+/g, ' ');
    expect(prose).toContain('`coverage.eras` says which eras it counts (`["v2"]`, or `["v1", "v2"]` with the flag');
    expect(prose).toContain('so `upstream` is `{"status": "upstream_offline"}`');
    const listed = await apiGet(plain, `/traders/${trader}/markets`);
    expect(listed.trader.wallet).toBe(zeros.trader.wallet);
    expect(listed.markets.length).toBeGreaterThan(0);
    for (const market of listed.markets) {
      expect(market.condition_id).toMatch(CONDITION_ID);
      expect(market.fills_count).toBeGreaterThan(0);
      expect([market.resolved, market.open, market.winner]).toEqual([false, true, null]);
    }
    await plain.stop();

    // As written, CARD_INCLUDE_V1=1 npm start: the card counts the imported markets, every one of them open.
    const withV1 = await startService(startCommand!, dataDir, NO_WORLD, cleanup);
    expect(withV1.key).toBe(plain.key);
    const card = await apiGet(withV1, `/traders/${trader}`);
    expect(card.trader.wallet).toBe(zeros.trader.wallet);
    expect(card.card.markets_total).toBe(marketsWithV1);
    expect(card.card.volume_usd).toBeGreaterThan(0);
    expect(card.card.open_markets).toBe(marketsWithV1);
    expect(card.card.resolved_total).toBe(0);
    expect(card.card.coverage.eras).toEqual(['v1', 'v2']);
    expect(card.upstream).toEqual({ status: 'upstream_offline' });
    const all = await apiGet(withV1, `/traders/${trader}/markets`);
    expect(all.markets.map((market: any) => market.condition_id).sort()).toEqual(
      listed.markets.map((market: any) => market.condition_id).sort(),
    );
    expect(all.markets).toHaveLength(marketsWithV1);
  }, 240_000);
});
