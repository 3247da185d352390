/**
 * The shapes of a trader's markets as the reads answer them: a list row, one market's header and its
 * computed summary, and the top-markets slices. The zod schemas here are the single definition of these
 * shapes: the REST routes and MCP tools derive their response schemas (and so OpenAPI) from them.
 */
import { z } from 'zod';
import { RESOLUTION_SOURCES } from './vocabulary.ts';

const epochSeconds = z.int().min(0).meta({ description: 'Epoch seconds (UTC).' });
const upPrice = z.number().meta({ description: 'UP-normalized price, 0 to 1: the probability of token 1.' });

/** Who said the market resolved: on resolved rows only. */
const resolutionSource = z
  .enum([...RESOLUTION_SOURCES, 'stated'])
  .optional()
  .meta({
    description:
      'Resolved rows only: who says the market resolved. A stated source: "chain" (the condition\'s resolution on chain), "gamma" (the provider\'s market), "clob" (the provider\'s market feed), "simulator", or "stated" (a resolution that named no source); or "redemptions": inferred from the market\'s redemptions (a token paid 1.00 won, one paid nothing lost, 0.50 each a split payout) where no stated resolution is known. A stated resolution, once known, supersedes an inferred one.',
  });

/** The source as a row states it: '' while open; a row written before sources were recorded (no field) was stated. */
export function resolutionSourceOf(row: {
  resolved: boolean;
  resolution_source?: string;
}): z.infer<typeof resolutionSource> {
  if (!row.resolved) return undefined;
  const source = row.resolution_source;
  return (RESOLUTION_SOURCES as readonly string[]).includes(source ?? '')
    ? (source as (typeof RESOLUTION_SOURCES)[number])
    : 'stated';
}

export const marketRowSchema = z.object({
  condition_id: z.string().meta({ description: 'Market id: 0x + 64 hex.' }),
  title: z.string(),
  outcome: z.string().meta({ description: 'Name of token 1.' }),
  resolved: z.boolean(),
  winner: z.string().nullable().meta({
    description:
      'Name of the winning token; after a split payout (no winner, e.g. 50/50) the percent each token paid, token 1 first: "50/50"; null while the market is open.',
  }),
  resolution_source: resolutionSource,
  last_traded_at: epochSeconds.meta({
    description:
      "Time of the trader's last fill in this market (epoch seconds); splits, merges, redemptions and conversions never move it. A market the trader only split, merged or redeemed has no fill: its last such leg. The list is ordered by it.",
  }),
  trader_last_action: z
    .enum(['BUY', 'SELL'])
    .nullable()
    .meta({ description: "Side of the trader's last fill here; null when the trader only split, merged or redeemed." }),
  last_price: upPrice
    .nullable()
    .meta({ description: "UP-space price of the trader's last fill here; null without fills." }),
  fills_count: z.int().min(0),
  pnl_usd: z.number().meta({
    description:
      'Resolved: the result (unredeemed tokens at what they paid: 1.00 for the winner, 0.50 each after a 50/50 split payout). Open: cash flow (money deployed counts as spent); the standing of an open market is pnl_marked_usd. Includes mint, split and redemption legs that never appear as fills, and is net of the fees the fills paid.',
  }),
  open: z.boolean(),
  volume_usd: z.number().meta({ description: 'Buy plus sell notional of the fills.' }),
  market_value_usd: z.number().nullable().optional().meta({
    description:
      "Open rows only: holdings valued at the market's last trade; null when the market has no trade yet (unmarked).",
  }),
  pnl_marked_usd: z
    .number()
    .nullable()
    .optional()
    .meta({ description: 'Open rows only: cash flow plus market_value_usd; null when unmarked.' }),
});
export type MarketRow = z.infer<typeof marketRowSchema>;

/** Keyset position in the recency order: everything up to and including it has been returned. */
export interface MarketListPosition {
  lastTradedAt: number;
  conditionId: string;
}

export const marketHeaderSchema = z.object({
  condition_id: z.string(),
  title: z.string(),
  outcome: z.string().meta({ description: 'Name of token 1.' }),
  outcome2: z.string().meta({ description: 'Name of token 2.' }),
  resolved: z.boolean(),
  winner: z.string().nullable().meta({
    description:
      'Name of the winning token; "50/50" (percent paid per token, token 1 first) after a split payout; null while open.',
  }),
  resolution_source: resolutionSource,
  pnl_usd: z.number().meta({ description: "The trader's result (resolved) or cash flow (open) in this market." }),
  open: z.boolean(),
});
export type MarketHeader = z.infer<typeof marketHeaderSchema>;

const summarySideSchema = z.object({
  token_side: z.union([z.literal(1), z.literal(2)]),
  outcome: z.string(),
  buy_count: z.int().min(0),
  sell_count: z.int().min(0),
  buy_usd: z.number(),
  sell_usd: z.number(),
  avg_entry: z
    .number()
    .nullable()
    .meta({ description: "Average price paid per token of this side, in the token's own frame; null without buys." }),
  net_tokens: z
    .number()
    .meta({ description: 'Tokens of this side held now (bought − sold, plus split − merged, minus redeemed).' }),
});

export const marketSummarySchema = z.object({
  fills_count: z.int().min(0),
  buy_count: z.int().min(0),
  sell_count: z.int().min(0),
  buy_usd: z.number(),
  sell_usd: z.number(),
  avg_entry_price: upPrice
    .nullable()
    .meta({ description: 'UP-space volume-weighted (token-weighted) average price of the buys; null without buys.' }),
  size_p50_usd: z
    .number()
    .nullable()
    .meta({ description: 'Median fill size in USD (nearest rank); null without fills.' }),
  size_p90_usd: z
    .number()
    .nullable()
    .meta({ description: '90th percentile fill size in USD (nearest rank); null without fills.' }),
  size_max_usd: z.number().nullable(),
  first_fill_ts: epochSeconds.nullable(),
  last_fill_ts: epochSeconds.nullable(),
  hold_seconds: z.int().min(0).meta({
    description: 'From the first fill to the last fill, or to the resolution when tokens were still held then.',
  }),
  usd_share_first_tenth: z.number().min(0).max(1).meta({
    description: "Fraction of the trader's fill USD placed in the first 10% of the market's whole traded window.",
  }),
  usd_share_last_tenth: z.number().min(0).max(1).meta({
    description: 'Fraction placed in the last 10%; near-zero first plus high last marks a late piler.',
  }),
  pnl_usd: z.number(),
  roi: z.number().nullable().meta({
    description: 'pnl_usd / buy_usd; null without buys. Meaningless for split-sellers (sell-dominated flow).',
  }),
  won: z.boolean().nullable().meta({ description: 'Resolved: pnl_usd > 0. Null while open.' }),
  open: z.boolean(),
  sides: z.array(summarySideSchema),
});
export type MarketSummary = z.infer<typeof marketSummarySchema>;

export const TOP_MARKETS_NOTE =
  "top_wins and top_losses rank the realized result (pnl_usd) over resolved markets only; most_traded ranks by fills, top_volume by volume, over every market, where an open market's pnl_usd is cash flow (its standing is pnl_marked_usd).";

export interface TopMarkets {
  top_wins: MarketRow[];
  top_losses: MarketRow[];
  most_traded: MarketRow[];
  top_volume: MarketRow[];
  note: string;
}

export interface TraderMarketDetail {
  market: MarketHeader;
  summary: MarketSummary;
}
