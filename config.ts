/**
 * The one configuration module. The environment is parsed once, here, by a zod schema; every other
 * module receives the typed, frozen object. Nothing else reads `process.env`.
 *
 * The schema holds only what a deployment changes (addresses, secrets, capacity, sources); each variable's
 * `.describe()` is its documentation (`npm run docs` writes docs/configuration.md from it). Everything else
 * is a constant in `configOf`, with the reason for its value: tests change those on the parsed object
 * (`parseConfig(environment, overrides)`), never through the environment.
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { parseTrustedProxies } from './trusted-proxies.ts';
import {
  DEFAULT_EXCHANGE_V2_START_TS,
  POLYMARKET_COLLATERAL_ADAPTERS,
  POLYMARKET_PROTOCOL_V2,
  POLYMARKET_COLLATERALS,
  POLYMARKET_CONTRACTS,
} from './chain.ts';

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

const environmentSchema = z.object({
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

/** The provider's services: Gamma (markets), the data API (profiles, positions, fills, leaderboard), user-pnl (equity curves). */
export type UpstreamService = 'gamma' | 'data' | 'pnl' | 'clob';

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
  { service: 'clob', path: '', requests: 9000, perSeconds: 10 },
  { service: 'clob', path: '/book', requests: 1500, perSeconds: 10 },
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
  /**
   * The live plane's fast path: a wallet watched or followed on the plane has its new /activity rows polled
   * this often, while it is, within `share` of the poller's budget of the data API (its published limit times
   * rateFraction); more watched wallets than that share serves in a period stretch it.
   */
  watched: { everySeconds: number; share: number };
  leaderboardEverySeconds: number;
  /** The popular shelf's source: the data API leaderboard of this window, ordered by this metric, this many rows. */
  leaderboard: { timePeriod: 'DAY' | 'WEEK' | 'MONTH' | 'ALL'; orderBy: 'PNL' | 'VOL'; size: number };
  maxWallets: number;
  requestTtlSeconds: number;
  /** Fills and legs polled with a time before this (epoch s) are of the V1 exchange era. */
  v2StartTs: number;
  /** Cursors and schedules, so that a restarted poller resumes. */
  stateFile: string;
  /** Redis sorted set (wallet → last request, epoch seconds) the API adds requested wallets to. */
  requestedWalletsKey: string;
}

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
  /**
   * Store lookups of the live plane per hour (docs/live.md, Bounds): its commands that read the store (a
   * display name resolved, a market checked, a watch's first fetch) draw on one bucket per user that holds
   * this many and refills at this many an hour. A command answered from the read caches costs none.
   */
  liveLookupsPerHour: number;
  /** Most-recent markets visible per trader; -1 means unlimited. */
  historyDepth: number;
  /** Distinct wallets per UTC day; -1 means unlimited. */
  distinctWalletsPerDay: number;
  heavyReadsInFlight: number;
  /** Whether the plan's watches are recorded into its library (read-api.md: "Record a live market"). */
  recordsLive: boolean;
  /** The library's storage: the recorded tapes' bytes (their events as the download's JSON lines). */
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
    liveLookupsPerHour: 120,
    historyDepth: 5,
    distinctWalletsPerDay: 3,
    heavyReadsInFlight: 2,
    recordsLive: false,
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
    liveLookupsPerHour: 1200,
    historyDepth: -1,
    distinctWalletsPerDay: -1,
    heavyReadsInFlight: 4,
    recordsLive: true,
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
    liveLookupsPerHour: 6000,
    historyDepth: -1,
    distinctWalletsPerDay: -1,
    heavyReadsInFlight: 8,
    recordsLive: true,
    libraryBytes: 10 * 1024 * 1024 * 1024,
  },
};

export interface PageLimits {
  defaultLimit: number;
  maxLimit: number;
}

