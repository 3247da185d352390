/** `GET /traders/{trader}/fills`: a trader's fills across markets since a time, oldest first. */
import type { RouteContext } from '../../operations/context.ts';
import { type ApiApp, callOf, errorResponses } from '../http.ts';
import { fillsPageSchema, fillsQuerySchema, getRecentFills } from '../../operations/fills.ts';
import { historyDepthNote } from '../../operations/markets.ts';
import { traderParamsSchema } from '../../operations/traders.ts';
export function registerFillRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/traders/:trader/fills',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'get_recent_fills',
        summary: "A trader's fills across markets (the monitoring primitive)",
        description: [
          "Fills ordered chronologically (ts, then market, then fill), from since (inclusive, epoch seconds; default the beginning). Poll by passing the last fill's ts as since (that second is sent again, so late fills of the same second are not missed; de-duplicate on your side), or follow next_cursor. Freshness tracks the archive pipeline (minutes). Clamped to the caller's visible market set.",
          historyDepthNote(
            context.config,
            (depth) =>
              `only the fills of the trader's ${depth} most recent markets (the markets list's order) are returned; fills of older markets are left out (no error).`,
          ),
        ]
          .filter(Boolean)
          .join(' '),
        params: traderParamsSchema,
        querystring: fillsQuerySchema(context.config),
        response: { 200: fillsPageSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request) => getRecentFills(context, callOf(request), request.query),
  );
}
