/**
 * The environment: what a deployment sets, as one zod schema. Each variable's `.describe()` is its
 * documentation (`npm run docs` writes docs/configuration.md from it, through config-docs.ts). Only
 * config.ts parses it; config-derived.ts maps the parsed values to the configuration.
 */
import { z } from 'zod';
import { parseTrustedProxies } from './trusted-proxies.ts';

const optionalString = z
  .string()
  .trim()
  .transform((value) => (value === '' ? undefined : value))
  .optional();

const booleanFlag = z
  .enum(['1', '0', 'true', 'false', 'yes', 'no'])
  .transform((value) => value === '1' || value === 'true' || value === 'yes');

/** An integer variable within [min, max]. */
const integer = (min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max);
const httpUrl = z.url({ protocol: /^https?$/ });
const secret = z.string().min(16, 'must be at least 16 characters').optional();
/** A comma list: its trimmed, non-empty entries. */
const listOf = (value: string) =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);

/** A database or topic-prefix fragment that is safe to use as a ClickHouse identifier. */
const identifier = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier ([A-Za-z_][A-Za-z0-9_]*)');

/**
 * The host name of a Host header value or a configured host, lower-cased, without its port (IPv6 in
 * brackets, as URLs write it); null when it is not one. The same parse the MCP SDK's host validation uses.
 */
export function hostnameOf(host: string): string | null {
  const bracketed =
    host.includes(':') && !host.startsWith('[') && host.indexOf(':') !== host.lastIndexOf(':') ? `[${host}]` : host;
  try {
    const url = new URL(`http://${bracketed}`);
    return url.username || url.password || url.pathname !== '/' || url.search || url.hash ? null : url.hostname;
  } catch {
    return null;
  }
}

const serviceVariables = {
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Lowest level of the JSON log on stdout (`debug` shows every batch and commit).'),
  DATA_DIR: z
    .string()
    .default('./data')
    .describe(
      'State of this process: the embedded ClickHouse, the in-process log, cursors, local downloads. One process at a time holds it.',
    ),
  HOST: z
    .string()
    .default('0.0.0.0')
    .describe('Address the HTTP servers listen on; `127.0.0.1` keeps them off the network.'),
  PORT: integer(0, 65535).default(8080).describe('Port of the REST API and the MCP endpoint (0: any free port).'),
  METRICS_PORT: integer(0, 65535)
    .default(9464)
    .describe(
      'Worker roles (ingest, simulate, archive, upstream) serve /metrics, /healthz and /readyz here; one per process on a host (0: any).',
    ),
  PUBLIC_URL: httpUrl
    .optional()
    .describe(
      'Where clients reach this service: the base of download links and of `PUBLIC_URL/mcp`, the OAuth audience. Default `http://localhost:PORT`.',
    ),
  UV_THREADPOOL_SIZE: integer(1, 1024)
    .optional()
    .describe(
      "libuv's thread pool (read by Node at start, checked here): the embedded store needs one thread per call in flight. The launchers set 16.",
    ),
};

const clickhouseVariables = {
  CLICKHOUSE_URL: optionalString.describe(
    'A ClickHouse server (`http://clickhouse:8123`). Absent: the embedded store (chDB) in `DATA_DIR/clickhouse`.',
  ),
  CLICKHOUSE_USER: optionalString.describe("The server's user (absent: `default`)."),
  CLICKHOUSE_PASSWORD: optionalString.describe("That user's password (keep it in a secret)."),
  CLICKHOUSE_DATABASE: identifier
    .default('trader_analytics')
    .describe('Database of the projections; deployments (or tests) can share a server with their own.'),
  CLICKHOUSE_CLUSTER: optionalString
    .refine((value) => value === undefined || /^[\w.-]+$/.test(value), 'must be a cluster name')
    .describe(
      'A cluster of `remote_servers`: migrations create Replicated tables and Distributed tables over them, ON CLUSTER.',
    ),
  CLICKHOUSE_QUERY_TIMEOUT_S: z.coerce
    .number()
    .positive()
    .default(10)
    .describe('Seconds before a read is cancelled; below the 60 s after which an idle connection closes.'),
  CLICKHOUSE_READ_POOL_SIZE: integer(1, 64)
    .optional()
    .describe(
      'Reads in parallel (chDB sessions, or server sockets). Default: the cores within 2..4 embedded, 16 against a server.',
    ),
};

