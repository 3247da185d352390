/**
 * Reading export files: finding them, decompressing them, and turning them into numbered rows. A
 * broken row (a bad JSON line, a CSV record with the wrong number of fields, an unclosed quote) becomes
 * a `malformed` record with its line, and reading goes on. A file that cannot be read whole (a truncated,
 * empty or corrupt .gz, bytes that are not UTF-8 text, a .json document that does not parse, an I/O
 * error) ends with one `unreadable` record: the importer then publishes nothing of it.
 *
 * CSV and JSONL are streamed, so memory stays bounded whatever the size of the export. JSON arrays are
 * read whole: the data API pages them at a few hundred rows, so in practice they are small.
 */
import { createReadStream } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline, Transform, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { CsvError, parse as parseCsv } from 'csv-parse';
import { textGuard, unreadableReason } from '../files.ts';

type ExportFormat = 'csv' | 'json' | 'jsonl';

export interface ExportFile {
  path: string;
  format: ExportFormat;
  gzip: boolean;
  /** Size on disk (compressed, for .gz), for progress. */
  size: number;
}

export type SourceRecord =
  | { kind: 'row'; line: number; row: unknown }
  | { kind: 'malformed'; line: number; reason: string }
  /** The whole file is something other than an /activity or /trades export. */
  | { kind: 'not-export'; reason: string }
  /** The file cannot be read whole (the last record of the file); nothing of it may be published. */
  | { kind: 'unreadable'; reason: string };

/** Bytes of the file consumed so far (compressed bytes for .gz), updated as the reader goes. */
export interface ReadProgress {
  bytesRead: number;
}

const EXPORT_FILE = /\.(csv|json|jsonl)(\.gz)?$/i;

/** A record longer than this is an unclosed quote swallowing the file, not a row; it bounds memory. */
const MAX_CSV_RECORD_BYTES = 1 << 20;

function exportFormatOf(filePath: string): { format: ExportFormat; gzip: boolean } | undefined {
  const match = EXPORT_FILE.exec(filePath);
  if (match === null) return undefined;
  return { format: (match[1] ?? '').toLowerCase() as ExportFormat, gzip: match[2] !== undefined };
}

export interface Discovery {
  files: ExportFile[];
  /** Paths named explicitly that are not export files (a directory's other files are passed over silently). */
  unsupported: string[];
}

/**
 * The export files under `paths`: files as given, directories recursively (sorted, so an import reads
 * files in the same order every time). A missing path throws before anything is imported.
 */
export async function discoverExportFiles(paths: readonly string[]): Promise<Discovery> {
  const files: ExportFile[] = [];
  const unsupported: string[] = [];
  const seen = new Set<string>();

  const addFile = async (filePath: string, explicit: boolean, size: number) => {
    const real = await realpath(filePath);
    if (seen.has(real)) return;
    seen.add(real);
    const kind = exportFormatOf(filePath);
    if (kind === undefined) {
      if (explicit) unsupported.push(filePath);
      return;
    }
    files.push({ path: filePath, ...kind, size });
  };

  const walk = async (directory: string) => {
    const real = await realpath(directory);
    if (seen.has(real)) return; // a symlink loop, or the same directory named twice
    seen.add(real);
    const entries = (await readdir(directory)).sort();
    for (const entry of entries) {
      if (entry.startsWith('.')) continue;
      const entryPath = path.join(directory, entry);
      const info = await stat(entryPath);
      if (info.isDirectory()) await walk(entryPath);
      else if (info.isFile()) await addFile(entryPath, false, info.size);
    }
  };

  for (const given of paths) {
    const info = await stat(given);
    if (info.isDirectory()) await walk(given);
    else await addFile(given, true, info.size);
  }
  return { files, unsupported };
}

// ---------------------------------------------------------------------------------------------------

