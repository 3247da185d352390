/**
 * The embedded store writes values into the SQL text (projections/sql-values.ts). On the engine itself:
 * for arbitrary strings, the statement gives the same rows as the same template with bound parameters,
 * and parses to the same query (normalizeQuery: literals replaced, structure kept) as with a harmless
 * value. And reads run on their own pool: a read finishes while a long command is still running.
 */
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { openStore, type Store } from '../projections/store.ts';
import { inlineParams } from '../projections/sql-values.ts';
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
      'x',
      ')',
      '(',
      ',',
      '?',
      '$',
    ),
  }),
);

/** A real read's shape: a point lookup by a string key, an IN list, a number. */
const TEMPLATE = `
SELECT {s:String} AS s, length({s:String}) AS n, {xs:Array(String)} AS xs, {k:UInt32} AS k
FROM {db:Identifier}.probe
WHERE key = {s:String} OR key IN {xs:Array(String)} OR 1 = 1
ORDER BY key
LIMIT 1`;

describe('values written into SQL text on chDB', () => {
  let store: Store;
  let bound: ClickHouseClient;
  let database: string;

  beforeAll(async () => {
    const config = parseConfig({ ...testEnvironment(uniqueId('sqlvalues'), PROCESS_DATA_DIR), KAFKA_BROKERS: '' });
    store = await openStore(config.clickhouse);
    database = store.database;
    await store.ensureDatabase();
    await store.command(
      'CREATE TABLE IF NOT EXISTS {db:Identifier}.probe (key String) ENGINE = MergeTree ORDER BY key',
    );
    await store.insert('probe', [{ key: 'a' }, { key: "it's" }]);
    // A session of its own on the same engine that binds parameters (chDB's own binding).
    const { createChdbConnection } = await import('chdb/connection');
    bound = createClient({
      connection: createChdbConnection({ path: config.clickhouse.embeddedPath }) as unknown as NonNullable<
        Parameters<typeof createClient>[0]
      >['connection'],
      clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
    });
  });

  afterAll(async () => {
    await bound?.close();
    await store?.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store?.close();
  });

  it('gives the same rows as bound parameters, and the value back unchanged, for arbitrary strings', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostileString,
        fc.array(hostileString, { maxLength: 4 }),
        fc.nat({ max: 4_294_967_295 }),
        async (s, xs, k) => {
          const inlined = await store.query<{ s: string; n: number; xs: string[]; k: number }>(TEMPLATE, { s, xs, k });
          const withBinding = await (
            await bound.query({ query: TEMPLATE, query_params: { s, xs, k, db: database }, format: 'JSONEachRow' })
          ).json<{ s: string; n: number; xs: string[]; k: number }>();
          expect(inlined).toEqual(withBinding);
          expect(inlined).toHaveLength(1);
          expect(inlined[0]!.s).toBe(Buffer.from(s, 'utf8').toString('utf8'));
          expect(inlined[0]!.xs).toEqual(xs.map((x) => Buffer.from(x, 'utf8').toString('utf8')));
          expect(inlined[0]!.k).toBe(k);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('parses to the same query whatever the string (only literals differ)', async () => {
    const normalized = async (value: string) => {
      const sql = inlineParams(TEMPLATE, { s: value, xs: [value, 'b'], k: 7, db: database });
      const [row] = await store.query<{ q: string }>('SELECT normalizeQuery({sql:String}) AS q', { sql });
      return row!.q;
    };
    const reference = await normalized('harmless');
    await fc.assert(
      fc.asyncProperty(hostileString, async (value) => {
        expect(await normalized(value)).toBe(reference);
      }),
      { numRuns: 150 },
    );
  });

  it('finishes a read while a long command still runs (reads have their own sessions and no queue)', async () => {
    const order: string[] = [];
    // Three rows of sleepEachRow(0.9) on the command lane: just under the engine's limit of 3 s per block, values included.
    const command = store
      .command(
        'INSERT INTO {db:Identifier}.probe SELECT {prefix:String} || toString(sleepEachRow(0.9)) FROM numbers(3)',
        { prefix: 'slow-' },
      )
      .then(() => order.push('command'));
    const read = store
      .query<{ key: string }>('SELECT key FROM {db:Identifier}.probe WHERE key = {key:String}', { key: "it's" })
      .then((rows) => {
        order.push('read');
        return rows;
      });
    expect(await read).toEqual([{ key: "it's" }]);
    await command;
    expect(order).toEqual(['read', 'command']);
  });
});
