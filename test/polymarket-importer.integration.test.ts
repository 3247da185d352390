/**
 * The Polymarket importer over real exports (`../shared/data/polymarket`: 29 CSV files of collectmarkets,
 * the JSON fixtures) and generated files: counts, sums per wallet and market, duplicates, malformed rows,
 * files that cannot be read whole, gzip, options. An integration test: it reads dozens of files, no
 * services.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse as parseCsvSync } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FillEvent, MarketMetadataEvent, TradeEvent } from '../ingest/contract/events.ts';
import type { FileFailure } from '../ingest/sources/files.ts';
import {
  importPolymarketExports,
  type ImportCounts,
  type ImportProgress,
  type RejectedRow,
  type SkippedRow,
} from '../ingest/sources/polymarket/index.ts';
import { mapActivityRows } from '../ingest/sources/upstream/mapping.ts';
import { RecordingSink, collectmarketsDir, csvLine, polymarketData } from './harness/polymarket.ts';

type CsvRow = Record<string, string>;

async function csvFilesUnder(directory: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const entryPath = path.join(directory, entry.name);
    if (entry.isDirectory()) files.push(...(await csvFilesUnder(entryPath)));
    else if (entry.name.endsWith('.csv')) files.push(entryPath);
  }
  return files;
}

/** The CSV rows, parsed here independently of the importer. */
async function readCsvRows(file: string): Promise<CsvRow[]> {
  return parseCsvSync(await readFile(file), { columns: true, bom: true, skip_empty_lines: true }) as CsvRow[];
}

function expectInvariant(counts: ImportCounts) {
  expect(counts.read).toBe(counts.imported + counts.duplicate + counts.rejected + counts.skipped);
}

interface Run {
  counts: ImportCounts;
  sink: RecordingSink;
  rejected: RejectedRow[];
  skipped: SkippedRow[];
  failed: FileFailure[];
  progress: ImportProgress[];
}

async function run(paths: string[], options: Parameters<typeof importPolymarketExports>[2] = {}): Promise<Run> {
  const sink = new RecordingSink();
  const rejected: RejectedRow[] = [];
  const skipped: SkippedRow[] = [];
  const progress: ImportProgress[] = [];
  const failed: FileFailure[] = [];
  const counts = await importPolymarketExports(paths, sink, {
    onRejected: (row) => rejected.push(row),
    onSkipped: (row) => skipped.push(row),
    onFailed: (failure) => failed.push(failure),
    onProgress: (update) => progress.push(update),
    ...options,
  });
  expectInvariant(counts);
  expect(counts.failedFiles).toBe(failed.length);
  return { counts, sink, rejected, skipped, failed, progress };
}

let temp: string;
beforeAll(async () => {
  temp = await mkdtemp(path.join(tmpdir(), 'polymarket-import-'));
});
afterAll(async () => {
  await rm(temp, { recursive: true, force: true });
});

