/** A trader's markets: the recency-ordered list, the top-markets slices, and one market's summary. */
import { z } from 'zod';
import {
  marketHeaderSchema,
  marketRowSchema,
  marketSummarySchema,
  readMarketSummary,
  readTopMarkets,
  readTraderMarkets,
  type MarketListPosition,
} from '../../projections/markets.ts';
import { traderSchema } from '../../projections/traders.ts';
import type { Config } from '../../config.ts';
import { callOf, traderOf, type ApiApp, type Call, type RouteContext } from '../context.ts';
import {
  applyMarketCaching,
  errorResponses,
  historyDepthNote,
  limitParameter,
  loadVisibleMarket,
  notModifiedSchema,
  pageLimit,
  parseConditionId,
  queryCursor,
  queryInt,
} from '../http.ts';
import { traderParamsSchema } from './traders.ts';

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

export const marketSummaryResponseSchema = z.object({ market: marketHeaderSchema, summary: marketSummarySchema, trader: traderSchema });

export const marketParamsSchema = traderParamsSchema.extend({
  condition_id: z.string().meta({ description: 'Market id: 0x + 64 hex (from the markets list or top-markets). Anything else is 400 invalid_condition_id.' }),
});

/** The depth wall of the market-scoped routes (summary, chart, raw ticks, tape), for their descriptions. */
export const marketDepthWall = (depth: number): string =>
  `only the trader's ${depth} most recent markets (the markets list's order) can be read; an older market the trader traded is 403 depth_gated (a plan wall: do not retry, relay the message).`;

/** Query of the markets list (REST) and the parameters of list_trader_markets (MCP) beside `trader`. */
export const marketListQuerySchema = (config: Config) => z.object({ cursor: queryCursor, limit: limitParameter(config.api.marketsList, 'market rows') });

/** Query of top-markets (REST) and the parameters of get_top_markets (MCP) beside `trader`. */
export const topMarketsQuerySchema = ({ api: { topMarkets } }: Config) =>
  z.object({
    n: queryInt(`Rows per slice; default ${topMarkets.defaultN}; clamped to ${topMarkets.minN}..${topMarkets.maxN}.`, { default: topMarkets.defaultN }).optional(),
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
  const trader = traderOf(call.admitted);
  const cursor = marketCursor(context);
  const after = cursor.decode(query.cursor, trader.wallet);
  const page = await readTraderMarkets(context.store, trader.wallet, { after, limit, historyDepth: call.caller.limits.historyDepth });
  return { trader, markets: page.markets, next_cursor: page.next ? cursor.encode(trader.wallet, page.next) : null };
}

/** get_top_markets: the four ranked slices, n rows each (clamped), within the visible set. */
export async function getTopMarkets(context: RouteContext, call: Call, query: z.infer<ReturnType<typeof topMarketsQuerySchema>>): Promise<z.infer<typeof topMarketsSchema>> {
  const { topMarkets } = context.config.api;
  const n = Math.min(topMarkets.maxN, Math.max(topMarkets.minN, query.n ?? topMarkets.defaultN));
  const trader = traderOf(call.admitted);
  return { trader, ...(await readTopMarkets(context.store, trader.wallet, n, { historyDepth: call.caller.limits.historyDepth })) };
}

/** get_market_summary: one market's statistics for the call's trader, past the history wall. */
export async function getMarketSummary(context: RouteContext, call: Call, params: { condition_id: string }): Promise<z.infer<typeof marketSummaryResponseSchema>> {
  const conditionId = parseConditionId(params.condition_id);
  const trader = traderOf(call.admitted);
  const detail = await loadVisibleMarket(context, call.caller, trader.wallet, conditionId, () => readMarketSummary(context.store, trader.wallet, conditionId));
  return { market: detail.market, summary: detail.summary, trader };
}

export function registerMarketRoutes(app: ApiApp, context: RouteContext): void {
  const { config } = context;

  app.get(
    '/traders/:trader/markets',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'list_trader_markets',
        summary: "A trader's markets, most recent first",
        description: [
          "Market rows ordered by the trader's most recent activity (recency only; it cannot sort: extremes come from top-markets). Page with next_cursor until it is null.",
          "pnl_usd of a resolved row is its result; of an open row, cash flow (money deployed counts as spent), whose standing is pnl_marked_usd (open rows only, holdings at the market's last trade). pnl_usd includes split, merge and redemption legs that never appear as fills, so it cannot be rebuilt from fills.",
          'An unbounded list is large for an agent (a full page is tens of thousands of tokens): a small limit is the control.',
          historyDepthNote(
            config,
            (depth) => `the list holds only the trader's ${depth} most recent markets (this order): paging walks exactly those, then next_cursor is null; older markets are outside the plan's history depth.`,
          ),
        ]
          .filter(Boolean)
          .join('\n\n'),
        params: traderParamsSchema,
        querystring: marketListQuerySchema(config),
        response: { 200: marketListSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request) => listTraderMarkets(context, callOf(request), request.query),
  );

  const { topMarkets } = config.api;
  app.get(
    '/traders/:trader/top-markets',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'get_top_markets',
        summary: "A trader's ranked highlight slices",
        description: [
          `Four slices of market rows: top_wins and top_losses rank the realized result over resolved markets only; most_traded ranks by fills; top_volume by volume. n rows per slice (default ${topMarkets.defaultN}, clamped to ${topMarkets.minN}..${topMarkets.maxN}). Not cached. On accounts with very many markets a large n can end in 504 query_timeout.`,
          historyDepthNote(config, (depth) => `every slice ranks only within the trader's ${depth} most recent markets (the markets list's order).`),
        ]
          .filter(Boolean)
          .join(' '),
        params: traderParamsSchema,
        querystring: topMarketsQuerySchema(config),
        response: { 200: topMarketsSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request) => getTopMarkets(context, callOf(request), request.query),
  );

  app.get(
    '/traders/:trader/markets/:condition_id/summary',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'get_market_summary',
        summary: "Computed statistics of a trader's market",
        description: [
          "{market, summary, trader}: the market header and the trader's statistics in it (counts, notionals, entry, fill-size distribution, timing, result, one sides entry per token).",
          'usd_share_first_tenth near zero with a high usd_share_last_tenth marks a late piler. roi is meaningless for split-sellers (sell-dominated flow).',
          'A resolved market is immutable: the answer carries a strong ETag and Cache-Control immutable, and If-None-Match answers 304. Open markets are cached briefly.',
          historyDepthNote(config, marketDepthWall),
          'A market the trader never traded is 404 market_not_found.',
        ]
          .filter(Boolean)
          .join('\n\n'),
        params: marketParamsSchema,
        response: { 200: marketSummaryResponseSchema, 304: notModifiedSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) => {
      const body = await getMarketSummary(context, callOf(request), request.params);
      if (applyMarketCaching(request, reply, body, body.market.resolved, config) === 'not-modified') return reply.code(304).send(null);
      return body;
    },
  );
}
