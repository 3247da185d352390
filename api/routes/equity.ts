/** `GET /traders/{trader}/pnl-series`: the upstream provider's equity (profit) curve of a trader. */
import { z } from 'zod';
import { EQUITY_WINDOWS, readEquitySeries } from '../../projections/equity.ts';
import { traderSchema } from '../../projections/traders.ts';
import type { ApiApp, RouteContext } from '../context.ts';
import { errors } from '../errors.ts';
import { errorResponses } from '../http.ts';
import { traderParamsSchema } from './traders.ts';

export const equitySeriesSchema = z.object({
  trader: traderSchema,
  window: z.enum(EQUITY_WINDOWS),
  model: z.literal('upstream_profile'),
  series: z.array(z.tuple([z.int(), z.number()])).meta({ description: '[ts, pnl_usd] points in time order.' }),
  peak: z.number().nullable().meta({ description: 'Highest pnl_usd in the window; null without points.' }),
  low: z.number().nullable().meta({ description: 'Lowest pnl_usd in the window; null without points.' }),
  max_drawdown: z.number().min(0).meta({ description: 'Worst drawdown as a positive magnitude: max over i of running_max − p[i] (per point dd[i] = p[i] − running_max).' }),
  as_of: z.int().nullable().meta({ description: "When the upstream's figures were taken (epoch seconds); null when it has none for this trader." }),
});

export function registerEquityRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/traders/:trader/pnl-series',
    {
      schema: {
        operationId: 'get_pnl_series',
        summary: "A trader's cumulative profit curve",
        description:
          "The upstream provider's equity curve (model upstream_profile) over a window: 24h, 7d, 30d (rolling back from now), ytd (from 1 January UTC), 1y, all (default). When the upstream provider is down the answer is 503 {error: \"upstream_offline\", status: \"upstream_offline\", message}: try again later.",
        params: traderParamsSchema,
        querystring: z.object({
          window: z.enum(EQUITY_WINDOWS).optional().meta({ description: 'One of 24h, 7d, 30d, ytd, 1y, all (default all). Any other value is 422.', default: 'all' }),
        }),
        response: { 200: equitySeriesSchema, ...errorResponses(400, 403, 404, 503, 504) },
      },
    },
    async (request) => {
      const trader = await context.resolveTrader(request.params.trader);
      const series = await readEquitySeries(context.store, trader.wallet, request.query.window ?? 'all', {
        nowSeconds: context.now(),
        upstreamStaleAfterSeconds: context.config.upstream.staleAfterSeconds,
      });
      if (series.upstream.state === 'offline') throw errors.upstreamOffline();
      const { upstream: _upstream, ...body } = series;
      return { trader, ...body };
    },
  );
}