describe('importing the collectmarkets exports (29 CSV files, two wallets, 23 markets)', () => {
  let result: Run;
  let rows: CsvRow[];
  let elapsedMs: number;

  beforeAll(async () => {
    const started = performance.now();
    result = await run([collectmarketsDir]);
    elapsedMs = performance.now() - started;
    rows = (await Promise.all((await csvFilesUnder(collectmarketsDir)).map(readCsvRows))).flat();
  });

  it('reads every row and imports 4,533 fills and 3 legs, nothing rejected', () => {
    expect(rows).toHaveLength(4536);
    expect(result.counts).toMatchObject({
      files: 29,
      read: 4536,
      imported: 4536,
      duplicate: 0,
      rejected: 0,
      skipped: 0,
      skippedFiles: 0,
    });
    expect(result.counts.events).toEqual({ markets: 23, fills: 4533, legs: 3, trades: 4533 });
    expect(result.sink.events('fillsUpstream')).toHaveLength(4533);
    expect(result.sink.events('positions')).toHaveLength(3);
    expect(result.rejected).toEqual([]);
    // Not a benchmark; a guard against an accidental quadratic step.
    expect(elapsedMs).toBeLessThan(20_000);
  });

  it('publishes, per wallet, market and token, the buy and sell USD and tokens the CSV rows add up to', () => {
    type Sums = { buyUsd: number; sellUsd: number; bought: number; sold: number; fills: number };
    const empty = (): Sums => ({ buyUsd: 0, sellUsd: 0, bought: 0, sold: 0, fills: 0 });
    const add = (sums: Map<string, Sums>, key: string, side: string, usd: number, tokens: number) => {
      const entry = sums.get(key) ?? empty();
      if (side === 'BUY') {
        entry.buyUsd += usd;
        entry.bought += tokens;
      } else {
        entry.sellUsd += usd;
        entry.sold += tokens;
      }
      entry.fills += 1;
      sums.set(key, entry);
    };

    const expected = new Map<string, Sums>();
    for (const row of rows.filter((candidate) => candidate.type === 'TRADE')) {
      const key = `${row.proxyWallet!.toLowerCase()}|${row.conditionId!.toLowerCase()}|${Number(row.outcomeIndex) + 1}`;
      add(expected, key, row.side!, Number(row.usdcSize), Number(row.size));
    }
    const published = new Map<string, Sums>();
    for (const fill of result.sink.events('fillsUpstream')) {
      add(published, `${fill.wallet}|${fill.condition_id}|${fill.token_side}`, fill.side, fill.usd, fill.size_tokens);
    }

    expect([...published.keys()].sort()).toEqual([...expected.keys()].sort());
    const close = (actual: number, wanted: number) =>
      expect(Math.abs(actual - wanted)).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(wanted)));
    for (const [key, want] of expected) {
      const got = published.get(key)!;
      expect(got.fills, key).toBe(want.fills);
      close(got.buyUsd, want.buyUsd);
      close(got.sellUsd, want.sellUsd);
      close(got.bought, want.bought);
      close(got.sold, want.sold);
    }
  });

  it('publishes the MERGE and REDEEM rows as legs with tokens = size and usd = usdcSize', () => {
    const legRows = rows.filter((row) => row.type !== 'TRADE');
    const legs = result.sink.events('positions');
    expect(legs.map((leg) => [leg.kind, leg.wallet, leg.condition_id, leg.tokens, leg.usd, leg.ts]).sort()).toEqual(
      legRows
        .map((row) => [
          row.type,
          row.proxyWallet!.toLowerCase(),
          row.conditionId!.toLowerCase(),
          Number(row.size),
          Number(row.usdcSize),
          Number(row.timestamp),
        ])
        .sort(),
    );
  });

  it('gives every fill a distinct id and the wallet name of its row', () => {
    const fills = result.sink.events('fillsUpstream');
    expect(new Set(fills.map((fill) => `${fill.wallet}:${fill.tx_hash}:${fill.log_index}`)).size).toBe(fills.length);
    const names = new Set(fills.map((fill) => fill.name));
    expect(names).toEqual(new Set(['gabagool22', 'CRYINGLITTLEBABY']));
    expect(new Set(fills.map((fill) => fill.role))).toEqual(new Set(['taker']));
    // The exports predate the V1 → V2 cut-over: V1 by their time.
    expect(Math.max(...fills.map((fill) => fill.ts))).toBeLessThan(Date.UTC(2026, 3, 28, 11, 15) / 1000);
    expect(new Set(fills.map((fill) => fill.era))).toEqual(new Set(['v1']));
  });

  it('publishes one metadata event per market, before any fill, leg or trade of that market', () => {
    const firstIndexOf = new Map<string, number>();
    const metadataIndexOf = new Map<string, number>();
    result.sink.log.forEach((entry, index) => {
      const event = entry.event as { condition_id: string };
      if (entry.topicId === 'markets') {
        expect(metadataIndexOf.has(event.condition_id)).toBe(false);
        metadataIndexOf.set(event.condition_id, index);
      } else if (!firstIndexOf.has(event.condition_id)) {
        firstIndexOf.set(event.condition_id, index);
      }
    });
    expect(metadataIndexOf.size).toBe(23);
    expect(new Set(rows.map((row) => row.conditionId!.toLowerCase()))).toEqual(new Set(metadataIndexOf.keys()));
    for (const [conditionId, firstIndex] of firstIndexOf) {
      expect(metadataIndexOf.get(conditionId), conditionId).toBeLessThan(firstIndex);
    }
  });

  it('names outcome1 after outcomeIndex 0 and outcome2 after outcomeIndex 1, with the title window and latest row as version', () => {
    const metadata = new Map(
      result.sink.events('markets').map((event) => [event.condition_id, event as MarketMetadataEvent]),
    );
    for (const row of rows) {
      const market = metadata.get(row.conditionId!.toLowerCase())!;
      expect(market.title).toBe(row.title);
      expect(market.slug).toBe(row.slug);
      expect(market.category).toBe('crypto');
      expect(market.version).toBeGreaterThanOrEqual(Number(row.timestamp));
      if (row.outcomeIndex === '0') expect(market.outcome1).toBe(row.outcome);
      if (row.outcomeIndex === '1') expect(market.outcome2).toBe(row.outcome);
    }
    for (const market of metadata.values()) {
      expect(market.version).toBe(
        Math.max(
          ...rows
            .filter((row) => row.conditionId!.toLowerCase() === market.condition_id)
            .map((row) => Number(row.timestamp)),
        ),
      );
    }
  });

  it('sets title_start_ts to the epoch in the updown-15m slugs', () => {
    const windows = result.sink
      .events('markets')
      .filter((event) => /-updown-15m-\d+$/.test((event as MarketMetadataEvent).slug));
    expect(windows.length).toBeGreaterThanOrEqual(10);
    for (const event of windows) {
      const metadata = event as MarketMetadataEvent;
      const epoch = Number(/-(\d+)$/.exec(metadata.slug)![1]);
      expect(metadata.title_start_ts, metadata.slug).toBe(epoch);
      expect(metadata.end_ts, metadata.slug).toBe(epoch + 900);
    }
    const hourly = result.sink
      .events('markets')
      .find(
        (event) => (event as MarketMetadataEvent).slug === 'bitcoin-up-or-down-january-4-10pm-et',
      ) as MarketMetadataEvent;
    // January 4, 10PM ET is 03:00 UTC on January 5.
    expect(hourly.title_start_ts).toBe(Date.UTC(2026, 0, 5, 3) / 1000);
  });

  it('publishes a trade print per fill with the same id, the token-frame price and a seq within the second below any chain print’s', () => {
    const fills = result.sink.events('fillsUpstream');
    const trades = new Map(result.sink.events('trades').map((trade) => [`${trade.tx_hash}:${trade.log_index}`, trade]));
    expect(trades.size).toBe(fills.length);
    for (const fill of fills) {
      const trade = trades.get(`${fill.tx_hash}:${fill.log_index}`) as TradeEvent;
      expect(trade).toMatchObject({
        condition_id: fill.condition_id,
        token_side: fill.token_side,
        price: fill.price,
        size_tokens: fill.size_tokens,
        usd: fill.usd,
        ts: fill.ts,
      });
    }
    // The tape orders by (ts, seq): seq orders prints within a second only, and stays below the seq of every
    // print read from the chain (block × 100,000 + log index), so the chain's order and copy win a second.
    for (const trade of trades.values()) expect(trade.seq).toBeLessThan(2 ** 16);
  });

  it('publishes in chunks and reports progress up to the total', async () => {
    const chunked = await run([path.join(collectmarketsDir, 'gabagool22')], { chunkSize: 500 });
    expect(Math.max(...chunked.sink.calls.map((call) => call.count))).toBeLessThanOrEqual(500);
    expect(chunked.sink.calls.length).toBeGreaterThan(4);
    const imports = chunked.progress.filter((update) => update.phase === 'import');
    expect(imports.length).toBeGreaterThan(4);
    const bytes = chunked.progress.map((update) => update.bytesRead);
    expect(bytes).toEqual([...bytes].sort((a, b) => a - b));
    const last = chunked.progress.at(-1)!;
    expect(last.bytesRead).toBe(last.bytesTotal);
    expect(last.rowsRead).toBe(chunked.counts.read);
  });

  it('imports the same events again on a second run (deterministic ids, seq and metadata)', async () => {
    const again = await run([collectmarketsDir]);
    expect(again.sink.log).toEqual(result.sink.log);
  });
});

