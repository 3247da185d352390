/** `GET /flow/whales`: large live accumulations across markets, ranked. */
import { whaleFlowSchema } from '../../projections/whales.ts';
import type { RouteContext } from '../../operations/context.ts';
import { type ApiApp, errorResponses } from '../http.ts';
import { getWhaleFlow, whaleFlowQuerySchema } from '../../operations/whales.ts';

export function registerWhaleRoutes(app: ApiApp, context: RouteContext): void {
  const whales = context.config.whales;
  app.get(
    '/flow/whales',
    {
      schema: {
        operationId: 'get_whale_flow',
        summary: 'Large live accumulations across markets',
        description: `Ranks live accumulations (one wallet, one market, one token side). by=burst (default) ranks burst_usd, the net buys since that accumulation's last pause of burst_gap_s (${whales.burstGapSeconds}) seconds; by=window ranks the whole-window net total. min_usd (default ${whales.defaultMinUsd}) is clamped up to coverage.exact_above_usd (${whales.exactAboveUsd}). Figures are leads, fresh to the minute: confirm them with the trader fills endpoint. REST only.`,
        querystring: whaleFlowQuerySchema(context.config),
        response: { 200: whaleFlowSchema, ...errorResponses(400, 504) },
      },
    },
    async (request) => getWhaleFlow(context, request.query),
  );
}
