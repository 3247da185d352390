/**
 * The one configuration module. The environment is parsed once, here, by a zod schema; every other
 * module receives the typed, frozen object. Nothing else reads `process.env`.
 *
 * Plans, limits and thresholds are data in this object, so an operator changes them without code.
 */
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { ReadCacheSettings } from './projections/read-cache.ts';

const optionalString = z
  .string()
  .trim()
  .transform((value) => (value === '' ? undefined : value))
  .optional();

const booleanFlag = z
  .enum(['1', '0', 'true', 'false', 'yes', 'no'])
  .transform((value) => value === '1' || value === 'true' || value === 'yes');

/** A database or topic-prefix fragment that is safe to use as a ClickHouse identifier. */
const identifier = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier ([A-Za-z_][A-Za-z0-9_]*)');

const environmentSchema = z.object({
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().default('./data'),
  HOST: z.string().default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** The worker roles (ingest, simulate, the sources) serve /metrics, /healthz and /readyz here (0: any free port). */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),

  /**
   * Slow and idle clients (a connection is a socket and a parser held open): the request line and headers
   * must arrive within HTTP_HEADERS_TIMEOUT_MS, the whole request (body included) within
   * HTTP_REQUEST_TIMEOUT_MS; a keep-alive connection idle between requests closes after
   * HTTP_KEEP_ALIVE_TIMEOUT_MS, and any socket with no traffic either way for HTTP_IDLE_TIMEOUT_MS
   * (above the query timeout: a slow answer is not an idle client). Bodies above HTTP_BODY_LIMIT_BYTES
   * are 413, headers above HTTP_MAX_HEADER_BYTES 431.
   */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  HTTP_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  HTTP_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(256 * 1024),
  HTTP_MAX_HEADER_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024).default(16 * 1024),

  CLICKHOUSE_URL: optionalString,
  CLICKHOUSE_USER: optionalString,
  CLICKHOUSE_PASSWORD: optionalString,
  CLICKHOUSE_DATABASE: identifier.default('trader_analytics'),
  /** A cluster of remote_servers: migrations create Replicated tables with Distributed tables over them, ON CLUSTER. */
  CLICKHOUSE_CLUSTER: optionalString.refine((value) => value === undefined || /^[\w.-]+$/.test(value), 'must be a cluster name'),
  /** Embedded chDB's data directory (default DATA_DIR/clickhouse); one process at a time may hold it. */
  CLICKHOUSE_EMBEDDED_PATH: optionalString,
  /** Guard on every read: seconds before a heavy query is cancelled. */
  CLICKHOUSE_QUERY_TIMEOUT_S: z.coerce.number().positive().default(10),
  /**
   * Reads in parallel, apart from ingest and rollup refreshes: chDB sessions of the read pool (embedded),
   * or open sockets of the read client (server). Absent: the machine's cores within 2..4 (embedded), 16 (server).
   */
  CLICKHOUSE_READ_POOL_SIZE: z.coerce.number().int().min(1).max(64).optional(),
  /**
   * Threads one read may use (ClickHouse's max_threads) on the embedded store's read sessions. Absent: 1
   * embedded (reads are point lookups; two reads on two cores each take one, instead of both spreading over
   * both and slowing each other under load), the server's own setting with CLICKHOUSE_URL.
   */
  CLICKHOUSE_READ_MAX_THREADS: z.coerce.number().int().min(1).max(256).optional(),
  /**
   * Niceness (ClickHouse's os_thread_priority, 0–19) of the threads that run inserts, rollup refreshes and
   * DDL, so that reads get the cores first when ingest keeps them busy. Default 10 on the embedded store
   * (reads and ingest share this machine's cores), 0 against a server. The engine renices only where its
   * process may (CAP_SYS_NICE); elsewhere the setting does nothing. 0 turns it off.
   */
  CLICKHOUSE_WRITE_NICE: z.coerce.number().int().min(0).max(19).optional(),
  /**
   * libuv's thread pool (read by libuv, once, when the process starts; here only to check it): every
   * embedded store call holds one of its threads, so it must cover the read sessions, the ingest and
   * command lanes and Node's own work (projections/store.ts, embeddedThreadPoolShortfall). Absent:
   * libuv's default, 4, which is too few for the embedded store; the launchers set 16.
   */
  UV_THREADPOOL_SIZE: z.coerce.number().int().min(1).max(1024).optional(),

  KAFKA_BROKERS: optionalString,
  KAFKA_CLIENT_ID: z.string().default('trader-analytics'),
  KAFKA_GROUP_ID: z.string().default('trader-analytics-ingest'),
  /** Prepended to every topic name; lets several deployments (or tests) share one cluster. */
  KAFKA_TOPIC_PREFIX: z.string().regex(/^[A-Za-z0-9._-]*$/).default(''),

  REDIS_URL: optionalString,
  /** Prepended to every Redis key of the gates; lets several deployments (or tests) share one Redis. */
  REDIS_KEY_PREFIX: z.string().regex(/^[A-Za-z0-9:._-]{0,64}$/).default('ta:'),
  /** A gate round trip slower than this fails open (the request is served unmetered and logged). */
  REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(10).max(10_000).default(500),
  /**
   * Behind proxies: the comma list of proxy addresses / CIDRs (or loopback, linklocal, uniquelocal) whose
   * X-Forwarded-For is believed. The client address is the right-most hop that is not one of them.
   * Default none: X-Forwarded-For is ignored. `true` (believe anyone) is refused: see trustedProxies.
   */
  API_TRUST_PROXY: z.string().default('').transform(trustedProxies),
  /** too_many_auth_failures: this many failed authentications from one address within the window block it. */
  AUTH_FAILURE_LIMIT: z.coerce.number().int().min(1).default(20),
  AUTH_FAILURE_WINDOW_S: z.coerce.number().int().min(1).default(600),
  AUTH_FAILURE_BLOCK_S: z.coerce.number().int().min(1).default(900),
  /** Heavy reads (raw ticks, tapes) in flight on one API instance, all callers together. */
  HEAVY_READS_PER_INSTANCE: z.coerce.number().int().min(1).default(64),
  /** A heavy-read slot not released within this long (its instance died) frees itself. */
  HEAVY_READ_LEASE_S: z.coerce.number().int().min(1).default(120),

  /**
   * DNS-rebinding protection of the MCP endpoint (/mcp): the host names a request's Host header may
   * carry (ports are ignored), as a comma list (`mcp.example.com,localhost`), or `*` to accept any Host
   * (only behind a proxy that checks Host itself). A request naming another host is refused with 403
   * before authentication. Default: localhost, 127.0.0.1, [::1], plus HOST when HOST names one host
   * (not the wildcard 0.0.0.0 or ::). Behind a trusted proxy (API_TRUST_PROXY) X-Forwarded-Host counts.
   */
  MCP_ALLOWED_HOSTS: z
    .string()
    .trim()
    .transform((value, context): string[] | '*' => {
      if (value === '*') return '*';
      const entries = value.split(',').map((part) => part.trim()).filter(Boolean);
      if (entries.length === 0) context.addIssue({ code: 'custom', message: 'name at least one host, or * for any' });
      const hosts: string[] = [];
      for (const entry of entries) {
        const hostname = hostnameOf(entry);
        if (hostname === null) context.addIssue({ code: 'custom', message: `"${entry}" is not a host name (use names like mcp.example.com, 127.0.0.1 or [::1])` });
        else hosts.push(hostname);
      }
      return hosts;
    })
    .optional(),
  /** The MCP URL as clients reach it (the OAuth audience and protected resource). Default http://localhost:PORT/mcp. */
  MCP_PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** OAuth 2.1 for MCP: the one authorization server whose JWT access tokens are accepted (absent: API keys only). */
  MCP_OAUTH_ISSUER: z.url({ protocol: /^https?$/ }).optional(),
  /** Its signing keys (JWKS). Default: ISSUER/.well-known/jwks.json. */
  MCP_OAUTH_JWKS_URL: z.url({ protocol: /^https?$/ }).optional(),
  MCP_OAUTH_SCOPE: z.string().regex(/^[!#-[\]-~]+$/, 'one scope token').default('analytics:read'),
  MCP_OAUTH_CLOCK_TOLERANCE_S: z.coerce.number().int().min(0).max(300).default(30),

  /**
   * Load shedding, per API instance: at most API_MAX_IN_FLIGHT calls are worked on at once, at most
   * API_QUEUE_DEPTH wait for a slot, and none waits longer than API_QUEUE_WAIT_MS: the excess is refused
   * at once with 503 overloaded (429 busy for a heavy read) + Retry-After, consuming no call. Default in
   * flight: one more than the cores on the embedded store (at least 3: its reads run on this machine's
   * cores, and one more call keeps them busy while another is between statements, in the gates or in
   * serialization), 16 against a ClickHouse server. While overloaded (calls refused within the last few
   * bounds), API_OVERLOADED_IN_FLIGHT (default one fewer, at least one), so that the calls served do not
   * slow each other down. Measured on 2 cores (2026-11-25, bench:api's agent mix at 300 requests/s): 3
   * slots with a read pool of 3 refused 0, 8, 0 and 0, 0, 18 calls in six runs where 2 refused 62, 8, 68,
   * and bench:overload served ~50% more at 5× with the served p99 at 1.08–1.10× the normal p99 (2 slots:
   * 0.92, 1.22 and 1.12× in three runs of the same hour).
   */
  API_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).optional(),
  API_OVERLOADED_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).optional(),
  API_QUEUE_DEPTH: z.coerce.number().int().min(0).max(100_000).default(16),
  API_QUEUE_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(30),
  /** HMAC secret of paging cursors; every API instance of a deployment needs the same one. Absent: random per process. */
  API_CURSOR_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  /** How long a key lookup is cached (a revocation takes effect within this). */
  API_KEY_CACHE_S: z.coerce.number().min(0).max(300).default(10),
  /** `Cache-Control: private, max-age=N` of open markets' summaries, charts and tapes. */
  API_OPEN_MARKET_MAX_AGE_S: z.coerce.number().int().min(0).max(3600).default(5),
  /** In-process read caches (projections/read-cache.ts): a display name by wallet is reused this long. 0: off. */
  READ_CACHE_TRADER_NAME_S: z.coerce.number().min(0).max(3600).default(10),
  READ_CACHE_TRADER_NAME_ENTRIES: z.coerce.number().int().min(1).default(100_000),
  /** With ingest in the process (embedded store), a display name is reused until a row carrying a name for its wallet lands, at most this long. */
  READ_CACHE_TRADER_NAME_WATCHED_S: z.coerce.number().min(0).max(86_400).default(600),
  /** The upstream's latest report (online/offline, heartbeat) is reused this long. 0: off. */
  READ_CACHE_MARKET_NAMES_S: z.coerce.number().min(0).max(3600).default(10),
  READ_CACHE_MARKET_NAMES_ENTRIES: z.coerce.number().int().min(1).default(200_000),
  /** With ingest in the process (embedded store), a market's names are reused until its metadata changes, at most this long. */
  READ_CACHE_MARKET_NAMES_WATCHED_S: z.coerce.number().min(0).max(86_400).default(600),
  READ_CACHE_UPSTREAM_STATE_S: z.coerce.number().min(0).max(60).default(1),
  /** A whale ranking (same request) this much older than its second is served while the current one is computed. 0: off. */
  READ_CACHE_WHALES_S: z.coerce.number().min(0).max(60).default(1),
  /** An open market's summary, chart or tape is reused this long; never longer than API_OPEN_MARKET_MAX_AGE_S. 0: off. */
  READ_CACHE_OPEN_MARKET_S: z.coerce.number().min(0).max(3600).default(1),
  /**
   * An answer about a trader is reused until an ingest write changes that trader's data (embedded store,
   * ingest in the same process), and at most this long; never longer than API_OPEN_MARKET_MAX_AGE_S. 0: off.
   */
  READ_CACHE_TRADER_S: z.coerce.number().min(0).max(3600).default(5),
  /** An answer built from the trader's own rows alone (the upstream profile behind the card) lives this long instead. */
  READ_CACHE_TRADER_OWN_S: z.coerce.number().min(0).max(86_400).default(600),
  /** Memory for cached answers about traders, in MB of JSON. 0: off. */
  READ_CACHE_TRADER_MB: z.coerce.number().min(0).max(65_536).default(64),
  /** Memory for cached market answers (resolved ones are immutable and stay until evicted), in MB of JSON. 0: off. */
  READ_CACHE_MARKET_MB: z.coerce.number().min(0).max(65_536).default(64),
  /** Where the market-tape chart template loads its charting library (uPlot: `uPlot.iife.min.js`, `uPlot.min.css`) from. */
  CHART_SCRIPT_HOST: z.url({ protocol: /^https?$/ }).default('https://cdn.jsdelivr.net/npm/uplot@1.6.32/dist'),

  /** Tapes: a tape with more events than this is not paged (409 tape_too_large → the download). */
  TAPE_EVENTS_MAX: z.coerce.number().int().min(1).default(200_000),
  /** HMAC secret of local download links (every API instance of a deployment needs the same one). Absent: random per process. */
  DOWNLOAD_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Where clients reach this service, for local download links. Default http://localhost:PORT. */
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** An S3-compatible object store for tape downloads (absent: DATA_DIR/downloads, served under /downloads/). */
  S3_BUCKET: optionalString,
  S3_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  S3_REGION: z.string().trim().min(1).default('us-east-1'),
  S3_ACCESS_KEY_ID: optionalString,
  S3_SECRET_ACCESS_KEY: optionalString,
  /** Path-style addressing (MinIO and most S3-compatible stores need it). */
  S3_FORCE_PATH_STYLE: booleanFlag.default(true),
  S3_PREFIX: z.string().regex(/^[A-Za-z0-9._/-]*$/).default('tapes/'),

  /** Upper bound of one partition's fetch; the worker's memory is bounded by these, not by the backlog. */
  INGEST_MAX_BYTES_PER_PARTITION: z.coerce.number().int().positive().default(4 * 1024 * 1024),
  INGEST_MAX_BYTES: z.coerce.number().int().positive().default(16 * 1024 * 1024),
  /** Consumer-group liveness: a member silent this long is removed and its partitions reassigned. */
  KAFKA_SESSION_TIMEOUT_MS: z.coerce.number().int().min(1000).default(30_000),
  KAFKA_HEARTBEAT_INTERVAL_MS: z.coerce.number().int().min(100).default(3_000),
  INGEST_PARTITIONS_CONCURRENTLY: z.coerce.number().int().min(1).max(64).default(4),
  /** How long a fetch waits at the broker for new data (also bounds how soon new data is seen). */
  INGEST_FETCH_MAX_WAIT_MS: z.coerce.number().int().min(10).max(10_000).default(250),
  /** A write (one insert per table, one rollup refresh) gathers up to this many events from all partitions… */
  INGEST_MAX_BATCH_MESSAGES: z.coerce.number().int().positive().default(20_000),
  INGEST_MAX_BATCH_BYTES: z.coerce.number().int().positive().default(16 * 1024 * 1024),
  /**
   * …or waits at most this long after the first one (the freshness cost of batching). Live traffic is a
   * trickle of small writes, and a write costs the store about the same whatever its size (an insert of
   * 3 fills with its views measured 10–18 ms of CPU on the embedded store, 40–60 where creating files is
   * slow: a part per table and view), so a second's worth goes in one write rather than five, and the
   * reads served alongside keep their cores.
   */
  INGEST_LINGER_MS: z.coerce.number().int().min(0).default(1_000),
  /** …unless it already holds this many: then it is written as soon as the previous write is done. */
  INGEST_EAGER_BATCH_MESSAGES: z.coerce.number().int().positive().default(5_000),
  /**
   * Rollups (trader_markets, careers, whale accumulations, change-only tapes) are recomputed for many
   * writes at once, at most this often (longer when refreshes are costly). A refresh has a fixed cost
   * (~50 ms for trader_markets, ~30 for whales, 100+ for the tapes, however few keys), so under live
   * traffic it runs every two seconds for everything since, not after every write.
   */
  INGEST_ROLLUP_INTERVAL_MS: z.coerce.number().int().min(0).default(2_000),
  /** A staged rollup batch not done after this long belonged to a stopped worker; any worker redoes it. */
  INGEST_ROLLUP_ORPHAN_AFTER_S: z.coerce.number().int().min(1).default(60),
  /** Bounded retries of a failing ClickHouse write before the worker gives up the batch (and restarts it). */
  INGEST_WRITE_RETRIES: z.coerce.number().int().min(0).max(20).default(5),
  INGEST_RETRY_BASE_MS: z.coerce.number().int().positive().default(200),
  /** Card statistics cover the V2 exchange era until a v1 backfill is declared done. */
  CARD_INCLUDE_V1: booleanFlag.default(false),

  /** Whale flow: a pause this long ends an accumulation's burst. */
  WHALE_BURST_GAP_S: z.coerce.number().int().positive().default(900),
  /** Whale flow: accumulations are tracked exactly above this many USD; `min_usd` is clamped up to it. */
  WHALE_EXACT_ABOVE_USD: z.coerce.number().positive().default(1000),
  /** The upstream counts as offline when its last heartbeat is older than this. */
  UPSTREAM_STALE_AFTER_S: z.coerce.number().int().positive().default(300),
  /** The upstream poller (role `upstream`): Polymarket's public hosts unless pointed at a mirror or a test server. */
  UPSTREAM_GAMMA_URL: z.url({ protocol: /^https?$/ }).default('https://gamma-api.polymarket.com'),
  UPSTREAM_DATA_URL: z.url({ protocol: /^https?$/ }).default('https://data-api.polymarket.com'),
  UPSTREAM_PNL_URL: z.url({ protocol: /^https?$/ }).default('https://user-pnl-api.polymarket.com'),
  /** Share of each published rate limit the poller may use (0.5: half of Polymarket's per-route limits). */
  UPSTREAM_RATE_FRACTION: z.coerce.number().gt(0).max(0.9).default(0.5),
  UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(50).max(120_000).default(10_000),
  /** Attempts of one request beyond the first (5xx, 429, timeouts, network errors, truncated bodies). */
  UPSTREAM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(4),
  /** This many failed requests in a row open the circuit: the upstream is declared offline for UPSTREAM_BREAKER_OPEN_S. */
  UPSTREAM_BREAKER_FAILURES: z.coerce.number().int().min(1).default(5),
  UPSTREAM_BREAKER_OPEN_S: z.coerce.number().int().min(1).default(30),
  /** Heartbeat period of upstream.status (must stay well under UPSTREAM_STALE_AFTER_S). */
  UPSTREAM_HEARTBEAT_S: z.coerce.number().int().min(1).default(60),
  /** Gamma markets sweep (new and changed markets) period. */
  UPSTREAM_MARKETS_EVERY_S: z.coerce.number().int().min(1).default(300),
  /** Refresh period of one tracked wallet (profile, positions, pnl series, fills). */
  UPSTREAM_WALLET_EVERY_S: z.coerce.number().int().min(1).default(900),
  /** Leaderboard (popular shelf) refresh period. */
  UPSTREAM_LEADERBOARD_EVERY_S: z.coerce.number().int().min(1).default(3600),
  /** Wallets tracked at most (popular shelf, recent archive activity, requested by clients). */
  UPSTREAM_MAX_WALLETS: z.coerce.number().int().min(1).default(2000),
  /** A wallet asked about by a client is tracked this long after its last request. */
  UPSTREAM_REQUEST_TTL_S: z.coerce.number().int().min(60).default(7 * 86_400),
  /**
   * The V1 → V2 exchange cut-over (epoch s): Polymarket's hard move of all trading from the V1 to the V2
   * exchanges, 2026-04-28 11:00-11:15 UTC. Every source dates by it what names no exchange: upstream and
   * imported fills (the data API does not name the exchange) and position legs from every source (a CTF
   * split, merge or redemption has no exchange). A fill read from the chain carries its exchange's era.
   */
  EXCHANGE_V2_START_TS: z.coerce.number().int().min(0).default(1_777_374_900), // = DEFAULT_EXCHANGE_V2_START_TS (ingest/contract/primitives.ts; a test keeps them equal)

  /**
   * The on-chain archive (role `archive`; with it set, `all` runs the archive instead of the simulator): one
   * or more Polygon JSON-RPC endpoints, comma-separated, used in order with failover.
   */
  POLYGON_RPC_URL: z
    .string()
    .trim()
    .transform((value, context): string[] | undefined => {
      const urls = value.split(',').map((part) => part.trim()).filter(Boolean);
      for (const url of urls) if (!/^(https?|wss?):\/\/[^\s]+$/.test(url)) context.addIssue({ code: 'custom', message: `"${url}" is not an http(s) or ws(s) URL` });
      return urls.length === 0 ? undefined : urls;
    })
    .optional(),
  /** Only blocks at least this deep below the head are read (reorg safety); 0 with ARCHIVE_FINALIZED. */
  ARCHIVE_CONFIRMATIONS: z.coerce.number().int().min(0).max(10_000).default(64),
  /** Read up to the node's `finalized` block instead of head − confirmations. */
  ARCHIVE_FINALIZED: booleanFlag.default(false),
  /** First block to read when there is no checkpoint (at or before the first contract's deployment). */
  ARCHIVE_START_BLOCK: z.coerce.number().int().min(0).default(33_000_000),
  /** Stop after this block (a bounded backfill); absent: follow the chain. */
  ARCHIVE_END_BLOCK: z.coerce.number().int().min(0).optional(),
  /** eth_getLogs block ranges: the first size, and the bounds the adaptive size stays within. */
  ARCHIVE_RANGE_INITIAL: z.coerce.number().int().min(1).default(500),
  ARCHIVE_RANGE_MAX: z.coerce.number().int().min(1).default(5_000),
  /** Requests per second to the node, all endpoints together. */
  ARCHIVE_RPS: z.coerce.number().positive().default(10),
  /** Bounded retries of one request (exponential backoff with jitter) before the archive stops with the error. */
  ARCHIVE_RETRIES: z.coerce.number().int().min(0).max(30).default(8),
  ARCHIVE_RETRY_BASE_MS: z.coerce.number().int().min(1).default(500),
  ARCHIVE_RETRY_MAX_MS: z.coerce.number().int().min(1).default(30_000),
  /** One request slower than this is a timeout (and halves the range). */
  ARCHIVE_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** How often the head is polled once the archive has caught up. */
  ARCHIVE_POLL_MS: z.coerce.number().int().min(10).default(2_000),
  /** A fill of a token no market claims waits this long (for a TokenRegistered or a tokens event) before it is dead-lettered. */
  ARCHIVE_UNKNOWN_TOKEN_WAIT_S: z.coerce.number().int().min(0).default(600),
  /** …and at most this many wait at once (the oldest are dead-lettered first). */
  ARCHIVE_PENDING_MAX: z.coerce.number().int().min(0).default(100_000),
  /**
   * Worker threads that ABI-decode the node's logs (the main thread fetches, maps and publishes); 0 decodes on
   * the main thread. Default: the machine's available cores.
   */
  ARCHIVE_DECODE_WORKERS: z.coerce.number().int().min(0).max(64).default(availableParallelism()),
  /** Name of this archive's checkpoint (several archives, e.g. a v1 backfill, on one store). */
  ARCHIVE_SOURCE: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).default('polygon'),
  ARCHIVE_CTF_EXCHANGE: z.string().regex(/^0x[0-9a-fA-F]{40}$/).default('0x4bfb41d5b3570defd03c39a9a4d8de6bd8b8982e'),
  ARCHIVE_NEG_RISK_EXCHANGE: z.string().regex(/^0x[0-9a-fA-F]{40}$/).default('0xc5d563a36ae78145c45a50134d48a1215220f80a'),
  ARCHIVE_CTF_EXCHANGE_V2: z.string().regex(/^0x[0-9a-fA-F]{40}$/).default('0xe111180000d2663c0091e4f400237545b87b996b'),
  ARCHIVE_NEG_RISK_EXCHANGE_V2: z.string().regex(/^0x[0-9a-fA-F]{40}$/).default('0xe2222d279d744050d28e00520010520000310f59'),
  ARCHIVE_CONDITIONAL_TOKENS: z.string().regex(/^0x[0-9a-fA-F]{40}$/).default('0x4d97dcd97ec945f40cf65f87097ace5ea0476045'),
  ARCHIVE_NEG_RISK_ADAPTER: z.string().regex(/^0x[0-9a-fA-F]{40}$/).default('0xd91e80cf2e7be2e162c6513ced06f1dd0da35296'),
  /** Collaterals whose position ids name outcome 0 of a registered token pair: USDC.e, the NegRisk wrapped collateral, pUSD. */
  ARCHIVE_COLLATERALS: z
    .string()
    .default('0x2791bca1f2de4661ed88a30c99a7a9449aa84174,0x3a3bd7bb9528e159577f7c2e685cc81a765002e2,0xc011a7e12a19f7b1f670d46f03b03f3342e82dfb')
    .transform((value, context) => {
      const list = value.split(',').map((part) => part.trim().toLowerCase()).filter(Boolean);
      for (const address of list) if (!/^0x[0-9a-f]{40}$/.test(address)) context.addIssue({ code: 'custom', message: `"${address}" is not an address` });
      return list;
    }),
  /**
   * Other protocol contracts that act for users (the V2 pUSD collateral adapters, current and retired): a leg
   * whose stakeholder is one of them is left out with a counter, never attributed to the contract.
   */
  ARCHIVE_COLLATERAL_ADAPTERS: z
    .string()
    .default('0xada100db00ca00073811820692005400218fce1f,0xada2005600dec949baf300f4c6120000bdb6eaab,0xada100874d00e3331d00f2007a9c336a65009718,0xada200001000ef00d07553cee7006808f895c6f1')
    .transform((value, context) => {
      const list = value.split(',').map((part) => part.trim().toLowerCase()).filter(Boolean);
      for (const address of list) if (!/^0x[0-9a-f]{40}$/.test(address)) context.addIssue({ code: 'custom', message: `"${address}" is not an address` });
      return list;
    }),

  SIM_SEED: z.coerce.number().int().default(20261121),
  SIM_BACKFILL_DAYS: z.coerce.number().min(0).max(60).default(2),
  SIM_LIVE: booleanFlag.default(true),
  /** Scale of the simulated world: number of named traders. */
  SIM_TRADERS: z.coerce.number().int().min(10).max(5000).default(120),
  /** A reproducible world: a new world starts here (epoch seconds) instead of SIM_BACKFILL_DAYS before now. */
  SIM_GENESIS_TS: z.coerce.number().int().positive().optional(),
  /** The simulator publishes nothing at or after this instant (epoch seconds): the world ends there. */
  SIM_STOP_TS: z.coerce.number().int().positive().optional(),
});