describe('duplicates', () => {
  it('publishes a repeated row once and counts the repeats, within a file and across files', async () => {
    const source = path.join(collectmarketsDir, 'gabagool22', 'btc-updown-15m-1767555900.csv');
    const lines = (await readFile(source, 'utf8')).split(/\r?\n/).filter((line) => line !== '');
    const [header, ...data] = lines;
    const directory = path.join(temp, 'duplicates');
    await rm(directory, { recursive: true, force: true });
    await import('node:fs/promises').then((fs) => fs.mkdir(directory, { recursive: true }));
    // Page 1 holds rows 0..9; page 2 (the API past its offset cap) repeats rows 7..9 and adds 10..11.
    await writeFile(
      path.join(directory, 'a.csv'),
      [header, ...data.slice(0, 10), ...data.slice(7, 10)].join('\n') + '\n',
    );
    await writeFile(path.join(directory, 'b.csv'), [header, data[2], ...data.slice(10, 12)].join('\n') + '\n');

    const { counts, sink } = await run([directory]);
    expect(counts).toMatchObject({ files: 2, read: 16, imported: 12, duplicate: 4, rejected: 0, skipped: 0 });
    expect(sink.events('fillsUpstream').length + sink.events('positions').length).toBe(12);
    expect(sink.events('markets')).toHaveLength(1);
  });

  it('recognises the same trade in an /activity CSV and a /trades JSON export', async () => {
    const source = path.join(collectmarketsDir, 'gabagool22', 'btc-updown-15m-1767555900.csv');
    const rows = (await readCsvRows(source)).filter((row) => row.type === 'TRADE').slice(0, 5);
    const tradesExport = rows.map((row) => ({
      proxyWallet: row.proxyWallet,
      side: row.side,
      asset: row.asset,
      conditionId: row.conditionId,
      size: Number(row.size),
      price: Number(row.price),
      timestamp: Number(row.timestamp),
      title: row.title,
      slug: row.slug,
      outcome: row.outcome,
      outcomeIndex: Number(row.outcomeIndex),
      name: row.name,
      transactionHash: row.transactionHash,
    }));
    const file = path.join(temp, 'trades-copy.json');
    await writeFile(file, JSON.stringify(tradesExport));
    const { counts } = await run([source, file]);
    expect(counts.duplicate).toBe(5);
  });
});

