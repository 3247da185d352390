/** `GET /traders/{trader}/skill`: is the trader good, or lucky (edge, calibration, interval, rank). */
import type { RouteContext } from '../../operations/context.ts';
import { historyDepthNote } from '../../operations/markets.ts';
import { getTraderSkill, skillQuerySchema, traderSkillSchema } from '../../operations/skill.ts';
import { traderParamsSchema } from '../../operations/traders.ts';
import { type ApiApp, callOf, errorResponses, notModifiedSchema, replyAsOf } from '../http.ts';

export function registerSkillRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/traders/:trader/skill',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'get_trader_skill',
        summary: 'Is a trader good, or lucky',
        description: [
          "Over the trader's resolved markets with entries: edge (realized return per dollar above what the entry prices implied, net of fees; losers held to the resolution count), its 90% bootstrap interval (seeded: reproducible) and the edge shrunk toward 0 by the evidence; held-to-resolution and sold-before-resolution apart; calibration (the Brier score of the entry prices as forecasts of the outcomes bought, its decomposition and a table by price bucket); the percentile among wallets with enough resolved markets. Formulas with a worked example: docs/skill.md.",
          'as_of (epoch seconds): the answer as known then, from the markets resolved and the fills made by then, its prior and percentile among the wallets as known then; immutable, with an ETag.',
          historyDepthNote(
            context.config,
            (depth) => `the answer weighs only the trader's ${depth} most recent markets (the markets list's order).`,
          ),
        ]
          .filter(Boolean)
          .join(' '),
        params: traderParamsSchema,
        querystring: skillQuerySchema,
        response: { 200: traderSkillSchema, 304: notModifiedSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) =>
      replyAsOf(
        request,
        reply,
        await getTraderSkill(context, callOf(request), request.query),
        request.query.as_of,
        context.config,
      ),
  );
}
