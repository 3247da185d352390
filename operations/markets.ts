/**
 * A trader's markets (REST markets list, top-markets and summary; MCP list_trader_markets,
 * get_top_markets, get_market_summary), and the history wall every market-scoped read passes.
 */
import { z } from 'zod';
import { marketAccessAmong, readMarketAccess, type MarketAccess } from '../projections/market-access.ts';
import {
  marketHeaderSchema,
  type MarketListPosition,
  marketRowSchema,
  marketSummarySchema,
} from '../projections/market-schemas.ts';
import { readTopMarkets } from '../projections/top-markets.ts';
import { traderSchema } from '../projections/traders.ts';
import { nextPlan, PLAN_IDS, type Config } from '../config.ts';
import type { Caller } from './auth.ts';
import { traderOf, type Call, type RouteContext } from './context.ts';
import { errors } from './errors.ts';
import { limitParameter, pageLimit, parseConditionId, queryAsOf, queryCursor, queryInt } from './parameters.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import { readMarketSummaryAndMarket } from '../projections/market-summary.ts';
import { traderParamsSchema, traderSourcesOf } from './traders.ts';

export const marketListSchema = z.object({
  trader: traderSchema,
  markets: z.array(marketRowSchema),
  next_cursor: z.string().nullable().meta({ description: 'Pass back as cursor for the next page; null at the end.' }),
});

export const topMarketsSchema = z.object({
  trader: traderSchema,
  top_wins: z.array(marketRowSchema),
  top_losses: z.array(marketRowSchema),
  most_traded: z.array(marketRowSchema),
  top_volume: z.array(marketRowSchema),
  note: z.string(),
});

export const marketSummaryResponseSchema = z.object({
  market: marketHeaderSchema,
  summary: marketSummarySchema,
  trader: traderSchema,
});

export const marketParamsSchema = traderParamsSchema.extend({
  condition_id: z.string().meta({
    description:
      'Market id: 0x + 64 hex (from the markets list or top-markets). Anything else is 400 invalid_condition_id.',
  }),
});

/** The depth wall of the market-scoped routes (summary, chart, raw ticks, tape), for their descriptions. */
export const marketDepthWall = (depth: number): string =>
  `only the trader's ${depth} most recent markets (the markets list's order) can be read; an older market the trader traded is 403 depth_gated (a plan wall: do not retry, relay the message).`;

/** Query of the markets list (REST) and the parameters of list_trader_markets (MCP) beside `trader`. */
export const marketListQuerySchema = (config: Config) =>
  z.object({ cursor: queryCursor, limit: limitParameter(config.api.marketsList, 'market rows'), as_of: queryAsOf });

/** Query of top-markets (REST) and the parameters of get_top_markets (MCP) beside `trader`. */
export const topMarketsQuerySchema = ({ api: { topMarkets } }: Config) =>
  z.object({
    n: queryInt(`Rows per slice; default ${topMarkets.defaultN}; clamped to ${topMarkets.minN}..${topMarkets.maxN}.`, {
      default: topMarkets.defaultN,
    }).optional(),
    as_of: queryAsOf,
  });

const marketCursor = (context: RouteContext) =>
  context.cursors.codec<MarketListPosition, [number, string]>(
    'markets',
    (position) => [position.lastTradedAt, position.conditionId],
    z.tuple([z.int().min(0), z.string().max(200)]),
    ([lastTradedAt, conditionId]) => ({ lastTradedAt, conditionId }),
  );

/** list_trader_markets: one recency-ordered page of the call's trader's markets (clamped to the visible set). */
export async function listTraderMarkets(
  context: RouteContext,
  call: Call,
  query: z.infer<ReturnType<typeof marketListQuerySchema>>,
): Promise<z.infer<typeof marketListSchema>> {
  const limit = pageLimit(query.limit, context.config.api.marketsList);
  const trader = await traderOf(call.admitted);
  const cursor = marketCursor(context);
  const after = cursor.decode(query.cursor, trader.wallet);
  const request = { after, limit, historyDepth: call.caller.limits.historyDepth };
  const page =
    query.as_of === undefined
      ? await context.reader.marketsPage(trader.wallet, request)
      : await readTraderMarkets(
          context.store,
          trader.wallet,
          request,
          traderSourcesOf(context, trader.wallet, query.as_of),
        );
  return { trader, markets: page.markets, next_cursor: page.next ? cursor.encode(trader.wallet, page.next) : null };
}