describe('malformed rows', () => {
  let header: string[];
  let good: CsvRow[];

  beforeAll(async () => {
    good = (await readCsvRows(path.join(collectmarketsDir, 'gabagool22', 'btc-updown-15m-1767555900.csv'))).filter(
      (row) => row.type === 'TRADE',
    );
    header = Object.keys(good[0]!);
  });

  const line = (row: CsvRow, overrides: Partial<CsvRow> = {}) =>
    csvLine(header.map((column) => ({ ...row, ...overrides })[column] ?? ''));

  it('rejects broken CSV rows with their file and physical line, and imports the rest', async () => {
    const file = path.join(temp, 'broken.csv');
    const text = [
      csvLine(header), //                                                          line 1
      line(good[0]!), //                                                           line 2
      line(good[1]!, { proxyWallet: '0xnot-a-wallet' }), //                        line 3
      line(good[2]!, { conditionId: '' }), //                                      line 4
      '', //                                                                       line 5 (empty: not a row)
      line(good[3]!, { price: 'abc' }), //                                         line 6
      line(good[4]!, { price: '1.7' }), //                                         line 7
      line(good[5]!).split(',').slice(0, 10).join(','), //                         line 8: wrong field count
      line(good[6]!, { bio: 'two\nlines' }), //                                   lines 9-10: a valid multi-line row
      line(good[7]!), //                                                           line 11
      line(good[8]!, { side: '' }), //                                             line 12
      csvLine(header), //                                                          line 13: a repeated header
      line(good[9]!), //                                                           line 14
    ].join('\r\n');
    await writeFile(file, `${text}\r\n`);

    const { counts, rejected, sink } = await run([file]);
    expect(counts).toMatchObject({ read: 10, imported: 4, rejected: 6, duplicate: 0, skipped: 0 });
    expect(rejected.map((row) => [row.file, row.line])).toEqual([
      [file, 3],
      [file, 4],
      [file, 6],
      [file, 7],
      [file, 8],
      [file, 12],
    ]);
    expect(rejected[0]!.reason).toMatch(/wallet must be 0x followed by 40 hex digits/);
    expect(rejected[1]!.reason).toMatch(/condition_id/);
    expect(rejected[2]!.reason).toMatch(/price/);
    expect(rejected[3]!.reason).toMatch(/price/);
    expect(rejected[4]!.reason).toMatch(/expected 22 fields, found 10/);
    expect(rejected[5]!.reason).toMatch(/side/);
    expect(sink.events('fillsUpstream').map((fill) => fill.tx_hash)).toEqual(
      [good[0], good[6], good[7], good[9]].map((row) => row!.transactionHash!.toLowerCase()),
    );
  });

  it('rejects rows priced 0 with the figures they came from, and counts rejections once per rule', async () => {
    const file = path.join(temp, 'priced-zero.csv');
    const zero = { price: '0', usdcSize: '0', size: '30.01' };
    const text = [
      csvLine(header), //                                 line 1
      line(good[0]!), //                                  line 2
      line(good[1]!, zero), //                            line 3
      line(good[2]!, { price: '1.7' }), //                line 4
      line(good[3]!, { ...zero, size: '5' }), //          line 5
      line(good[4]!), //                                  line 6
    ].join('\n');
    await writeFile(file, `${text}\n`);

    const { counts, rejected } = await run([file]);
    expect(counts).toMatchObject({ read: 5, imported: 2, rejected: 3 });
    expect(rejected.map((row) => [row.line, row.reason])).toEqual([
      [3, 'price 0 (usdcSize 0 for size 30.01): a fill must have a price above 0'],
      [4, expect.stringMatching(/price/)],
      [5, 'price 0 (usdcSize 0 for size 5): a fill must have a price above 0'],
    ]);
    expect(counts.rejections).toEqual([
      { rule: 'a fill must have a price above 0', rows: 2, first: { file, line: 3, reason: rejected[0]!.reason } },
      { rule: rejected[1]!.reason, rows: 1, first: { file, line: 4, reason: rejected[1]!.reason } },
    ]);
  });

  it('survives an unclosed quote: reports its line and imports the rows after it', async () => {
    const file = path.join(temp, 'unclosed.csv');
    const unclosed = line(good[1]!).replace(`"${good[1]!.title}"`, `"${good[1]!.title}`);
    expect(unclosed).not.toBe(line(good[1]!));
    await writeFile(
      file,
      [csvLine(header), line(good[0]!), unclosed, line(good[2]!), line(good[3]!)].join('\n') + '\n',
    );
    const { counts, rejected, sink } = await run([file]);
    expect(rejected.map((row) => row.line)).toEqual([3]);
    expect(counts).toMatchObject({ read: 4, imported: 3, rejected: 1 });
    expect(sink.events('fillsUpstream').map((fill) => fill.tx_hash)).toEqual(
      [good[0], good[2], good[3]].map((row) => row!.transactionHash!.toLowerCase()),
    );
  });

  it('survives an unclosed quote that never closes, and a truncated last row', async () => {
    const file = path.join(temp, 'truncated.csv');
    const lastGood = line(good[2]!);
    const unquoted = line(good[3]!, { title: 'Bitcoin Up or Down' });
    expect(unquoted).not.toContain('"');
    await writeFile(
      file,
      [
        csvLine(header), //                                              line 1
        line(good[0]!), //                                               line 2
        `${line(good[1]!).slice(0, 40)},"never closed`, //               line 3: the quote runs into line 5
        unquoted, //                                                     line 4
        lastGood.slice(0, lastGood.indexOf('"') + 5), //                 line 5: cut off inside a quote, no newline
      ].join('\n'),
    );
    const { counts, rejected, sink } = await run([file]);
    expect(rejected.map((row) => row.line)).toEqual([3, 5]);
    expect(rejected[0]!.reason).toMatch(/quote/);
    expect(rejected[1]!.reason).toMatch(/quote/);
    expect(counts).toMatchObject({ read: 4, imported: 2, rejected: 2 });
    expect(sink.events('fillsUpstream').map((fill) => fill.tx_hash)).toEqual(
      [good[0], good[3]].map((row) => row!.transactionHash!.toLowerCase()),
    );
  });

  it('stops an unclosed quote from swallowing a large file (record size cap), and imports the lines after it', async () => {
    const file = path.join(temp, 'runaway.csv');
    // 4,000 unquoted rows (≈ 1.7 MB) after an unclosed quote: more than one record may hold.
    const rows = Array.from({ length: 4000 }, (_, index) =>
      line(good[0]!, { title: 'Bitcoin Up or Down', size: String(index + 1) }),
    );
    await writeFile(
      file,
      [csvLine(header), line(good[1]!), `${line(good[2]!).slice(0, 40)},"never closed`, ...rows].join('\n') + '\n',
    );
    const { counts, rejected } = await run([file]);
    expect(rejected).toEqual([{ file, line: 3, reason: expect.stringMatching(/unclosed quote/) }]);
    expect(counts).toMatchObject({ read: 4002, imported: 4001, rejected: 1 });
  });

  it('rejects broken JSONL lines with their line numbers, and imports the rest', async () => {
    const file = path.join(temp, 'broken.jsonl');
    const json = (row: CsvRow, overrides: Record<string, unknown> = {}) =>
      JSON.stringify({
        ...row,
        timestamp: Number(row.timestamp),
        size: Number(row.size),
        usdcSize: Number(row.usdcSize),
        price: Number(row.price),
        outcomeIndex: Number(row.outcomeIndex),
        ...overrides,
      });
    await writeFile(
      file,
      [
        json(good[0]!), //                                   line 1
        '{"proxyWallet": "0x', //                            line 2: bad JSON
        json(good[1]!, { price: 1.5 }), //                   line 3
        '', //                                               line 4: blank, not a row
        json(good[2]!, { type: 'REWARD', conditionId: '' }), // line 5: skipped
        '[1, 2]', //                                         line 6: not an object
        json(good[3]!), //                                   line 7
      ].join('\n'),
    );
    const { counts, rejected, skipped } = await run([file]);
    expect(counts).toMatchObject({ read: 6, imported: 2, rejected: 3, skipped: 1 });
    expect(rejected.map((row) => [row.file, row.line])).toEqual([
      [file, 2],
      [file, 3],
      [file, 6],
    ]);
    expect(rejected[0]!.reason).toMatch(/invalid JSON/);
    expect(rejected[1]!.reason).toMatch(/price/);
    expect(skipped).toEqual([{ file, line: 5, reason: expect.stringMatching(/REWARD/) }]);
  });

  it('fails a JSON document that does not parse as a whole file: nothing of it is published, and it is named with its reason', async () => {
    const file = path.join(temp, 'truncated.json');
    await writeFile(file, '[\n {"proxyWallet": "0x1",\n');
    const { counts, failed, sink } = await run([file]);
    expect(counts).toMatchObject({ files: 1, read: 0, rejected: 0, failedFiles: 1 });
    expect(failed).toEqual([{ file, reason: expect.stringMatching(/invalid JSON at line 3/) }]);
    expect(sink.log).toEqual([]);
  });
});

