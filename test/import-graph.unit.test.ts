/**
 * The arrows between the parts (design.md, "Parts and the folders that hold them"), read from the source:
 *
 * - no import circle anywhere: not between files of one folder, not across folders; a type-only import and
 *   a dynamic `import()` count like any other (a circle of types still ties the files' changes together);
 * - `api/` (the REST app) and `mcp/` (the MCP server) never import each other: what both use lives in
 *   `operations/` (one operation per resource, auth, context, errors, the gates, cursors, the chart
 *   templates), and the roles mount both on one server (`roles/http-server.ts`);
 * - `operations/` imports neither surface (`api/`, `mcp/`), nor `ingest/`, nor `roles/`;
 * - `projections/` imports nothing above it: not `metrics/` (the read caches report through a hook the
 *   role installs), `operations/`, `api/`, `mcp/`, `ingest/` or `roles/`;
 * - `api/` and `ingest/` never import each other;
 * - `ingest/` never imports `operations/` (nor the reverse, above): the live feed and the plane meet in a
 *   ground-floor contract (live-input.ts), and the roles join them;
 * - `roles/` wires the parts together and is the top: no part imports it;
 * - the ground floor (the root's modules: config.ts and its parts config-*.ts, log.ts, chain.ts, …) imports no
 *   part folder: every part reads the configuration and the chain's facts, so an arrow from there up would
 *   make every part depend on that part. The program (main.ts, which starts the roles) and the docs script are not ground floor.
 *
 * The rules hold for every file of those folders, tests included; the circle rule holds for the root
 * files (config.ts, log.ts, main.ts) and `test/` too. Each rule is a query that can fail: the first test
 * checks that the parser reads the imports (a parser that finds nothing would pass every rule), that a
 * folder query finds arrows where there are some, and that the circle finder finds circles.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const FOLDERS = ['api', 'ingest', 'mcp', 'metrics', 'operations', 'projections', 'roles', 'test'];

/** Static imports and re-exports (`… from '…'`, `import type` included), side-effect imports and dynamic `import('…')`. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g;

function sourceFiles(folder: string): string[] {
  return (
    readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
      .map((file) => path.posix.join(folder, file.split(path.sep).join('/')))
      // test/tools is a package of its own, with its own node_modules once installed.
      .filter((file) => /\.(ts|js)$/.test(file) && !file.includes('/node_modules/'))
  );
}

/** The TypeScript files at the root of the repository (config.ts, log.ts, main.ts, …). */
function rootFiles(): string[] {
  return readdirSync(ROOT, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => entry.name);
}

/** Repository-relative targets of a file's relative imports (packages are not part of the graph). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(SPECIFIER)]
    .map((match) => match[1]!)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)));
}

/** Root files that start something (the program, the docs script): above the parts, not below them. */
const ENTRY_POINTS = new Set(['main.ts', 'config-docs.ts']);

type Graph = ReadonlyMap<string, readonly string[]>;

const GRAPH: Graph = new Map([...FOLDERS.flatMap(sourceFiles), ...rootFiles()].map((file) => [file, importsOf(file)]));

/** Every import of a file under `from` that lands under one of `forbidden`, as `file → target`. */
function violations(from: string, forbidden: string[]): string[] {
  return [...GRAPH]
    .filter(([file]) => file.startsWith(`${from}/`))
    .flatMap(([file, targets]) =>
      targets
        .filter((target) => forbidden.some((folder) => target.startsWith(`${folder}/`)))
        .map((target) => `${file} → ${target}`),
    );
}

/**
 * The circles of a graph: one per strongly connected component of more than one file (or a file that
 * imports itself), spelled as one closed path through it (`a → b → a`). Tarjan's algorithm, iterative.
 */
function circles(graph: Graph): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const edges = (node: string) => (graph.get(node) ?? []).filter((target) => graph.has(target));
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; next: number }[] = [{ node: start, next: 0 }];
    index.set(start, index.size);
    low.set(start, index.get(start)!);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = edges(frame.node);
      if (frame.next < targets.length) {
        const target = targets[frame.next++]!;
        if (!index.has(target)) {
          index.set(target, index.size);
          low.set(target, index.get(target)!);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, next: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || edges(frame.node).includes(frame.node)) components.push(component);
    }
  }
  return components.map((component) => closedPath(graph, new Set(component)));
}