/** The provider's services: Gamma (markets), the data API (profiles, positions, fills, leaderboard), user-pnl (equity curves). */
export type UpstreamService = 'gamma' | 'data' | 'pnl';

/** A published rate limit: at most `requests` per `perSeconds` on paths starting with `path` ('' = the whole service). */
export interface UpstreamRouteLimit {
  service: UpstreamService;
  path: string;
  requests: number;
  perSeconds: number;
}

/**
 * Polymarket's published limits (docs.polymarket.com, API reference, Rate Limits). The poller runs each
 * bucket at UPSTREAM_RATE_FRACTION of these. user-pnl-api publishes none: it gets the data API's
 * /positions figure, the most conservative of its siblings.
 */
export const UPSTREAM_PUBLISHED_LIMITS: readonly UpstreamRouteLimit[] = [
  { service: 'gamma', path: '', requests: 4000, perSeconds: 10 },
  { service: 'gamma', path: '/events', requests: 500, perSeconds: 10 },
  { service: 'gamma', path: '/markets', requests: 300, perSeconds: 10 },
  { service: 'data', path: '', requests: 1000, perSeconds: 10 },
  { service: 'data', path: '/trades', requests: 200, perSeconds: 10 },
  { service: 'data', path: '/positions', requests: 150, perSeconds: 10 },
  { service: 'data', path: '/closed-positions', requests: 150, perSeconds: 10 },
  { service: 'pnl', path: '', requests: 150, perSeconds: 10 },
];