/** Drops the first `count` lines of a byte stream (to resume a CSV after a broken record). */
function skipLines(count: number): Transform {
  let remaining = count;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      let offset = 0;
      while (remaining > 0) {
        const newline = chunk.indexOf(0x0a, offset);
        if (newline === -1) return done();
        remaining -= 1;
        offset = newline + 1;
      }
      done(null, offset === 0 ? chunk : chunk.subarray(offset));
    },
  });
}

/** Counts the bytes that pass, for progress (compressed bytes for .gz: those are what the file's size counts). */
function byteCounter(progress: ReadProgress): Transform {
  let counted = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      counted += chunk.length;
      // A resumed CSV reads the file again from its start: progress never goes back.
      progress.bytesRead = Math.max(progress.bytesRead, counted);
      done(null, chunk);
    },
  });
}

/**
 * The file's decoded bytes, from line `fromLine` on. `pipeline` destroys every stage when one fails or
 * when the consumer stops early; a failure reaches the consumer as the error of the last stage.
 */
function openDecoded(file: ExportFile, progress: ReadProgress, fromLine = 1): Readable {
  const counter = byteCounter(progress);
  const stages: Transform[] = [];
  if (file.gzip) stages.push(createGunzip());
  stages.push(textGuard());
  if (fromLine > 1) stages.push(skipLines(fromLine - 1));
  pipeline([createReadStream(file.path), counter, ...stages], () => {
    // Errors are seen by the consumer of the last stage; an early stop by the consumer is not an error.
  });
  return stages.at(-1) ?? counter;
}

function describeCsvError(error: CsvError): string {
  switch (error.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'a quoted field opened in this record is never closed';
    case 'CSV_MAX_RECORD_SIZE':
      return `the record grows past ${MAX_CSV_RECORD_BYTES} bytes (an unclosed quote?)`;
    default:
      return `${error.code}: ${error.message}`;
  }
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((field) => typeof field === 'string');
}

/** A CSV with these columns is an /activity or /trades export. */
const REQUIRED_CSV_COLUMNS = ['proxyWallet', 'transactionHash'] as const;

/** Why reading a CSV segment stopped early. */
type CsvStop =
  | { kind: 'not-export'; reason: string }
  /** A broken record: report it, then (when lines may follow) parse again from the next line. */
  | { kind: 'broken'; line: number; reason: string; linesFollow: boolean };

function brokenRecordOf(
  error: CsvError,
  lastEndLine: number,
  emptyLinesAtLastRecord: number,
  lineOffset: number,
): CsvStop {
  // csv-parse copies its counters onto the error (typed `unknown`).
  const { empty_lines: emptyLines, lines } = error as CsvError & { empty_lines?: unknown; lines?: unknown };
  const emptyLinesSkipped = typeof emptyLines === 'number' ? Math.max(0, emptyLines - emptyLinesAtLastRecord) : 0;
  const line = lastEndLine + 1 + emptyLinesSkipped;
  // A truncated last row needs no second read of the file.
  const linesFollow = typeof lines !== 'number' || lineOffset + lines > line;
  return { kind: 'broken', line, reason: describeCsvError(error), linesFollow };
}

/**
 * CSV, streamed through csv-parse. Records are collected by `on_record`, as csv-parse produces them,
 * so that a fatal parse error loses nothing before it. An unclosed quote swallows the lines after it
 * (csv-parse cannot resynchronise): the broken record is reported and parsing starts again on the
 * next line with a fresh parser. That re-reads the file up to there, which is fine for what is a rare
 * accident (a well-formed export has none; a truncated one has it on its last line, and is not re-read).
 * Line numbers are csv-parse's, which are physical lines except that a CRLF inside a quoted field
 * counts twice.
 */
