/** The pnl-series operation (REST `GET /traders/{trader}/pnl-series`, MCP get_pnl_series): the upstream provider's equity curve of a trader. */
import { z } from 'zod';
import { EQUITY_WINDOWS, equitySeriesSchema, readEquitySeries } from '../projections/equity.ts';
import { traderSchema } from '../projections/traders.ts';
import { traderOf, type Call, type RouteContext } from './context.ts';
import { errors } from './errors.ts';

export const pnlSeriesQuerySchema = z.object({
  window: z
    .enum(EQUITY_WINDOWS)
    .optional()
    .meta({ description: 'One of 24h, 7d, 30d, ytd, 1y, all (default all). Any other value is 422.', default: 'all' }),
});

export const pnlSeriesSchema = z.object({ trader: traderSchema, ...equitySeriesSchema.shape });

/** get_pnl_series: the upstream provider's equity curve of the call's trader; 503 upstream_offline when the provider is down or never reported on the trader. */
export async function getPnlSeries(
  context: RouteContext,
  call: Call,
  query: z.infer<typeof pnlSeriesQuerySchema>,
): Promise<z.infer<typeof pnlSeriesSchema>> {
  const trader = await traderOf(call.admitted);
  const series = await readEquitySeries(
    context.store,
    trader.wallet,
    query.window ?? 'all',
    { nowSeconds: context.now(), upstreamStaleAfterSeconds: context.config.upstream.staleAfterSeconds },
    context.reader.sources,
  );
  if (series.upstream.state === 'offline') throw errors.upstreamOffline();
  // A wallet the provider never reported on has no curve of the provider's: the same offline answer
  // as the card's upstream block gives it (docs/decisions.md), never an empty series stated as its.
  if (!series.reported)
    throw errors.upstreamOffline(
      'The upstream provider has not reported on this trader, so it has no profit curve to serve. The trader card serves the archive figures.',
    );
  const { upstream: _upstream, reported: _reported, ...body } = series;
  return { trader, ...body };
}