export interface UpstreamConfig {
  staleAfterSeconds: number;
  baseUrls: Record<UpstreamService, string>;
  rateFraction: number;
  limits: readonly UpstreamRouteLimit[];
  timeoutMs: number;
  maxRetries: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  breaker: { failures: number; openMs: number };
  heartbeatSeconds: number;
  marketsEverySeconds: number;
  walletEverySeconds: number;
  leaderboardEverySeconds: number;
  /** The popular shelf's source: the data API leaderboard of this window, ordered by this metric, this many rows. */
  leaderboard: { timePeriod: 'DAY' | 'WEEK' | 'MONTH' | 'ALL'; orderBy: 'PNL' | 'VOL'; size: number };
  maxWallets: number;
  requestTtlSeconds: number;
  /** Fills and legs polled with a time before this (epoch s) are of the V1 exchange era (EXCHANGE_V2_START_TS). */
  v2StartTs: number;
  /** Cursors and schedules, so that a restarted poller resumes. */
  stateFile: string;
  /** Redis sorted set (wallet → last request, epoch seconds) the API adds requested wallets to. */
  requestedWalletsKey: string;
}

export type Environment = z.input<typeof environmentSchema>;

/** Every variable the program reads (deployment manifests are checked against it). */
export const ENVIRONMENT_VARIABLES: readonly string[] = Object.keys(environmentSchema.shape);

