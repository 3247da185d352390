import { describe, expect, it } from 'vitest';
import { readNameOf } from './store.ts';

// Stand-ins for projection read functions: the label is the name of the function that issued the query.
function readSomething(sql: string): string {
  return readNameOf(sql);
}
const readInsideMap = (sql: string): string[] => [sql].map((text) => readNameOf(text));

describe('readNameOf', () => {
  it('names a statement after the function that issued it, once, whatever calls it later', () => {
    expect(readSomething('SELECT 1 AS first_statement')).toBe('readSomething');
    // An anonymous callback is skipped for the function around it.
    expect(readInsideMap('SELECT 2 AS second_statement')).toEqual(['readInsideMap']);
    // The first caller names the statement; the label set stays that of the distinct statements.
    expect(readNameOf('SELECT 1 AS first_statement')).toBe('readSomething');
  });
});