const kafkaVariables = {
  KAFKA_BROKERS: optionalString.describe(
    'Comma list of Kafka bootstrap brokers. Absent: the in-process log (the `all` role alone).',
  ),
  KAFKA_GROUP_ID: z
    .string()
    .default('trader-analytics-ingest')
    .describe(
      'Consumer group of the ingest workers: N `ingest` processes in one group share the partitions. Ingest resumes at its offsets.',
    ),
  KAFKA_TOPIC_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]*$/)
    .default('')
    .describe('Prepended to every topic name; deployments (or tests) can share one cluster.'),
  INGEST_LINGER_MS: integer(0)
    .default(1_000)
    .describe(
      'A write waits at most this long after its first event for more. Lower: fresher answers, more store CPU per event.',
    ),
};

const redisVariables = {
  REDIS_URL: optionalString.describe(
    'Redis for the gates, shared by every API instance. Absent: process memory (one instance only).',
  ),
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:._-]{0,64}$/)
    .default('ta:')
    .describe('Prepended to every Redis key; deployments (or tests) can share one Redis.'),
};

const apiVariables = {
  API_TRUST_PROXY: z
    .string()
    .default('')
    .transform((value, context) => {
      const { proxies, problems } = parseTrustedProxies(value);
      for (const message of problems) context.addIssue({ code: 'custom', message });
      return proxies;
    })
    .describe(
      'Proxy addresses or CIDRs (or `loopback`, `linklocal`, `uniquelocal`) whose X-Forwarded-For is believed. Refused: `true`, a hop count, ranges that together hold every IPv4 or IPv6 address (`0.0.0.0/0`, or `0.0.0.0/1,128.0.0.0/1`), and more public addresses side by side than a /12 (IPv4) or a /28 (IPv6); private ranges may be any width.',
    ),
  AUTH_FAILURE_LIMIT: integer(1)
    .default(20)
    .describe(
      'Failed authentications from one address within 10 minutes that block it for 15 (`429 too_many_auth_failures`).',
    ),
  HEAVY_READS_PER_INSTANCE: integer(1)
    .default(64)
    .describe('Heavy reads (raw ticks, tapes) in flight on one API instance, all callers together.'),
  API_MAX_IN_FLIGHT: integer(1, 10_000)
    .optional()
    .describe(
      "The most calls one API instance lets read the store at once: the ceiling of a limit measured from the calls' latency; the excess waits briefly, then gets `503 overloaded`. Default: 4 × (cores + 1, at least 3) embedded, 64 with a server.",
    ),
  API_CURSOR_SECRET: secret.describe(
    'HMAC secret of paging cursors, the same on every API instance. Absent: random per process.',
  ),
  API_OPEN_MARKET_MAX_AGE_S: integer(0, 3600)
    .default(5)
    .describe(
      "`Cache-Control` max-age of open markets' answers, and the longest a cached answer about an open market is reused.",
    ),
  READ_CACHE_MB: z.coerce
    .number()
    .min(0)
    .max(131_072)
    .default(128)
    .describe('Memory for cached answers, half about traders, half about markets. 0 turns both off.'),
  CARD_INCLUDE_V1: booleanFlag
    .default(false)
    .describe(
      "Count V1-era markets in card statistics (imports, which no archive checkpoint records). An archive that has indexed the V1 exchanges from their deployment to the cut-over turns V1 on by itself; the card's coverage says which eras count.",
    ),
  CHART_SCRIPT_HOST: httpUrl
    .default('https://cdn.jsdelivr.net/npm/uplot@1.6.32/dist')
    .describe(
      'Where the chart template loads uPlot (`uPlot.iife.min.js`, `uPlot.min.css`) from: your own host where the CDN is not allowed.',
    ),
};