/**
 * The host name of a Host header value or a configured host, lower-cased, without its port (IPv6 in
 * brackets, as URLs write it); null when it is not one. The same parse the MCP SDK's host validation uses.
 */
export function hostnameOf(host: string): string | null {
  const bracketed = host.includes(':') && !host.startsWith('[') && host.indexOf(':') !== host.lastIndexOf(':') ? `[${host}]` : host;
  try {
    const url = new URL(`http://${bracketed}`);
    return url.username || url.password || url.pathname !== '/' || url.search || url.hash ? null : url.hostname;
  } catch {
    return null;
  }
}

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * API_TRUST_PROXY as the list Fastify's trustProxy takes. `true` or a hop count would believe whatever
 * a client writes into X-Forwarded-For: the address guard (too_many_auth_failures) could then be escaped
 * by rotating the header and turned against any innocent address by forging it. So only proxies named
 * by address are trusted.
 */
function trustedProxies(value: string, context: z.RefinementCtx): string[] {
  const text = value.trim().toLowerCase();
  if (text === '' || text === 'false' || text === 'none') return [];
  if (text === 'true' || /^\d+$/.test(text)) {
    context.addIssue({
      code: 'custom',
      message: `"${value}" would trust X-Forwarded-For from any client, so anyone could spoof their address (escape too_many_auth_failures, or get another address blocked). List your proxies' addresses or CIDRs instead, e.g. API_TRUST_PROXY=10.0.0.0/8 or 127.0.0.1`,
    });
    return [];
  }
  const entries = text.split(',').map((part) => part.trim()).filter(Boolean);
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.has(entry)) continue;
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || rest.length > 0) {
      context.addIssue({ code: 'custom', message: `"${entry}" is not a proxy address or CIDR (e.g. 10.0.0.1, 10.0.0.0/8, 2001:db8::/32, loopback)` });
    }
  }
  return entries;
}