describe('the JSON fixtures', () => {
  it('imports /activity and /trades JSON, skips REWARD and rebate rows and the files that are not activity', async () => {
    const { counts, skipped, rejected, sink } = await run([
      path.join(polymarketData, 'pscanner-fixtures'),
      path.join(polymarketData, 'polymarket-smart-money-fixtures'),
    ]);
    expect(rejected).toEqual([]);
    // pscanner: activity.json (10 TRADE). smart money: activity.json (15 REDEEM), activity_all.json (42 TRADE, 2 REDEEM
    // that activity.json also holds, 6 REWARD / rebates), trades.json (5).
    expect(counts).toMatchObject({ read: 80, imported: 72, duplicate: 2, skipped: 6, rejected: 0, skippedFiles: 8 });
    expect(counts.events).toMatchObject({ fills: 57, legs: 15, trades: 57 });
    const skippedRowTypes = skipped
      .filter((skip) => skip.line !== null)
      .map((skip) => /type (\w+)/.exec(skip.reason)![1]);
    expect(skippedRowTypes.sort()).toEqual(['MAKER_REBATE', 'REWARD', 'REWARD', 'REWARD', 'REWARD', 'TAKER_REBATE']);
    const skippedFiles = new Map(
      skipped
        .filter((skip) => skip.line === null)
        .map((skip) => [path.relative(polymarketData, skip.file), skip.reason]),
    );
    expect([...skippedFiles.keys()].sort()).toEqual([
      'polymarket-smart-money-fixtures/leaderboard.json',
      'polymarket-smart-money-fixtures/positions.json',
      'pscanner-fixtures/closed_positions.json',
      'pscanner-fixtures/event.json',
      'pscanner-fixtures/leaderboard.json',
      'pscanner-fixtures/market.json',
      'pscanner-fixtures/positions.json',
      'pscanner-fixtures/ws_trade.json',
    ]);
    expect(skippedFiles.get('pscanner-fixtures/positions.json')).toMatch(/positions/);
    expect(skippedFiles.get('pscanner-fixtures/leaderboard.json')).toMatch(/leaderboard/);
    expect(skippedFiles.get('pscanner-fixtures/market.json')).toMatch(/Gamma market/);

    const markets = new Map(sink.events('markets').map((event) => [event.condition_id, event as MarketMetadataEvent]));
    const oilers = [...markets.values()].find((market) => market.title === 'Oilers vs. Ducks')!;
    expect(oilers).toMatchObject({ outcome1: 'Oilers', outcome2: 'Ducks', category: 'sports', title_start_ts: null });
    const aliens = [...markets.values()].find((market) => market.title.startsWith('Will the US confirm that aliens'))!;
    expect(aliens).toMatchObject({ outcome1: 'Yes', outcome2: 'No', category: 'other' });
  });

  it('does not let a skipped positions file shape the metadata of a market it shares with the activity', async () => {
    const directory = path.join(temp, 'positions-and-activity');
    await import('node:fs/promises').then((fs) => fs.mkdir(directory, { recursive: true }));
    const activity = JSON.parse(
      await readFile(path.join(polymarketData, 'pscanner-fixtures', 'activity.json'), 'utf8'),
    ) as Record<string, unknown>[];
    const trade = activity[0]!;
    const position = {
      proxyWallet: trade.proxyWallet,
      conditionId: trade.conditionId,
      avgPrice: 0.5,
      curPrice: 1,
      title: 'Other title',
      outcome: 'Other',
      outcomeIndex: 0,
      timestamp: Number(trade.timestamp) + 1000,
    };
    await writeFile(path.join(directory, 'a-positions.json'), JSON.stringify([position]));
    await writeFile(path.join(directory, 'b-activity.json'), JSON.stringify([trade]));
    const { counts, sink } = await run([directory]);
    expect(counts).toMatchObject({ imported: 1, skippedFiles: 1 });
    expect(sink.events('markets')).toEqual([
      expect.objectContaining({ title: trade.title, version: trade.timestamp, outcome1: 'Oilers', outcome2: 'Ducks' }),
    ]);
  });

  it('computes usd = size × price for /trades rows', async () => {
    const file = path.join(polymarketData, 'polymarket-smart-money-fixtures', 'trades.json');
    const raw = JSON.parse(await readFile(file, 'utf8')) as { size: number; price: number; transactionHash: string }[];
    const { sink } = await run([file]);
    const fills = sink.events('fillsUpstream') as FillEvent[];
    expect(fills).toHaveLength(raw.length);
    for (const row of raw) {
      const fill = fills.find((candidate) => candidate.tx_hash === row.transactionHash.toLowerCase())!;
      expect(fill.usd).toBeCloseTo(row.size * row.price, 5);
    }
  });

  it('reports a file named explicitly that is not an export as skipped', async () => {
    const { counts, skipped } = await run([path.join(collectmarketsDir, 'wallets.txt')]);
    expect(counts).toMatchObject({ files: 1, skippedFiles: 1, read: 0 });
    expect(skipped[0]!.line).toBeNull();
  });

  it('refuses a path that does not exist before importing anything', async () => {
    const sink = new RecordingSink();
    await expect(importPolymarketExports([collectmarketsDir, path.join(temp, 'missing')], sink)).rejects.toThrow(
      /ENOENT/,
    );
    expect(sink.log).toEqual([]);
  });
});

