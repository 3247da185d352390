/** `GET /traders/{trader}/pnl-series`: the upstream provider's equity (profit) curve of a trader. */
import type { RouteContext } from '../../operations/context.ts';
import { type ApiApp, callOf, errorResponses } from '../http.ts';
import { getPnlSeries, pnlSeriesQuerySchema, pnlSeriesSchema } from '../../operations/equity.ts';
import { traderParamsSchema } from '../../operations/traders.ts';
export function registerEquityRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/traders/:trader/pnl-series',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'get_pnl_series',
        summary: "A trader's cumulative profit curve",
        description:
          'The upstream provider\'s equity curve (model upstream_profile) over a window: 24h, 7d, 30d (rolling back from now), ytd (from 1 January UTC), 1y, all (default). When the upstream provider is down the answer is 503 {error: "upstream_offline", status: "upstream_offline", message}: try again later.',
        params: traderParamsSchema,
        querystring: pnlSeriesQuerySchema,
        response: { 200: pnlSeriesSchema, ...errorResponses(400, 403, 404, 503, 504) },
      },
    },
    async (request) => getPnlSeries(context, callOf(request), request.query),
  );
}
