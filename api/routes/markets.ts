/** A trader's markets: the recency-ordered list, the top-markets slices, and one market's summary. */
import type { RouteContext } from '../../operations/context.ts';
import { type ApiApp, applyMarketCaching, callOf, errorResponses, notModifiedSchema, replyAsOf } from '../http.ts';
import {
  getMarketSummary,
  getTopMarkets,
  historyDepthNote,
  listTraderMarkets,
  marketDepthWall,
  marketListQuerySchema,
  marketListSchema,
  marketParamsSchema,
  marketSummaryResponseSchema,
  summaryQuerySchema,
  topMarketsQuerySchema,
  topMarketsSchema,
} from '../../operations/markets.ts';
import { traderParamsSchema } from '../../operations/traders.ts';
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
          "Market rows ordered by the trader's last fill in each market, last_traded_at (recency only; it cannot sort: extremes come from top-markets). Page with next_cursor until it is null.",
          "pnl_usd of a resolved row is its result; of an open row, cash flow (money deployed counts as spent), whose standing is pnl_marked_usd (open rows only, holdings at the market's last trade). pnl_usd includes split, merge and redemption legs that never appear as fills, so it cannot be rebuilt from fills.",
          'An unbounded list is large for an agent (a full page is tens of thousands of tokens): a small limit is the control.',
          historyDepthNote(
            config,
            (depth) =>
              `the list holds only the trader's ${depth} most recent markets (this order): paging walks exactly those, then next_cursor is null; older markets are outside the plan's history depth.`,
          ),
        ]
          .filter(Boolean)
          .join('\n\n'),
        params: traderParamsSchema,
        querystring: marketListQuerySchema(config),
        response: { 200: marketListSchema, 304: notModifiedSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) => {
      const body = await listTraderMarkets(context, callOf(request), request.query);
      return replyAsOf(request, reply, body, request.query.as_of, config);
    },
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
          historyDepthNote(
            config,
            (depth) =>
              `every slice ranks only within the trader's ${depth} most recent markets (the markets list's order).`,
          ),
        ]
          .filter(Boolean)
          .join(' '),
        params: traderParamsSchema,
        querystring: topMarketsQuerySchema(config),
        response: { 200: topMarketsSchema, 304: notModifiedSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) => {
      const body = await getTopMarkets(context, callOf(request), request.query);
      return replyAsOf(request, reply, body, request.query.as_of, config);
    },
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
        querystring: summaryQuerySchema,
        response: { 200: marketSummaryResponseSchema, 304: notModifiedSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) => {
      const body = await getMarketSummary(context, callOf(request), request.params, request.query);
      // A resolved market's summary, or any as of a past instant, never changes.
      const immutable = body.market.resolved || request.query.as_of !== undefined;
      if (applyMarketCaching(request, reply, body, immutable, config) === 'not-modified')
        return reply.code(304).send(null);
      return body;
    },
  );
}