describe('gzip', () => {
  it('reads .csv.gz, .jsonl.gz and .json.gz like their plain versions', async () => {
    const directory = path.join(temp, 'gz');
    await import('node:fs/promises').then((fs) => fs.mkdir(directory, { recursive: true }));
    const csvSource = path.join(collectmarketsDir, 'CRYINGLITTLEBABY', 'btc-updown-15m-1767583800.csv');
    const jsonSource = path.join(polymarketData, 'pscanner-fixtures', 'activity.json');
    await writeFile(path.join(directory, 'activity.csv.gz'), gzipSync(await readFile(csvSource)));
    await writeFile(path.join(directory, 'activity.json.gz'), gzipSync(await readFile(jsonSource)));
    const jsonl = (JSON.parse(await readFile(jsonSource, 'utf8')) as unknown[])
      .map((row) => JSON.stringify(row))
      .join('\n');
    await writeFile(path.join(directory, 'activity.jsonl.gz'), gzipSync(jsonl));

    const plain = await run([csvSource, jsonSource]);
    const zipped = await run([directory]);
    expect(zipped.rejected).toEqual([]);
    expect(zipped.counts).toMatchObject({ files: 3, imported: plain.counts.imported, duplicate: 10 });
    const ids = (run: Run) =>
      new Set(run.sink.events('fillsUpstream').map((fill) => `${fill.wallet}:${fill.tx_hash}:${fill.log_index}`));
    expect(ids(zipped)).toEqual(ids(plain));
  });

  it('fails every corrupt form as a whole file (nothing of it published, its market facts unused) and imports the good files beside it', async () => {
    const csvSource = path.join(collectmarketsDir, 'gabagool22', 'btc-updown-15m-1767555900.csv');
    const goodSource = path.join(collectmarketsDir, 'CRYINGLITTLEBABY', 'btc-updown-15m-1767583800.csv');
    const jsonRows = (await readCsvRows(csvSource)).map((row) => ({
      ...row,
      timestamp: Number(row.timestamp),
      size: Number(row.size),
      usdcSize: Number(row.usdcSize),
      price: Number(row.price),
    }));
    const zipped = gzipSync(await readFile(csvSource));
    const jsonText = JSON.stringify(jsonRows, null, 1);
    const directory = path.join(temp, 'corrupt');
    const forms: Record<string, Buffer | string> = {
      'truncated.csv.gz': zipped.subarray(0, Math.floor(zipped.length / 2)),
      'junk.csv.gz': Buffer.from('this was never gzip\n'.repeat(20)),
      'empty.csv.gz': Buffer.alloc(0),
      'truncated.jsonl.gz': gzipSync(jsonRows.map((row) => JSON.stringify(row)).join('\n')).subarray(0, 200),
      'truncated.json': jsonText.slice(0, Math.floor(jsonText.length / 2)),
      'binary.csv': Buffer.concat([
        Buffer.from('proxyWallet,transactionHash\n'),
        Buffer.from([0x00, 0xff, 0xfe, 0x10, 0x80, 0x00]),
      ]),
      'latin1.csv': Buffer.concat([await readFile(csvSource), Buffer.from([0xe9, 0x0a])]),
    };
    await rm(directory, { recursive: true, force: true });
    await mkdir(directory, { recursive: true });
    for (const [name, content] of Object.entries(forms)) await writeFile(path.join(directory, name), content);
    await writeFile(path.join(directory, 'good.csv'), await readFile(goodSource));

    const { counts, failed, sink } = await run([directory]);
    const good = await readCsvRows(goodSource);
    expect(failed.map((failure) => path.basename(failure.file)).sort()).toEqual(Object.keys(forms).sort());
    const reasons = new Map(failed.map((failure) => [path.basename(failure.file), failure.reason]));
    expect(reasons.get('truncated.csv.gz')).toMatch(/cannot decompress/);
    expect(reasons.get('junk.csv.gz')).toMatch(/cannot decompress/);
    expect(reasons.get('empty.csv.gz')).toMatch(/cannot decompress/);
    expect(reasons.get('truncated.jsonl.gz')).toMatch(/cannot decompress/);
    expect(reasons.get('truncated.json')).toMatch(/invalid JSON/);
    expect(reasons.get('binary.csv')).toMatch(/binary content/);
    expect(reasons.get('latin1.csv')).toMatch(/UTF-8/);
    expect(counts).toMatchObject({
      files: 8,
      failedFiles: 7,
      skippedFiles: 0,
      read: good.length,
      imported: good.length,
      rejected: 0,
    });
    // Only the good file's rows and markets: nothing of the corrupt files, not even a market's metadata.
    const goodHashes = new Set(good.map((row) => row.transactionHash!.toLowerCase()));
    expect(sink.events('fillsUpstream').every((fill) => goodHashes.has(fill.tx_hash))).toBe(true);
    expect(new Set(sink.events('markets').map((market) => market.condition_id))).toEqual(
      new Set(good.map((row) => row.conditionId!.toLowerCase())),
    );
  });

  it('a CSV with other columns is skipped as not an export, with the reason', async () => {
    const file = path.join(temp, 'positions.csv');
    await writeFile(file, 'asset,size,avgPrice\n0xabc,10,0.5\n');
    const { counts, skipped, failed, sink } = await run([file]);
    expect(counts).toMatchObject({ files: 1, skippedFiles: 1, failedFiles: 0, read: 0 });
    expect(failed).toEqual([]);
    expect(skipped).toEqual([
      { file, line: null, reason: expect.stringMatching(/no proxyWallet or transactionHash column/) },
    ]);
    expect(sink.log).toEqual([]);
  });
});