async function* readCsv(file: ExportFile, progress: ReadProgress): AsyncGenerator<SourceRecord> {
  let header: string[] | undefined;
  let fromLine = 1;

  for (;;) {
    const lineOffset = fromLine - 1;
    const queue: SourceRecord[] = [];
    let lastEndLine = lineOffset;
    let emptyLinesAtLastRecord = 0;
    let stop: CsvStop | undefined;

    /** `line`: where the record starts; it ends on `endLine` (a quoted field may hold line breaks). */
    const acceptRecord = (fields: string[], line: number, endLine: number) => {
      const lineBreaks = endLine - line;
      if (header === undefined) {
        header = fields.map((name) => name.trim());
        const missing = REQUIRED_CSV_COLUMNS.filter((column) => !header?.includes(column));
        if (missing.length > 0) {
          stop = {
            kind: 'not-export',
            reason: `CSV has no ${missing.join(' or ')} column, so it is not an /activity or /trades export`,
          };
        }
        return;
      }
      // Concatenated exports repeat the header: it is not a row.
      if (fields.length === header.length && fields.every((field, index) => field.trim() === header?.[index])) return;
      if (fields.length !== header.length) {
        const reason = `expected ${header.length} fields, found ${fields.length}`;
        // Spanning lines with the wrong shape: most likely a stray quote that joined the next lines to
        // this one. Those lines are read again on their own.
        if (lineBreaks > 0)
          stop = {
            kind: 'broken',
            line,
            reason: `${reason} over ${lineBreaks + 1} lines (an unclosed quote?)`,
            linesFollow: true,
          };
        else queue.push({ kind: 'malformed', line, reason });
        return;
      }
      const row: Record<string, string> = {};
      header.forEach((name, index) => {
        row[name] = fields[index] ?? '';
      });
      queue.push({ kind: 'row', line, row });
    };

    const parser = parseCsv({
      bom: true,
      relax_column_count: true, // a short or long record is one malformed row, reported by us
      relax_quotes: true, // a stray quote inside an unquoted field is text; the schema judges the value
      skip_empty_lines: true,
      max_record_size: MAX_CSV_RECORD_BYTES,
      on_record: (record: unknown, context) => {
        if (stop !== undefined) return null;
        // The record starts after the previous one and the empty lines skipped since (csv-parse's own
        // line count, which counts a CRLF inside a quoted field as two lines).
        const line = lastEndLine + 1 + (context.empty_lines - emptyLinesAtLastRecord);
        const endLine = lineOffset + context.lines;
        lastEndLine = endLine;
        emptyLinesAtLastRecord = context.empty_lines;
        if (isStringArray(record)) acceptRecord(record, line, endLine);
        return null; // collected above; nothing flows out of the parser
      },
    });
    parser.on('error', () => {}); // seen through `parser.errored` and `finished` below
    const source = openDecoded(file, progress, fromLine);
    const stopOnParseError = (error: unknown) => {
      if (!(error instanceof CsvError)) throw error;
      stop ??= brokenRecordOf(error, lastEndLine, emptyLinesAtLastRecord, lineOffset);
    };

    try {
      for await (const chunk of source) {
        parser.write(chunk);
        if (parser.errored !== null) stopOnParseError(parser.errored);
        yield* queue.splice(0);
        if (stop !== undefined) break;
      }
      if (stop === undefined) {
        parser.end();
        await finished(parser, { readable: false }).catch(stopOnParseError);
        yield* queue.splice(0);
      }
    } catch (error) {
      const reason = unreadableReason(error);
      if (reason === undefined) throw error;
      yield { kind: 'unreadable', reason: `${reason}, after line ${lastEndLine}` };
      return;
    } finally {
      source.destroy();
      parser.destroy();
    }

    if (stop === undefined) return;
    if (stop.kind === 'not-export') {
      yield stop;
      return;
    }
    yield { kind: 'malformed', line: stop.line, reason: stop.reason };
    if (!stop.linesFollow) return;
    fromLine = stop.line + 1;
  }
}

export type JsonLine = { ok: true; value: unknown } | { ok: false; reason: string };

