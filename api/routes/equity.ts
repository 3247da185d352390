/** `GET /traders/{trader}/pnl-series`: the upstream provider's equity (profit) curve of a trader. */
import { z } from 'zod';
import { EQUITY_WINDOWS, equitySeriesSchema, readEquitySeries } from '../../projections/equity.ts';
import { traderSchema } from '../../projections/traders.ts';
import { callOf, traderOf, type ApiApp, type Call, type RouteContext } from '../context.ts';
import { errors } from '../errors.ts';
import { errorResponses } from '../http.ts';
import { traderParamsSchema } from './traders.ts';

export const pnlSeriesQuerySchema = z.object({
  window: z.enum(EQUITY_WINDOWS).optional().meta({ description: 'One of 24h, 7d, 30d, ytd, 1y, all (default all). Any other value is 422.', default: 'all' }),
});

export const pnlSeriesSchema = z.object({ trader: traderSchema, ...equitySeriesSchema.shape });

/** get_pnl_series: the upstream provider's equity curve of the call's trader; 503 upstream_offline when the provider is down. */
export async function getPnlSeries(context: RouteContext, call: Call, query: z.infer<typeof pnlSeriesQuerySchema>): Promise<z.infer<typeof pnlSeriesSchema>> {
  const trader = traderOf(call.admitted);
  const series = await readEquitySeries(context.store, trader.wallet, query.window ?? 'all', {
    nowSeconds: context.now(),
    upstreamStaleAfterSeconds: context.config.upstream.staleAfterSeconds,
  });
  if (series.upstream.state === 'offline') throw errors.upstreamOffline();
  const { upstream: _upstream, ...body } = series;
  return { trader, ...body };
}

export function registerEquityRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/traders/:trader/pnl-series',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'get_pnl_series',
        summary: "A trader's cumulative profit curve",
        description:
          "The upstream provider's equity curve (model upstream_profile) over a window: 24h, 7d, 30d (rolling back from now), ytd (from 1 January UTC), 1y, all (default). When the upstream provider is down the answer is 503 {error: \"upstream_offline\", status: \"upstream_offline\", message}: try again later.",
        params: traderParamsSchema,
        querystring: pnlSeriesQuerySchema,
        response: { 200: pnlSeriesSchema, ...errorResponses(400, 403, 404, 503, 504) },
      },
    },
    async (request) => getPnlSeries(context, callOf(request), request.query),
  );
}
