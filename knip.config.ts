/**
 * knip (unused files, exports and dependencies): what the project's programs start from. `.ci/run` runs
 * `npm run knip`; it must print nothing.
 */
import type { KnipConfig } from 'knip';

const config: KnipConfig = {
  // Entries knip finds itself: the files package.json's scripts run (main.ts, config-docs.ts,
  // ingest/contract/write-docs.ts, the benches) and the test files of vitest.config.ts.
  entry: [
    // Loaded by path, not imported: the archive decode worker (ingest/sources/archive/decode-pool.ts starts
    // it with `new Worker`) and the scripts the tests run as child processes (test/harness/child.ts starts
    // role.ts for a role with TEST_OVERRIDES; the crash tests run frozen-landing.ts).
    'ingest/sources/archive/decode-worker.ts',
    'test/harness/role.ts',
    'test/harness/frozen-landing.ts',
    // The benches (`npm run bench:*`) and the CI scripts.
    'test/bench/*.bench.ts',
    '.ci/*.mjs',
    // Browser scripts of the chart templates: operations/charts/templates.ts reads them as text and inlines
    // them into the HTML and SVG documents; they import nothing and export nothing.
    'operations/charts/*.js',
  ],
  // The root package's files. test/tools is a package of its own (tools that need Node 22, with their own
  // lock) and no workspace of this one: it holds no source, and test/harness/node22.ts resolves its tools
  // by path.
  project: ['**/*.{ts,mjs}', 'operations/charts/*.js'],
  // Used, but not through an import knip can see: autocannon is loaded with createRequire (it ships no type
  // declarations) in test/bench/api.bench.ts; uplot's dist files are served by path to the chart template
  // tests (test/charts.integration.test.ts), as the CDN serves them in production.
  ignoreDependencies: ['autocannon', 'uplot'],
  ignoreBinaries: [
    // System packages the tests, the benches and .ci/run start (installed by apt, not npm).
    'kcat',
    'docker-compose',
    'kubectl',
    'flock',
  ],
};

export default config;
