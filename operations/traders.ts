/** The card operation (REST `GET /traders/{trader}`, MCP get_trader_card), and the `{trader}` path parameter every trader-scoped read shares. */
import { z } from 'zod';
import { POLYMARKET_V1_FIRST_BLOCK } from '../chain.ts';
import type { Config } from '../config.ts';
import { readTraderCard, type CardSettings, type TraderCard } from '../projections/cards.ts';
import { asOfSources } from '../projections/as-of.ts';
import type { ReadSources } from '../projections/sources.ts';
import { traderCallOf, type Call, type RouteContext } from './context.ts';
import { noteReconciliation } from '../metrics/registry.ts';
import { queryAsOf } from './parameters.ts';

export const traderParamsSchema = z.object({
  trader: z.string().meta({
    description:
      'A 0x wallet (any case), a profile URL of the upstream provider (https://polymarket.com/profile/0x…, https://polymarket.com/@name; URL-encode it), or a display name. A 0x string of the wrong length is 400 invalid_wallet (never tried as a name); an unknown name is 404 trader_not_found; an unknown valid wallet is a zeroed card.',
  }),
});

/** The card's settings: the operator's V1 override, the upstream's staleness, the chain's facts. */
export function cardSettingsOf(config: Config): CardSettings {
  return {
    includeV1: config.card.includeV1,
    upstreamStaleAfterSeconds: config.upstream.staleAfterSeconds,
    v2StartTs: config.exchangeV2StartTs,
    v1FirstBlock: POLYMARKET_V1_FIRST_BLOCK,
  };
}

/** Query of the card (REST) and its parameters beside `trader` (MCP get_trader_card). */
export const cardQuerySchema = z.object({ as_of: queryAsOf });

/** The reads about one trader: today's (cached), or as of a past instant. */
export function traderSourcesOf(context: RouteContext, wallet: string, asOf: number | undefined): ReadSources {
  if (asOf === undefined) return context.reader.sources;
  return asOfSources(context.reader.sources, asOf, {
    markets: () => context.reader.walletMarketsAsOf(wallet, asOf),
    upstreamHistory: () => context.reader.upstreamHistoryAsOf(wallet, asOf),
  });
}

/** get_trader_card: the career card of the call's trader, now or as of a past instant. */
export async function getTraderCard(
  context: RouteContext,
  call: Call,
  query: z.infer<typeof cardQuerySchema> = {},
): Promise<TraderCard> {
  // The name comes with the card's reads, not before them.
  const trader = traderCallOf(call.admitted);
  const { config } = context;
  const sources = traderSourcesOf(context, trader.wallet, query.as_of);
  const card = await readTraderCard(
    context.store,
    trader,
    cardSettingsOf(config),
    query.as_of ?? context.now(),
    sources,
  );
  // Today's agreement only: a past instant's gap says nothing of the service now.
  if (card.reconciliation && query.as_of === undefined)
    noteReconciliation(trader.wallet, card.reconciliation.gap_ratio);
  return card;
}