describe('options', () => {
  const file = path.join(collectmarketsDir, 'gabagool22', 'btc-updown-15m-1767555900.csv');

  it('publishes no trade prints when emitTrades is false', async () => {
    const { sink, counts } = await run([file], { emitTrades: false });
    expect(sink.events('trades')).toEqual([]);
    expect(counts.events.trades).toBe(0);
    expect(sink.events('fillsUpstream').length).toBeGreaterThan(0);
  });

  it('stamps each fill and leg with the era of its time, as the upstream poller does', async () => {
    // A cut-over in the middle of the file's fills: those before it V1, the rest V2.
    const times = (await run([file])).sink
      .events('fillsUpstream')
      .map((fill) => fill.ts)
      .sort((a, b) => a - b);
    const cutOver = times[Math.floor(times.length / 2)]!;
    expect(cutOver).toBeGreaterThan(times[0]!);
    const { sink } = await run([file], { v2StartTs: cutOver });
    const events = [...sink.events('fillsUpstream'), ...sink.events('positions')];
    for (const event of events) expect(event.era, String(event.ts)).toBe(event.ts < cutOver ? 'v1' : 'v2');
    expect(new Set(events.map((event) => event.era))).toEqual(new Set(['v1', 'v2']));
    // The poller's mapping of the same rows stamps the same eras.
    const rows = parseCsvSync(await readFile(file), { columns: true, bom: true, skip_empty_lines: true }) as unknown[];
    const polled = mapActivityRows(rows, cutOver, 'activity').parsed.flatMap((row) =>
      row.kind === 'fill' ? [row.fill] : [],
    );
    const eraOfFill = (fill: FillEvent) => `${fill.tx_hash}:${fill.log_index}:${fill.era}`;
    expect(new Set(polled.map(eraOfFill))).toEqual(new Set(sink.events('fillsUpstream').map(eraOfFill)));
  });

  it('--era stamps one era on every fill and leg, whatever its time', async () => {
    for (const era of ['v1', 'v2'] as const) {
      const { sink } = await run([file], { era, v2StartTs: 0 });
      expect(new Set([...sink.events('fillsUpstream'), ...sink.events('positions')].map((event) => event.era))).toEqual(
        new Set([era]),
      );
    }
  });
});