const mcpVariables = {
  MCP_ALLOWED_HOSTS: z
    .string()
    .trim()
    .transform((value, context): string[] | '*' => {
      if (value === '*') return '*';
      const entries = listOf(value);
      if (entries.length === 0) context.addIssue({ code: 'custom', message: 'name at least one host, or * for any' });
      const hosts: string[] = [];
      for (const entry of entries) {
        const hostname = hostnameOf(entry);
        if (hostname !== null) hosts.push(hostname);
        else
          context.addIssue({
            code: 'custom',
            message: `"${entry}" is not a host name (use names like mcp.example.com, 127.0.0.1 or [::1])`,
          });
      }
      return hosts;
    })
    .optional()
    .describe(
      'Host names a request to /mcp may name in Host (DNS-rebinding protection), or `*`. Default: localhost and HOST. Set your public host.',
    ),
  MCP_OAUTH_ISSUER: httpUrl
    .optional()
    .describe('The authorization server whose JWT access tokens /mcp accepts (OAuth 2.1). Absent: API keys only.'),
  MCP_OAUTH_JWKS_URL: httpUrl
    .optional()
    .describe("The issuer's signing keys (JWKS). Default `ISSUER/.well-known/jwks.json`."),
};

const tapeVariables = {
  TAPE_EVENTS_MAX: integer(1)
    .default(200_000)
    .describe(
      'A tape with more events is not paged (`409 tape_too_large` names its download): the bound on one paged read.',
    ),
  DOWNLOAD_SECRET: secret.describe(
    'HMAC secret of local download links, the same on every API instance. Absent: random per process.',
  ),
  S3_BUCKET: optionalString.describe(
    'An S3-compatible bucket for tape downloads (presigned). Absent: `DATA_DIR/downloads`, served under /downloads/.',
  ),
  S3_ENDPOINT: httpUrl
    .optional()
    .describe('An S3-compatible endpoint (MinIO, R2…), addressed path-style. Absent: AWS S3.'),
  S3_REGION: z
    .string()
    .trim()
    .min(1)
    .default('us-east-1')
    .describe("The bucket's region (AWS needs the right one; most S3-compatible stores accept any)."),
  S3_ACCESS_KEY_ID: optionalString.describe("The store's access key. Absent: the AWS SDK's credential chain."),
  S3_SECRET_ACCESS_KEY: optionalString.describe('Its secret (keep it in a secret).'),
};

const upstreamVariables = {
  UPSTREAM_GAMMA_URL: httpUrl
    .default('https://gamma-api.polymarket.com')
    .describe("The poller's Gamma host (markets): a mirror or a test server."),
  UPSTREAM_DATA_URL: httpUrl
    .default('https://data-api.polymarket.com')
    .describe('Its data-API host (profiles, positions, fills, leaderboard).'),
  UPSTREAM_PNL_URL: httpUrl
    .default('https://user-pnl-api.polymarket.com')
    .describe('Its user-pnl host (equity curves).'),
  UPSTREAM_RATE_FRACTION: z.coerce
    .number()
    .gt(0)
    .max(0.9)
    .default(0.5)
    .describe(
      "Share of Polymarket's published per-route rate limits the poller uses: lower when others share your address.",
    ),
  UPSTREAM_WALLET_EVERY_S: integer(1)
    .default(900)
    .describe('Refresh period of one tracked wallet (profile, positions, pnl, fills).'),
  UPSTREAM_MAX_WALLETS: integer(1)
    .default(2000)
    .describe(
      'Wallets tracked at most: the leaderboard, then those clients asked about, then recent archive activity.',
    ),
};

