/**
 * Values written into SQL text (embedded mode): whatever a string holds, it stays one string literal
 * that decodes back to itself, and it never adds a placeholder or a token to the statement. The literal
 * is read back by a small reader of ClickHouse's quoted-string syntax written here, independently of
 * the formatter under test.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inlineParams, ParameterError } from './sql-values.ts';

/** ClickHouse's backslash escapes in a quoted string; any other escaped character stands for itself. */
const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '0': '\0',
  b: '\b',
  f: '\f',
  a: '\x07',
  v: '\v',
  e: '\x1b',
};

/** Reads the quoted string that starts at `sql[start]`: its value and the index just after its closing quote. */
function readQuoted(sql: string, start: number): { value: string; end: number } {
  expect(sql[start]).toBe("'");
  let value = '';
  let index = start + 1;
  while (index < sql.length) {
    const char = sql[index]!;
    if (char === '\\') {
      const next = sql[index + 1]!;
      value += ESCAPES[next] ?? next;
      index += 2;
    } else if (char === "'") {
      // A doubled quote is an escaped quote too.
      if (sql[index + 1] === "'") {
        value += "'";
        index += 2;
      } else {
        return { value, end: index + 1 };
      }
    } else {
      value += char;
      index += 1;
    }
  }
  throw new Error(`unterminated string literal in ${sql}`);
}

const hostileString = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  // Made of the characters that matter to SQL text and to placeholders.
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
    ),
  }),
);

describe('inlineParams', () => {
  it('keeps any string one literal that decodes to itself, followed by the rest of the template unchanged', () => {
    fc.assert(
      fc.property(hostileString, (value) => {
        const sql = inlineParams('SELECT name FROM {db:Identifier}.t WHERE wallet = {wallet:String} LIMIT 1', {
          db: 'd1',
          wallet: value,
        });
        const prefix = 'SELECT name FROM `d1`.t WHERE wallet = _CAST(';
        expect(sql.startsWith(prefix)).toBe(true);
        const literal = readQuoted(sql, prefix.length);
        expect(literal.value).toBe(value);
        expect(sql.slice(literal.end)).toBe(", 'String') LIMIT 1");
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps every element of an array one literal, and never substitutes placeholders spelled inside values', () => {
    fc.assert(
      fc.property(fc.array(hostileString, { maxLength: 5 }), hostileString, (values, other) => {
        const sql = inlineParams('SELECT 1 WHERE x IN {xs:Array(String)} AND y = {y:String}', {
          xs: values,
          y: `{xs:Array(String)}${other}`,
        });
        const prefix = 'SELECT 1 WHERE x IN _CAST([';
        expect(sql.startsWith(prefix)).toBe(true);
        let index = prefix.length;
        const decoded: string[] = [];
        while (sql[index] === "'") {
          const literal = readQuoted(sql, index);
          decoded.push(literal.value);
          index = literal.end;
          if (sql[index] === ',') index += 1;
        }
        expect(decoded).toEqual(values);
        const middle = "], 'Array(String)') AND y = _CAST(";
        expect(sql.slice(index, index + middle.length)).toBe(middle);
        const y = readQuoted(sql, index + middle.length);
        expect(y.value).toBe(`{xs:Array(String)}${other}`);
        expect(sql.slice(y.end)).toBe(", 'String')");
      }),
      { numRuns: 500 },
    );
  });

  it('writes numbers as numbers under the placeholder type', () => {
    expect(inlineParams('LIMIT {n:UInt32} OFFSET {o:Float64}', { n: 51, o: -1.5 })).toBe(
      "LIMIT _CAST(51, 'UInt32') OFFSET _CAST(-1.5, 'Float64')",
    );
  });

  it('refuses a placeholder without a value, and an identifier that is not plain', () => {
    expect(() => inlineParams('SELECT {a:String}', {})).toThrow(ParameterError);
    expect(() => inlineParams('SELECT {a:String}', { a: undefined })).toThrow(ParameterError);
    fc.assert(
      fc.property(
        hostileString.filter((value) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(value)),
        (value) => {
          expect(() => inlineParams('SELECT 1 FROM {db:Identifier}.t', { db: value })).toThrow(ParameterError);
        },
      ),
    );
  });
});