/** The `clob` source (docs/clob.md): its socket's heartbeat, watchdogs and backoff, and what it subscribes. */
export interface ClobConfig {
  url: string;
  /** The text PING every this often (the venue's documented period). */
  heartbeatMs: number;
  /** No PONG for this long: the socket is dead. */
  pongTimeoutMs: number;
  /** No message for this long while something is subscribed (PONGs still coming): the socket is frozen. */
  stallMs: number;
  backoff: { baseMs: number; maxMs: number };
  /** How often the markets to subscribe are read again. */
  refreshMs: number;
  /** Markets subscribed at most (two tokens each), watched ones first. */
  maxMarkets: number;
  /** Traders of the popular shelf whose open markets are subscribed. */
  popularTraders: number;
  /** A popular trader's market counts as open while unresolved and active within this many seconds. */
  openMarketSeconds: number;
  /** Frames read and not yet published, at most: beyond, their events are dropped (and counted). */
  maxPendingFrames: number;
  /** A subscribed token whose book has not come this long after its subscribe is read over REST (GET /book). */
  snapshotWaitMs: number;
}

export interface ArchiveConfig {
  rpcUrls: readonly string[];
  source: string;
  confirmations: number;
  /** Follow the node's `finalized` tag (else, or when the node lacks it, `confirmations`). */
  finalized: boolean;
  /** The head stage: blocks above the final one read as they appear, their events published as provisional. */
  head: boolean;
  /** Without a WebSocket endpoint, how often the head stage asks the node for a new block. */
  headPollMs: number;
  /** The head stage follows at most this many blocks above the final one (older ones wait for the final stage). */
  headMaxBlocks: number;
  startBlock: number;
  endBlock: number | null;
  /** Position legs before this instant (epoch s) are of the V1 exchange era; fills carry their exchange's. */
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
  /** Polymarket Protocol V2's contracts (lower-case): ExchangeV3, the PositionManager, the Router, the modules. */
  protocolV2: {
    exchangeV3: `0x${string}`;
    positionManager: `0x${string}`;
    router: `0x${string}`;
    binaryModule: `0x${string}`;
    negRiskModule: `0x${string}`;
    combinatorialModule: `0x${string}`;
    autoRedeemer: `0x${string}`;
  };
}

/** The typed configuration: what `configOf` builds from a parsed environment (one source, no hand-written twin). */
export type Config = ReturnType<typeof configOf>;

type Overrides<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: Overrides<T[K]> } : T;

/** Values set on the parsed configuration instead of the environment (tests, benchmarks): any subtree, merged in. */
export type ConfigOverrides = Overrides<Config>;

/**
 * Parses an environment into the typed configuration, with `overrides` merged in (deeply; arrays and
 * values replace); throws a readable error on invalid input. Pure: warnings about the environment are
 * `removedVariablesIn`'s.
 */
export function parseConfig(environment: Record<string, string | undefined>, overrides: ConfigOverrides = {}): Config {
  const parsed = environmentSchema.safeParse(environment);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  const config = merged(configOf(parsed.data), overrides, 'config') as Config;
  // Node refuses a headers bound above the request bound; an idle bound at or below the query bound
  // would cut off clients waiting for a slow (but legitimate) answer.
  const { http, clickhouse } = config;
  if (http.headersTimeoutMs > http.requestTimeoutMs) {
    throw new Error(
      `invalid configuration: the headers timeout (${http.headersTimeoutMs} ms) must not exceed the request timeout (${http.requestTimeoutMs} ms)`,
    );
  }
  if (http.idleTimeoutMs <= clickhouse.queryTimeoutSeconds * 1000) {
    throw new Error(
      `invalid configuration: CLICKHOUSE_QUERY_TIMEOUT_S (${clickhouse.queryTimeoutSeconds} s) must stay below the idle-connection timeout (${http.idleTimeoutMs / 1000} s): a client waiting for a slow answer is not idle`,
    );
  }
  return deepFreeze(config);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function merged(base: unknown, overrides: unknown, at: string): unknown {
  if (overrides === undefined) return base;
  if (!isRecord(overrides)) return overrides;
  if (!isRecord(base)) throw new Error(`config override ${at}: this configuration has no ${at} to change (it is off)`);
  const result: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (!(key in base)) throw new Error(`config override ${at}.${key}: no such setting`);
    result[key] = merged(base[key], value, `${at}.${key}`);
  }
  return result;
}