const clobVariables = {
  CLOB_WS_URL: z
    .url({ protocol: /^wss?$/ })
    .default('wss://ws-subscriptions-clob.polymarket.com/ws/market')
    .describe(
      "The `clob` role's market channel (Polymarket's CLOB WebSocket): a relay, or the venue's next deployment of it.",
    ),
};

const archiveVariables = {
  POLYGON_RPC_URL: z
    .string()
    .trim()
    .transform((value, context): string[] | undefined => {
      const urls = listOf(value);
      for (const url of urls) {
        if (!/^(https?|wss?):\/\/[^\s]+$/.test(url))
          context.addIssue({ code: 'custom', message: `"${url}" is not an http(s) or ws(s) URL` });
      }
      return urls.length === 0 ? undefined : urls;
    })
    .optional()
    .describe(
      'Polygon JSON-RPC endpoints (comma list, failover in order) for the `archive` role; with it, `all` runs the archive, not the simulator.',
    ),
  ARCHIVE_CONFIRMATIONS: integer(0, 10_000)
    .default(64)
    .describe(
      "Without the node's `finalized` tag (or with ARCHIVE_FINALIZED=false), only blocks this deep below the head are final; a deeper reorg stops the archive (exit 3).",
    ),
  ARCHIVE_FINALIZED: booleanFlag
    .default(true)
    .describe(
      "Final facts are read up to the node's `finalized` block (Polygon's milestones: seconds behind the head, never reorganized); false, or a node without the tag, falls back to ARCHIVE_CONFIRMATIONS.",
    ),
  ARCHIVE_START_BLOCK: integer(0)
    .default(33_000_000)
    .describe(
      'First block read when there is no checkpoint (at or before the contracts, or later for part of the history).',
    ),
  ARCHIVE_END_BLOCK: integer(0)
    .optional()
    .describe('Stop after this block (a bounded backfill). Absent: follow the chain.'),
  ARCHIVE_RANGE_MAX: integer(1)
    .default(5_000)
    .describe("Largest eth_getLogs block range (the range adapts below it): your node's limit."),
  ARCHIVE_RPS: z.coerce
    .number()
    .positive()
    .default(10)
    .describe("Requests per second to the node, all endpoints together: your provider's limit."),
  ARCHIVE_SOURCE: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .default('polygon')
    .describe(
      "Name of this archive's checkpoint: several archives (a V1 backfill of a block range) can share one store.",
    ),
};

const simulatorVariables = {
  SIM_SEED: z.coerce
    .number()
    .int()
    .default(20261121)
    .describe('Seed of the simulated world (demo, load tests): one seed, one world.'),
  SIM_BACKFILL_DAYS: z.coerce
    .number()
    .min(0)
    .max(60)
    .default(2)
    .describe('Days of history simulated before it goes live.'),
  SIM_LIVE: booleanFlag
    .default(true)
    .describe(
      'After the backfill, keep simulating in real time. false: the world ends with its backfill, and a restart simulates nothing new.',
    ),
  SIM_TRADERS: integer(10, 5000).default(120).describe('Scale of the simulated world: named traders.'),
  SIM_GENESIS_TS: integer(1)
    .optional()
    .describe('A reproducible world starts here (epoch seconds) instead of SIM_BACKFILL_DAYS before now.'),
  SIM_STOP_TS: integer(1)
    .optional()
    .describe('The simulated world ends here (epoch seconds): nothing is published at or after it.'),
};

/** The variables by area, in the order docs/configuration.md lists them. */
export const VARIABLE_SECTIONS = [
  { title: 'Service', variables: serviceVariables },
  { title: 'ClickHouse', variables: clickhouseVariables },
  { title: 'Kafka and ingest', variables: kafkaVariables },
  { title: 'Redis', variables: redisVariables },
  { title: 'REST API', variables: apiVariables },
  { title: 'MCP', variables: mcpVariables },
  { title: 'Tapes and downloads', variables: tapeVariables },
  { title: 'Upstream poller', variables: upstreamVariables },
  { title: 'CLOB book source', variables: clobVariables },
  { title: 'On-chain archive', variables: archiveVariables },
  { title: 'Simulator', variables: simulatorVariables },
] as const;

