/**
 * The arrows between the parts (design.md, "Parts and the folders that hold them"), read from the source:
 * `api/` and `ingest/` never import each other; `mcp/` shares operations (`api/operations/`), never the
 * REST routes; `projections/` imports none of `api/`, `mcp/`, `ingest/`. Process roles that wire parts
 * together live in `roles/`. The rules hold for every file of those folders, tests included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const FOLDERS = ['api', 'ingest', 'mcp', 'projections', 'roles'];

/** Static imports and re-exports (`… from '…'`), side-effect imports and dynamic `import('…')`. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g;

function sourceFiles(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|js)$/.test(file))
    .map((file) => path.posix.join(folder, file.split(path.sep).join('/')));
}

/** Repository-relative targets of a file's relative imports (packages are not part of the graph). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(SPECIFIER)]
    .map((match) => match[1]!)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)));
}

const GRAPH = new Map(FOLDERS.flatMap(sourceFiles).map((file) => [file, importsOf(file)]));

/** Every import of a file under `from` that lands under one of `forbidden`, as `file → target`. */
function violations(from: string, forbidden: string[]): string[] {
  return [...GRAPH]
    .filter(([file]) => file.startsWith(`${from}/`))
    .flatMap(([file, targets]) => targets.filter((target) => forbidden.some((folder) => target.startsWith(`${folder}/`))).map((target) => `${file} → ${target}`));
}

describe('import graph', () => {
  it('reads the imports it judges (a parser that finds nothing would pass every rule)', () => {
    expect(GRAPH.get('api/app.ts')).toContain('projections/store.ts');
    expect(GRAPH.get('mcp/tools/markets.ts')).toContain('operations/markets.ts');
    expect(GRAPH.get('roles/all.ts')).toEqual(expect.arrayContaining(['roles/http-server.ts', 'ingest/worker.ts']));
    expect(violations('roles', ['api', 'ingest'])).not.toEqual([]);
  });

  it('api/ and ingest/ never import each other', () => {
    expect(violations('api', ['ingest'])).toEqual([]);
    expect(violations('ingest', ['api'])).toEqual([]);
  });

  it('mcp/ shares operations, never the REST routes', () => {
    expect(violations('mcp', ['api/routes'])).toEqual([]);
  });

  it('projections/ import neither api/, mcp/ nor ingest/', () => {
    expect(violations('projections', ['api', 'mcp', 'ingest'])).toEqual([]);
  });
});
