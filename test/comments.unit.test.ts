/**
 * No code comment is a lab notebook (issue 35): a benchmark figure or a date in a comment goes stale the
 * day it is written. Comments say why; figures and their dates go to test/bench/RESULTS.md. The scanner
 * (test/harness/comments.ts) reads the comments of every code file (TypeScript and JavaScript, SQL, Lua,
 * YAML, shell, Dockerfile, nginx), never string literals, and flags dates and figures of measuring.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeFiles, commentsOf, FACTS, labNotesIn, ROOT } from './harness/comments.ts';

/** The scanner and this test quote lab notes as their examples. */
const EXAMPLES = ['test/harness/comments.ts', 'test/comments.unit.test.ts'];

const UNCHECKED = EXAMPLES;

describe('comments', () => {
  const files = codeFiles();

  it('reads the comments of every kind of code file it judges (a scanner that finds nothing would pass)', {
    timeout: 60_000,
  }, () => {
    const names = files.map(({ file }) => file);
    for (const file of [
      'projections/store.ts',
      'operations/charts/app.js',
      '.ci/lock-platform-packages.mjs',
      'operations/gates/admit.lua',
      'projections/migrations/0001_landing_tables.sql',
      'deploy/compose.yaml',
      'deploy/prometheus/alerts.yml',
      'deploy/Dockerfile',
      'deploy/proxy/nginx.conf',
      '.ci/run',
    ]) {
      expect(names).toContain(file);
      const { syntax } = files.find((code) => code.file === file)!;
      expect(commentsOf(file, readFileSync(path.join(ROOT, file), 'utf8'), syntax).length, file).toBeGreaterThan(0);
    }
    expect(
      names.some(
        (file) => file.startsWith('node_modules/') || file.startsWith('docs/') || file.startsWith('test/fixtures/'),
      ),
    ).toBe(false);
    expect(names).not.toContain('test/bench/RESULTS.md');
  });

  it('flags a lab note in a comment of each syntax, and never the same text in a string', () => {
    const note = 'measured 10–18 ms p50 on 2026-11-25';
    const cases: [string, 'js' | 'sql' | 'lua' | 'yaml' | 'hash', string, string][] = [
      [
        'a.ts',
        'js',
        `// ${note}\nconst a = 1;`,
        `const a = '// ${note}';\nconst b = \`/* ${note} \${a} */\`;\nconst c = /\\/\\/ 2026-11-25/;\n`,
      ],
      [
        'a.ts',
        'js',
        `/**\n * Ran 41,000 fills/s\n * (bench:ingest).\n */\nconst a = 1;`,
        `const a = "refused 62, 8, 68 on Nov 25, 2026";`,
      ],
      ['a.sql', 'sql', `SELECT 1 -- ${note}\n`, `SELECT '-- ${note}', '/* ${note} */'\n`],
      ['a.lua', 'lua', `local a = 1 -- ${note}\n--[[ ${note} ]]\n`, `local a = "-- ${note}" .. [[-- ${note}]]\n`],
      ['a.yaml', 'yaml', `a: 1 # ${note}\n`, `a: "# ${note}"\nb: |\n  # ${note}\n`],
      [
        'run',
        'hash',
        `#!/usr/bin/env bash\necho hi # ${note}\n`,
        `#!/usr/bin/env bash\necho "# ${note}" '# ${note}'\n`,
      ],
    ];
    for (const [file, syntax, comment, literal] of cases) {
      expect(labNotesIn(file, comment, syntax).length, comment).toBeGreaterThan(0);
      expect(labNotesIn(file, literal, syntax), literal).toEqual([]);
    }
  });

  it('tells lab notes from the figures of settings, bounds and facts', () => {
    const notes = (text: string) => labNotesIn('a.ts', `${text}\nconst a = 1;`, 'js').map((found) => found.kind);
    for (const lab of [
      '// The summary went 12.0 → 12.3 ms p50 after the change.',
      '// ~1.4 µs a fill.',
      '// Two statements answer sooner (7.7 vs 9.4 ms).',
      '// bench:api served 458–572 answers.',
      '// HTTP ÷ in process: 0.33–0.49× at p50 (bench:api).',
      '// Kept until April 2027.',
      '// See the run of 25 November 2026.',
    ]) {
      expect(notes(lab), lab).not.toEqual([]);
    }
    for (const setting of [
      '// Timeout in ms.',
      '// A 10 s guard, the default.',
      '// Pause 0.5 s doubling, at most 30 s.',
      '// The median of the served latencies, ms.',
      '// 429s consume nothing; a heartbeat every 10 s.',
      '// Hourly titles name the hour only: 10PM ET on January 4 is 03:00 UTC on January 5.',
      '// Under 5× the sustainable rate, every answer is served or refused at once (bench:overload).',
      '// The MCP protocol revision 2025-11-25.',
    ]) {
      expect(notes(setting), setting).toEqual([]);
    }
  });

  // Parsing every TypeScript file takes seconds on a busy machine.
  it('no code comment quotes a benchmark figure or a date', { timeout: 60_000 }, () => {
    const found = files
      .filter(({ file }) => !UNCHECKED.includes(file))
      .flatMap(({ file, syntax }) =>
        labNotesIn(file, readFileSync(path.join(ROOT, file), 'utf8'), syntax).map(
          (note) => `${file}:${note.line} [${note.kind}] ${note.match} — ${note.text}`,
        ),
      );
    expect(found).toEqual([]);
  });

  it('keeps its exceptions current: each names a file that exists, and each fact is still written there', () => {
    for (const file of UNCHECKED) expect(existsSync(path.join(ROOT, file)), file).toBe(true);
    for (const fact of FACTS.filter(({ file }) => file !== '*')) {
      expect(readFileSync(path.join(ROOT, fact.file), 'utf8'), `${fact.file}: ${fact.date}`).toContain(fact.date);
    }
  });
});
