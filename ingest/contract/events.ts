/**
 * The event contract: one zod schema per topic. Each schema is the single source of the event's type,
 * its validation, and (through `topics.ts`) its key, its stable id and the row it becomes.
 *
 * Unknown fields are stripped, not rejected, so that producers can add fields without breaking ingest.
 */
import { z } from 'zod';
import {
  conditionIdSchema,
  epochSecondsSchema,
  exchangeEraSchema,
  logIndexSchema,
  nonNegativeAmountSchema,
  positiveAmountSchema,
  priceSchema,
  redemptionPayout,
  tradedPriceSchema,
  tokenSideSchema,
  tradeSideSchema,
  txHashSchema,
  walletSchema,
} from './primitives.ts';
import { RESOLUTION_SOURCES, TAPE_GRADES } from '../../projections/vocabulary.ts';

const payoutNumeratorSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const outcomeNameSchema = z.string().trim().min(1).max(200);
const nameSchema = z.string().trim().max(200);
const urlOrEmptySchema = z.string().max(2000);

export const MARKET_CATEGORIES = ['crypto', 'politics', 'sports', 'other'] as const;

/** Market metadata; a later `version` of the same market replaces an earlier one. */
export const marketMetadataSchema = z.object({
  type: z.literal('metadata'),
  condition_id: conditionIdSchema,
  title: z.string().trim().min(1).max(500),
  slug: z.string().max(300).default(''),
  /** Name of token 1 (the UP side), e.g. "Up" or "Yes". */
  outcome1: outcomeNameSchema,
  /** Name of token 2, e.g. "Down" or "No". */
  outcome2: outcomeNameSchema,
  category: z.enum(MARKET_CATEGORIES).default('other'),
  /** The start time named in the title ("... 3:15PM-3:30PM ET" → 15:15 ET), epoch seconds; null when the title names none. */
  title_start_ts: epochSecondsSchema.nullable(),
  /** The scheduled end of trading, when known. */
  end_ts: epochSecondsSchema.nullable().default(null),
  /** Monotone version of this metadata (usually the time it was observed); the highest wins. */
  version: z.number().int().min(0),
  icon: urlOrEmptySchema.default(''),
});

/**
 * Resolution: one-way, `open` → `resolved`, with the winning token. A condition can also resolve with a
 * split payout (the chain's payout numerators [1, 1]: each token redeems at 0.50); such a resolution has
 * no winner: `winner_token_side` is null and `payout_numerators` says how it paid.
 */
const marketResolutionSchema = z.object({
  type: z.literal('resolution'),
  condition_id: conditionIdSchema,
  winner_token_side: tokenSideSchema.nullable(),
  /** The payout numerators of token 1 and token 2 as reported on chain (or by the upstream), when known. */
  payout_numerators: z.tuple([payoutNumeratorSchema, payoutNumeratorSchema]).optional(),
  ts: epochSecondsSchema,
  /**
   * Who says so: a stated source (chain, gamma, clob, simulator) or `redemptions`, a resolution inferred
   * from the market's redemptions, which any stated one supersedes. Absent: stated, source not named.
   */
  source: z.enum(RESOLUTION_SOURCES).optional(),
});

/** Decimal ERC-1155 position id of an outcome token (uint256). */
const tokenIdSchema = z.string().regex(/^[0-9]{1,78}$/, 'token id must be a decimal uint256');

/**
 * The two outcome tokens of a market: from the exchanges' `TokenRegistered` logs or the upstream's market
 * metadata (Gamma `clobTokenIds`). Sources that see a fill by token id map it to (market, token side)
 * with this.
 */
const marketTokensSchema = z.object({
  type: z.literal('tokens'),
  condition_id: conditionIdSchema,
  /** Token 1 (the UP side, the first outcome). */
  token1_id: tokenIdSchema,
  token2_id: tokenIdSchema,
  /** Whether the market trades on the NegRisk exchange. */
  neg_risk: z.boolean().default(false),
});

/**
 * A Protocol V2 market migrated from the CTF system (`MigrationConditionRegistered`): its V2 condition id's
 * positions are the legacy market's, which keeps its condition id.
 */