/** A shortest closed path from the component's first file (in name order) back to it, inside the component. */
function closedPath(graph: Graph, component: ReadonlySet<string>): string {
  const first = [...component].sort()[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [first];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const target of graph.get(node) ?? []) {
      if (!component.has(target)) continue;
      if (target === first) {
        const path = [first];
        for (let at: string | undefined = node; at !== undefined && at !== first; at = cameFrom.get(at))
          path.unshift(at);
        return [first, ...path].join(' → ');
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  throw new Error(`no closed path through ${first}`);
}

describe('import graph', () => {
  it('reads the imports it judges (a parser that finds nothing would pass every rule)', () => {
    expect(GRAPH.get('roles/http-server.ts')).toEqual(expect.arrayContaining(['api/app.ts', 'mcp/server.ts']));
    expect(GRAPH.get('mcp/tools/markets.ts')).toContain('operations/markets.ts');
    expect(GRAPH.get('roles/all.ts')).toEqual(expect.arrayContaining(['roles/http-server.ts', 'ingest/worker.ts']));
    // A type-only import, a dynamic import, a root file.
    expect(GRAPH.get('operations/context.ts')).toContain('operations/reads.ts');
    expect(GRAPH.get('api/app.ts')).toContain('api/downloads-s3.ts');
    expect(GRAPH.get('main.ts')).toEqual(expect.arrayContaining(['config.ts', 'roles/all.ts']));
    // The folder query finds arrows where there are some.
    expect(violations('roles', ['api', 'mcp', 'ingest'])).not.toEqual([]);
  });

  it('the circle finder finds circles (it judges the whole graph below)', () => {
    const graph = (edges: Record<string, string[]>): Graph => new Map(Object.entries(edges));
    expect(circles(graph({ a: ['b'], b: ['c'], c: [] }))).toEqual([]);
    expect(circles(graph({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] }))).toEqual(['a → b → c → a']);
    expect(circles(graph({ a: ['a'], b: [] }))).toEqual(['a → a']);
    expect(circles(graph({ x: ['y'], y: ['x', 'z'], z: ['w'], w: ['z'] })).sort()).toEqual(['w → z → w', 'x → y → x']);
    // A two-file circle of the real graph's shape: type-only imports count.
    expect(
      circles(
        graph({
          'projections/store.ts': ['projections/read-cache.ts'],
          'projections/read-cache.ts': ['projections/store.ts'],
        }),
      ),
    ).toEqual(['projections/read-cache.ts → projections/store.ts → projections/read-cache.ts']);
  });

  it('has no import circle anywhere', () => {
    expect(circles(GRAPH)).toEqual([]);
  });

  it('api/ and mcp/ never import each other (what both use is in operations/; the roles mount both)', () => {
    expect(violations('api', ['mcp'])).toEqual([]);
    expect(violations('mcp', ['api'])).toEqual([]);
  });

  it('operations/ import neither api/, mcp/, ingest/ nor roles/', () => {
    expect(violations('operations', ['api', 'mcp', 'ingest', 'roles'])).toEqual([]);
  });

  it('projections/ import nothing above them: neither metrics/, operations/, api/, mcp/, ingest/ nor roles/', () => {
    expect(violations('projections', ['metrics', 'operations', 'api', 'mcp', 'ingest', 'roles'])).toEqual([]);
  });

  it('api/ and ingest/ never import each other', () => {
    expect(violations('api', ['ingest'])).toEqual([]);
    expect(violations('ingest', ['api'])).toEqual([]);
  });

  it('the ground floor imports no part folder (config.ts, log.ts, chain.ts… are below every part)', () => {
    const groundFloor = rootFiles().filter((file) => !ENTRY_POINTS.has(file) && !file.endsWith('.config.ts'));
    expect(groundFloor).toEqual(
      expect.arrayContaining([
        'config.ts',
        'config-environment.ts',
        'config-plans.ts',
        'config-derived.ts',
        'config-shapes.ts',
        'live-input.ts',
        'log.ts',
        'chain.ts',
      ]),
    );
    const upward = groundFloor.flatMap((file) =>
      (GRAPH.get(file) ?? []).filter((target) => FOLDERS.some((folder) => target.startsWith(`${folder}/`))),
    );
    expect(upward).toEqual([]);
    // The query finds such an arrow where there is one: the program's own.
    expect(GRAPH.get('main.ts')?.some((target) => target.startsWith('roles/'))).toBe(true);
  });

  it('ingest/ never imports operations/ (the live feed and the plane meet in live-input.ts; the roles join them)', () => {
    expect(violations('ingest', ['operations'])).toEqual([]);
  });

  it('no part imports roles/ (the roles wire the parts together)', () => {
    for (const part of ['api', 'ingest', 'mcp', 'metrics', 'operations', 'projections'])
      expect(violations(part, ['roles'])).toEqual([]);
  });
});