/** get_top_markets: the four ranked slices, n rows each (clamped), within the visible set. */
export async function getTopMarkets(
  context: RouteContext,
  call: Call,
  query: z.infer<ReturnType<typeof topMarketsQuerySchema>>,
): Promise<z.infer<typeof topMarketsSchema>> {
  const { topMarkets } = context.config.api;
  const n = Math.min(topMarkets.maxN, Math.max(topMarkets.minN, query.n ?? topMarkets.defaultN));
  const trader = await traderOf(call.admitted);
  return {
    trader,
    ...(await readTopMarkets(
      context.store,
      trader.wallet,
      n,
      { historyDepth: call.caller.limits.historyDepth },
      traderSourcesOf(context, trader.wallet, query.as_of),
    )),
  };
}

/** get_market_summary: one market's statistics for the call's trader, past the history wall. */
export async function getMarketSummary(
  context: RouteContext,
  call: Call,
  params: { condition_id: string },
  query: z.infer<typeof summaryQuerySchema> = {},
): Promise<z.infer<typeof marketSummaryResponseSchema>> {
  const conditionId = parseConditionId(params.condition_id);
  const trader = await traderOf(call.admitted);
  const asOf = query.as_of;
  if (asOf !== undefined) {
    // As of a past instant: the history wall over the markets known then, and the parts up to it.
    const sources = traderSourcesOf(context, trader.wallet, asOf);
    const detail = await loadVisibleMarket(
      context,
      call.caller,
      trader.wallet,
      conditionId,
      async () => (await readMarketSummaryAndMarket(context.store, trader.wallet, conditionId, sources, asOf)).detail,
      async (depth) => marketAccessAmong((await sources.walletMarkets(trader.wallet)).markets, conditionId, depth),
    );
    return { market: detail.market, summary: detail.summary, trader };
  }
  const detail = await loadVisibleMarket(context, call.caller, trader.wallet, conditionId, () =>
    context.reader.marketSummary(trader.wallet, conditionId),
  );
  return { market: detail.market, summary: detail.summary, trader };
}

/** Query of a summary (REST) and its parameters beside `trader` and `market` (MCP get_market_summary). */
export const summaryQuerySchema = z.object({ as_of: queryAsOf });

/**
 * A trader's market behind a market-scoped route (summary, chart, raw ticks, tape), past the history
 * wall: for a caller with a limited history depth, a market the trader never traded is 404
 * market_not_found and one outside the trader's `historyDepth` most recent is 403 depth_gated, both
 * decided before `read` (the expensive part) runs. `read` answering null is market_not_found.
 */
export async function loadVisibleMarket<T>(
  context: Pick<RouteContext, 'store' | 'config'>,
  caller: Caller,
  wallet: string,
  conditionId: string,
  read: () => Promise<T | null>,
  /** Where the market stands at this depth (default: the store's rows of today). */
  accessAt: (historyDepth: number) => Promise<MarketAccess> = (depth) =>
    readMarketAccess(context.store, wallet, conditionId, depth),
): Promise<T> {
  const { limits } = caller;
  if (limits.historyDepth >= 0) {
    const access = await accessAt(limits.historyDepth);
    if (access === 'not_traded') throw errors.marketNotFound(conditionId);
    if (access === 'beyond_depth') {
      const next = nextPlan(caller.planId);
      throw errors.depthGated(limits, next ? context.config.plans[next] : null);
    }
  }
  const found = await read();
  if (found === null) throw errors.marketNotFound(conditionId);
  return found;
}

/**
 * OpenAPI text of the history-depth wall, from the plans in config: one sentence per plan that limits
 * the depth (`what(depth)` completes "On <plan>, …"); empty when no plan does.
 */
export function historyDepthNote(config: Config, what: (depth: number) => string): string {
  return PLAN_IDS.filter((id) => config.plans[id].historyDepth >= 0)
    .map((id) => `On ${config.plans[id].name}, ${what(config.plans[id].historyDepth)}`)
    .join(' ');
}
