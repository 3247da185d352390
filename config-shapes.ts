/**
 * The shapes of the configuration's sections that modules name in their signatures. The configuration's
 * own type is inferred from `configOf` (config-derived.ts); these are the parts of it written out.
 */

/** The provider's services: Gamma (markets), the data API (profiles, positions, fills, leaderboard), user-pnl (equity curves). */
export type UpstreamService = 'gamma' | 'data' | 'pnl' | 'clob';

/** A published rate limit: at most `requests` per `perSeconds` on paths starting with `path` ('' = the whole service). */
export interface UpstreamRouteLimit {
  service: UpstreamService;
  path: string;
  requests: number;
  perSeconds: number;
}

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
