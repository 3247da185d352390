/**
 * Price-shaped operations of a trader's market: the sampled chart with the trader's complete fills (REST
 * and MCP get_market_events), raw tick pages and the full per-second tape (REST only).
 */
import { z } from 'zod';
import { type MarketHeader, marketHeaderSchema } from '../projections/market-schemas.ts';
import {
  FIDELITY_LADDER,
  marketFillSchema,
  readRawTicks,
  seriesPointSchema,
  type SeriesPoint,
  type TickPosition,
} from '../projections/prices.ts';
import { traderSchema, type Trader } from '../projections/traders.ts';
import type { Config } from '../config.ts';
import { traderOf, type Call, type RouteContext } from './context.ts';
import { pageLimit, parseConditionId, queryCursor, queryEpochSeconds, queryInt } from './parameters.ts';
import { loadVisibleMarket } from './markets.ts';

export const sampledChartSchema = z.object({
  market: marketHeaderSchema,
  trader: traderSchema,
  series: z.object({
    from_ts: z.int(),
    to_ts: z.int(),
    fidelity: z
      .int()
      .meta({ description: `Bucket size in seconds, a rung of the fidelity ladder (${FIDELITY_LADDER.join(', ')}).` }),
    points: z.array(seriesPointSchema).meta({
      description:
        'Buckets with trades, in time order; an empty bucket is absent (a gap: do not draw a line across it).',
    }),
  }),
  fills: z.array(marketFillSchema).meta({
    description: "The trader's complete fill set in this market, always present, independent of points or limit.",
  }),
});

export const rawTicksSchema = z.object({
  market: marketHeaderSchema,
  trader: traderSchema,
  ticks: z.array(z.object({ ts: z.int(), price: z.number().meta({ description: 'UP space.' }) })),
  window: z.int().meta({ description: 'Start (epoch seconds) of the tick window being paged.' }),
  cursor: z.string().nullable().meta({ description: 'The cursor this page was read from (null for the first page).' }),
  next_cursor: z.string().nullable(),
  limit: z.int(),
});

export const tapeSchema = z.object({
  market: marketHeaderSchema,
  trader: traderSchema,
  tape: z.array(seriesPointSchema).meta({
    description:
      'One row per second whose (last, lo, hi) differs from the previous emitted row; a resolved market ends pinned at the winner level (1.00 token 1 won, else 0.00).',
  }),
});

/** The sampled chart's query (REST, beside raw mode's) and the parameters of get_market_events (MCP) beside trader and market. */
export const sampledChartQuerySchema = ({ charts }: Config) =>
  z.object({
    points: queryInt(
      `Point budget; default ${charts.defaultPoints}; clamped to ${charts.minPoints}..${charts.maxPoints}.`,
      { default: charts.defaultPoints },
    ).optional(),
    from_ts: queryEpochSeconds('Window start.').optional(),
    to_ts: queryEpochSeconds('Window end.').optional(),
    resolution: queryInt(
      `Forced bucket size in seconds, snapped to the ladder (${FIDELITY_LADDER.join(', ')}).`,
    ).optional(),
  });

export const rawLimitsOf = ({ charts }: Config) => ({
  defaultLimit: charts.rawTicksDefaultLimit,
  maxLimit: charts.rawTicksMaxLimit,
});

/** Raw mode's own query parameters (REST only: raw ticks are the export path). */
export const rawTicksQuerySchema = (config: Config) => {
  const rawLimits = rawLimitsOf(config);
  return z.object({
    cursor: queryCursor,
    window: queryEpochSeconds(
      'Raw mode: start of the tick window for the first page (ticks at or after it).',
    ).optional(),
    limit: queryInt(
      `Raw mode: ticks per page; at least 1 (0 is 400 bad_limit); default ${rawLimits.defaultLimit}; above ${rawLimits.maxLimit} clamped.`,
      {
        minimum: 1,
        default: rawLimits.defaultLimit,
      },
    ).optional(),
  });
};

const tickCursor = (context: RouteContext) =>
  context.cursors.codec<{ window: number; position: TickPosition }, [number, number, number, string]>(
    'ticks',
    ({ window, position }) => [window, position.ts, position.seq, position.tradeId],
    z.tuple([z.int().min(0), z.int().min(0), z.int().min(0), z.string().max(200)]),
    ([window, ts, seq, tradeId]) => ({ window, position: { ts, seq, tradeId } }),
  );

/** get_market_events: the sampled chart of one market with the call's trader's complete fills, past the history wall. */
export async function getMarketChart(
  context: RouteContext,
  call: Call,
  input: { condition_id: string } & z.infer<ReturnType<typeof sampledChartQuerySchema>>,
): Promise<z.infer<typeof sampledChartSchema>> {
  const conditionId = parseConditionId(input.condition_id);
  const trader = await traderOf(call.admitted);
  const market = await loadVisibleMarket(context, call.caller, trader.wallet, conditionId, () =>
    context.reader.traderMarket(trader.wallet, conditionId),
  );
  const { series, fills } = await context.reader.sampledChart(
    trader.wallet,
    market,
    { points: input.points, fromTs: input.from_ts, toTs: input.to_ts, resolution: input.resolution },
    context.config.charts,
    context.now(),
  );
  return { market: market.header, trader, series, fills };
}

/** Raw tick pages of one market (REST `raw=1` only; a heavy read). */
export async function getMarketTicks(
  context: RouteContext,
  call: Call,
  input: { condition_id: string } & z.infer<ReturnType<typeof rawTicksQuerySchema>>,
): Promise<z.infer<typeof rawTicksSchema>> {
  const conditionId = parseConditionId(input.condition_id);
  const limit = pageLimit(input.limit, rawLimitsOf(context.config));
  const trader = await traderOf(call.admitted);
  const scope = `${trader.wallet}|${conditionId}`;
  const cursor = tickCursor(context);
  const fromCursor = cursor.decode(input.cursor, scope);
  const market = await loadVisibleMarket(context, call.caller, trader.wallet, conditionId, () =>
    context.reader.traderMarket(trader.wallet, conditionId),
  );
  const window = fromCursor?.window ?? Math.max(0, input.window ?? 0);
  const page = await readRawTicks(context.store, conditionId, {
    windowStartTs: window,
    after: fromCursor?.position,
    limit,
  });
  return {
    market: market.header,
    trader,
    ticks: page.ticks,
    window,
    cursor: fromCursor ? (input.cursor ?? null) : null,
    next_cursor: page.next ? cursor.encode(scope, { window, position: page.next }) : null,
    limit,
  };
}

/** The full per-second tape of one market (REST only; a heavy read), past the history wall: the route streams it. */
export async function getMarketTape(
  context: RouteContext,
  call: Call,
  params: { condition_id: string },
): Promise<{ market: MarketHeader; trader: Trader; tape: SeriesPoint[] }> {
  const conditionId = parseConditionId(params.condition_id);
  const trader = await traderOf(call.admitted);
  const market = await loadVisibleMarket(context, call.caller, trader.wallet, conditionId, () =>
    context.reader.traderMarket(trader.wallet, conditionId),
  );
  return { market: market.header, trader, tape: await context.reader.fullTape(market.times) };
}
