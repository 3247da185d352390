/**
 * Stores that record what they are asked: the SQL text of every query (tests assert which statements a
 * read sends), or every call with its span (bench:api --trace-refusals shows what live ingest had the
 * store do around a burst).
 */
import type { Store } from '../../projections/store.ts';

/** The same store; each query's SQL text is appended to `sent` before it runs. */
export function recordingQueries(store: Store, sent: string[]): Store {
  return Object.freeze({
    ...store,
    database: store.database,
    kind: store.kind,
    query: async <Row>(...args: Parameters<Store['query']>): Promise<Row[]> => {
      sent.push(args[0]);
      return store.query<Row>(...args);
    },
  });
}

/** One store call: what (a query and its lane, a command, an insert into which table) and when (epoch ms, comparable across processes). */
export interface StoreCall {
  what: string;
  startedAtEpochMs: number;
  endedAtEpochMs: number;
}

/** The same store; each call is appended to `calls` once it ends (the last 20,000 kept). */
export function recordingCalls(store: Store, calls: StoreCall[]): Store {
  const epochNow = () => performance.timeOrigin + performance.now();
  const record = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    const startedAtEpochMs = epochNow();
    try {
      return await call();
    } finally {
      calls.push({ what, startedAtEpochMs, endedAtEpochMs: epochNow() });
      if (calls.length > 20_000) calls.splice(0, 10_000);
    }
  };
  const statement = (sql: string) => sql.replace(/\s+/g, ' ').trim().slice(0, 60);
  return Object.freeze({
    ...store,
    database: store.database,
    kind: store.kind,
    query: <Row>(...[sql, params, options]: Parameters<Store['query']>) =>
      record(`${options?.background ? 'background query' : 'pool query'} ${statement(sql)}`, () =>
        store.query<Row>(sql, params, options),
      ),
    command: (sql: string, params?: Parameters<Store['command']>[1]) =>
      record(`command ${statement(sql)}`, () => store.command(sql, params)),
    insert: (...[table, rows, token]: Parameters<Store['insert']>) =>
      record(`insert ${table} (${rows.length} rows)`, () => store.insert(table, rows, token)),
    insertJsonLines: (...[table, lines, token]: Parameters<Store['insertJsonLines']>) =>
      record(`insert ${table} (${lines.length} rows)`, () => store.insertJsonLines(table, lines, token)),
  });
}
