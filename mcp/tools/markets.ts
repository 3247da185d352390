/** get_top_markets, list_trader_markets, get_market_summary (REST top-markets, markets list, summary). */
import { z } from 'zod';
import {
  getMarketSummary,
  getTopMarkets,
  listTraderMarkets,
  marketListQuerySchema,
  marketListSchema,
  marketSummaryResponseSchema,
  summaryQuerySchema,
  topMarketsQuerySchema,
  topMarketsSchema,
} from '../../operations/markets.ts';
import type { Config } from '../../config.ts';
import { defineTool, type Tool } from '../tool.ts';
import {
  COST,
  describe,
  listDepthNote,
  marketArgument,
  marketDepthNote,
  PNL_RULES,
  traderArgument,
  walletCapNote,
} from './arguments.ts';

export function marketTools(config: Config): Tool[] {
  const { topMarkets, marketsList } = config.api;
  return [
    defineTool({
      name: 'get_top_markets',
      title: "A trader's ranked highlight markets",
      description: describe(
        `Four ranked slices of a trader's market rows: top_wins and top_losses (realized result, resolved markets only), most_traded (by fills), top_volume (by volume); n rows per slice (default ${topMarkets.defaultN}, clamped to ${topMarkets.minN}..${topMarkets.maxN}). The cheap way to find a trader's revealing markets: pass their condition_id as market to get_market_summary. Keep n small; a large n on a very large account can time out (query_timeout).`,
        PNL_RULES,
        COST,
        walletCapNote(config),
        listDepthNote(config, 'every slice ranks'),
      ),
      input: z.object({ trader: traderArgument, ...topMarketsQuerySchema(config).shape }),
      output: topMarketsSchema,
      traderScoped: true,
      run: (context, call, { trader: _trader, ...query }) => getTopMarkets(context, call, query),
    }),
    defineTool({
      name: 'list_trader_markets',
      title: "A trader's markets, most recent first",
      description: describe(
        `One page of a trader's market rows, most recently traded first (by last_traded_at, the last fill; {markets, next_cursor}; pass next_cursor back as cursor for the next page; null at the end). Recency only: for extremes use get_top_markets. A full page (default ${marketsList.defaultLimit} rows) is tens of thousands of tokens: pass a small limit (10 to 20) and page only when needed.`,
        PNL_RULES,
        'Costs 1 request per page (whoami shows what is left).',
        walletCapNote(config),
        listDepthNote(config, 'the list holds'),
      ),
      input: z.object({ trader: traderArgument, ...marketListQuerySchema(config).shape }),
      output: marketListSchema,
      traderScoped: true,
      run: (context, call, { trader: _trader, ...query }) => listTraderMarkets(context, call, query),
    }),
    defineTool({
      name: 'get_market_summary',
      title: "A trader's statistics in one market",
      description: describe(
        "A trader's computed statistics in one market ({market, summary, trader}); market is a condition_id from get_top_markets or list_trader_markets. summary: fill counts, buy and sell notionals, avg_entry_price (UP space: the probability of token 1), fill-size distribution, first and last fill, hold_seconds, usd_share_first_tenth and usd_share_last_tenth (near-zero first with a high last marks a late piler), pnl_usd, roi, won, and one sides entry per token (avg_entry in that token's own price).",
        "A resolved market's pnl_usd is its result; an open market's is cash flow. roi is meaningless for split-sellers (sell-dominated flow): judge them by pnl_usd. Small: the right tool to examine a market.",
        COST,
        walletCapNote(config),
        marketDepthNote(config),
        'A market the trader never traded is market_not_found.',
      ),
      input: z.object({ trader: traderArgument, market: marketArgument, ...summaryQuerySchema.shape }),
      output: marketSummaryResponseSchema,
      traderScoped: true,
      run: (context, call, { market, as_of }) => getMarketSummary(context, call, { condition_id: market }, { as_of }),
    }),
  ];
}
