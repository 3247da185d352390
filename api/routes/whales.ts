/** `GET /flow/whales`: large live accumulations across markets, ranked. */
import { z } from 'zod';
import { readWhaleFlow, whaleFlowSchema, WHALE_RANKINGS } from '../../projections/whales.ts';
import type { ApiApp, RouteContext } from '../context.ts';
import { errorResponses, limitParameter, pageLimit, queryInt, queryNumber } from '../http.ts';

export function registerWhaleRoutes(app: ApiApp, context: RouteContext): void {
  const whales = context.config.whales;
  const limits = { defaultLimit: whales.defaultLimit, maxLimit: whales.maxLimit };
  app.get(
    '/flow/whales',
    {
      schema: {
        operationId: 'get_whale_flow',
        summary: 'Large live accumulations across markets',
        description: `Ranks live accumulations (one wallet, one market, one token side). by=burst (default) ranks burst_usd, the net buys since that accumulation's last pause of burst_gap_s (${whales.burstGapSeconds}) seconds; by=window ranks the whole-window net total. min_usd (default ${whales.defaultMinUsd}) is clamped up to coverage.exact_above_usd (${whales.exactAboveUsd}). Figures are leads, fresh to the minute: confirm them with the trader fills endpoint. REST only.`,
        querystring: z.object({
          min_usd: queryNumber(`Minimum ranking USD; default ${whales.defaultMinUsd}; clamped up to coverage.exact_above_usd.`, { default: whales.defaultMinUsd }).optional(),
          by: z.enum(WHALE_RANKINGS).optional().meta({ description: 'burst (default) or window; any other value is 422.', default: 'burst' }),
          window_h: queryInt(`Window in hours; default ${whales.defaultWindowHours}; clamped to 1..${whales.maxWindowHours}.`, { default: whales.defaultWindowHours }).optional(),
          limit: limitParameter(limits, 'rows'),
        }),
        response: { 200: whaleFlowSchema, ...errorResponses(400, 504) },
      },
    },
    async (request) => {
      const query = request.query;
      const limit = pageLimit(query.limit, limits);
      const windowHours = Math.min(whales.maxWindowHours, Math.max(1, query.window_h ?? whales.defaultWindowHours));
      return readWhaleFlow(
        context.store,
        { minUsd: query.min_usd ?? whales.defaultMinUsd, by: query.by ?? 'burst', windowHours, limit, nowSeconds: context.now() },
        { exactAboveUsd: whales.exactAboveUsd, burstGapSeconds: whales.burstGapSeconds },
      );
    },
  );
}
