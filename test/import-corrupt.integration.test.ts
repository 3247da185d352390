/**
 * Corrupt input to `main.ts import` and `main.ts replay`, run as an operator runs them (child processes,
 * the in-process log and worker, an embedded store in a temporary DATA_DIR): one behaviour for both. A
 * file that cannot be read whole publishes nothing of itself and is named with its reason on stderr;
 * the command exits 1 when any file failed; a file skipped as not an export says why at the default log
 * level; the counts line counts the files read, skipped and failed. The corrupt files are made here
 * from the real exports in ../shared.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeTrade } from './factories.ts';
import { REPO_ROOT, startRole } from './harness/child.ts';
import { TEST_OVERRIDES, testEnvironment, uniqueId } from './harness/context.ts';

const EXPORTS = path.resolve(REPO_ROOT, '../shared/data/polymarket/collectmarkets');
const GOOD_SOURCE = path.join(EXPORTS, 'CRYINGLITTLEBABY', 'btc-updown-15m-1767583800.csv');
const CORRUPT_SOURCE = path.join(EXPORTS, 'gabagool22', 'btc-updown-15m-1767555900.csv');

/**
 * One embedded data directory for both commands (a database each): the children run one after the
 * other, and this process opens the store only after both have exited (chDB binds one directory per
 * process, and one process at a time).
 */
let dataDir: string | undefined;
async function embeddedEnvironment(label: string): Promise<Record<string, string>> {
  dataDir ??= await mkdtemp(path.join(os.tmpdir(), 'ta-corrupt-'));
  // The default log level: what an operator sees without asking for more.
  const environment = testEnvironment(uniqueId(label), dataDir, { LOG_LEVEL: 'info' });
  delete (environment as Record<string, string | undefined>).KAFKA_BROKERS;
  return environment;
}

interface CommandRun {
  environment: Record<string, string>;
  code: number | string;
  summary: string;
  stderr: string;
}

async function runCommand(role: 'import' | 'replay', directory: string): Promise<CommandRun> {
  const environment = await embeddedEnvironment(`${role}_corrupt`);
  const run = startRole(role, [directory], environment, { overrides: TEST_OVERRIDES });
  const summary = await run.waitFor((line) => typeof line.text === 'string' && line.text.startsWith('read '));
  return { environment, code: await run.exited, summary: String(summary.text), stderr: run.stderr() };
}

const runs = {} as {
  import: CommandRun & { directory: string; goodRows: Record<string, string>[] };
  replay: CommandRun & { directory: string };
};
let store: Store;

beforeAll(async () => {
  runs.import = await importCorruptFiles();
  runs.replay = await replayCorruptFiles();
  store = await openMigratedStore(parseConfig(runs.import.environment), createLogger('error'));
});

afterAll(async () => {
  await store?.close();
});

/** The store of one command's database (both live in the one data directory). */
const queryOf = <Row>(run: CommandRun, sql: string) =>
  store.query<Row>(sql.replaceAll('{db:Identifier}', run.environment.CLICKHOUSE_DATABASE!));

/** Lines of stderr naming `file` (by its path as the command was given it). */
const linesNaming = (stderr: string, file: string) => stderr.split('\n').filter((line) => line.includes(file));

async function importCorruptFiles() {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'ta-corrupt-import-'));
  const corruptRows = parse(await readFile(CORRUPT_SOURCE), { columns: true }) as Record<string, string>[];
  const zipped = gzipSync(await readFile(CORRUPT_SOURCE));
  const json = JSON.stringify(
    corruptRows.map((row) => ({
      ...row,
      timestamp: Number(row.timestamp),
      size: Number(row.size),
      usdcSize: Number(row.usdcSize),
      price: Number(row.price),
    })),
  );
  const failing: Record<string, Buffer | string> = {
    'truncated.csv.gz': zipped.subarray(0, Math.floor(zipped.length * 0.8)),
    'junk.csv.gz': Buffer.from('not gzip at all\n'.repeat(50)),
    'empty.csv.gz': Buffer.alloc(0),
    'truncated.json': json.slice(0, Math.floor(json.length * 0.8)),
    'binary.csv': Buffer.from(Array.from({ length: 4096 }, (_, index) => (index * 7919) % 256)),
  };
  for (const [name, content] of Object.entries(failing)) await writeFile(path.join(directory, name), content);
  await writeFile(path.join(directory, 'other-columns.csv'), 'asset,size,avgPrice\n0xabc,10,0.5\n');
  await writeFile(path.join(directory, 'good.csv'), await readFile(GOOD_SOURCE));
  const goodRows = parse(await readFile(GOOD_SOURCE), { columns: true }) as Record<string, string>[];
  return { ...(await runCommand('import', directory)), directory, goodRows };
}