const marketMigrationSchema = z.object({
  type: z.literal('migration'),
  /** The legacy (CTF) condition id the market is known by. */
  condition_id: conditionIdSchema,
  /** The V2 condition id (its 31 bytes and a zero byte). */
  v2_condition_id: conditionIdSchema,
});

export const marketEventSchema = z.discriminatedUnion('type', [
  marketMetadataSchema,
  marketResolutionSchema,
  marketTokensSchema,
  marketMigrationSchema,
]);
export type MarketMetadataEvent = z.infer<typeof marketMetadataSchema>;
export type MarketResolutionEvent = z.infer<typeof marketResolutionSchema>;
export type MarketEvent = z.infer<typeof marketEventSchema>;

/**
 * A trader's fill. The archive indexer and the upstream poller publish the same shape to their own
 * topics; the shared fill id (`fillId`: transaction, token side, side, tokens and price, per wallet and
 * market; not the log index, which the data API lacks) makes the two one fill, the archive's.
 */
export const fillSchema = z.object({
  tx_hash: txHashSchema,
  log_index: logIndexSchema,
  wallet: walletSchema,
  condition_id: conditionIdSchema,
  side: tradeSideSchema,
  token_side: tokenSideSchema,
  /** Price paid in the token's own frame (a token-2 buy at 0.30 is 0.30 here, 0.70 in UP space). */
  price: tradedPriceSchema,
  size_tokens: positiveAmountSchema,
  usd: nonNegativeAmountSchema,
  role: z.enum(['maker', 'taker']),
  era: exchangeEraSchema,
  ts: epochSecondsSchema,
  /** Display name when the source knows it (the upstream does; the chain does not). */
  name: nameSchema.optional(),
  /**
   * The fee this fill paid, in USD, when the source reports one (the taker leg of a match). It is not
   * part of `usd`, which is always the notional price × size.
   */
  fee_usd: nonNegativeAmountSchema.optional(),
});
export type FillEvent = z.infer<typeof fillSchema>;

/** Position legs that never appear as fills: they move tokens and USD outside the order book. */
export const positionLegSchema = z
  .object({
    tx_hash: txHashSchema,
    log_index: logIndexSchema,
    wallet: walletSchema,
    condition_id: conditionIdSchema,
    /** SPLIT: pay `usd`, receive `tokens` of both sides. MERGE: give `tokens` of both sides, receive `usd`.
     *  REDEEM: give `tokens`, receive `usd`; no source names the side, the payout per token does
     *  (`redemptionPayout`: 0 the losing side, 1 the winner, 0.5 a split payout). A neg-risk conversion (NegRiskAdapter
     *  `PositionsConverted`) is one leg per question: CONVERT_OUT gives `tokens` of token 2 (NO) and receives
     *  `usd`; CONVERT_IN receives `tokens` of token 1 (YES) and pays `usd`. A Protocol V2 horizontal split
     *  (merge) of a neg-risk event is one leg per condition: HORIZONTAL_SPLIT receives (HORIZONTAL_MERGE
     *  gives) `tokens` of token 1 (YES) and pays (receives) `usd`, its share of the collateral. */
    kind: z.enum(['SPLIT', 'MERGE', 'REDEEM', 'CONVERT_OUT', 'CONVERT_IN', 'HORIZONTAL_SPLIT', 'HORIZONTAL_MERGE']),
    tokens: nonNegativeAmountSchema,
    usd: nonNegativeAmountSchema,
    era: exchangeEraSchema.default('v2'),
    ts: epochSecondsSchema,
  })
  .superRefine((leg, context) => {
    // A redemption whose side cannot be told would be booked against a side it never redeemed.
    if (leg.kind !== 'REDEEM' || redemptionPayout(leg.tokens, leg.usd) !== null) return;
    context.addIssue({
      code: 'custom',
      path: ['usd'],
      message: `a redemption of ${leg.tokens} tokens for ${leg.usd} USD pays ${leg.tokens > 0 ? (leg.usd / leg.tokens).toPrecision(6) : 'something for nothing'} per token, not 0 (the losing side), 0.5 (a split payout) or 1 (the winner): its side cannot be told`,
    });
  });
