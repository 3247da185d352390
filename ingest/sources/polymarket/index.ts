/**
 * Importer of Polymarket data-API exports (`/activity` and `/trades` rows, as CSV, JSON or JSONL,
 * optionally gzipped): TRADE rows become upstream fills (and market-wide trade prints), MERGE / SPLIT /
 * REDEEM rows become position legs, and every market gets one metadata event before its first fill.
 *
 * Two passes over the files. The first only gathers what the market metadata needs (titles, both
 * outcome names, the latest timestamp) across all rows of the import, so that each market gets exactly
 * one, complete metadata event, published before anything else of that market. The second maps,
 * deduplicates and publishes rows in chunks. Memory: per market a few strings, and per distinct
 * imported row a 20-character key (≈ 60 bytes) to recognise repeats across files.
 */
import type { FillEvent, MarketMetadataEvent, PositionLegEvent, TradeEvent } from '../../contract/events.ts';
import { DEFAULT_EXCHANGE_V2_START_TS } from '../../../chain.ts';
import type { EraRule, ExchangeEra } from '../../contract/primitives.ts';
import type { EventSink } from '../../publisher.ts';
import type { FileFailure } from '../files.ts';
import { MarketCatalog, marketMetadata } from './markets.ts';
import { discoverExportFiles, readExportFile, type ExportFile, type ReadProgress } from './readers.ts';
import {
  describeNonExportRow,
  looksLikeExportRow,
  marketSightingOf,
  parseExportRow,
  validateEvent,
  type MarketSighting,
} from './rows.ts';

export interface ImportCounts {
  /** Files considered: export files found, and files named explicitly that are not exports. */
  files: number;
  /** Data rows seen (CSV headers excluded); read = imported + duplicate + rejected + skipped. */
  read: number;
  /** Rows published as a fill or a position leg. */
  imported: number;
  /** Rows identical to one already imported (the data API repeats pages past its offset cap). */
  duplicate: number;
  /** Malformed rows, reported through onRejected. */
  rejected: number;
  /** The rejected rows by what they broke, most first: how many, and the first such row. */
  rejections: RejectionCount[];
  /** Valid rows that are neither fills nor legs (REWARD, MAKER_REBATE, CONVERSION, …). */
  skipped: number;
  /** Files that are not /activity or /trades exports (positions, leaderboards, Gamma objects, …); their rows are not counted. */
  skippedFiles: number;
  /** Files that cannot be read whole (truncated or corrupt .gz, not text, JSON that does not parse): nothing of them is published. */
  failedFiles: number;
  /** Events published per kind. */
  events: { markets: number; fills: number; legs: number; trades: number };
}

export interface RejectedRow {
  file: string;
  /** 1-based: the physical line of a CSV or JSONL row, the element's index in a JSON array. */
  line: number;
  reason: string;
}

interface RejectionCount {
  /** What the rows broke, without their values (e.g. `a fill must have a price above 0`). */
  rule: string;
  rows: number;
  first: RejectedRow;
}

/** Rows the reader could not parse (broken CSV, invalid JSON): one rule, each row's reason says how. */
const UNPARSABLE_ROW = 'the row cannot be parsed (broken CSV or invalid JSON)';

export interface SkippedRow {
  file: string;
  /** null when the whole file is skipped. */
  line: number | null;
  reason: string;
}

export interface ImportProgress {
  /** 'scan' is the first pass (market metadata), 'import' the second (publishing). */
  phase: 'scan' | 'import';
  file: string;
  /** Rows read so far in this phase. */
  rowsRead: number;
  /** Bytes read so far over both passes, of bytesTotal (twice the files' size), so the ratio is the import's progress. */
  bytesRead: number;
  bytesTotal: number;
}

export interface ImportOptions {
  /** One era for every row (`--era`); default: each row's era by its time against `v2StartTs`, as the upstream poller stamps them. */
  era?: ExchangeEra;
  /** The V1 → V2 exchange cut-over (epoch s). Default DEFAULT_EXCHANGE_V2_START_TS. */
  v2StartTs?: number;
  /** Also publish every TRADE row as a market-wide trade print (topic `trades`), so imported markets have a price tape. Default true. */
  emitTrades?: boolean;
  onRejected?: (row: RejectedRow) => void;
  /** Skipped rows (types that are not fills or legs) and skipped files. */
  onSkipped?: (skip: SkippedRow) => void;
  /** A file that cannot be read whole: none of its rows is published (and its market facts are not used). */
  onFailed?: (failure: FileFailure) => void;
  /** Called per published chunk and per file. */
  onProgress?: (progress: ImportProgress) => void;
  /** Events per published chunk. Default 2,000. */
  chunkSize?: number;
}

