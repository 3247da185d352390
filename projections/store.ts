/**
 * The ClickHouse store: embedded chDB by default, a ClickHouse server when a URL is configured. Both
 * speak the same SQL through `@clickhouse/client`; chDB plugs in as the client's connection.
 *
 * Every statement names its tables as `{db:Identifier}.table`; the store binds `db` to its database, so
 * one embedded engine can hold many databases (tests give each test its own).
 *
 * Lanes: reads (`query`) run on a pool of their own, apart from ingest inserts and from commands
 * (DDL, rollup refreshes), so a read never waits behind a write or a refresh. Embedded, each lane is
 * its own chDB session on the one data directory (sessions run in parallel inside the engine), and the
 * reads' pool holds `readPoolSize` sessions, a read going to the one with the fewest in flight. On chDB
 * every value is written into the statement by the client's formatter (projections/sql-values.ts):
 * chDB's binding serializes every statement with bound parameters through one process-wide queue.
 * Against a server, parameters stay bound and each lane is its own HTTP client (its own sockets).
 */
import { availableParallelism } from 'node:os';
import { Readable } from 'node:stream';
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import { assertDataDirectoryFree, explainOpenFailure } from './embedded-lock.ts';
import { inlineParams } from './sql-values.ts';

export interface StoreOptions {
  /** ClickHouse server URL; absent means embedded chDB at `embeddedPath`. */
  url?: string | undefined;
  user?: string | undefined;
  password?: string | undefined;
  database: string;
  /** A ClickHouse cluster (the migrations' cluster variant): inserts into Distributed tables then wait for the shards. */
  cluster?: string | null | undefined;
  embeddedPath: string;
  queryTimeoutSeconds: number;
  /**
   * Reads in parallel: chDB sessions of the read pool (embedded), or open sockets of the read client
   * (server). Absent: the cores of this machine, at least 2 and at most 4 (embedded), 16 (server).
   */
  readPoolSize?: number | undefined;
  /** max_threads of one read. Absent: 1 on the embedded store (see acquireEmbedded), the server's own setting. */
  readMaxThreads?: number | undefined;
  /**
   * Niceness (os_thread_priority) of the ingest and command lanes' query threads: with the cores busy,
   * the kernel runs reads first, so a burst of inserts or a rollup refresh delays reads less. Absent:
   * 10 embedded (one machine's cores for both), 0 against a server.
   */
  writeNice?: number | undefined;
  /**
   * Threads of libuv's pool in this process (UV_THREADPOOL_SIZE, as the process started: libuv reads it
   * once). Absent: libuv's default, 4. Only checked (embeddedThreadPoolShortfall), never changed here.
   */
  threadPoolSize?: number | undefined;
}

export type QueryParams = Record<string, unknown>;

export interface QueryOptions {
  timeoutSeconds?: number | undefined;
  /**
   * A read of ingest's own (staged keys to count, a resolution's holders, an archive's cursor): it runs
   * on the command lane, niced like the writes (`writeNice`), never on the read pool. The
   * pool's sessions are the API's: on the embedded store a worker's count there left the API one
   * session, and the calls queued behind it were refused (bench:api --trace-refusals).
   */
  background?: boolean | undefined;
}

/** The options of a read of ingest's own (QueryOptions.background): beside its writes, never on the API's read sessions. */
export const BACKGROUND_READ: Readonly<QueryOptions> = Object.freeze({ background: true });