const WILDCARD_ADDRESSES = new Set(['0.0.0.0', '[::]']);
const LOCAL_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

export const PLAN_IDS = ['basic', 'pro', 'max'] as const;
export type PlanId = (typeof PLAN_IDS)[number];

/** The plan above this one (the upgrade a wall's message names), or null at the top of the ladder. */
export function nextPlan(plan: PlanId): PlanId | null {
  return PLAN_IDS[PLAN_IDS.indexOf(plan) + 1] ?? null;
}

/** An early-access founder seat resolves to Pro limits, whatever the plan says (read-api.md, Limits). */
export function effectivePlan(plan: string, founder: boolean): PlanId | null {
  if (!(PLAN_IDS as readonly string[]).includes(plan)) return null;
  return founder ? 'pro' : (plan as PlanId);
}

export interface PlanLimits {
  /** The plan's display name, as `/me` states it. */
  name: 'Basic Intelligence' | 'Pro Intelligence' | 'Max Intelligence';
  rps: number;
  burst: number;
  rpm: number;
  /** 0 when the daily window does not govern. */
  dailyRequests: number;
  /** 0 when the monthly window does not govern. */
  monthlyRequests: number;
  maxKeys: number;
  liveSlots: number;
  /** Most-recent markets visible per trader; -1 means unlimited. */
  historyDepth: number;
  /** Distinct wallets per UTC day; -1 means unlimited. */
  distinctWalletsPerDay: number;
  heavyReadsInFlight: number;
  libraryBytes: number;
}

