/** `GET /traders/{trader}`: the career card, blended with the upstream provider's own statistics. */
import { z } from 'zod';
import { readTraderCard, traderCardSchema, type TraderCard } from '../../projections/cards.ts';
import { callOf, traderOf, type ApiApp, type Call, type RouteContext } from '../context.ts';
import { errorResponses } from '../http.ts';

export const traderParamsSchema = z.object({
  trader: z.string().meta({
    description:
      'A 0x wallet (any case), a profile URL of the upstream provider (https://polymarket.com/profile/0x…, https://polymarket.com/@name; URL-encode it), or a display name. A 0x string of the wrong length is 400 invalid_wallet (never tried as a name); an unknown name is 404 trader_not_found; an unknown valid wallet is a zeroed card.',
  }),
});

/** get_trader_card: the career card of the call's trader. */
export async function getTraderCard(context: RouteContext, call: Call): Promise<TraderCard> {
  const trader = traderOf(call.admitted);
  const { config } = context;
  return readTraderCard(context.store, trader, { includeV1: config.card.includeV1, upstreamStaleAfterSeconds: config.upstream.staleAfterSeconds }, context.now());
}

export function registerTraderRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/traders/:trader',
    {
      config: { budget: { traderScoped: true } },
      schema: {
        operationId: 'get_trader_card',
        summary: 'Career card of a trader',
        description: [
          'The career card: archive statistics (card) and the upstream provider\'s own figures (upstream). Sent with Cache-Control: no-store.',
          'Interpretation: the one profit to quote is upstream.pnl (the provider\'s model, realized plus unrealized, full history). When the upstream is unreachable, upstream is {status: "upstream_offline"} and only then card carries career_pnl_usd and pnl_marked_usd as fallbacks; the card itself never fails because of the upstream.',
          'Card statistics cover the V2 era until a v1 backfill is done. A valid but unknown wallet returns a zeroed card, not a 404.',
          'Budget: the card is a trader-scoped read: on Basic it counts a new distinct wallet toward the daily cap of 3 and is refused with 403 wallet_quota once the cap is spent.',
        ].join('\n\n'),
        params: traderParamsSchema,
        response: { 200: traderCardSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) => {
      const card = await getTraderCard(context, callOf(request));
      reply.header('Cache-Control', 'no-store');
      return card;
    },
  );
}