export type PositionLegEvent = z.infer<typeof positionLegSchema>;

/** A market-wide trade print (anyone's), the raw material of price tapes. */
export const tradeSchema = z.object({
  tx_hash: txHashSchema,
  log_index: logIndexSchema,
  condition_id: conditionIdSchema,
  token_side: tokenSideSchema,
  /** In the token's own frame. */
  price: tradedPriceSchema,
  size_tokens: positiveAmountSchema,
  usd: nonNegativeAmountSchema,
  taker_side: tradeSideSchema.optional(),
  ts: epochSecondsSchema,
  /**
   * Orders prints within a market and second (block number and log position on chain). Sources without
   * a log position (the upstream, the importer) use values below 65,536, under every chain print's
   * (block × 100,000 + log index): where both have a second, the chain's order and copies win.
   */
  seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
});
export type TradeEvent = z.infer<typeof tradeSchema>;

/** Top of book, in UP space. */
export const bookTickSchema = z.object({
  condition_id: conditionIdSchema,
  ts: epochSecondsSchema,
  seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  bid: priceSchema.nullable(),
  ask: priceSchema.nullable(),
});

/** The upstream provider's own statistics of a trader. */
export const upstreamProfileSchema = z.object({
  wallet: walletSchema,
  name: nameSchema,
  profile_image: urlOrEmptySchema.default(''),
  pnl: z.number().finite(),
  pnl_realized: z.number().finite(),
  pnl_unrealized: z.number().finite(),
  portfolio_value: z.number().finite(),
  as_of: epochSecondsSchema,
});
export type UpstreamProfileEvent = z.infer<typeof upstreamProfileSchema>;

/** One point of the upstream provider's equity (profit) curve of a trader. */
export const upstreamEquityPointSchema = z.object({
  wallet: walletSchema,
  ts: epochSecondsSchema,
  pnl_usd: z.number().finite(),
});
export type UpstreamEquityPointEvent = z.infer<typeof upstreamEquityPointSchema>;

/**
 * One row of the upstream provider's leaderboard (the popular shelf's source): the board's window and
 * metric, when it was read, and the trader's rank on it. The latest board read wins.
 */
export const upstreamLeaderboardSchema = z.object({
  /** The leaderboard's window as the provider names it (DAY, WEEK, MONTH, ALL). */
  period: z.string().trim().min(1).max(20),
  /** What it is ordered by (PNL or VOL). */
  metric: z.string().trim().min(1).max(20),
  as_of: epochSecondsSchema,
  rank: z.number().int().min(1).max(1_000_000),
  wallet: walletSchema,
  name: nameSchema.default(''),
  profile_image: urlOrEmptySchema.default(''),
  pnl: z.number().finite(),
  vol: z.number().finite().min(0),
});
export type UpstreamLeaderboardEvent = z.infer<typeof upstreamLeaderboardSchema>;

/** Heartbeat of the upstream poller: is the provider reachable? */
export const upstreamStatusSchema = z.object({
  ts: epochSecondsSchema,
  state: z.enum(['online', 'offline']),
  detail: z.string().max(1000).default(''),
});
export type UpstreamStatusEvent = z.infer<typeof upstreamStatusSchema>;

/** A watcher count as the simulator once invented it; no longer published or read (topics.ts says why it stays). */
export const watcherCountSchema = z.object({
  wallet: walletSchema,
  watching: z.number().int().min(0),
  ts: epochSecondsSchema,
});

const planIdSchema = z.enum(['basic', 'pro', 'max']);

const accountIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'account_id must be 1-64 characters of [A-Za-z0-9_-]');

/** An account and its plan, published by the dashboard (or the admin CLI). The highest version wins. */
export const accountSchema = z.object({
  account_id: accountIdSchema,
  plan: planIdSchema,
  /** Early-access founder seat: resolves to Pro limits whatever the plan says. */
  founder: z.boolean().default(false),
  display_name: nameSchema.default(''),
  version: z.number().int().min(0),
  deleted: z.boolean().default(false),
});