const PLANS: Readonly<Record<PlanId, PlanLimits>> = {
  basic: {
    name: 'Basic Intelligence',
    rps: 0.5,
    burst: 10,
    rpm: 30,
    dailyRequests: 50,
    monthlyRequests: 0,
    maxKeys: 1,
    liveSlots: 1,
    historyDepth: 5,
    distinctWalletsPerDay: 3,
    heavyReadsInFlight: 2,
    libraryBytes: 200 * 1024 * 1024,
  },
  pro: {
    name: 'Pro Intelligence',
    rps: 5,
    burst: 60,
    rpm: 300,
    dailyRequests: 0,
    monthlyRequests: 50_000,
    maxKeys: 3,
    liveSlots: 3,
    historyDepth: -1,
    distinctWalletsPerDay: -1,
    heavyReadsInFlight: 4,
    libraryBytes: 2 * 1024 * 1024 * 1024,
  },
  max: {
    name: 'Max Intelligence',
    rps: 20,
    burst: 200,
    rpm: 1200,
    dailyRequests: 0,
    monthlyRequests: 300_000,
    maxKeys: 6,
    liveSlots: 5,
    historyDepth: -1,
    distinctWalletsPerDay: -1,
    heavyReadsInFlight: 8,
    libraryBytes: 10 * 1024 * 1024 * 1024,
  },
};

export interface PageLimits {
  defaultLimit: number;
  maxLimit: number;
}

export interface ArchiveConfig {
  rpcUrls: readonly string[];
  source: string;
  confirmations: number;
  finalized: boolean;
  startBlock: number;
  endBlock: number | null;
  /** Position legs before this instant (epoch s) are of the V1 exchange era (EXCHANGE_V2_START_TS); fills carry their exchange's. */
  v2StartTs: number;
  range: { initial: number; max: number };
  requestsPerSecond: number;
  retries: number;
  retryBaseMs: number;
  retryMaxMs: number;
  timeoutMs: number;
  pollMs: number;
  unknownTokenWaitSeconds: number;
  pendingMax: number;
  /** Worker threads decoding logs (0: on the main thread). */
  decodeWorkers: number;
  /** Lower-case addresses. The exchanges' own addresses are never traders. */
  contracts: {
    ctfExchange: `0x${string}`;
    negRiskExchange: `0x${string}`;
    ctfExchangeV2: `0x${string}`;
    negRiskExchangeV2: `0x${string}`;
    conditionalTokens: `0x${string}`;
    negRiskAdapter: `0x${string}`;
  };
  collaterals: readonly `0x${string}`[];
  /** Contracts that act for users (collateral adapters): never stakeholders, never traders. */
  collateralAdapters: readonly `0x${string}`[];
}

/** Load shedding's limits (API_MAX_IN_FLIGHT and the rest), with the defaults of the store in use. */
function inFlightLimits(env: z.infer<typeof environmentSchema>) {
  const cores = availableParallelism();
  const maxInFlight = env.API_MAX_IN_FLIGHT ?? (env.CLICKHOUSE_URL ? 16 : Math.max(2, cores) + 1);
  const overloadedInFlight = Math.min(maxInFlight, env.API_OVERLOADED_IN_FLIGHT ?? Math.max(1, maxInFlight - 1));
  return { maxInFlight, overloadedInFlight, queueDepth: env.API_QUEUE_DEPTH, maxQueueWaitMs: env.API_QUEUE_WAIT_MS };
}

/** Parses an environment into the typed configuration; throws a readable error on invalid input. */
export function parseConfig(environment: Record<string, string | undefined>): Config {
  const parsed = environmentSchema.safeParse(environment);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  const env = parsed.data;
  // Node refuses a headers bound above the request bound; an idle bound below the query bound would
  // cut off clients waiting for a slow (but legitimate) answer.
  if (env.HTTP_HEADERS_TIMEOUT_MS > env.HTTP_REQUEST_TIMEOUT_MS) {
    throw new Error(`invalid configuration: HTTP_HEADERS_TIMEOUT_MS (${env.HTTP_HEADERS_TIMEOUT_MS}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${env.HTTP_REQUEST_TIMEOUT_MS})`);
  }
  if (env.HTTP_IDLE_TIMEOUT_MS <= env.CLICKHOUSE_QUERY_TIMEOUT_S * 1000) {
    throw new Error(`invalid configuration: HTTP_IDLE_TIMEOUT_MS (${env.HTTP_IDLE_TIMEOUT_MS}) must exceed CLICKHOUSE_QUERY_TIMEOUT_S (${env.CLICKHOUSE_QUERY_TIMEOUT_S} s): a client waiting for a slow answer is not idle`);
  }
  return deepFreeze(configOf(env));
}

/** The typed configuration: what `configOf` builds from a parsed environment (one source, no hand-written twin). */
export type Config = ReturnType<typeof configOf>;

