/**
 * Several plain reads sent as one statement.
 *
 * Why: on this engine a read's cost is mostly fixed and mostly planning. One statement that joins a
 * few plain point reads and folds them in SQL spends nearly all of its time planning the joins and
 * expressions, for a few hundred rows; the same plain reads as parts of one `UNION ALL` pay one
 * statement's fixed cost, with no join to plan, and the fold (a few hundred rows) is done by the
 * caller in TypeScript.
 *
 * Each part is an ordinary SELECT (its own WHERE, ORDER BY, LIMIT; the same `{name:Type}` parameters as
 * any statement). Its rows come back as one JSON object each (`formatRowNoNewline('JSONEachRow', *)`),
 * tagged with the part's name, so parts with different columns share one result. A part's ORDER BY
 * and LIMIT choose its rows; the union promises no order of the rows it returns (a caller that needs an
 * order sorts them).
 */
import type { QueryParams, Store } from './store.ts';

/** Part names go into the statement as string literals: plain identifiers only. */
const PART_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A statement of named parts whose rows have the types in `Parts`. */
export interface Bundle<Parts extends object> {
  readonly sql: string;
  readonly names: readonly (keyof Parts & string)[];
}

/** The statement of these parts: each part a subquery, its rows tagged with the part's index. */
export function bundle<Parts extends object>(
  parts: { readonly [Name in keyof Parts & string]: string },
): Bundle<Parts> {
  const names = Object.keys(parts) as (keyof Parts & string)[];
  if (names.length === 0) throw new Error('a bundle needs at least one part');
  const selects = names.map((name, index) => {
    if (!PART_NAME.test(name)) throw new Error(`bundle part name ${JSON.stringify(name)} is not a plain identifier`);
    return `SELECT ${index} AS part, formatRowNoNewline('JSONEachRow', *) AS row FROM (${parts[name]}\n)`;
  });
  return { sql: selects.join('\nUNION ALL\n'), names };
}

/** Runs the bundle: each part's rows, parsed (a part without rows: an empty list). */
export async function readBundle<Parts extends object>(
  store: Store,
  statement: Bundle<Parts>,
  params?: QueryParams,
): Promise<{ [Name in keyof Parts]: Parts[Name][] }> {
  const result = Object.fromEntries(statement.names.map((name) => [name, [] as object[]])) as {
    [Name in keyof Parts]: Parts[Name][];
  };
  const rows = await store.query<{ part: number; row: string }>(statement.sql, params);
  for (const { part, row } of rows) {
    const name = statement.names[part];
    if (name === undefined) throw new Error(`bundle answered with part ${part}, which it does not have`);
    result[name].push(JSON.parse(row) as Parts[typeof name]);
  }
  return result;
}