/** An API key of an account. Only the SHA-256 of the key ever travels; the plaintext is shown once, elsewhere. */
export const apiKeySchema = z.object({
  key_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  account_id: accountIdSchema,
  key_sha256: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'key_sha256 must be 64 hex digits')
    .transform((hash) => hash.toLowerCase()),
  label: nameSchema.default(''),
  last4: z.string().length(4),
  created_at: epochSecondsSchema,
  revoked_at: epochSecondsSchema.nullable().default(null),
  version: z.number().int().min(0),
});

/** Ids of recorded sessions (tapes): opaque, URL-safe. */
const tapeIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'tape_id must be 1-64 characters of [A-Za-z0-9_-]');

/**
 * A recorded session's metadata, published by the live plane when a recording is saved (and again,
 * with a higher `version`, when it changes). Private to `account_id`, the account that recorded it.
 */
export const tapeSchema = z.object({
  tape_id: tapeIdSchema,
  account_id: accountIdSchema,
  wallet: walletSchema,
  name: nameSchema.default(''),
  condition_id: conditionIdSchema,
  title: z.string().trim().max(500).default(''),
  grade: z.enum(TAPE_GRADES),
  /** Profit observed during the recording (labeled as taped: not the trader's career figure). */
  pnl_taped_usd: z.number().finite(),
  /** How the session's market ended (the winning outcome's name), '' while open. */
  outcome: z.string().trim().max(200).default(''),
  started_at: epochSecondsSchema,
  ended_at: epochSecondsSchema,
  tick_count: z.number().int().min(0),
  fill_count: z.number().int().min(0),
  /** Number of StreamEvents the recording holds (published on `tape.events`). */
  event_count: z.number().int().min(0),
  size_bytes: z.number().int().min(0),
  version: z.number().int().min(0),
  /**
   * True while the recording runs and for one that never finished (its instance stopped, or part of it
   * could not be published): the metadata counts the events published so far. The final version is false.
   */
  partial: z.boolean().default(false),
});

const tapeEventBase = {
  tape_id: tapeIdSchema,
  account_id: accountIdSchema,
  /** Position of the event in its tape (0, 1, 2, …): the order of replay and the event's id. */
  seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  ts: epochSecondsSchema,
};

const provisionalRefSchema = z.string().min(1).max(120);
/** A fill or print the watcher was sent from a block above the chain's final one. */
const tapeProvisionalFields = { provisional: z.literal(true).optional(), ref: provisionalRefSchema.optional() };

/** One StreamEvent of a recorded session: `{type, ts, ...payload}` plus the tape it belongs to. */
export const tapeStreamEventSchema = z.discriminatedUnion('type', [
  z.object({ ...tapeEventBase, type: z.literal('book'), bid: priceSchema.nullable(), ask: priceSchema.nullable() }),
  z.object({
    ...tapeEventBase,
    type: z.literal('trade'),
    price: priceSchema,
    size_tokens: positiveAmountSchema,
    usd: nonNegativeAmountSchema,
    token_side: tokenSideSchema,
    ...tapeProvisionalFields,
  }),
  z.object({
    ...tapeEventBase,
    type: z.literal('fill'),
    side: tradeSideSchema,
    price: priceSchema,
    token_side: tokenSideSchema,
    outcome: z.string().trim().max(200).default(''),
    size_tokens: positiveAmountSchema,
    usd: nonNegativeAmountSchema,
    ...tapeProvisionalFields,
  }),
  z.object({
    ...tapeEventBase,
    type: z.literal('resolution'),
    winner: z.string().trim().max(200),
    level: z.union([z.literal(0), z.literal(1)]),
  }),
  z.object({ ...tapeEventBase, type: z.literal('session'), state: z.enum(['start', 'stop']) }),
  // How a provisional event the watcher was sent ended (docs/live.md, "Provisional events").
  z.object({ ...tapeEventBase, type: z.literal('final'), ref: provisionalRefSchema }),
  z.object({ ...tapeEventBase, type: z.literal('retracted'), ref: provisionalRefSchema }),
]);