async function replayCorruptFiles() {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'ta-corrupt-replay-'));
  const market = makeConditionId('replay-corrupt');
  const line = (event: unknown) => JSON.stringify(event);
  await writeFile(
    path.join(directory, 'markets.jsonl'),
    `${line(makeMarket({ condition_id: market, title: 'Replayed market' }))}\n`,
  );
  // More lines than one publish (2,000): a replay that streamed before judging the file would publish some.
  const fills = Array.from({ length: 5000 }, (_, index) =>
    line(makeFill({ condition_id: market, ts: BASE_TS + index })),
  );
  const zippedFills = gzipSync(`${fills.join('\n')}\n`);
  await writeFile(
    path.join(directory, 'fills.archive.jsonl.gz'),
    zippedFills.subarray(0, Math.floor(zippedFills.length * 0.9)),
  );
  await writeFile(
    path.join(directory, 'trades.jsonl.gz'),
    Buffer.from(`${line(makeTrade({ condition_id: market }))}\n`),
  );
  return { ...(await runCommand('replay', directory)), directory };
}

describe('import: corrupt files fail whole and are named; the exit code says so', () => {
  it('truncated .csv.gz, junk .gz, empty .gz, truncated JSON and binary junk fail; a CSV of other columns is skipped with its reason', async () => {
    const { directory, goodRows, code, summary, stderr } = runs.import;
    expect(code, stderr).toBe(1);
    expect(summary).toBe(
      `read ${goodRows.length}, imported ${goodRows.length}, duplicate 0, rejected 0, skipped 0 (7 files: 1 read, 1 skipped, 5 failed)`,
    );
    const reasons: Record<string, RegExp> = {
      'truncated.csv.gz': /cannot decompress/,
      'junk.csv.gz': /cannot decompress/,
      'empty.csv.gz': /cannot decompress/,
      'truncated.json': /invalid JSON/,
      'binary.csv': /binary content|not UTF-8/,
    };
    for (const [name, reason] of Object.entries(reasons)) {
      const named = linesNaming(stderr, path.join(directory, name));
      expect(named, stderr).toHaveLength(1);
      expect(named[0]).toMatch(/^failed: /);
      expect(named[0]).toMatch(reason);
      expect(named[0]).toMatch(/Nothing of it was published/);
    }
    const skipped = linesNaming(stderr, path.join(directory, 'other-columns.csv'));
    expect(skipped).toEqual([expect.stringMatching(/^skipped: .*no proxyWallet or transactionHash column/)]);
    expect(linesNaming(stderr, path.join(directory, 'good.csv'))).toEqual([]);
  });

  it('the store holds the good file and nothing of the failed ones (not even a market of theirs)', async () => {
    const { goodRows } = runs.import;
    const fills = await queryOf<{ tx_hash: string }>(
      runs.import,
      "SELECT splitByChar(':', fill_id)[1] AS tx_hash FROM {db:Identifier}.fills FINAL",
    );
    expect(fills).toHaveLength(goodRows.length);
    expect(new Set(fills.map((fill) => fill.tx_hash))).toEqual(
      new Set(goodRows.map((row) => row.transactionHash!.toLowerCase())),
    );
    const markets = await queryOf<{ condition_id: string }>(
      runs.import,
      'SELECT condition_id FROM {db:Identifier}.markets_meta FINAL',
    );
    expect(new Set(markets.map((market) => market.condition_id))).toEqual(
      new Set(goodRows.map((row) => row.conditionId!.toLowerCase())),
    );
  });
});

describe('replay: the same behaviour', () => {
  it('a truncated .jsonl.gz and a junk one publish nothing and are named; the good file is replayed; exit 1', async () => {
    const { directory, code, summary, stderr } = runs.replay;
    expect(code, stderr).toBe(1);
    expect(summary).toBe('read 1 lines, published 1, unattributed 0 (3 files: 1 read, 2 failed)');
    for (const name of ['fills.archive.jsonl.gz', 'trades.jsonl.gz']) {
      expect(linesNaming(stderr, path.join(directory, name)), stderr).toEqual([
        expect.stringMatching(/^failed: .*cannot decompress.*Nothing of it was published/),
      ]);
    }
    const [counts] = await queryOf<{ markets: number; fills: number; trades: number }>(
      runs.replay,
      'SELECT (SELECT count() FROM {db:Identifier}.markets_meta) AS markets, (SELECT count() FROM {db:Identifier}.fills) AS fills, (SELECT count() FROM {db:Identifier}.trades) AS trades',
    );
    expect(counts).toEqual({ markets: 1, fills: 0, trades: 0 });
  });
});