/** Liveness of a store: a trivial query answers. */
export async function storeAnswers(store: Store): Promise<boolean> {
  try {
    await store.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

/** A read ran longer than its guard (the API answers 504 query_timeout). */
export class QueryTimeoutError extends Error {
  constructor(readonly timeoutSeconds: number) {
    super(`query exceeded ${timeoutSeconds} s`);
    this.name = 'QueryTimeoutError';
  }
}

/** The same store, every read guarded by `timeoutSeconds` (readers of the API use this one). */
export function withQueryTimeout(store: Store, timeoutSeconds: number): Store {
  return Object.freeze({
    ...store,
    database: store.database,
    kind: store.kind,
    query: <Row>(sql: string, params?: QueryParams, options?: QueryOptions) =>
      store.query<Row>(sql, params, { timeoutSeconds: options?.timeoutSeconds ?? timeoutSeconds }),
  });
}

export interface Store {
  readonly database: string;
  readonly kind: 'embedded' | 'server';
  /** Runs a SELECT and returns its rows (JSONEachRow). With a timeout, an overrun is a QueryTimeoutError. */
  query<Row>(sql: string, params?: QueryParams, options?: QueryOptions): Promise<Row[]>;
  /** Runs a statement that returns no rows (DDL, INSERT … SELECT). */
  command(sql: string, params?: QueryParams): Promise<void>;
  /**
   * Inserts rows into one table of this database as one block. With a deduplication token, a repeat of
   * the same token within the table's deduplication window is a no-op (and so are the views fed by it).
   */
  insert(table: string, rows: readonly Record<string, unknown>[], deduplicationToken?: string): Promise<void>;
  /** The same, for rows already serialized as JSON lines (the ingest worker serializes while it decodes). */
  insertJsonLines(table: string, lines: readonly string[], deduplicationToken?: string): Promise<void>;
  /** Creates the database if it is missing. */
  ensureDatabase(): Promise<void>;
  close(): Promise<void>;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Tokens are built from topic names and offsets; anything else is refused rather than quoted. */
const DEDUPLICATION_TOKEN = /^[A-Za-z0-9._:,|-]{1,512}$/;

/** Settings every connection carries: counts come back as JSON numbers, not quoted strings. */
const SESSION_SETTINGS = { output_format_json_quote_64bit_integers: 0 } as const;

/** The connections of one embedded engine or one server: a read pool, the ingest lane, the command lane. */
interface Lanes {
  reads: ClickHouseClient[];
  /** Queries in flight on each read client (same index). */
  inFlight: number[];
  ingest: ClickHouseClient;
  commands: ClickHouseClient;
}

interface SharedEngine {
  /** Opening (sessions get their settings) or open; concurrent openers of one path share it. */
  lanes: Promise<Lanes>;
  users: number;
}

/**
 * The default read pool: one session more than the cores of this machine within [2, 4] (embedded: as many
 * as the API's default calls in flight on up to 4 cores, so that no call's statement waits for a session
 * another call holds), or 16 sockets (server).
 */
function defaultReadPoolSize(kind: 'embedded' | 'server'): number {
  return kind === 'server' ? 16 : Math.min(4, Math.max(2, availableParallelism())) + 1;
}

/** chDB binds one data directory per process; all stores on that path share one engine (and its lanes). */
const embeddedEngines = new Map<string, SharedEngine>();
let embeddedPathInUse: string | undefined;
/** Whether this process mapped the embedded engine: from then on its native exit handlers run at exit. */
let embeddedEngineLoaded = false;

/**
 * Ends the process at once with `code`, for the exits that do not wait for the store to close (a fatal
 * start, a drain past its grace, a second signal). Once the embedded engine is loaded, a plain exit runs
 * its native exit handlers, which wait on the engine's own threads (a merge, the statement of the failed
 * start) and can block for good or crash: such a process leaves by SIGKILL instead, so its status is a
 * kill, never a hang. Nothing committed is lost by it: the engine's parts are on disk when an insert
 * returns, as the crash tests show (test/embedded-crash, test/ingest-crash). The first process of a
 * container (PID 1 without an init) cannot be killed from inside it: there the plain exit runs, and the
 * image's embedded default is run with `--init` (deploy/Dockerfile).
 */
export function exitAtOnce(code: number): never {
  if (embeddedEngineLoaded) process.kill(process.pid, 'SIGKILL');
  process.exit(code);
}

/** The embedded default of `writeNice`: reads before writes when they compete for this machine's cores. */
const EMBEDDED_WRITE_NICE = 10;

/** The read pool's sessions as openStore sizes them: the configured count, or the default for the store's kind. */
export function readPoolSizeOf(options: Pick<StoreOptions, 'url' | 'readPoolSize'>): number {
  return Math.max(1, Math.trunc(options.readPoolSize ?? defaultReadPoolSize(options.url ? 'server' : 'embedded')));
}

/** libuv's thread pool when UV_THREADPOOL_SIZE is not set. */
export const LIBUV_DEFAULT_THREAD_POOL_SIZE = 4;
/** Threads of that pool kept for Node's own work beside the store (file system, DNS lookups, zlib, crypto). */
const THREAD_POOL_RESERVE = 4;
/** What the launchers set UV_THREADPOOL_SIZE to (package.json, the Dockerfile, test/harness/child.ts): the largest embedded need, 4 + 1 + 2 + 4 = 11, and room. */
export const LAUNCHER_THREAD_POOL_SIZE = 16;

/**
 * Each chDB call runs on one thread of libuv's pool for its whole length (chdb's native binding is an
 * N-API AsyncWorker), and that pool has 4 threads unless UV_THREADPOOL_SIZE says otherwise when the
 * process starts. The embedded store keeps its read sessions, the ingest lane and the command lane busy
 * at once, so with 3 read sessions a read can wait for a thread while an insert and a refresh run beside
 * two other reads: a queue in front of the sessions, which the lanes exist to avoid. A thread for every
 * session, and some to spare, lets a short statement pass long ones, raises the read pool's ceiling and
 * what an overloaded instance serves; point reads beside busy lanes do not change, as they wait for the
 * cores, not for a thread (test/bench/RESULTS.md: libuv's thread pool). Returns
 * what this process lacks, or undefined when it has enough (or reads a server: its client does not
 * use the pool).
 */
export function embeddedThreadPoolShortfall(
  options: Pick<StoreOptions, 'url' | 'readPoolSize' | 'threadPoolSize'>,
): { threads: number; needed: number } | undefined {
  if (options.url) return undefined;
  const threads = options.threadPoolSize ?? LIBUV_DEFAULT_THREAD_POOL_SIZE;
  // The read sessions, the ingest lane and the command lane, each with one native call in flight, and Node's own.
  const needed = readPoolSizeOf(options) + 2 + THREAD_POOL_RESERVE;
  return threads < needed ? { threads, needed } : undefined;
}

async function acquireEmbedded(
  path: string,
  readPoolSize: number,
  readMaxThreads: number,
  writeNice: number,
): Promise<Lanes> {
  const existing = embeddedEngines.get(path);
  if (existing) {
    existing.users += 1;
    return existing.lanes;
  }
  if (embeddedPathInUse !== undefined && embeddedPathInUse !== path) {
    throw new Error(
      `embedded ClickHouse is already open at ${embeddedPathInUse}; one process can open one chDB data directory (asked for ${path})`,
    );
  }
  const lanes = openEmbeddedLanes(path, readPoolSize, readMaxThreads, writeNice);
  embeddedEngines.set(path, { lanes, users: 1 });
  embeddedPathInUse = path;
  try {
    return await lanes;
  } catch (error) {
    // The path stays bound: a session may have opened the engine on it before the failure.
    embeddedEngines.delete(path);
    throw explainOpenFailure(path, error);
  }
}

async function openEmbeddedLanes(
  path: string,
  readPoolSize: number,
  readMaxThreads: number,
  writeNice: number,
): Promise<Lanes> {
  // Another process's directory: said in one error, before the engine prints its own for every session.
  await assertDataDirectoryFree(path);
  // Loaded on demand: a process that talks to a ClickHouse server never maps the embedded engine.
  embeddedEngineLoaded = true;
  const { createChdbConnection } = await import('chdb/connection');
  // Each call is its own chDB session (native connection) on the same data directory.
  // The settings are SET once on the session, where they stay: chDB's connection turns a client's
  // `clickhouse_settings` into SET statements before every query (three statements for one read).
  const session = async (settings: ClickHouseSettings = SESSION_SETTINGS) => {
    const client = createClient({
      // chdb types its connection against its own copy of @clickhouse/client-common; the runtime
      // interface is the client's own (chdb re-exports it verbatim), only the declaration files differ.
      connection: createChdbConnection({ path }) as unknown as NonNullable<
        Parameters<typeof createClient>[0]
      >['connection'],
    });
    for (const [name, value] of Object.entries(settings))
      await client.command({ query: `SET ${name} = ${Number(value)}` });
    return client;
  };
  const reads = await Promise.all(
    Array.from({ length: readPoolSize }, () => session({ ...SESSION_SETTINGS, max_threads: readMaxThreads })),
  );
  // ClickHouse renices a query's threads for its duration and back after (os_thread_priority).
  const writes = { ...SESSION_SETTINGS, os_thread_priority: String(writeNice) };
  return { reads, inFlight: reads.map(() => 0), ingest: await session(writes), commands: await session(writes) };
}

async function closeLanes(lanes: Lanes): Promise<void> {
  await Promise.all([...lanes.reads, lanes.ingest, lanes.commands].map((client) => client.close()));
}

async function releaseEmbedded(path: string): Promise<void> {
  const engine = embeddedEngines.get(path);
  if (!engine) return;
  engine.users -= 1;
  if (engine.users > 0) return;
  embeddedEngines.delete(path);
  await closeLanes(await engine.lanes);
  // The native engine cannot be reopened on another path in the same process; keep the binding.
}

function serverLanes(options: StoreOptions, readPoolSize: number): Lanes {
  const client = (maxOpenConnections: number, extra: ClickHouseSettings = {}) =>
    createClient({
      url: options.url,
      username: options.user ?? 'default',
      password: options.password ?? '',
      // On a cluster an insert is acknowledged once the shards have it (not when queued on this node):
      // offsets are committed after it, and its deduplication token reaches the shards with it.
      clickhouse_settings: {
        ...SESSION_SETTINGS,
        ...(options.cluster ? { insert_distributed_sync: 1 } : {}),
        ...extra,
      },
      request_timeout: Math.max(30_000, options.queryTimeoutSeconds * 2000),
      max_open_connections: maxOpenConnections,
    });
  // One client holds all the read sockets: the server runs the queries in parallel.
  const reads = client(
    readPoolSize,
    options.readMaxThreads === undefined ? {} : { max_threads: options.readMaxThreads },
  );
  const writes = options.writeNice ? { os_thread_priority: String(options.writeNice) } : {};
  return { reads: [reads], inFlight: [0], ingest: client(4, writes), commands: client(4, writes) };
}

/** The read client with the fewest queries in flight (never a queue: every read starts at once). */
function pickRead(lanes: Lanes): number {
  let best = 0;
  for (let index = 1; index < lanes.reads.length; index++) {
    if (lanes.inFlight[index]! < lanes.inFlight[best]!) best = index;
  }
  return best;
}

export async function openStore(options: StoreOptions): Promise<Store> {
  if (!IDENTIFIER.test(options.database)) {
    throw new Error(`database name ${JSON.stringify(options.database)} is not a plain identifier`);
  }
  const kind = options.url ? 'server' : 'embedded';
  const readPoolSize = readPoolSizeOf(options);
  const lanes = options.url
    ? serverLanes(options, readPoolSize)
    : await acquireEmbedded(
        options.embeddedPath,
        readPoolSize,
        options.readMaxThreads ?? 1,
        options.writeNice ?? EMBEDDED_WRITE_NICE,
      );
  const database = options.database;
  const bind = (params: QueryParams | undefined): QueryParams => ({ ...params, db: database });
  /**
   * A statement as this store sends it: on a server, the template and its bound parameters; embedded,
   * the values written into the statement (sql-values.ts), so that chDB never queues it.
   */
  const statement = (sql: string, params: QueryParams | undefined): { query: string; query_params?: QueryParams } =>
    kind === 'server' ? { query: sql, query_params: bind(params) } : { query: inlineParams(sql, bind(params)) };
  let closed = false;

  async function insertJsonLines(table: string, lines: readonly string[], deduplicationToken?: string): Promise<void> {
    if (lines.length === 0) return;
    if (!IDENTIFIER.test(table)) throw new Error(`table name ${JSON.stringify(table)} is not a plain identifier`);
    let settings = '';
    if (deduplicationToken !== undefined) {
      if (!DEDUPLICATION_TOKEN.test(deduplicationToken)) {
        throw new Error(
          `deduplication token ${JSON.stringify(deduplicationToken)} has characters outside [A-Za-z0-9._:,|-]`,
        );
      }
      // Settings go into the statement itself: chDB applies per-query settings as session-wide SETs,
      // which would leak a token into the next insert.
      settings = ` SETTINGS insert_deduplication_token = '${deduplicationToken}', deduplicate_blocks_in_dependent_materialized_views = 1`;
    }
    const body = lines.join('\n');
    const result = await lanes.ingest.exec({
      query: `INSERT INTO \`${database}\`.\`${table}\`${settings} FORMAT JSONEachRow`,
      values: Readable.from([body]),
    });
    result.stream.destroy();
  }

  /** Runs a read on the pool's least busy client. */
  async function read<Row>(
    sql: string,
    params: QueryParams | undefined,
    extra: { abort_signal?: AbortSignal; clickhouse_settings?: ClickHouseSettings },
  ): Promise<Row[]> {
    const index = pickRead(lanes);
    lanes.inFlight[index]! += 1;
    try {
      const result = await lanes.reads[index]!.query({ ...statement(sql, params), format: 'JSONEachRow', ...extra });
      return await result.json<Row>();
    } finally {
      lanes.inFlight[index]! -= 1;
    }
  }

  return {
    database,
    kind,
    async query<Row>(sql: string, params?: QueryParams, options?: QueryOptions): Promise<Row[]> {
      if (options?.background) {
        const result = await lanes.commands.query({ ...statement(sql, params), format: 'JSONEachRow' });
        return await result.json<Row>();
      }
      const timeoutSeconds = options?.timeoutSeconds;
      if (timeoutSeconds === undefined) return read<Row>(sql, params, {});
      // A server stops the query itself (max_execution_time); the abort and the timer also bound the
      // embedded engine, whose per-query settings would leak into the session.
      const abort = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      const overrun = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          abort.abort();
          reject(new QueryTimeoutError(timeoutSeconds));
        }, timeoutSeconds * 1000);
      });
      try {
        const run = read<Row>(sql, params, {
          abort_signal: abort.signal,
          ...(kind === 'server'
            ? {
                clickhouse_settings: {
                  max_execution_time: Math.ceil(timeoutSeconds),
                  timeout_overflow_mode: 'throw' as const,
                },
              }
            : {}),
        });
        return await Promise.race([run, overrun]);
      } catch (error) {
        if (abort.signal.aborted) throw new QueryTimeoutError(timeoutSeconds);
        if (kind === 'server' && error instanceof Error && /TIMEOUT_EXCEEDED|Timeout exceeded/i.test(error.message))
          throw new QueryTimeoutError(timeoutSeconds);
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
    async command(sql: string, params?: QueryParams): Promise<void> {
      await lanes.commands.command(statement(sql, params));
    },
    insertJsonLines,
    insert(table, rows, deduplicationToken): Promise<void> {
      return insertJsonLines(
        table,
        rows.map((row) => JSON.stringify(row)),
        deduplicationToken,
      );
    },
    async ensureDatabase(): Promise<void> {
      await lanes.commands.command({ query: `CREATE DATABASE IF NOT EXISTS \`${database}\`` });
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      if (kind === 'embedded') await releaseEmbedded(options.embeddedPath);
      else await closeLanes(lanes);
    },
  };
}
