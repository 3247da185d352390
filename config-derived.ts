/**
 * The configuration every module receives, derived from a parsed environment: `configOf` maps the
 * variables to their places, and everything a deployment does not change is a constant here, with the
 * reason for its value. Tests change those on the parsed object (`parseConfig(environment, overrides)`
 * in config.ts), never through the environment.
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import {
  DEFAULT_EXCHANGE_V2_START_TS,
  POLYMARKET_COLLATERAL_ADAPTERS,
  POLYMARKET_PROTOCOL_V2,
  POLYMARKET_COLLATERALS,
  POLYMARKET_CONTRACTS,
} from './chain.ts';
import { type Environment, hostnameOf } from './config-environment.ts';
import { PLANS } from './config-plans.ts';
import type { ArchiveConfig, ClobConfig, UpstreamConfig, UpstreamRouteLimit } from './config-shapes.ts';

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

const WILDCARD_ADDRESSES = new Set(['0.0.0.0', '[::]']);
const LOCAL_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/** Load shedding's limits, with the defaults of the store in use (operations/gates/in-flight.ts). */
function inFlightLimits(env: Environment) {
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
export function configOf(env: Environment) {
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
