/** get_pnl_series (REST `/traders/{trader}/pnl-series`). */
import { z } from 'zod';
import { getPnlSeries, pnlSeriesQuerySchema, pnlSeriesSchema } from '../../operations/equity.ts';
import type { Config } from '../../config.ts';
import { chartAppToolMeta } from '../resources/index.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe, traderArgument, walletCapNote } from './arguments.ts';

export function equityTools(config: Config): Tool[] {
  return [
    defineTool({
      name: 'get_pnl_series',
      title: "A trader's cumulative profit curve",
      description: describe(
        "A trader's cumulative profit curve from the upstream provider (model upstream_profile): series of [ts, pnl_usd] over window (24h, 7d, 30d, ytd, 1y or all; default all), with peak, low and max_drawdown (a positive magnitude; drawdown per point is pnl minus the running maximum). Its last point tracks upstream.pnl of the card. When the provider is down the call is refused with upstream_offline: try again later. A client that supports MCP Apps draws this answer as a chart right after the call (resource ui://trader-analytics/equity-chart.html).",
        COST,
        walletCapNote(config),
      ),
      input: z.object({
        trader: traderArgument,
        window: pnlSeriesQuerySchema.shape.window.meta({
          description: 'One of 24h, 7d, 30d, ytd, 1y, all (default all).',
        }),
      }),
      output: pnlSeriesSchema,
      traderScoped: true,
      meta: chartAppToolMeta('equity'),
      run: (context, call, { window }) => getPnlSeries(context, call, { window }),
    }),
  ];
}