/** One JSONL line; never throws. */
export function parseJsonLine(text: string): JsonLine {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, reason: `invalid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
}

async function* jsonLines(lines: AsyncIterable<string> | Iterable<string>): AsyncGenerator<SourceRecord> {
  let line = 0;
  for await (const text of lines) {
    line += 1;
    if (text.trim() === '') continue;
    const parsed = parseJsonLine(text);
    yield parsed.ok ? { kind: 'row', line, row: parsed.value } : { kind: 'malformed', line, reason: parsed.reason };
  }
}

async function* readJsonl(file: ExportFile, progress: ReadProgress): AsyncGenerator<SourceRecord> {
  const source = openDecoded(file, progress);
  const lines = createInterface({ input: source, crlfDelay: Infinity });
  let lastLine = 0;
  try {
    for await (const record of jsonLines(lines)) {
      if (record.kind === 'row' || record.kind === 'malformed') lastLine = record.line;
      yield record;
    }
  } catch (error) {
    const reason = unreadableReason(error);
    if (reason === undefined) throw error;
    yield { kind: 'unreadable', reason: `${reason}, after line ${lastLine}` };
  } finally {
    lines.close();
    source.destroy();
  }
}

async function readWhole(file: ExportFile, progress: ReadProgress): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of openDecoded(file, progress)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
}

function describeJsonObject(value: Record<string, unknown>): string {
  const guess =
    'question' in value && 'conditionId' in value
      ? 'a Gamma market'
      : 'ticker' in value || 'markets' in value
        ? 'a Gamma event'
        : 'event_type' in value
          ? 'a CLOB websocket message'
          : 'an object';
  return `a single JSON object (${guess}), not an array of /activity or /trades rows`;
}

/** The 1-based line of a JSON.parse error position, when the message gives one. */
function lineOfJsonError(text: string, error: unknown): number {
  const position = /position (\d+)/.exec(error instanceof Error ? error.message : '');
  if (position === null) return 1;
  const offset = Number(position[1]);
  let line = 1;
  for (let index = 0; index < offset && index < text.length; index += 1) if (text.charCodeAt(index) === 0x0a) line += 1;
  return line;
}

/** The rows of a data API v2 answer, `{data: [...], pagination: {...}}`; undefined for anything else. */
export function envelopeRows(value: unknown): unknown[] | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { data, pagination } = value as { data?: unknown; pagination?: unknown };
  return Array.isArray(data) && typeof pagination === 'object' && pagination !== null ? (data as unknown[]) : undefined;
}

/** A JSON array (or a v2 `{data, pagination}` envelope), read whole; the element's 1-based index stands for its line. */
async function* readJson(file: ExportFile, progress: ReadProgress): AsyncGenerator<SourceRecord> {
  let text: string;
  try {
    text = await readWhole(file, progress);
  } catch (error) {
    const reason = unreadableReason(error);
    if (reason === undefined) throw error;
    yield { kind: 'unreadable', reason };
    return;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // Some tools write JSON lines into a .json file.
    if (text.trimStart().startsWith('{')) {
      yield* jsonLines(text.split(/\r?\n/));
      return;
    }
    // A JSON document is read whole: one that does not parse (typically cut off) has no rows to trust.
    yield {
      kind: 'unreadable',
      reason: `invalid JSON at line ${lineOfJsonError(text, error)} (${error instanceof Error ? error.message : String(error)}): truncated or not JSON`,
    };
    return;
  }
  if (Array.isArray(value)) {
    for (const [index, row] of value.entries()) yield { kind: 'row', line: index + 1, row: row as unknown };
    return;
  }
  const rows = envelopeRows(value);
  if (rows !== undefined) {
    for (const [index, row] of rows.entries()) yield { kind: 'row', line: index + 1, row };
    return;
  }
  if (typeof value === 'object' && value !== null) {
    yield { kind: 'not-export', reason: describeJsonObject(value as Record<string, unknown>) };
    return;
  }
  yield {
    kind: 'not-export',
    reason: `a JSON ${value === null ? 'null' : typeof value}, not an array of /activity or /trades rows`,
  };
}

export function readExportFile(file: ExportFile, progress: ReadProgress): AsyncGenerator<SourceRecord> {
  switch (file.format) {
    case 'csv':
      return readCsv(file, progress);
    case 'jsonl':
      return readJsonl(file, progress);
    case 'json':
      return readJson(file, progress);
  }
}
