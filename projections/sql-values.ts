/**
 * Bound parameters as SQL text, for the embedded engine only.
 *
 * Why: chDB's JavaScript binding runs every query that carries bound parameters through one
 * process-wide promise chain (its libchdb cannot isolate parameter state between connections), so
 * every read, insert and rollup refresh of the process would wait in one queue. A statement without
 * parameters runs on its own connection in parallel. So, on chDB, the store writes each value into the
 * statement the way the server's own substitution does (a typed `_CAST(literal, 'Type')`), with the
 * value rendered by the ClickHouse client's own formatter (the one it uses for HTTP query parameters);
 * nothing here escapes by hand. Against a ClickHouse server, parameters stay bound.
 *
 * The SQL stays in the named templates with `{name:Type}` placeholders. Substitution is one pass over
 * the template: a value's text is never scanned for placeholders again, so a value that spells
 * `{other:String}` is just characters inside a string literal. Property tests
 * (projections/sql-values.unit.test.ts, test/sql-values.integration.test.ts) check that arbitrary
 * strings give the same result as bound parameters and leave the parsed query unchanged.
 */
// The client's formatter is the one it applies to query parameters; the package's main entry does not
// re-export it, its bundled common module does (the same code as @clickhouse/client-common).
import { formatQueryParams } from '@clickhouse/client/dist/common/index.js';

/** `{name:Type}` as ClickHouse writes a query parameter (types have no braces). */
const PLACEHOLDER = /\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^{}]+?)\s*\}/g;
/** Identifiers are refused unless plain; they are never quoted from arbitrary text. */
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A placeholder names a parameter that was not given, or a value the formatter cannot render. */
export class ParameterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ParameterError';
  }
}

/** One value as a SQL literal: strings quoted and escaped by the client's formatter, NULL as a keyword. */
export function sqlLiteral(value: unknown): string {
  return formatQueryParams({ value, wrapStringInQuotes: true, printNullAsKeyword: true });
}

/**
 * The statement with every `{name:Type}` replaced by its value: `Identifier` by the plain identifier
 * (refused unless it is one), backquoted,, any other type by `_CAST(<literal>, '<Type>')`, which is what the
 * server's own parameter substitution builds. A placeholder without a value is an error (as on the
 * server); values that no placeholder names are ignored.
 */
export function inlineParams(sql: string, params: Readonly<Record<string, unknown>> | undefined): string {
  return sql.replace(PLACEHOLDER, (_placeholder, name: string, type: string) => {
    if (!params || !Object.hasOwn(params, name) || params[name] === undefined) {
      throw new ParameterError(`query parameter ${name} (${type}) has no value`);
    }
    const value = params[name];
    if (type === 'Identifier') {
      if (typeof value !== 'string' || !PLAIN_IDENTIFIER.test(value)) {
        throw new ParameterError(`identifier parameter ${name} is not a plain identifier: ${JSON.stringify(value)}`);
      }
      return `\`${value}\``;
    }
    return `_CAST(${sqlLiteral(value)}, ${sqlLiteral(type)})`;
  });
}
