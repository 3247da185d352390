/**
 * Reads the comments of the repository's code files, and finds the ones that read like a lab notebook:
 * a date, or a benchmark figure (a number with a unit of time, throughput or ratio next to a word of
 * measuring). Figures and dates go stale the day they are written; they belong in `test/bench/RESULTS.md`,
 * and a comment says why instead. Used by test/comments.unit.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { Parser } from 'yaml';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** How a file writes its comments. */
export type CommentSyntax = 'js' | 'sql' | 'lua' | 'yaml' | 'hash';

/** Folders and files that are not code: prose, the record of figures, data the tests read. */
const NOT_CODE = ['node_modules', 'docs', 'test/fixtures', 'README.md', 'mcp/README.md', 'test/bench/RESULTS.md'];

/** Folders of tools and outputs (the `.gitignore`d ones) that hold no code of the repository. */
const NOT_SOURCE = ['data', 'coverage', 'test-results', 'bench-results', 'exports', 'test/artifacts'];

function syntaxOf(file: string, text: string): CommentSyntax | null {
  const base = path.posix.basename(file);
  if (/\.(ts|mts|cts|js|mjs|cjs)$/.test(base)) return 'js';
  if (base.endsWith('.sql')) return 'sql';
  if (base.endsWith('.lua')) return 'lua';
  if (/\.ya?ml$/.test(base)) return 'yaml';
  if (base === 'Dockerfile' || /\.(sh|conf)$/.test(base) || base === '.gitignore' || base === '.dockerignore')
    return 'hash';
  if (/^#!.*\b(ba|z)?sh\b/.test(text)) return 'hash';
  return null;
}

/** The repository's code files (repository-relative, `/`-separated), with the syntax of their comments. */
export function codeFiles(root = ROOT): { file: string; syntax: CommentSyntax }[] {
  const found: { file: string; syntax: CommentSyntax }[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const file = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isSymbolicLink() || NOT_CODE.includes(file) || NOT_SOURCE.includes(file)) continue;
      if (entry.isDirectory()) {
        if (entry.name === 'node_modules' || (entry.name.startsWith('.') && entry.name !== '.ci')) continue;
        walk(file);
      } else if (entry.isFile()) {
        const text = readFileSync(path.join(root, file), 'utf8');
        const syntax = syntaxOf(file, text);
        if (syntax) found.push({ file, syntax });
      }
    }
  };
  walk('');
  return found.sort((a, b) => a.file.localeCompare(b.file));
}

/**
 * One comment: a block comment, or a run of line comments on consecutive lines (so that a sentence that
 * wraps is read whole). `text` holds one line per source line, comment markers removed.
 */
interface Comment {
  line: number;
  text: string;
}

/** 1-based line of each offset, by a table of line starts. */
function lineAt(text: string): (offset: number) => number {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}

interface Span {
  start: number;
  end: number;
  /** A line comment (`//`, `--`, `#`): consecutive ones join into one comment. */
  line: boolean;
}

/** Joins the spans into comments: consecutive line comments (nothing but space between them) become one. */
function joinSpans(text: string, spans: Span[], strip: (raw: string) => string): Comment[] {
  const at = lineAt(text);
  const comments: Comment[] = [];
  let previous: Span | null = null;
  for (const span of spans.sort((a, b) => a.start - b.start)) {
    const body = text
      .slice(span.start, span.end)
      .split('\n')
      .map((raw) => strip(raw).trimEnd())
      .join('\n');
    const last = comments.at(-1);
    if (previous?.line && span.line && last && /^[ \t]*\n[ \t]*$/.test(text.slice(previous.end, span.start))) {
      last.text += `\n${body}`;
    } else {
      comments.push({ line: at(span.start), text: body });
    }
    previous = span;
  }
  return comments;
}