describe('data API v2 answers', () => {
  it('imports a v2 {data, pagination} envelope (snake_case rows) instead of skipping it, and splits the fee off usdcSize', async () => {
    const envelope = path.join(
      polymarketData,
      'http',
      'data-api',
      'nautilus_data_api_trades_v2_envelope_SANITIZED.json',
    );
    const activity = path.join(polymarketData, 'http', 'data-api', 'polyprinter_activity_sample.json');
    const body = JSON.parse(await readFile(envelope, 'utf8')) as {
      data: { transaction_hash: string; size: number; price: number }[];
    };
    const rows = JSON.parse(await readFile(activity, 'utf8')) as {
      type: string;
      size: number;
      price: number;
      usdcSize: number;
      transactionHash: string;
    }[];
    const { counts, sink, skipped } = await run([envelope, activity]);
    expect(skipped.filter((skip) => skip.line === null)).toEqual([]);
    expect(counts).toMatchObject({
      files: 2,
      read: body.data.length + rows.length,
      imported: body.data.length + rows.length,
      rejected: 0,
    });
    const fills = sink.events('fillsUpstream') as FillEvent[];
    for (const row of body.data)
      expect(fills.find((fill) => fill.tx_hash === row.transaction_hash)!.usd).toBeCloseTo(row.size * row.price, 6);
    for (const row of rows.filter((candidate) => candidate.type === 'TRADE')) {
      const fill = fills.find((candidate) => candidate.tx_hash === row.transactionHash.toLowerCase())!;
      expect(fill.usd).toBeCloseTo(row.size * row.price, 6);
      expect(fill.fee_usd ?? 0).toBeCloseTo(row.usdcSize - row.size * row.price, 6);
    }
  });
});
