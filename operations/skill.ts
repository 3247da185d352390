/**
 * The skill operation (REST `GET /traders/{trader}/skill`, MCP get_trader_skill): is the trader good, or
 * lucky? Figures and formulas: projections/skill.ts, docs/skill.md.
 */
import { z } from 'zod';
import { visibleInListOrder } from '../projections/market-rows.ts';
import { SKILL_BOOTSTRAP_SAMPLES, SKILL_MIN_MARKETS, skillOf } from '../projections/skill.ts';
import { traderSchema } from '../projections/traders.ts';
import { traderOf, type Call, type RouteContext } from './context.ts';
import { queryAsOf } from './parameters.ts';
import { traderSourcesOf } from './traders.ts';

const usd = z.number();
const ratio = z.number().nullable();

const sampleEdgeSchema = z.object({
  markets: z.int().min(0),
  pnl_usd: usd,
  cost_usd: usd,
  edge: ratio.meta({ description: 'Σ pnl_usd ÷ Σ cost_usd over these markets; null without cost.' }),
});

export const traderSkillSchema = z.object({
  trader: traderSchema,
  sample: z
    .object({
      markets: z.int().min(0).meta({ description: 'Resolved markets in which the trader bought (the sample).' }),
      cost_usd: usd.meta({ description: 'Dollars paid for entries in them (bought notional).' }),
      tokens_bought: z.number(),
      first_resolved_ts: z.int().nullable(),
      last_resolved_ts: z.int().nullable(),
    })
    .meta({ description: "The trader's resolved markets the answer weighs." }),
  edge: z.object({
    per_dollar: ratio.meta({
      description:
        'Realized return per dollar of entries above what the entry prices implied: Σ pnl ÷ Σ cost (the market price is its own forecast, so a fair bet returns 0 before fees; pnl is net of fees, and tokens held to a resolution count at what they paid, so a loser never sold nor redeemed is a loss).',
    }),
    per_token: ratio.meta({ description: 'The same result per token bought (USD per token above the price paid).' }),
    interval_90: z
      .tuple([z.number(), z.number()])
      .nullable()
      .meta({
        description: `A 90% interval of per_dollar: ${SKILL_BOOTSTRAP_SAMPLES} bootstrap resamples of the markets, seeded by the wallet (reproducible); null below two markets.`,
      }),
    shrunk: ratio.meta({
      description:
        'per_dollar shrunk toward 0 by the evidence (empirical Bayes: edges across ranked wallets ~ N(0, prior_sd²); per_dollar × prior_sd² ÷ (prior_sd² + standard_error²)), so that a few lucky markets do not outrank many good ones.',
    }),
    standard_error: ratio.meta({ description: "per_dollar's standard error over markets (delta method)." }),
    luck_probability: ratio.meta({
      description:
        "At most this likely by luck: an upper bound (Chernoff, exact under the null) on the chance that the sample's entries, priced fairly (a token bought at p pays 1 with probability p), would have paid at least what they paid above their price. Small is evidence of skill; across many traders compare q_value on the leaderboard. Null without buys.",
    }),
  }),
  held_to_resolution: sampleEdgeSchema.meta({
    description: 'Markets in which tokens were still held at the resolution (redeemed, or never sold nor redeemed).',
  }),
  sold_before_resolution: sampleEdgeSchema.meta({ description: 'Markets closed by sells or merges before it.' }),
  calibration: z
    .object({
      brier: z.number().meta({
        description:
          'Token-weighted mean of (price paid − what the outcome bought paid per token)²: the entry prices as forecasts of the outcomes bought; 0 perfect, 0.25 a coin at 0.5.',
      }),
      reliability: z.number().meta({ description: 'Σ_bucket w (mean price − outcome rate)²: lower is better.' }),
      resolution: z.number().meta({ description: 'Σ_bucket w (outcome rate − overall rate)²: higher is better.' }),
      uncertainty: z.number().meta({ description: 'Overall rate × (1 − overall rate).' }),
      table: z.array(
        z.object({
          from: z.number(),
          to: z.number(),
          buys: z.int().min(0),
          tokens: z.number(),
          mean_price: z.number(),
          outcome_rate: z.number(),
        }),
      ),
    })
    .nullable()
    .meta({ description: 'Over the buys of the sample; null without buys.' }),
  rank: z.object({
    percentile: ratio.meta({
      description: `Share of ranked wallets (at least ${SKILL_MIN_MARKETS} resolved markets with entries) whose shrunk edge is below this trader's; null for a trader below that sample.`,
    }),
    ranked_wallets: z.int().min(0),
    min_markets: z.int().min(0),
    prior_sd: z.number(),
  }),
});

export type TraderSkillAnswer = z.infer<typeof traderSkillSchema>;

/** Query of the skill answer (REST) and its parameters beside `trader` (MCP get_trader_skill). */
export const skillQuerySchema = z.object({ as_of: queryAsOf });

/**
 * get_trader_skill: the skill answer of the call's trader, today or as of a past instant. A caller with a
 * history depth weighs only the trader's most recent markets (the markets list's order), as it sees only those.
 */
export async function getTraderSkill(
  context: RouteContext,
  call: Call,
  query: z.infer<typeof skillQuerySchema> = {},
): Promise<TraderSkillAnswer> {
  const trader = await traderOf(call.admitted);
  const [inputs, prior] = await Promise.all([
    context.reader.skillInputs(trader.wallet, query.as_of),
    // As of a past instant, the population known then: today's would let later results in.
    context.reader.skillPrior(context.now(), query.as_of),
  ]);
  const depth = call.caller.limits.historyDepth;
  if (depth < 0) return { trader, ...skillOf(trader.wallet, inputs, prior) };
  const { markets } = await traderSourcesOf(context, trader.wallet, query.as_of).walletMarkets(trader.wallet);
  const visible = new Set(visibleInListOrder(markets, depth).map((row) => row.condition_id));
  // The kept inputs are shared: the visible part is a new object.
  const seen = { markets: inputs.markets.filter((market) => visible.has(market.condition_id)) };
  return { trader, ...skillOf(trader.wallet, seen, prior) };
}
