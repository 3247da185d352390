/**
 * get_market_events (REST `/traders/{trader}/markets/{condition_id}`, the sampled chart). Raw ticks
 * (`raw=1`) and the full tape are the REST export path: no tool has them (read-api.md, Tool-protocol surface).
 */
import { z } from 'zod';
import { getMarketChart, sampledChartQuerySchema, sampledChartSchema } from '../../operations/prices.ts';
import type { Config } from '../../config.ts';
import { chartAppToolMeta } from '../resources/index.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe, marketArgument, marketDepthNote, traderArgument, walletCapNote } from './arguments.ts';

export function priceTools(config: Config): Tool[] {
  const { charts } = config;
  return [
    defineTool({
      name: 'get_market_events',
      title: "A market's price chart with the trader's fills",
      description: describe(
        `One market's sampled price chart with the trader's complete fill set ({market, trader, series, fills}). series.points are [ts, last, lo, hi] buckets, UP-normalized (0 to 1: the probability of token 1), at most points of them (default ${charts.defaultPoints}, clamped to ${charts.minPoints}..${charts.maxPoints}); from_ts and to_ts (epoch seconds) narrow the window (default: from the start named in the title to the last trade or the resolution); resolution forces a bucket size. fills is always the complete set (side, price, token_side, outcome, size_tokens, usd).`,
        "A client that supports MCP Apps draws this answer as a chart right after the call (resource ui://trader-analytics/market-chart.html). For charting and for timing entries against the price. For a market's figures get_market_summary is smaller; when you only need the shape, pass a small points (60 to 120). Draw the line at (lo + hi) / 2 with a band from lo to hi, never across gaps.",
        COST,
        walletCapNote(config),
        marketDepthNote(config),
        'A market the trader never traded is market_not_found.',
      ),
      input: z.object({ trader: traderArgument, market: marketArgument, ...sampledChartQuerySchema(config).shape }),
      output: sampledChartSchema,
      traderScoped: true,
      meta: chartAppToolMeta('market'),
      run: (context, call, { trader: _trader, market, ...query }) =>
        getMarketChart(context, call, { condition_id: market, ...query }),
    }),
  ];
}