const DEFAULT_CHUNK_SIZE = 2_000;

/** Events waiting to be published; metadata of the chunk's new markets goes out first. */
class Chunk {
  markets: MarketMetadataEvent[] = [];
  fills: FillEvent[] = [];
  legs: PositionLegEvent[] = [];
  trades: TradeEvent[] = [];

  get size(): number {
    return this.markets.length + this.fills.length + this.legs.length + this.trades.length;
  }
}

function emptyCounts(): ImportCounts {
  return {
    files: 0,
    read: 0,
    imported: 0,
    duplicate: 0,
    rejected: 0,
    rejections: [],
    skipped: 0,
    skippedFiles: 0,
    failedFiles: 0,
    events: { markets: 0, fills: 0, legs: 0, trades: 0 },
  };
}

/** Imports files and/or directories (recursively: *.csv, *.json, *.jsonl, and .gz variants of these). */
export async function importPolymarketExports(
  paths: readonly string[],
  sink: EventSink,
  options: ImportOptions = {},
): Promise<ImportCounts> {
  const era: EraRule =
    options.era !== undefined
      ? { fixed: options.era }
      : { v2StartTs: options.v2StartTs ?? DEFAULT_EXCHANGE_V2_START_TS };
  const emitTrades = options.emitTrades ?? true;
  const chunkSize = Math.max(1, options.chunkSize ?? DEFAULT_CHUNK_SIZE);
  const counts = emptyCounts();

  const { files, unsupported } = await discoverExportFiles(paths);
  counts.files = files.length + unsupported.length;
  for (const file of unsupported) {
    counts.skippedFiles += 1;
    options.onSkipped?.({ file, line: null, reason: 'not an export file (.csv, .json or .jsonl, optionally .gz)' });
  }

  const bytesPerPass = files.reduce((total, file) => total + file.size, 0);
  let bytesDone = 0;
  const report = (phase: ImportProgress['phase'], file: ExportFile, rowsRead: number, fileProgress: ReadProgress) =>
    options.onProgress?.({
      phase,
      file: file.path,
      rowsRead,
      bytesRead: bytesDone + Math.min(fileProgress.bytesRead, file.size),
      bytesTotal: 2 * bytesPerPass,
    });

  // Pass 1: what the metadata of each market needs, which files are not exports at all, and which
  // cannot be read whole (those publish nothing, so the second pass leaves them out).
  const catalog = new MarketCatalog();
  const notExports = new Map<string, string>();
  const unreadable = new Map<string, string>();
  let rowsScanned = 0;
  for (const file of files) {
    const fileProgress: ReadProgress = { bytesRead: 0 };
    // The file's market facts join the import's only once the file has been read to its end.
    const fileCatalog = new MarketCatalog();
    let exportRows = 0;
    let firstOtherObject: unknown;
    for await (const record of readExportFile(file, fileProgress)) {
      if (record.kind === 'not-export') {
        notExports.set(file.path, record.reason);
        break;
      }
      if (record.kind === 'unreadable') {
        unreadable.set(file.path, record.reason);
        break;
      }
      rowsScanned += 1;
      if (rowsScanned % chunkSize === 0) report('scan', file, rowsScanned, fileProgress);
      if (record.kind !== 'row') continue;
      if (looksLikeExportRow(record.row)) {
        exportRows += 1;
        const sighting = marketSightingOf(record.row);
        if (sighting !== undefined) fileCatalog.observe(sighting);
      } else if (typeof record.row === 'object' && record.row !== null && !Array.isArray(record.row)) {
        // Positions name markets too (with other timestamps): they must not shape the metadata.
        firstOtherObject ??= record.row;
      }
    }
    // A JSON file of objects none of which is an export row (positions, a leaderboard, …) is skipped whole.
    if (
      exportRows === 0 &&
      firstOtherObject !== undefined &&
      !notExports.has(file.path) &&
      !unreadable.has(file.path)
    ) {
      notExports.set(file.path, describeNonExportRow(firstOtherObject));
    }
    if (!unreadable.has(file.path) && !notExports.has(file.path)) catalog.merge(fileCatalog);
    bytesDone += file.size;
    report('scan', file, rowsScanned, { bytesRead: 0 });
  }

  // Pass 2: map, deduplicate, publish.
  const seen = new Set<string>();
  const marketsPublished = new Set<string>();
  let chunk = new Chunk();

  const flush = async () => {
    const { markets, fills, legs, trades } = chunk;
    chunk = new Chunk();
    // Metadata first: a market's metadata is on the log before anything else of that market.
    if (markets.length > 0) await sink.publish('markets', markets);
    if (fills.length > 0) await sink.publish('fillsUpstream', fills);
    if (legs.length > 0) await sink.publish('positions', legs);
    if (trades.length > 0) await sink.publish('trades', trades);
    counts.events.markets += markets.length;
    counts.events.fills += fills.length;
    counts.events.legs += legs.length;
    counts.events.trades += trades.length;
  };

  const ensureMarket = (sighting: MarketSighting) => {
    if (marketsPublished.has(sighting.conditionId)) return;
    // Unknown only if a file changed between the passes: its own row then describes the market.
    if (catalog.facts(sighting.conditionId) === undefined) catalog.observe(sighting);
    const facts = catalog.facts(sighting.conditionId);
    if (facts === undefined) return;
    const metadata = validateEvent('markets', marketMetadata(facts));
    // marketMetadata fits every field to the contract; failing here is a bug of this module, not of the data.
    if (!metadata.ok) throw new Error(`market metadata of ${sighting.conditionId}: ${metadata.reason}`);
    if (metadata.event.type === 'metadata') chunk.markets.push(metadata.event);
    marketsPublished.add(sighting.conditionId);
  };

  const rejectionsByRule = new Map<string, RejectionCount>();
  const reject = (file: ExportFile, line: number, reason: string, rule: string) => {
    counts.rejected += 1;
    const row = { file: file.path, line, reason };
    const counted = rejectionsByRule.get(rule);
    if (counted) counted.rows += 1;
    else rejectionsByRule.set(rule, { rule, rows: 1, first: row });
    options.onRejected?.(row);
  };

  const fail = (file: ExportFile, reason: string) => {
    counts.failedFiles += 1;
    options.onFailed?.({ file: file.path, reason });
  };

  for (const file of files) {
    const failure = unreadable.get(file.path);
    if (failure !== undefined) {
      fail(file, failure);
      bytesDone += file.size;
      continue;
    }
    const skipReason = notExports.get(file.path);
    if (skipReason !== undefined) {
      counts.skippedFiles += 1;
      options.onSkipped?.({ file: file.path, line: null, reason: skipReason });
      bytesDone += file.size;
      continue;
    }
    const fileProgress: ReadProgress = { bytesRead: 0 };
    for await (const record of readExportFile(file, fileProgress)) {
      if (record.kind === 'not-export') {
        // Only if the file changed since the first pass.
        counts.skippedFiles += 1;
        options.onSkipped?.({ file: file.path, line: null, reason: record.reason });
        break;
      }
      if (record.kind === 'unreadable') {
        // Only if the file changed since the first pass read it whole: what came before is published.
        fail(file, `${record.reason} (it changed during the import: rows before this point were imported)`);
        break;
      }
      counts.read += 1;
      if (record.kind === 'malformed') {
        reject(file, record.line, record.reason, UNPARSABLE_ROW);
        continue;
      }
      const parsed = parseExportRow(record.row, era);
      switch (parsed.kind) {
        case 'rejected':
          reject(file, record.line, parsed.reason, parsed.rule ?? parsed.reason);
          break;
        case 'skipped':
          counts.skipped += 1;
          options.onSkipped?.({ file: file.path, line: record.line, reason: parsed.reason });
          break;
        case 'fill':
        case 'leg':
          if (seen.has(parsed.key)) {
            counts.duplicate += 1;
            break;
          }
          seen.add(parsed.key);
          counts.imported += 1;
          ensureMarket(parsed.market);
          if (parsed.kind === 'fill') {
            chunk.fills.push(parsed.fill);
            if (emitTrades) chunk.trades.push(parsed.trade);
          } else {
            chunk.legs.push(parsed.leg);
          }
          break;
      }
      if (chunk.size >= chunkSize) {
        await flush();
        report('import', file, counts.read, fileProgress);
      }
    }
    bytesDone += file.size;
    report('import', file, counts.read, { bytesRead: 0 });
  }
  await flush();
  counts.rejections = [...rejectionsByRule.values()].sort((a, b) => b.rows - a.rows);
  return counts;
}