/** The mapping from a valid environment to the configuration every module receives. */
function configOf(env: z.output<typeof environmentSchema>) {
  const dataDir = path.resolve(env.DATA_DIR);
  const mcpPublicUrl = env.MCP_PUBLIC_URL ?? `http://localhost:${env.PORT}/mcp`;
  return {
    logLevel: env.LOG_LEVEL,
    dataDir,
    http: {
      host: env.HOST,
      port: env.PORT,
      /** Proxies (addresses, CIDRs) whose X-Forwarded-For is believed; empty: none. */
      trustProxy: env.API_TRUST_PROXY,
      /** Bounds on slow and idle clients (milliseconds, bytes). */
      headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: env.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      idleTimeoutMs: env.HTTP_IDLE_TIMEOUT_MS,
      bodyLimitBytes: env.HTTP_BODY_LIMIT_BYTES,
      maxHeaderBytes: env.HTTP_MAX_HEADER_BYTES,
    },
    metrics: { host: env.HOST, port: env.METRICS_PORT },
    clickhouse: {
      /** Absent: embedded chDB under `dataDir/clickhouse`. */
      url: env.CLICKHOUSE_URL,
      user: env.CLICKHOUSE_USER,
      password: env.CLICKHOUSE_PASSWORD,
      database: env.CLICKHOUSE_DATABASE,
      cluster: env.CLICKHOUSE_CLUSTER ?? null,
      embeddedPath: env.CLICKHOUSE_EMBEDDED_PATH ? path.resolve(env.CLICKHOUSE_EMBEDDED_PATH) : path.join(dataDir, 'clickhouse'),
      queryTimeoutSeconds: env.CLICKHOUSE_QUERY_TIMEOUT_S,
      /** Absent: the store's default for its kind (projections/store.ts). */
      readPoolSize: env.CLICKHOUSE_READ_POOL_SIZE,
      /** Absent: 1 embedded, the server's own setting (projections/store.ts). */
      readMaxThreads: env.CLICKHOUSE_READ_MAX_THREADS,
      /** Absent: 10 embedded, 0 (off) against a server (projections/store.ts). */
      writeNice: env.CLICKHOUSE_WRITE_NICE,
      /** Absent: libuv's default of 4 (projections/store.ts). */
      threadPoolSize: env.UV_THREADPOOL_SIZE,
    },
    kafka: {
      /** Absent: the in-process bus (embedded mode). */
      brokers: env.KAFKA_BROKERS?.split(',').map((broker) => broker.trim()).filter(Boolean),
      clientId: env.KAFKA_CLIENT_ID,
      groupId: env.KAFKA_GROUP_ID,
      topicPrefix: env.KAFKA_TOPIC_PREFIX,
      sessionTimeoutMs: env.KAFKA_SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: env.KAFKA_HEARTBEAT_INTERVAL_MS,
    },
    redis: { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX, commandTimeoutMs: env.REDIS_COMMAND_TIMEOUT_MS },
    /** The four gates and the address guard (read-api.md, Limits; decisions.md). */
    gates: {
      /** The rolling per-minute ceiling's window. */
      rpmWindowSeconds: 60,
      authFailures: { limit: env.AUTH_FAILURE_LIMIT, windowSeconds: env.AUTH_FAILURE_WINDOW_S, blockSeconds: env.AUTH_FAILURE_BLOCK_S },
      heavyReadsPerInstance: env.HEAVY_READS_PER_INSTANCE,
      heavyReadLeaseSeconds: env.HEAVY_READ_LEASE_S,
    },
    api: {
      prefix: '/api/agent/v1' as const,
      /** Null: a random secret per process (cursors then die with the process). */
      cursorSecret: env.API_CURSOR_SECRET ?? null,
      keyCacheSeconds: env.API_KEY_CACHE_S,
      /** Load shedding of this instance (api/gates/in-flight.ts). */
      inFlight: inFlightLimits(env),
      openMarketMaxAgeSeconds: env.API_OPEN_MARKET_MAX_AGE_S,
      /** The read caches of the API's store (projections/read-cache.ts). */
      readCache: {
        traderNameSeconds: env.READ_CACHE_TRADER_NAME_S,
        traderNameEntries: env.READ_CACHE_TRADER_NAME_ENTRIES,
        traderNameWatchedSeconds: env.READ_CACHE_TRADER_NAME_WATCHED_S,
        marketNameSeconds: env.READ_CACHE_MARKET_NAMES_S,
        marketNameEntries: env.READ_CACHE_MARKET_NAMES_ENTRIES,
        marketNameWatchedSeconds: env.READ_CACHE_MARKET_NAMES_WATCHED_S,
        upstreamStateSeconds: env.READ_CACHE_UPSTREAM_STATE_S,
        whaleFlowSeconds: env.READ_CACHE_WHALES_S,
        // An open market's answer may be as old as its Cache-Control allows, never older.
        openMarketSeconds: Math.min(env.READ_CACHE_OPEN_MARKET_S, env.API_OPEN_MARKET_MAX_AGE_S),
        marketAnswerBytes: Math.round(env.READ_CACHE_MARKET_MB * 1024 * 1024),
        // The marks of a trader's open markets may lag as much as an open market's answer may.
        traderAnswerSeconds: Math.min(env.READ_CACHE_TRADER_S, env.API_OPEN_MARKET_MAX_AGE_S),
        traderOwnAnswerSeconds: env.READ_CACHE_TRADER_OWN_S,
        traderAnswerBytes: Math.round(env.READ_CACHE_TRADER_MB * 1024 * 1024),
      } satisfies ReadCacheSettings,
      immutableMaxAgeSeconds: 31_536_000,
      marketsList: { defaultLimit: 200, maxLimit: 1000 },
      fills: { defaultLimit: 500, maxLimit: 2000 },
      topMarkets: { defaultN: 5, minN: 1, maxN: 20 },
      popularLimit: 20,
    },
    ingest: {
      maxBytesPerPartition: env.INGEST_MAX_BYTES_PER_PARTITION,
      maxBytes: env.INGEST_MAX_BYTES,
      partitionsConsumedConcurrently: env.INGEST_PARTITIONS_CONCURRENTLY,
      fetchMaxWaitMs: env.INGEST_FETCH_MAX_WAIT_MS,
      maxBatchMessages: env.INGEST_MAX_BATCH_MESSAGES,
      maxBatchBytes: env.INGEST_MAX_BATCH_BYTES,
      lingerMs: env.INGEST_LINGER_MS,
      eagerBatchMessages: env.INGEST_EAGER_BATCH_MESSAGES,
      rollupIntervalMs: env.INGEST_ROLLUP_INTERVAL_MS,
      rollupOrphanAfterSeconds: env.INGEST_ROLLUP_ORPHAN_AFTER_S,
      writeRetries: env.INGEST_WRITE_RETRIES,
      retryBaseMs: env.INGEST_RETRY_BASE_MS,
    },
    card: { includeV1: env.CARD_INCLUDE_V1 },
    whales: {
      burstGapSeconds: env.WHALE_BURST_GAP_S,
      exactAboveUsd: env.WHALE_EXACT_ABOVE_USD,
      defaultMinUsd: 10_000,
      defaultWindowHours: 24,
      maxWindowHours: 24,
      defaultLimit: 50,
      maxLimit: 500,
    },
    charts: {
      defaultPoints: 300,
      minPoints: 20,
      maxPoints: 600,
      rawTicksDefaultLimit: 1000,
      rawTicksMaxLimit: 10_000,
      /** The market-tape template's library host (no trailing slash). */
      scriptHost: env.CHART_SCRIPT_HOST.replace(/\/+$/, ''),
      /** Zoom slabs baked into a market chart: at most this many points in all. */
      slabPointBudget: 20_000,
    },
    /** The V1 → V2 exchange cut-over (EXCHANGE_V2_START_TS): the era of what names no exchange (the importer's rows, every leg). */
    exchangeV2StartTs: env.EXCHANGE_V2_START_TS,
    upstream: ((): UpstreamConfig => ({
      staleAfterSeconds: env.UPSTREAM_STALE_AFTER_S,
      baseUrls: {
        gamma: env.UPSTREAM_GAMMA_URL.replace(/\/+$/, ''),
        data: env.UPSTREAM_DATA_URL.replace(/\/+$/, ''),
        pnl: env.UPSTREAM_PNL_URL.replace(/\/+$/, ''),
      },
      rateFraction: env.UPSTREAM_RATE_FRACTION,
      limits: UPSTREAM_PUBLISHED_LIMITS,
      timeoutMs: env.UPSTREAM_TIMEOUT_MS,
      maxRetries: env.UPSTREAM_MAX_RETRIES,
      backoffBaseMs: 250,
      backoffMaxMs: 30_000,
      breaker: { failures: env.UPSTREAM_BREAKER_FAILURES, openMs: env.UPSTREAM_BREAKER_OPEN_S * 1000 },
      // At most half the stale window: slower heartbeats would show a healthy provider as offline between two of them.
      heartbeatSeconds: Math.max(1, Math.min(env.UPSTREAM_HEARTBEAT_S, Math.floor(env.UPSTREAM_STALE_AFTER_S / 2))),
      marketsEverySeconds: env.UPSTREAM_MARKETS_EVERY_S,
      walletEverySeconds: env.UPSTREAM_WALLET_EVERY_S,
      leaderboardEverySeconds: env.UPSTREAM_LEADERBOARD_EVERY_S,
      leaderboard: { timePeriod: 'WEEK', orderBy: 'PNL', size: 50 },
      maxWallets: env.UPSTREAM_MAX_WALLETS,
      requestTtlSeconds: env.UPSTREAM_REQUEST_TTL_S,
      v2StartTs: env.EXCHANGE_V2_START_TS,
      stateFile: path.join(dataDir, 'upstream-state.json'),
      requestedWalletsKey: `${env.REDIS_KEY_PREFIX}upstream:requested`,
    }))(),
    /** Recorded sessions (decisions.md, Stream events and tapes; paging table). */
    tapes: {
      list: { maxLimit: 1000 },
      events: { defaultLimit: 500, maxLimit: 5000 },
      /** Above this many events a tape is not paged: 409 tape_too_large. */
      maxEvents: env.TAPE_EVENTS_MAX,
      download: {
        expiresInSeconds: 3600,
        /** Null: a random secret per process (local links then die with the process). */
        secret: env.DOWNLOAD_SECRET ?? null,
        /** Base of local download links. */
        publicUrl: (env.PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ''),
        /** Local objects: DATA_DIR/downloads. */
        directory: path.join(dataDir, 'downloads'),
        s3: env.S3_BUCKET
          ? {
              bucket: env.S3_BUCKET,
              endpoint: env.S3_ENDPOINT,
              region: env.S3_REGION,
              accessKeyId: env.S3_ACCESS_KEY_ID,
              secretAccessKey: env.S3_SECRET_ACCESS_KEY,
              forcePathStyle: env.S3_FORCE_PATH_STYLE,
              prefix: env.S3_PREFIX,
            }
          : null,
      },
    },
    mcp: {
      /** The MCP endpoint on the same server as the REST API. */
      path: '/mcp' as const,
      /** Host names (no ports) a request to the MCP endpoint may name in Host; '*' accepts any. */
      allowedHosts: env.MCP_ALLOWED_HOSTS ?? defaultMcpHosts(env.HOST),
      /** The MCP URL as clients reach it: OAuth's audience and protected resource. */
      publicUrl: mcpPublicUrl,
      /** The scope a token needs (named in every 401 and 403 challenge of /mcp, with or without OAuth on). */
      scope: env.MCP_OAUTH_SCOPE,
      /** OAuth resource server settings; null: API keys only. */
      oauth: env.MCP_OAUTH_ISSUER
        ? {
            issuer: env.MCP_OAUTH_ISSUER,
            jwksUrl: env.MCP_OAUTH_JWKS_URL ?? `${env.MCP_OAUTH_ISSUER.replace(/\/+$/, '')}/.well-known/jwks.json`,
            audience: mcpPublicUrl,
            scope: env.MCP_OAUTH_SCOPE,
            clockToleranceSeconds: env.MCP_OAUTH_CLOCK_TOLERANCE_S,
          }
        : null,
    },
    simulator: {
      seed: env.SIM_SEED,
      backfillDays: env.SIM_BACKFILL_DAYS,
      live: env.SIM_LIVE,
      traders: env.SIM_TRADERS,
      genesisTs: env.SIM_GENESIS_TS,
      stopTs: env.SIM_STOP_TS,
    },
    archive: (env.POLYGON_RPC_URL
      ? {
          rpcUrls: env.POLYGON_RPC_URL,
          source: env.ARCHIVE_SOURCE,
          confirmations: env.ARCHIVE_CONFIRMATIONS,
          finalized: env.ARCHIVE_FINALIZED,
          startBlock: env.ARCHIVE_START_BLOCK,
          endBlock: env.ARCHIVE_END_BLOCK ?? null,
          v2StartTs: env.EXCHANGE_V2_START_TS,
          range: { initial: Math.min(env.ARCHIVE_RANGE_INITIAL, env.ARCHIVE_RANGE_MAX), max: env.ARCHIVE_RANGE_MAX },
          requestsPerSecond: env.ARCHIVE_RPS,
          retries: env.ARCHIVE_RETRIES,
          retryBaseMs: env.ARCHIVE_RETRY_BASE_MS,
          retryMaxMs: env.ARCHIVE_RETRY_MAX_MS,
          timeoutMs: env.ARCHIVE_TIMEOUT_MS,
          pollMs: env.ARCHIVE_POLL_MS,
          unknownTokenWaitSeconds: env.ARCHIVE_UNKNOWN_TOKEN_WAIT_S,
          pendingMax: env.ARCHIVE_PENDING_MAX,
          decodeWorkers: env.ARCHIVE_DECODE_WORKERS,
          contracts: {
            ctfExchange: env.ARCHIVE_CTF_EXCHANGE.toLowerCase() as `0x${string}`,
            negRiskExchange: env.ARCHIVE_NEG_RISK_EXCHANGE.toLowerCase() as `0x${string}`,
            ctfExchangeV2: env.ARCHIVE_CTF_EXCHANGE_V2.toLowerCase() as `0x${string}`,
            negRiskExchangeV2: env.ARCHIVE_NEG_RISK_EXCHANGE_V2.toLowerCase() as `0x${string}`,
            conditionalTokens: env.ARCHIVE_CONDITIONAL_TOKENS.toLowerCase() as `0x${string}`,
            negRiskAdapter: env.ARCHIVE_NEG_RISK_ADAPTER.toLowerCase() as `0x${string}`,
          },
          collaterals: env.ARCHIVE_COLLATERALS as `0x${string}`[],
          collateralAdapters: env.ARCHIVE_COLLATERAL_ADAPTERS as `0x${string}`[],
        }
      : null) as ArchiveConfig | null,
    plans: PLANS,
  };
}

/** localhost in its three spellings, plus HOST when it names one host rather than every interface. */
function defaultMcpHosts(host: string): string[] {
  const own = hostnameOf(host);
  return own === null || WILDCARD_ADDRESSES.has(own) || LOCAL_HOSTS.includes(own) ? [...LOCAL_HOSTS] : [...LOCAL_HOSTS, own];
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value as Record<string, unknown>)) deepFreeze(inner);
  }
  return value;
}

let loaded: Config | undefined;

/** The process configuration, parsed from `process.env` on first use. */
export function loadConfig(): Config {
  loaded ??= parseConfig(process.env);
  return loaded;
}
