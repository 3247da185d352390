/**
 * Store query latency by read. A read is named after the projections function that issued the query
 * (`readCareer`, `readTraderMarkets`…), found once per distinct SQL text from the call stack and then
 * remembered: the SQL of a read function is a constant with bound parameters, so the names form a small
 * fixed set without touching every read function. Past MAX_READ_NAMES distinct statements (which would
 * mean values were being spliced into SQL) the label is `other`, so the series stay bounded.
 */
import { QueryTimeoutError, type Store } from '../projections/store.ts';
import { storeQueryDuration } from './registry.ts';

const MAX_READ_NAMES = 200;
const readNames = new Map<string, string>();

/** Frames of these files are plumbing between the read function and the store, not the read (a bundle, or a read through the caches, is named after the read function). */
const PLUMBING =
  /[\\/](metrics[\\/]store|projections[\\/]store|projections[\\/]bundle|projections[\\/]sources|operations[\\/]read-cache|operations[\\/]gates[\\/]store-slot)\.[cm]?[jt]s:/;
const FRAME = /^\s*at (?:async )?([\w$.<>]+) \((.+)\)$/;

function nameFromStack(): string {
  const holder: { stack?: string } = {};
  const previousLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 16;
  Error.captureStackTrace(holder, nameFromStack);
  Error.stackTraceLimit = previousLimit;
  const frames = (holder.stack ?? '')
    .split('\n')
    .slice(1)
    .map((line) => FRAME.exec(line))
    .map((frame) => (frame ? { name: frame[1]!, file: frame[2]!, plumbing: PLUMBING.test(frame[2]!) } : null));
  for (const frame of frames) {
    // Named frames of our own files only: not the plumbing, not libraries or Node, not `Array.map (<anonymous>)`.
    if (!frame || frame.plumbing || !/[\\/]/.test(frame.file)) continue;
    if (frame.file.includes('node_modules') || frame.file.startsWith('node:')) continue;
    // An inline closure (an arrow handed to the caches) is not the read: the function above it is.
    if (frame.name === '<anonymous>') continue;
    // `Class.method` keeps the method: `RollupRefresher.run` → `run` would be ambiguous, keep both.
    return frame.name.replace(/^Object\./, '');
  }
  return 'other';
}

/** The read label of a statement (computed on first sight, synchronously, while its caller is on the stack). */
export function readNameOf(sql: string): string {
  const known = readNames.get(sql);
  if (known !== undefined) return known;
  const name = readNames.size >= MAX_READ_NAMES ? 'other' : nameFromStack();
  readNames.set(sql, name);
  return name;
}

/** The same store, each query timed into trader_analytics_store_query_duration_seconds{read,outcome}. */
export function instrumentStore(store: Store): Store {
  return Object.freeze({
    ...store,
    database: store.database,
    kind: store.kind,
    query<Row>(
      sql: string,
      params?: Parameters<Store['query']>[1],
      options?: Parameters<Store['query']>[2],
    ): Promise<Row[]> {
      const read = readNameOf(sql);
      const end = storeQueryDuration.startTimer({ read });
      return store.query<Row>(sql, params, options).then(
        (rows) => {
          end({ outcome: 'ok' });
          return rows;
        },
        (error: unknown) => {
          end({ outcome: error instanceof QueryTimeoutError ? 'timeout' : 'error' });
          throw error;
        },
      );
    },
  });
}
