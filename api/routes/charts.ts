/**
 * `GET /traders/{trader}/markets/{condition_id}/chart.html`: the market chart template (operations/charts)
 * filled with the live sampled chart and its zoom slabs, for a person to open. A real route: the bearer
 * key, the gates (one call, trader-scoped) and the history wall apply as on the sampled chart. It answers
 * HTML, so it stays out of /openapi.json (a JSON API document); docs/api.md documents it.
 */
import { z } from 'zod';
import { readChartSlabs } from '../../projections/prices.ts';
import {
  CHART_CSP,
  CHART_THEMES,
  chartTemplate,
  fillChartTemplate,
  isTimeZone,
} from '../../operations/charts/templates.ts';
import type { RouteContext } from '../../operations/context.ts';
import { type ApiApp, applyMarketCaching, callOf } from '../http.ts';
import { marketParamsSchema } from '../../operations/markets.ts';
import { getMarketChart, sampledChartQuerySchema } from '../../operations/prices.ts';

export function registerChartRoutes(app: ApiApp, context: RouteContext): void {
  const { config } = context;
  app.get(
    '/traders/:trader/markets/:condition_id/chart.html',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        hide: true,
        params: marketParamsSchema,
        querystring: z.object({
          ...sampledChartQuerySchema(config).shape,
          theme: z.enum(CHART_THEMES).optional(),
          // The zone of the time axis (the data's time_zone); default: the zone the title names, else UTC.
          time_zone: z
            .string()
            .max(64)
            .refine(isTimeZone, 'an IANA time zone, such as America/New_York or UTC')
            .optional(),
        }),
      },
    },
    async (request, reply) => {
      const { theme = 'night', time_zone, ...query } = request.query;
      const chart = await getMarketChart(context, callOf(request), {
        condition_id: request.params.condition_id,
        ...query,
      });
      const slabs = await readChartSlabs(
        context.store,
        chart.market.condition_id,
        chart.series,
        chart.fills.map((fill) => fill.ts),
        config.charts.slabPointBudget,
      );
      const page = fillChartTemplate(chartTemplate('market', 'html', theme, config.charts.scriptHost)!, {
        ...chart,
        slabs,
        ...(time_zone ? { time_zone } : {}),
      });
      if (applyMarketCaching(request, reply, page, chart.market.resolved, config) === 'not-modified')
        return reply.code(304).send();
      return reply
        .header('Content-Type', 'text/html; charset=utf-8')
        .header('Content-Security-Policy', CHART_CSP)
        .header('X-Content-Type-Options', 'nosniff')
        .send(page);
    },
  );
}
