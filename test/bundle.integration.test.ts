/**
 * Bundles (projections/bundle.ts) on the embedded engine: parts with different columns come back each
 * under its own name, with their own types (numbers, nulls, booleans, arrays, strings); a part without
 * rows is an empty list; each part keeps its own ORDER BY … LIMIT; arbitrary strings, as parameters,
 * come back unchanged and never add or remove a row; a bad part name is refused before any statement.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { bundle, readBundle } from '../projections/bundle.ts';
import { openStore, type Store } from '../projections/store.ts';
import { PROCESS_DATA_DIR, testEnvironment, uniqueId } from './harness/context.ts';

const hostileString = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.string({
    unit: fc.constantFrom(
      "'",
      '\\',
      '"',
      '`',
      '{',
      '}',
      ':',
      ';',
      '-',
      '/',
      '*',
      '\n',
      '\r',
      '\t',
      '\0',
      ' ',
      'a',
      ')',
      '(',
      ',',
      'UNION',
      'ALL',
      'SELECT',
    ),
  }),
);

interface Row {
  key: string;
  amount: number;
  big: number;
  note: string | null;
  flag: boolean;
  tags: string[];
}

describe('bundles of plain parts', () => {
  let store: Store;

  beforeAll(async () => {
    const config = parseConfig({ ...testEnvironment(uniqueId('bundle'), PROCESS_DATA_DIR), KAFKA_BROKERS: '' });
    store = await openStore(config.clickhouse);
    await store.ensureDatabase();
    await store.command(
      `CREATE TABLE IF NOT EXISTS {db:Identifier}.items
       (key String, amount Float64, big UInt64, note Nullable(String), flag Bool, tags Array(String))
       ENGINE = MergeTree ORDER BY key`,
    );
    await store.insert('items', [
      { key: 'a', amount: 0.1, big: 9_007_199_254_740_991, note: null, flag: true, tags: ['x', "it's"] },
      { key: 'b', amount: -2.5e-7, big: 0, note: 'line\nbreak "quoted"', flag: false, tags: [] },
      { key: 'c', amount: 1234.5678, big: 42, note: '', flag: true, tags: ['{k:String}'] },
    ]);
  });

  afterAll(async () => {
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('returns each part under its name with its own columns and types; an empty part is an empty list', async () => {
    const statement = bundle<{
      items: Row;
      newest: { key: string };
      total: { n: number; sum: number };
      none: { key: string };
    }>({
      items: 'SELECT key, amount, big, note, flag, tags FROM {db:Identifier}.items',
      newest: 'SELECT key FROM {db:Identifier}.items ORDER BY key DESC LIMIT 1',
      total: 'SELECT count() AS n, sum(amount) AS sum FROM {db:Identifier}.items',
      none: 'SELECT key FROM {db:Identifier}.items WHERE key = {missing:String}',
    });
    const parts = await readBundle(store, statement, { missing: 'zzz' });
    expect([...parts.items].sort((x, y) => x.key.localeCompare(y.key))).toStrictEqual([
      { key: 'a', amount: 0.1, big: 9_007_199_254_740_991, note: null, flag: true, tags: ['x', "it's"] },
      { key: 'b', amount: -2.5e-7, big: 0, note: 'line\nbreak "quoted"', flag: false, tags: [] },
      { key: 'c', amount: 1234.5678, big: 42, note: '', flag: true, tags: ['{k:String}'] },
    ]);
    expect(parts.newest).toStrictEqual([{ key: 'c' }]);
    expect(parts.total).toStrictEqual([{ n: 3, sum: 0.1 - 2.5e-7 + 1234.5678 }]);
    expect(parts.none).toStrictEqual([]);
  });

  it('gives arbitrary string parameters back unchanged in every part, never adding or dropping a row', async () => {
    const statement = bundle<{ echo: { s: string; n: number }; match: { key: string }; all: { key: string } }>({
      echo: 'SELECT {s:String} AS s, length({s:String}) AS n',
      match: 'SELECT key FROM {db:Identifier}.items WHERE key = {s:String}',
      all: 'SELECT key FROM {db:Identifier}.items WHERE key != {s:String} OR 1 = 1',
    });
    await fc.assert(
      fc.asyncProperty(hostileString, async (s) => {
        const parts = await readBundle(store, statement, { s });
        expect(parts.echo).toStrictEqual([{ s, n: Buffer.byteLength(s, 'utf8') }]);
        expect(parts.match).toStrictEqual(['a', 'b', 'c'].includes(s) ? [{ key: s }] : []);
        expect(parts.all.map((row) => row.key).sort()).toStrictEqual(['a', 'b', 'c']);
      }),
      { numRuns: 150 },
    );
  });

  it('refuses a part name that is not a plain identifier, and a bundle without parts', () => {
    expect(() => bundle({ "x' UNION ALL SELECT 1 --": 'SELECT 1' })).toThrow(/not a plain identifier/);
    expect(() => bundle({})).toThrow(/at least one part/);
  });
});
