/** `GET /traders/{trader}`: the career card, blended with the upstream provider's own statistics. */
import { z } from 'zod';
import { careerCardSchema, readCareer, type CareerCard } from '../../projections/careers.ts';
import { readUpstreamState } from '../../projections/equity.ts';
import { traderSchema, type Trader } from '../../projections/traders.ts';
import { readUpstreamProfile, upstreamProfileSchema, type UpstreamProfile } from '../../projections/upstream.ts';
import type { ApiApp, RouteContext } from '../context.ts';
import { errorResponses } from '../http.ts';

export const traderParamsSchema = z.object({
  trader: z.string().meta({
    description:
      'A 0x wallet (any case), a profile URL of the upstream provider (https://polymarket.com/profile/0x…, https://polymarket.com/@name; URL-encode it), or a display name. A 0x string of the wrong length is 400 invalid_wallet (never tried as a name); an unknown name is 404 trader_not_found; an unknown valid wallet is a zeroed card.',
  }),
});

const upstreamOfflineBlock = z.object({ status: z.literal('upstream_offline') }).meta({ description: 'The upstream provider is unreachable; the card falls back to the archive figures career_pnl_usd and pnl_marked_usd.' });

export const traderCardSchema = z.object({
  trader: traderSchema,
  card: careerCardSchema,
  upstream: z.union([upstreamProfileSchema, upstreamOfflineBlock]),
});
export type TraderCard = z.infer<typeof traderCardSchema>;

/** The card of a resolved trader: never fails because of the upstream. */
export async function readTraderCard(context: RouteContext, trader: Trader): Promise<TraderCard> {
  const now = context.now();
  const [career, profile, upstreamState] = await Promise.all([
    readCareer(context.store, trader.wallet, context.config.card.includeV1),
    readUpstreamProfile(context.store, trader.wallet),
    readUpstreamState(context.store, now, context.config.upstream.staleAfterSeconds),
  ]);
  const { career_pnl_usd, pnl_marked_usd, fills_count: _fills, ...statistics } = career;
  if (upstreamState.state === 'offline') {
    const card: CareerCard = { ...statistics, career_pnl_usd, pnl_marked_usd };
    return { trader, card, upstream: { status: 'upstream_offline' } };
  }
  const upstream: UpstreamProfile = profile ?? {
    // Online, but the provider has nothing on this wallet: its figures are zero as of its last heartbeat.
    pnl: 0,
    pnl_realized: 0,
    pnl_unrealized: 0,
    portfolio_value: 0,
    peak: 0,
    low: 0,
    max_drawdown: 0,
    profile_image: '',
    as_of: upstreamState.heartbeat_at ?? now,
  };
  return { trader, card: statistics, upstream };
}

export function registerTraderRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/traders/:trader',
    {
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
      const trader = await context.resolveTrader(request.params.trader);
      reply.header('Cache-Control', 'no-store');
      return readTraderCard(context, trader);
    },
  );
}