export const environmentSchema = z.object({
  ...serviceVariables,
  ...clickhouseVariables,
  ...kafkaVariables,
  ...redisVariables,
  ...apiVariables,
  ...mcpVariables,
  ...tapeVariables,
  ...upstreamVariables,
  ...clobVariables,
  ...archiveVariables,
  ...simulatorVariables,
});

/** Every variable the program reads (deployment manifests are checked against it). */
export const ENVIRONMENT_VARIABLES: readonly string[] = Object.keys(environmentSchema.shape);

/**
 * Variables that earlier versions read, and where each value went. A deployment that still sets one is
 * told so at startup (one warning each), never silently ignored.
 */
export const REMOVED_VARIABLES: Readonly<Record<string, string>> = {
  HTTP_HEADERS_TIMEOUT_MS: 'constant 10 s (http.headersTimeoutMs)',
  HTTP_REQUEST_TIMEOUT_MS: 'constant 30 s (http.requestTimeoutMs)',
  HTTP_KEEP_ALIVE_TIMEOUT_MS: 'constant 5 s (http.keepAliveTimeoutMs)',
  HTTP_IDLE_TIMEOUT_MS: 'constant 60 s (http.idleTimeoutMs)',
  HTTP_BODY_LIMIT_BYTES: 'constant 256 KiB (http.bodyLimitBytes)',
  HTTP_MAX_HEADER_BYTES: 'constant 16 KiB (http.maxHeaderBytes)',
  CLICKHOUSE_EMBEDDED_PATH: 'derived: DATA_DIR/clickhouse',
  CLICKHOUSE_READ_MAX_THREADS:
    "the store's default: 1 embedded, the server's own setting with CLICKHOUSE_URL (projections/store.ts)",
  CLICKHOUSE_WRITE_NICE: "the store's default: 10 embedded, 0 with CLICKHOUSE_URL (projections/store.ts)",
  KAFKA_CLIENT_ID: "constant 'trader-analytics' (kafka.clientId)",
  KAFKA_SESSION_TIMEOUT_MS: 'constant 30 s (kafka.sessionTimeoutMs)',
  KAFKA_HEARTBEAT_INTERVAL_MS: 'constant 3 s (kafka.heartbeatIntervalMs)',
  REDIS_COMMAND_TIMEOUT_MS: 'constant 500 ms (redis.commandTimeoutMs)',
  AUTH_FAILURE_WINDOW_S: 'constant 600 s (gates.authFailures.windowSeconds); AUTH_FAILURE_LIMIT stays',
  AUTH_FAILURE_BLOCK_S: 'constant 900 s (gates.authFailures.blockSeconds)',
  HEAVY_READ_LEASE_S: 'constant 120 s (gates.heavyReadLeaseSeconds)',
  MCP_PUBLIC_URL: 'derived: PUBLIC_URL/mcp (set PUBLIC_URL)',
  MCP_OAUTH_SCOPE: "constant 'analytics:read' (mcp.scope)",
  MCP_OAUTH_CLOCK_TOLERANCE_S: 'constant 30 s (mcp.oauth.clockToleranceSeconds)',
  API_OVERLOADED_IN_FLIGHT:
    'measured: the adaptive limit (operations/gates/adaptive-limit.ts), at most API_MAX_IN_FLIGHT',
  API_QUEUE_DEPTH: 'constant 64 (api.inFlight.queueDepth)',
  API_QUEUE_WAIT_MS:
    "constants 100 ms, 1 s for one account's burst, 10 ms under overload, refused only in the first 20 ms (api.inFlight.maxQueueWaitMs, burstQueueWaitMs, targetQueueWaitMs, refusalWindowMs)",
  API_KEY_CACHE_S: 'constant 10 s (api.keyCacheSeconds)',
  READ_CACHE_TRADER_NAME_S: 'constant 10 s (operations/reads.ts, trader_name)',
  READ_CACHE_TRADER_NAME_ENTRIES: 'one bound for names, marks and reports (operations/reads.ts)',
  READ_CACHE_TRADER_NAME_WATCHED_S: 'constant 600 s while changes are followed (operations/reads.ts)',
  READ_CACHE_MARKET_NAMES_S: 'constant 10 s (operations/reads.ts, market_names)',
  READ_CACHE_MARKET_NAMES_ENTRIES: 'one bound for names, marks and reports (operations/reads.ts)',
  READ_CACHE_MARKET_NAMES_WATCHED_S: 'constant 600 s while changes are followed (operations/reads.ts)',
  READ_CACHE_UPSTREAM_STATE_S: 'constant 1 s (api.readCache.upstreamStateSeconds)',
  READ_CACHE_WHALES_S: 'constant 1 s (operations/reads.ts, whale_flow)',
  READ_CACHE_OPEN_MARKET_S: 'constant 1 s, at most API_OPEN_MARKET_MAX_AGE_S (api.readCache.openMarketSeconds)',
  READ_CACHE_TRADER_S: 'constant 5 s, at most API_OPEN_MARKET_MAX_AGE_S (api.readCache.traderAnswerSeconds)',
  READ_CACHE_TRADER_OWN_S: 'constant 600 s while changes are followed (operations/reads.ts, upstream_history)',
  READ_CACHE_TRADER_MB: 'replaced by READ_CACHE_MB (half of it)',
  READ_CACHE_MARKET_MB: 'replaced by READ_CACHE_MB (half of it)',
  S3_FORCE_PATH_STYLE: 'derived: path-style addressing exactly when S3_ENDPOINT is set',
  S3_PREFIX: "constant 'tapes/' (tapes.download.s3.prefix)",
  INGEST_MAX_BYTES_PER_PARTITION: 'constant 4 MiB (ingest.maxBytesPerPartition)',
  INGEST_MAX_BYTES: 'constant 16 MiB (ingest.maxBytes)',
  INGEST_PARTITIONS_CONCURRENTLY: 'constant 4 (ingest.partitionsConsumedConcurrently)',
  INGEST_FETCH_MAX_WAIT_MS: 'constant 250 ms (ingest.fetchMaxWaitMs)',
  INGEST_MAX_BATCH_MESSAGES: 'constant 20,000 (ingest.maxBatchMessages)',
  INGEST_MAX_BATCH_BYTES: 'constant 16 MiB (ingest.maxBatchBytes)',
  INGEST_EAGER_BATCH_MESSAGES: 'constant 5,000 (ingest.eagerBatchMessages)',
  INGEST_ROLLUP_INTERVAL_MS: 'constant 2 s (ingest.rollupIntervalMs)',
  INGEST_ROLLUP_ORPHAN_AFTER_S: 'constant 60 s (ingest.rollupOrphanAfterSeconds)',
  INGEST_WRITE_RETRIES: 'constant 5 (ingest.writeRetries)',
  INGEST_RETRY_BASE_MS: 'constant 200 ms (ingest.retryBaseMs)',
  WHALE_BURST_GAP_S: 'constant 900 s (whales.burstGapSeconds): part of what a stored burst means',
  WHALE_EXACT_ABOVE_USD: 'constant 1000 USD (whales.exactAboveUsd): part of what the whale rollup stores',
  UPSTREAM_STALE_AFTER_S: 'constant 300 s (upstream.staleAfterSeconds)',
  UPSTREAM_TIMEOUT_MS: 'constant 10 s (upstream.timeoutMs)',
  UPSTREAM_MAX_RETRIES: 'constant 4 (upstream.maxRetries)',
  UPSTREAM_BREAKER_FAILURES: 'constant 5 (upstream.breaker.failures)',
  UPSTREAM_BREAKER_OPEN_S: 'constant 30 s (upstream.breaker.openMs)',
  UPSTREAM_HEARTBEAT_S: 'constant 60 s (upstream.heartbeatSeconds)',
  UPSTREAM_MARKETS_EVERY_S: 'constant 300 s (upstream.marketsEverySeconds)',
  UPSTREAM_LEADERBOARD_EVERY_S: 'constant 3600 s (upstream.leaderboardEverySeconds)',
  UPSTREAM_REQUEST_TTL_S: 'constant 7 days (upstream.requestTtlSeconds)',
  EXCHANGE_V2_START_TS: 'a fact of the chain: DEFAULT_EXCHANGE_V2_START_TS (chain.ts)',
  ARCHIVE_RANGE_INITIAL: 'constant 500 blocks, at most ARCHIVE_RANGE_MAX (archive.range.initial)',
  ARCHIVE_RETRIES: 'constant 8 (archive.retries)',
  ARCHIVE_RETRY_BASE_MS: 'constant 500 ms (archive.retryBaseMs)',
  ARCHIVE_RETRY_MAX_MS: 'constant 30 s (archive.retryMaxMs)',
  ARCHIVE_TIMEOUT_MS: 'constant 30 s (archive.timeoutMs)',
  ARCHIVE_POLL_MS: 'constant 2 s (archive.pollMs)',
  ARCHIVE_HEAD: 'derived: on while the archive follows the chain, off with ARCHIVE_END_BLOCK (archive.head)',
  ARCHIVE_HEAD_POLL_MS: 'constant 500 ms, without a WebSocket endpoint (archive.headPollMs)',
  ARCHIVE_HEAD_MAX_BLOCKS: 'constant 128 blocks above the final one (archive.headMaxBlocks)',
  ARCHIVE_UNKNOWN_TOKEN_WAIT_S: 'constant 600 s (archive.unknownTokenWaitSeconds)',
  ARCHIVE_PENDING_MAX: 'constant 100,000 (archive.pendingMax)',
  ARCHIVE_DECODE_WORKERS: "derived: the machine's available cores (archive.decodeWorkers)",
  ARCHIVE_CTF_EXCHANGE: 'a fact of the chain: POLYMARKET_CONTRACTS (chain.ts)',
  ARCHIVE_NEG_RISK_EXCHANGE: 'a fact of the chain: POLYMARKET_CONTRACTS (chain.ts)',
  ARCHIVE_CTF_EXCHANGE_V2: 'a fact of the chain: POLYMARKET_CONTRACTS (chain.ts)',
  ARCHIVE_NEG_RISK_EXCHANGE_V2: 'a fact of the chain: POLYMARKET_CONTRACTS (chain.ts)',
  ARCHIVE_CONDITIONAL_TOKENS: 'a fact of the chain: POLYMARKET_CONTRACTS (chain.ts)',
  ARCHIVE_NEG_RISK_ADAPTER: 'a fact of the chain: POLYMARKET_CONTRACTS (chain.ts)',
  ARCHIVE_COLLATERALS: 'a fact of the chain: POLYMARKET_COLLATERALS (chain.ts)',
  ARCHIVE_COLLATERAL_ADAPTERS: 'a fact of the chain: POLYMARKET_COLLATERAL_ADAPTERS (chain.ts)',
};

export interface RemovedVariableWarning {
  variable: string;
  message: string;
}

/** One warning per removed variable the environment sets (a value, even empty, counts as set). */
export function removedVariablesIn(environment: Record<string, string | undefined>): RemovedVariableWarning[] {
  return Object.entries(REMOVED_VARIABLES)
    .filter(([variable]) => environment[variable] !== undefined)
    .map(([variable, where]) => ({
      variable,
      message: `${variable} is set but no longer read; remove it from the environment. Its value now: ${where}`,
    }));
}

/** A parsed, valid environment: what `configOf` (config-derived.ts) maps to the configuration. */
export type Environment = z.output<typeof environmentSchema>;