/** Load shedding's limits, with the defaults of the store in use (operations/gates/in-flight.ts). */
function inFlightLimits(env: z.output<typeof environmentSchema>) {
  // Embedded: the reads run on this machine's cores, and one call more than the cores keeps them busy
  // while another is between statements, in the gates or in serialization. A server has its own cores.
  const cores = Math.max(1, availableParallelism());
  const initial = env.CLICKHOUSE_URL ? 16 : Math.max(2, cores) + 1;
  // The adaptive limit measures from here; API_MAX_IN_FLIGHT caps it (and the start and floor with it).
  const maxInFlight = env.API_MAX_IN_FLIGHT ?? 4 * initial;
  return {
    initialInFlight: Math.min(initial, maxInFlight),
    // Embedded, as low as one: the reads share the machine's cores with the event loop and with each
    // other, and where concurrent reads only slow each other down (the latency measured tells), one at a
    // time serves as many with the least wait. A server: a few.
    minInFlight: Math.min(env.CLICKHOUSE_URL ? 4 : 1, maxInFlight),
    // The uncontended latency is measured at this many calls at once: embedded, one per core but the
    // event loop's (more is contention); a few on a server.
    baselineInFlight: Math.min(env.CLICKHOUSE_URL ? 4 : Math.max(1, cores - 1), maxInFlight),
    maxInFlight,
    // The queue absorbs a burst of many users at once; the horizons are the wait a burst may be given (the
    // service's capacity over a short horizon), the target the wait under overload, where a longer one
    // would only add latency to the calls served.
    queueDepth: 64,
    maxQueueWaitMs: 100,
    // One account's burst (its plan allows it) may wait longer: on a loaded machine ten calls of a
    // Basic burst outlast the shorter horizon, and the service has the capacity for them within this.
    burstQueueWaitMs: 1000,
    targetQueueWaitMs: 10,
    // A refusal is worth little when it comes late: a waiter is refused within this of its arrival or
    // served (the event loop's own delay under load comes on top).
    refusalWindowMs: 20,
  };
}

const MB = 1024 * 1024;

