/** `GET /traders/{trader}`: the career card, blended with the upstream provider's own statistics. */
import { traderCardSchema } from '../../projections/cards.ts';
import type { RouteContext } from '../../operations/context.ts';
import { type ApiApp, callOf, errorResponses, notModifiedSchema, replyAsOf } from '../http.ts';
import { cardQuerySchema, getTraderCard, traderParamsSchema } from '../../operations/traders.ts';
export function registerTraderRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/traders/:trader',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'get_trader_card',
        summary: 'Career card of a trader',
        description: [
          "The career card: archive statistics (card) and the upstream provider's own figures (upstream). Sent with Cache-Control: no-store.",
          'Interpretation: the one profit to quote is upstream.pnl (the provider\'s model, realized plus unrealized, full history). When the upstream is unreachable, upstream is {status: "upstream_offline"} and only then card carries career_pnl_usd and pnl_marked_usd as fallbacks; the card itself never fails because of the upstream.',
          'Card statistics cover the V2 era until a v1 backfill is done. A valid but unknown wallet returns a zeroed card, not a 404.',
          'Budget: the card is a trader-scoped read: on Basic it counts a new distinct wallet toward the daily cap of 3 and is refused with 403 wallet_quota once the cap is spent.',
          'as_of (epoch seconds): the card as the service knew it then (a market resolved later is open, marked at its last trade before it; upstream is the profile reported by then, else the offline form); immutable, with an ETag (If-None-Match answers 304).',
        ].join('\n\n'),
        params: traderParamsSchema,
        querystring: cardQuerySchema,
        response: { 200: traderCardSchema, 304: notModifiedSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) => {
      const card = await getTraderCard(context, callOf(request), request.query);
      if (request.query.as_of === undefined) reply.header('Cache-Control', 'no-store');
      return replyAsOf(request, reply, card, request.query.as_of, context.config);
    },
  );
}