/** TypeScript and JavaScript: the parser finds every literal (strings, templates, regular expressions); what is left that opens `//` or `/*` is a comment. */
function jsSpans(file: string, text: string): Span[] {
  const kind = /\.(js|mjs|cjs)$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const masked = text.split('');
  const mask = (start: number, end: number): void => {
    for (let i = start; i < end; i++) if (masked[i] !== '\n') masked[i] = ' ';
  };
  const visit = (node: ts.Node): void => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node) ||
      ts.isRegularExpressionLiteral(node) ||
      node.kind === ts.SyntaxKind.JsxText
    ) {
      mask(node.getStart(source), node.end);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const code = masked.join('');
  const spans: Span[] = [];
  let i = code.startsWith('#!') ? code.indexOf('\n') : 0;
  while (i >= 0 && i < code.length) {
    const slash = code.indexOf('/', i);
    if (slash < 0) break;
    if (code[slash + 1] === '/') {
      const end = code.indexOf('\n', slash);
      spans.push({ start: slash, end: end < 0 ? code.length : end, line: true });
      i = end < 0 ? code.length : end;
    } else if (code[slash + 1] === '*') {
      const end = code.indexOf('*/', slash + 2);
      spans.push({ start: slash, end: end < 0 ? code.length : end + 2, line: false });
      i = end < 0 ? code.length : end + 2;
    } else {
      i = slash + 1;
    }
  }
  return spans;
}

/**
 * SQL (ClickHouse) and Lua: a small scanner that steps over quoted strings (and Lua's long brackets) and
 * takes `--` to the end of the line, `/* … *\/` (SQL) and `--[[ … ]]` (Lua) as comments.
 */