/** The mapping from a valid environment to the configuration every module receives. */
function configOf(env: z.output<typeof environmentSchema>) {
  const dataDir = path.resolve(env.DATA_DIR);
  const publicUrl = (env.PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, '');
  const mcpPublicUrl = `${publicUrl}/mcp`;
  const cacheBytes = env.READ_CACHE_MB * MB;
  return {
    logLevel: env.LOG_LEVEL,
    dataDir,
    /**
     * How long a role may drain after SIGINT / SIGTERM (or after it returned) before the process exits
     * regardless: an orchestrator that sends SIGTERM must see the process go, even when a drain waits on
     * something that never answers. Below Kubernetes' default termination grace, so the drain is ours.
     */
    shutdown: { graceMs: 20_000 },
    http: {
      host: env.HOST,
      port: env.PORT,
      /** Proxies (addresses, CIDRs) whose X-Forwarded-For is believed; empty: none. */
      trustProxy: env.API_TRUST_PROXY,
      // Bounds on slow and idle clients (a connection holds a socket and a parser): request line and
      // headers within 10 s, the whole request within 30 s; a keep-alive connection idle between
      // requests closes after 5 s, any socket silent both ways after 60 s (above the query timeout: a slow
      // answer is not an idle client). Requests are small JSON: bodies above 256 KiB are 413, headers
      // above 16 KiB 431.
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      idleTimeoutMs: 60_000,
      bodyLimitBytes: 256 * 1024,
      maxHeaderBytes: 16 * 1024,
    },
    metrics: { host: env.HOST, port: env.METRICS_PORT },
    clickhouse: {
      /** Absent: embedded chDB under `dataDir/clickhouse`. */
      url: env.CLICKHOUSE_URL,
      user: env.CLICKHOUSE_USER,
      password: env.CLICKHOUSE_PASSWORD,
      database: env.CLICKHOUSE_DATABASE,
      cluster: env.CLICKHOUSE_CLUSTER ?? null,
      embeddedPath: path.join(dataDir, 'clickhouse'),
      queryTimeoutSeconds: env.CLICKHOUSE_QUERY_TIMEOUT_S,
      /** Absent: the store's default for its kind (projections/store.ts). */
      readPoolSize: env.CLICKHOUSE_READ_POOL_SIZE,
      /** Absent: 1 embedded, the server's own setting (projections/store.ts). */
      readMaxThreads: undefined as number | undefined,
      /** Absent: 10 embedded, 0 (off) against a server (projections/store.ts). */
      writeNice: undefined as number | undefined,
      /** Absent: libuv's default of 4 (projections/store.ts). */
      threadPoolSize: env.UV_THREADPOOL_SIZE,
    },
    kafka: {
      /** Absent: the in-process bus (embedded mode). */
      brokers: env.KAFKA_BROKERS?.split(',')
        .map((broker) => broker.trim())
        .filter(Boolean),
      clientId: 'trader-analytics',
      groupId: env.KAFKA_GROUP_ID,
      topicPrefix: env.KAFKA_TOPIC_PREFIX,
      // Consumer-group liveness (kafkajs's own defaults): a member silent for 30 s is removed and its
      // partitions reassigned; long enough that a worker busy with a large write is not.
      sessionTimeoutMs: 30_000,
      heartbeatIntervalMs: 3_000,
    },
    // A gate round trip slower than half a second fails open (served unmetered and logged): the gates
    // must never be the reason a read is slow.
    redis: { url: env.REDIS_URL, keyPrefix: env.REDIS_KEY_PREFIX, commandTimeoutMs: 500 },
    /** The four gates and the address guard (read-api.md, Limits; decisions.md). */
    gates: {
      /** The rolling per-minute ceiling's window. */
      rpmWindowSeconds: 60,
      // AUTH_FAILURE_LIMIT failures within 10 minutes block an address for 15: longer than the window, so
      // that a blocked guesser cannot resume at full speed when the window rolls.
      authFailures: { limit: env.AUTH_FAILURE_LIMIT, windowSeconds: 600, blockSeconds: 900 },
      heavyReadsPerInstance: env.HEAVY_READS_PER_INSTANCE,
      /** A heavy-read slot not released within this long (its instance died) frees itself: well above any heavy read's run time. */
      heavyReadLeaseSeconds: 120,
    },
    api: {
      prefix: '/api/agent/v1' as const,
      /** Null: a random secret per process (cursors then die with the process). */
      cursorSecret: env.API_CURSOR_SECRET ?? null,
      /** How long a key lookup is cached: a revocation takes effect within this. */
      keyCacheSeconds: 10,
      /** Load shedding of this instance (operations/gates/in-flight.ts). */
      inFlight: inFlightLimits(env),
      openMarketMaxAgeSeconds: env.API_OPEN_MARKET_MAX_AGE_S,
      /** The lifetimes and memory of the API's read cache (operations/reads.ts). */
      readCache: {
        /** Memory for the answers about traders, and as much again for those about markets (bytes of their JSON). */
        bytes: Math.round(cacheBytes / 2),
        // An open market's answer may be as old as its Cache-Control allows, never older.
        openMarketSeconds: Math.min(1, env.API_OPEN_MARKET_MAX_AGE_S),
        // An answer about a trader holds the marks of its open markets: they may lag as an open answer may.
        traderAnswerSeconds: Math.min(5, env.API_OPEN_MARKET_MAX_AGE_S),
        // Every card and curve asks for it: one read a second serves them all.
        upstreamStateSeconds: 1,
      },
      immutableMaxAgeSeconds: 31_536_000,
      marketsList: { defaultLimit: 200, maxLimit: 1000 },
      fills: { defaultLimit: 500, maxLimit: 2000 },
      topMarkets: { defaultN: 5, minN: 1, maxN: 20 },
      popularLimit: 20,
    },
    ingest: {
      // One fetch is bounded per partition and in all: the worker's memory follows these, not the backlog.
      maxBytesPerPartition: 4 * MB,
      maxBytes: 16 * MB,
      partitionsConsumedConcurrently: 4,
      // How long a fetch waits at the broker for new data: also how soon new data is seen.
      fetchMaxWaitMs: 250,
      // A write gathers up to 20,000 events or 16 MiB from all partitions, or waits INGEST_LINGER_MS after
      // the first; one that already holds 5,000 is written as soon as the previous write is done.
      maxBatchMessages: 20_000,
      maxBatchBytes: 16 * MB,
      lingerMs: env.INGEST_LINGER_MS,
      eagerBatchMessages: 5_000,
      // A rollup refresh (trader_markets, careers, whales, tapes) has a fixed cost however few keys it
      // covers, so under live traffic it runs at most every 2 s for everything since.
      rollupIntervalMs: 2_000,
      // A staged rollup batch not done after a minute belonged to a stopped worker; any worker redoes it.
      rollupOrphanAfterSeconds: 60,
      // A failing ClickHouse write is retried a few times with backoff, then the batch is given up (and restarted).
      writeRetries: 5,
      retryBaseMs: 200,
    },
    card: { includeV1: env.CARD_INCLUDE_V1 },
    whales: {
      // What a burst is (a pause of 15 minutes ends one) and which accumulations are tracked exactly
      // (above 1,000 USD; `min_usd` is clamped up to it) are part of what the whale rollup stores.
      burstGapSeconds: 900,
      exactAboveUsd: 1000,
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
    /** The V1 → V2 exchange cut-over: the era of what names no exchange (the importer's rows, every leg). */
    exchangeV2StartTs: DEFAULT_EXCHANGE_V2_START_TS,
    upstream: ((): UpstreamConfig => ({
      // The upstream is offline when its last heartbeat (every minute) is older than 5 minutes.
      staleAfterSeconds: 300,
      baseUrls: {
        gamma: env.UPSTREAM_GAMMA_URL.replace(/\/+$/, ''),
        data: env.UPSTREAM_DATA_URL.replace(/\/+$/, ''),
        pnl: env.UPSTREAM_PNL_URL.replace(/\/+$/, ''),
        // The CLOB's REST API: the clob role's fallback for a book the market channel does not send.
        clob: 'https://clob.polymarket.com',
      },
      rateFraction: env.UPSTREAM_RATE_FRACTION,
      limits: UPSTREAM_PUBLISHED_LIMITS,
      // One request: 10 s, retried 4 times with backoff (5xx, 429, timeouts, network errors, truncated bodies);
      // 5 failed requests in a row open the circuit for 30 s (the upstream is declared offline).
      timeoutMs: 10_000,
      maxRetries: 4,
      backoffBaseMs: 250,
      backoffMaxMs: 30_000,
      breaker: { failures: 5, openMs: 30_000 },
      heartbeatSeconds: 60,
      // Gamma's market sweep finds new markets within 5 minutes; the leaderboard (the popular shelf) changes slowly.
      marketsEverySeconds: 300,
      walletEverySeconds: env.UPSTREAM_WALLET_EVERY_S,
      // A watched trader's fill is on the plane a few seconds after the provider lists it, for a quarter of
      // the data API's budget at most: the rest stays with the tracked wallets' 15-minute refreshes.
      watched: { everySeconds: 5, share: 0.25 },
      leaderboardEverySeconds: 3600,
      leaderboard: { timePeriod: 'WEEK', orderBy: 'PNL', size: 50 },
      maxWallets: env.UPSTREAM_MAX_WALLETS,
      // A wallet a client asked about stays tracked a week after its last request.
      requestTtlSeconds: 7 * 86_400,
      v2StartTs: DEFAULT_EXCHANGE_V2_START_TS,
      stateFile: path.join(dataDir, 'upstream-state.json'),
      requestedWalletsKey: `${env.REDIS_KEY_PREFIX}upstream:requested`,
    }))(),
    clob: ((): ClobConfig => ({
      url: env.CLOB_WS_URL,
      // The venue's documented heartbeat is a PING every 10 s; its SDK waits 30 s for the PONG.
      heartbeatMs: 10_000,
      pongTimeoutMs: 30_000,
      // Two quiet minutes with books subscribed is a frozen socket, not a quiet market: a crypto window's
      // book changes every second, and a fresh subscription's initial books arrive at once.
      stallMs: 120_000,
      // The venue's SDK reconnects from 1 s doubling to 60 s; ours draws a random delay up to that (full jitter).
      backoff: { baseMs: 1_000, maxMs: 60_000 },
      // Watches start and end on the live plane: a new watch's book follows within this.
      refreshMs: 5_000,
      // The venue documents no cap per connection; sockets with a few hundred tokens are reported to freeze.
      maxMarkets: 100,
      popularTraders: 50,
      openMarketSeconds: 7 * 86_400,
      // Seconds of the busiest markets' traffic: a log that is down longer loses ticks, not memory.
      maxPendingFrames: 10_000,
      // The initial dump comes at once after a subscribe; a resubscribe may bring none (docs/clob.md).
      snapshotWaitMs: 5_000,
    }))(),
    /** The WebSocket live plane (docs/live.md): its address, its slots' leases, its bounds per connection. */
    live: {
      /** Under the API prefix: `{base_url}/live`. */
      path: '/live' as const,
      /** The subprotocol the server selects; a browser offers it beside `bearer.<API_KEY>` (docs/live.md). */
      protocol: 'trader-analytics.live.v1' as const,
      // A slot held by an instance that died frees itself within the lease; the holder renews its leases
      // (and pings its clients) every heartbeat, well inside the lease so that one late renewal loses nothing.
      slotLeaseSeconds: 30,
      heartbeatSeconds: 10,
      /**
       * Bytes waiting to be sent to one client (events, replies and errors alike): above this it is too
       * slow, told so, and closed.
       */
      queueBytes: 1 * MB,
      /**
       * Commands of one connection (every frame counts): a token bucket of `burst` refilled at `perSecond`;
       * a frame beyond it is refused (rate_limited), and `refusalsBeforeClose` refusals in a row close the
       * connection. At most `maxPending` commands wait for their turn (the rest are refused the same way).
       */
      // The burst holds the 64 commands a client may send before its `ready` (api/routes/live.ts).
      commands: { perSecond: 20, burst: 64, refusalsBeforeClose: 20, maxPending: 64 },
      /** Every open connection's credential is checked again this often: a revoked key's streams close within the key cache's window. */
      credentialCheckSeconds: 1,
      /** A client's messages are small commands; a larger frame is refused by the WebSocket layer. */
      maxMessageBytes: 4096,
      /** Subscriptions of one connection (watches and follows together). */
      maxSubscriptions: 50,
      /** Connections of one user at once, on every instance (counted and leased like slots). */
      maxConnectionsPerUser: 10,
      /** Market names looked up for fills of followed traders, kept for the next fill. */
      marketNamesCached: 10_000,
      /** The live plane reads the log in a consumer group of its own per instance: this prefix plus an instance id. */
      groupPrefix: `${env.KAFKA_GROUP_ID}-live-`,
      /** A watch ends (and its recording is saved) after this long: watch again for a new tape. */
      maxWatchSeconds: 6 * 3600,
      /**
       * A recording is published as it goes: its events and its metadata so far whenever this many wait
       * or the oldest has waited this long. A crash of the instance loses at most what waited.
       */
      recording: {
        flushEvents: 500,
        flushMs: 1000,
        /**
         * The recordings' events this instance holds and the log has not taken yet (waiting, or being
         * published). Past it the log is backed up: running recordings stop and new watches are not recorded,
         * until it has taken half of them, so memory stays bounded when the log stalls.
         */
        maxUnpublishedBytes: 64 * 1024 * 1024,
      },
    },
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
        publicUrl,
        /** Local objects: DATA_DIR/downloads. */
        directory: path.join(dataDir, 'downloads'),
        s3: env.S3_BUCKET
          ? {
              bucket: env.S3_BUCKET,
              endpoint: env.S3_ENDPOINT,
              region: env.S3_REGION,
              accessKeyId: env.S3_ACCESS_KEY_ID,
              secretAccessKey: env.S3_SECRET_ACCESS_KEY,
              // S3-compatible stores (MinIO and most others) need path-style addressing; AWS serves both.
              forcePathStyle: env.S3_ENDPOINT !== undefined,
              prefix: 'tapes/',
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
      scope: MCP_SCOPE,
      /** OAuth resource server settings; null: API keys only. */
      oauth: env.MCP_OAUTH_ISSUER
        ? {
            issuer: env.MCP_OAUTH_ISSUER,
            jwksUrl: env.MCP_OAUTH_JWKS_URL ?? `${env.MCP_OAUTH_ISSUER.replace(/\/+$/, '')}/.well-known/jwks.json`,
            audience: mcpPublicUrl,
            scope: MCP_SCOPE,
            // Clock skew allowed between the issuer and this server when checking exp and nbf.
            clockToleranceSeconds: 30,
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
          // The head stage runs whenever the archive follows the chain (a bounded backfill has no head to follow).
          head: env.ARCHIVE_END_BLOCK === undefined,
          // Without newHeads over a WebSocket, a quarter of a Polygon block: a new block is seen within 0.5 s.
          headPollMs: 500,
          // Polygon finalizes within seconds; a node whose finality lags more is read by the final stage alone.
          headMaxBlocks: 128,
          startBlock: env.ARCHIVE_START_BLOCK,
          endBlock: env.ARCHIVE_END_BLOCK ?? null,
          v2StartTs: DEFAULT_EXCHANGE_V2_START_TS,
          // The first eth_getLogs range; it adapts within ARCHIVE_RANGE_MAX (halved on errors and timeouts).
          range: { initial: Math.min(500, env.ARCHIVE_RANGE_MAX), max: env.ARCHIVE_RANGE_MAX },
          requestsPerSecond: env.ARCHIVE_RPS,
          // A request is retried with exponential backoff and jitter (0.5 s up to 30 s) before the archive
          // stops with its error: enough to ride out a node's restart.
          retries: 8,
          retryBaseMs: 500,
          retryMaxMs: 30_000,
          // One request slower than this is a timeout (and halves the range).
          timeoutMs: 30_000,
          // How often the head is polled once caught up: about a Polygon block.
          pollMs: 2_000,
          // A fill of a token no market claims yet waits up to 10 minutes (for a TokenRegistered or a
          // tokens event) before it is dead-lettered; at most 100,000 wait, the oldest go first.
          unknownTokenWaitSeconds: 600,
          pendingMax: 100_000,
          // ABI-decoding is the archive's CPU work: one worker thread per core.
          decodeWorkers: availableParallelism(),
          contracts: POLYMARKET_CONTRACTS,
          collaterals: POLYMARKET_COLLATERALS,
          collateralAdapters: POLYMARKET_COLLATERAL_ADAPTERS,
          protocolV2: POLYMARKET_PROTOCOL_V2,
        }
      : null) as ArchiveConfig | null,
    plans: PLANS,
  };
}

const MCP_SCOPE = 'analytics:read';

/** localhost in its three spellings, plus HOST when it names one host rather than every interface. */
function defaultMcpHosts(host: string): string[] {
  const own = hostnameOf(host);
  return own === null || WILDCARD_ADDRESSES.has(own) || LOCAL_HOSTS.includes(own)
    ? [...LOCAL_HOSTS]
    : [...LOCAL_HOSTS, own];
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value as Record<string, unknown>)) deepFreeze(inner);
  }
  return value;
}

let loaded: Config | undefined;

/** The process configuration, parsed from `process.env` on first use (with `overrides` on that first use). */
export function loadConfig(overrides?: ConfigOverrides): Config {
  loaded ??= parseConfig(process.env, overrides);
  return loaded;
}

/** The removed variables `process.env` still sets: the roles log each once at startup. */
export function loadWarnings(): RemovedVariableWarning[] {
  return removedVariablesIn(process.env);
}