function dashSpans(text: string, lua: boolean): Span[] {
  const spans: Span[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "'" || c === '"' || (!lua && c === '`')) {
      i++;
      while (i < text.length && text[i] !== c) i += text[i] === '\\' ? 2 : 1;
      i++;
    } else if (lua && c === '[' && /^\[=*\[/.test(text.slice(i))) {
      const open = /^\[(=*)\[/.exec(text.slice(i))!;
      const close = text.indexOf(`]${open[1]}]`, i);
      i = close < 0 ? text.length : close + open[0].length;
    } else if (c === '-' && text[i + 1] === '-') {
      const long = lua ? /^--\[(=*)\[/.exec(text.slice(i)) : null;
      if (long) {
        const close = text.indexOf(`]${long[1]}]`, i);
        const end = close < 0 ? text.length : close + long[0].length - 2;
        spans.push({ start: i, end, line: false });
        i = end;
      } else {
        const end = text.indexOf('\n', i);
        spans.push({ start: i, end: end < 0 ? text.length : end, line: true });
        i = end < 0 ? text.length : end;
      }
    } else if (!lua && c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2);
      const end = close < 0 ? text.length : close + 2;
      spans.push({ start: i, end, line: false });
      i = end;
    } else {
      i++;
    }
  }
  return spans;
}

/** YAML: the comments of the `yaml` package's concrete syntax tree (never text inside a block scalar or a quoted one). */
function yamlSpans(text: string): Span[] {
  const spans: Span[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
    } else if (value && typeof value === 'object') {
      const token = value as { type?: unknown; offset?: unknown; source?: unknown };
      if (token.type === 'comment' && typeof token.offset === 'number' && typeof token.source === 'string') {
        spans.push({ start: token.offset, end: token.offset + token.source.length, line: true });
        return;
      }
      for (const child of Object.values(value)) visit(child);
    }
  };
  for (const token of new Parser().parse(text)) visit(token);
  return spans;
}

/** Shell, Dockerfile, nginx and ignore files: `#` at a word's start, outside quotes, to the end of the line. */
function hashSpans(text: string): Span[] {
  const spans: Span[] = [];
  let offset = 0;
  for (const row of text.split('\n')) {
    let quote: string | null = null;
    for (let i = 0; i < row.length; i++) {
      const c = row[i]!;
      if (quote) {
        if (c === '\\' && quote === '"') i++;
        else if (c === quote) quote = null;
      } else if (c === "'" || c === '"') {
        quote = c;
      } else if (c === '\\') {
        i++;
      } else if (c === '#' && (i === 0 || /\s/.test(row[i - 1]!)) && !(offset === 0 && row.startsWith('#!'))) {
        spans.push({ start: offset + i, end: offset + row.length, line: true });
        break;
      }
    }
    offset += row.length + 1;
  }
  return spans;
}

/** The comments of a file's text. */
export function commentsOf(file: string, text: string, syntax: CommentSyntax): Comment[] {
  switch (syntax) {
    case 'js':
      return joinSpans(text, jsSpans(file, text), (raw) =>
        raw.replace(/^\s*(\/\/+|\/\*+|\*+\/|\*(?!\/))? ?/, '').replace(/\*+\/$/, ''),
      );
    case 'sql':
      return joinSpans(text, dashSpans(text, false), (raw) =>
        raw.replace(/^\s*(--+|\/\*+|\*+\/|\*(?!\/))? ?/, '').replace(/\*+\/$/, ''),
      );
    case 'lua':
      return joinSpans(text, dashSpans(text, true), (raw) =>
        raw.replace(/^\s*(--(\[=*\[)?|\]=*\])? ?/, '').replace(/\]=*\]$/, ''),
      );
    case 'yaml':
      return joinSpans(text, yamlSpans(text), (raw) => raw.replace(/^\s*#+ ?/, ''));
    case 'hash':
      return joinSpans(text, hashSpans(text), (raw) => raw.replace(/^\s*#+ ?/, ''));
  }
}

const MONTH =
  '(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)';
const YEAR = '(?:19|20|21)\\d\\d';

/** Dates: `2026-11-25`, `Nov 25, 2026`, `25 November 2026`, `November 2026`. A day without its year (a title's "January 4") is not one. */
const DATES: RegExp[] = [
  new RegExp(`\\b${YEAR}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\\d|3[01])(?!\\d)`, 'g'),
  new RegExp(`\\b${MONTH}\\.? \\d{1,2}(?:st|nd|rd|th)?,? ${YEAR}\\b`, 'g'),
  new RegExp(`\\b\\d{1,2}(?:st|nd|rd|th)? ${MONTH},? ${YEAR}\\b`, 'g'),
  new RegExp(`\\b${MONTH},? ${YEAR}\\b`, 'g'),
];

/** A number: `12`, `1.4`, `41,000`, a range `10–18`. */
const NUMBER = '\\d[\\d,_]*(?:\\.\\d+)?(?:\\s?(?:–|-|to)\\s?\\d[\\d,_]*(?:\\.\\d+)?)?';
/** Units a measurement is given in: time, throughput, size per second, and a ratio with decimals (`0.33×`). */
const TIME = '(?:ns|µs|μs|us|ms|s)';
const RATE = '(?:[A-Za-z]+/s|/s|s/op|[KMG]i?B/s)';
const UNIT = `(?:${TIME}|${RATE})`;
const FIGURE = `(?:${NUMBER}\\s?${UNIT}|\\d+\\.\\d+(?:\\s?(?:–|-)\\s?\\d+(?:\\.\\d+)?)?\\s?[×x])(?![\\w/])`;
/** A figure stated as a bound or a setting (`at most 30 s`, `< 10 s`, `every 10 s`) is not a result. */
const BOUND =
  /(?:[<>≤≥]|\b(?:at most|at least|under|below|above|within|every|per|up to|default|defaults to|bound|limit|timeout|after|than|for))\s*$/i;
/** … and, beside a word of measuring, a figure that says what something is made of (`multiples of 5 s`). */
const PART = /\bof\s*$/i;

/** Words of measuring: a figure in the same sentence as one of them is a result, not a setting. */
const MEASURING =
  /\b(?:measured|measures|measuring|median|medians|p50|p90|p95|p99|p999|bench:\w+|took|served|refused|timed|observed|run-to-run|throughput|on \d+ cores|(?:this|a shared|the shared) machine)\b/i;

/** The kinds of lab note, each a pattern over one sentence of a comment. */
const LAB_NOTES: [string, RegExp][] = [
  // `~1.4 µs a fill`, `about 13 s`: an approximate time is a reading of a clock.
  [
    'approximate time',
    new RegExp(`(?:~|≈|\\babout |\\baround |\\broughly |\\bnearly )${NUMBER}\\s?${TIME}(?![\\w/])`, 'gi'),
  ],
  // `12.0 → 12.3 ms`, `7.7 vs 9.4 ms`, `673 → 1,377 statements/s`: a before and after.
  [
    'before and after',
    new RegExp(`${NUMBER}\\s?(?:${UNIT}\\s?)?(?:→|\\bvs\\.?|\\bversus)\\s?~?${NUMBER}\\s?${UNIT}(?![\\w/])`, 'g'),
  ],
  // `refused 62, 8, 68`, `p50 12`, `served 458–572`: a verb of measuring and its numbers.
  ['measured numbers', /\b(?:measured|took|served|refused|p50|p90|p95|p99)(?: at| in| of)?:? ~?\d/gi],
];

/** HTTP statuses in the plural (`429s`, `503s`) are not seconds. */
const STATUSES = /^[1-5]\d\ds$/;

/**
 * Dates that are facts, never stale: the names of protocol revisions (the MCP specification and its
 * extensions name each revision by its date), and the instants the contract and the tests' data are
 * defined at, written beside the epoch literal they annotate. Each entry: a file (or `*`) and the date.
 */
export const FACTS: { file: string; date: string; why: string }[] = [
  ...['2025-06-18', '2025-11-25', '2026-07-28'].map((date) => ({ file: '*', date, why: 'an MCP protocol revision' })),
  { file: '*', date: '2026-01-26', why: 'the MCP Apps extension revision' },
  { file: 'ingest/contract/primitives.ts', date: '2017-01-01', why: 'EPOCH_MIN' },
  { file: 'ingest/contract/primitives.ts', date: '2100-01-01', why: 'EPOCH_MAX' },
  { file: 'ingest/contract/primitives.ts', date: '2026-04-28', why: 'the V1 → V2 exchange cut-over, explained here' },
  { file: 'chain.ts', date: '2026-04-28', why: 'the V1 → V2 exchange cut-over, defined here' },
  { file: 'ingest/contract/primitives.ts', date: '2026-03-31', why: 'the V2 exchange deployment, a fact of the chain' },
  { file: 'ingest/sources/simulator/test-support.ts', date: '2026-01-04', why: 'TEST_GENESIS' },
  { file: 'test/factories.ts', date: '2026-01-04', why: 'BASE_TS' },
  { file: 'ingest/sources/simulator/schedule.unit.test.ts', date: '2026-01-05', why: 'TEN_PM_ET' },
  {
    file: 'ingest/contract/contract.unit.test.ts',
    date: '2025-01-01',
    why: 'the epoch literal the property starts from',
  },
  { file: 'test/bench/ingest.bench.ts', date: '2026-01-01', why: 'SIMULATION_START' },
];

/** One sentence of a comment: its text up to `. `, `; `, `? `, `! ` or a blank line (a decimal point stays inside). */
function sentences(text: string): { start: number; text: string }[] {
  const out: { start: number; text: string }[] = [];
  let start = 0;
  for (const match of text.matchAll(/[.;?!](?=\s|$)|\n\s*\n/g)) {
    const end = match.index + match[0].length;
    out.push({ start, text: text.slice(start, end) });
    start = end;
  }
  if (start < text.length) out.push({ start, text: text.slice(start) });
  return out;
}

interface LabNote {
  line: number;
  kind: string;
  match: string;
  /** The comment's line that holds the match. */
  text: string;
}

/** The lab notes of one comment of `file`: its dates (but the facts), and its figures of measuring. */
function labNotesOf(file: string, comment: Comment): LabNote[] {
  const flat = comment.text.replace(/\n/g, ' ');
  const notes: LabNote[] = [];
  const add = (offset: number, kind: string, match: string): void => {
    const line = comment.line + (comment.text.slice(0, offset).match(/\n/g)?.length ?? 0);
    if (notes.some((note) => note.line === line)) return;
    notes.push({ line, kind, match: match.trim(), text: comment.text.split('\n')[line - comment.line]!.trim() });
  };
  for (const pattern of DATES) {
    for (const match of flat.matchAll(pattern)) {
      if (FACTS.some((fact) => (fact.file === '*' || fact.file === file) && match[0] === fact.date)) continue;
      add(match.index, 'date', match[0]);
    }
  }
  for (const sentence of sentences(flat)) {
    for (const [kind, pattern] of LAB_NOTES) {
      for (const match of sentence.text.matchAll(pattern)) {
        if (BOUND.test(sentence.text.slice(0, match.index))) continue;
        add(sentence.start + match.index, kind, match[0]);
      }
    }
    const measuring = MEASURING.exec(sentence.text);
    if (!measuring) continue;
    for (const match of sentence.text.matchAll(new RegExp(`(?<![\\w.~≈])${FIGURE}`, 'g'))) {
      const before = sentence.text.slice(0, match.index);
      if (STATUSES.test(match[0]) || BOUND.test(before) || PART.test(before)) continue;
      add(sentence.start + match.index, `figure (${measuring[0]})`, match[0]);
    }
  }
  return notes.sort((a, b) => a.line - b.line);
}

/** Every lab note of a file's text. */
export function labNotesIn(file: string, text: string, syntax: CommentSyntax): LabNote[] {
  return commentsOf(file, text, syntax).flatMap((comment) => labNotesOf(file, comment));
}
