/**
 * Price-shaped answers of a trader's market: the sampled chart with the trader's complete fills, raw
 * tick pages (`raw=1`), and the full per-second tape (gzip, uncapped, streamed).
 */
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { z } from 'zod';
import { marketHeaderSchema } from '../../projections/markets.ts';
import {
  FIDELITY_LADDER,
  marketFillSchema,
  readFullTape,
  readRawTicks,
  readSampledChart,
  readTraderMarket,
  seriesPointSchema,
  type TickPosition,
} from '../../projections/prices.ts';
import { traderSchema } from '../../projections/traders.ts';
import type { Config } from '../../config.ts';
import { callOf, traderOf, type ApiApp, type Call, type RouteContext } from '../context.ts';
import {
  applyMarketCaching,
  errorResponses,
  historyDepthNote,
  ifNoneMatch,
  loadVisibleMarket,
  notModifiedSchema,
  pageLimit,
  parseConditionId,
  queryCursor,
  queryInt,
  strongEtag,
} from '../http.ts';
import { marketDepthWall, marketParamsSchema } from './markets.ts';

export const sampledChartSchema = z.object({
  market: marketHeaderSchema,
  trader: traderSchema,
  series: z.object({
    from_ts: z.int(),
    to_ts: z.int(),
    fidelity: z.int().meta({ description: `Bucket size in seconds, a rung of the fidelity ladder (${FIDELITY_LADDER.join(', ')}).` }),
    points: z.array(seriesPointSchema).meta({ description: 'Buckets with trades, in time order; an empty bucket is absent (a gap: do not draw a line across it).' }),
  }),
  fills: z.array(marketFillSchema).meta({ description: "The trader's complete fill set in this market, always present, independent of points or limit." }),
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
  tape: z.array(seriesPointSchema).meta({ description: 'One row per second whose (last, lo, hi) differs from the previous emitted row; a resolved market ends pinned at the winner level (1.00 token 1 won, else 0.00).' }),
});

const booleanText = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1')
  .meta({ description: 'true or 1: raw tick pages instead of the sampled chart.', default: 'false' });

/** The sampled chart's query (REST, beside raw mode's) and the parameters of get_market_events (MCP) beside trader and market. */
export const sampledChartQuerySchema = ({ charts }: Config) =>
  z.object({
    points: queryInt(`Point budget; default ${charts.defaultPoints}; clamped to ${charts.minPoints}..${charts.maxPoints}.`, { default: charts.defaultPoints }).optional(),
    from_ts: queryInt('Window start, epoch seconds.').optional(),
    to_ts: queryInt('Window end, epoch seconds.').optional(),
    resolution: queryInt(`Forced bucket size in seconds, snapped to the ladder (${FIDELITY_LADDER.join(', ')}).`).optional(),
  });

const rawLimitsOf = ({ charts }: Config) => ({ defaultLimit: charts.rawTicksDefaultLimit, maxLimit: charts.rawTicksMaxLimit });

/** Raw mode's own query parameters (REST only: raw ticks are the export path). */
const rawTicksQuerySchema = (config: Config) => {
  const rawLimits = rawLimitsOf(config);
  return z.object({
    cursor: queryCursor,
    window: queryInt('Raw mode: start of the tick window (epoch seconds) for the first page.').optional(),
    limit: queryInt(`Raw mode: ticks per page; at least 1 (0 is 400 bad_limit); default ${rawLimits.defaultLimit}; above ${rawLimits.maxLimit} clamped.`, {
      minimum: 1,
      default: rawLimits.defaultLimit,
    }).optional(),
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
  const trader = traderOf(call.admitted);
  const market = await loadVisibleMarket(context, call.caller, trader.wallet, conditionId, () => readTraderMarket(context.store, trader.wallet, conditionId));
  const { series, fills } = await readSampledChart(
    context.store,
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
  const trader = traderOf(call.admitted);
  const scope = `${trader.wallet}|${conditionId}`;
  const cursor = tickCursor(context);
  const fromCursor = cursor.decode(input.cursor, scope);
  const market = await loadVisibleMarket(context, call.caller, trader.wallet, conditionId, () => readTraderMarket(context.store, trader.wallet, conditionId));
  const window = fromCursor?.window ?? Math.max(0, input.window ?? 0);
  const page = await readRawTicks(context.store, conditionId, { windowStartTs: window, after: fromCursor?.position, limit });
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

export function registerPriceRoutes(app: ApiApp, context: RouteContext): void {
  const { config } = context;
  const { charts } = config;
  const rawLimits = rawLimitsOf(config);

  app.get(
    '/traders/:trader/markets/:condition_id',
    {
      config: { budget: { traderScoped: true, heavy: (query) => query.raw === '1' || query.raw === 'true' } },
      schema: {
        operationId: 'get_market_events',
        summary: "A market's sampled price chart with the trader's fills (or raw ticks)",
        description: [
          `Sampled chart {market, trader, series, fills}: series.points are [ts, last, lo, hi] buckets of one fidelity-ladder rung, the finest whose bucket count over the window fits in points (default ${charts.defaultPoints}, clamped to ${charts.minPoints}..${charts.maxPoints}); resolution forces a bucket size (snapped up to the ladder; coarsened if it does not fit). With no from_ts/to_ts the window starts at the start time named in the market title and ends at the last trade or the resolution. fills is the complete fill set, always.`,
          'There is no descending or until-style paging: a tight from_ts/to_ts window near the close gives the end view.',
          'Chart conventions: draw the line at (lo + hi) / 2, fill the band between lo and hi, never across gaps; fills are markers (buy up, sell down) colored by token and sized by usd; a resolved market gets a dashed segment from the last point to the winner level (1.00 if token 1 won, else 0.00).',
          `raw=1 returns the underlying trades as ticks [{ts, price}] with keyset paging: window (start, epoch seconds) positions the first page, then pass next_cursor back as cursor; limit default ${rawLimits.defaultLimit}, clamped to ${rawLimits.maxLimit}. Raw ticks repeat about 36 times; this is the export path.`,
          'Resolved markets are immutable: strong ETag, If-None-Match → 304. Open markets are cached briefly.',
          historyDepthNote(config, (depth) => `${marketDepthWall(depth)} This holds for the sampled chart and for raw=1.`),
          'A market the trader never traded is 404 market_not_found.',
        ]
          .filter(Boolean)
          .join('\n\n'),
        params: marketParamsSchema,
        querystring: z.object({ ...sampledChartQuerySchema(config).shape, raw: booleanText.optional(), ...rawTicksQuerySchema(config).shape }),
        response: { 200: z.union([sampledChartSchema, rawTicksSchema]), 304: notModifiedSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) => {
      const { raw, ...query } = request.query;
      const input = { condition_id: request.params.condition_id, ...query };
      if (raw) return getMarketTicks(context, callOf(request), input);
      const body = await getMarketChart(context, callOf(request), input);
      if (applyMarketCaching(request, reply, body, body.market.resolved, config) === 'not-modified') return reply.code(304).send(null);
      return body;
    },
  );

  app.get(
    '/traders/:trader/markets/:condition_id/tape',
    {
      config: { budget: { traderScoped: true, heavy: () => true } },
      schema: {
        operationId: 'get_market_tape',
        summary: "A market's full per-second tape (gzip)",
        description: [
          'The full tape {market, trader, tape}: uncapped and streamed, always gzip-encoded (Content-Encoding: gzip). A row is emitted for a second only when its (last, lo, hi) differs from the previously emitted row (a 53-day market is roughly 27,000 rows). A resolved market ends pinned at the winner level; its tape is immutable (strong ETag, If-None-Match → 304); an open market\'s tape is cached briefly. REST only (no MCP tool).',
          historyDepthNote(config, marketDepthWall),
          'A market the trader never traded is 404 market_not_found.',
        ]
          .filter(Boolean)
          .join('\n\n'),
        params: marketParamsSchema,
        response: { 200: tapeSchema, 304: notModifiedSchema, ...errorResponses(400, 403, 404, 504) },
      },
    },
    async (request, reply) => {
      const conditionId = parseConditionId(request.params.condition_id);
      const trader = traderOf(request.admitted);
      const market = await loadVisibleMarket(context, request.caller!, trader.wallet, conditionId, () => readTraderMarket(context.store, trader.wallet, conditionId));
      const { header } = market;
      const rows = await readFullTape(context.store, market.times);
      // Built as text pieces: only declared fields (the header goes through its schema), numbers as JSON writes them.
      const pieces = [`{"market":${JSON.stringify(marketHeaderSchema.parse(header))},"trader":${JSON.stringify(traderSchema.parse(trader))},"tape":[`];
      const ROWS_PER_PIECE = 4096;
      for (let start = 0; start < rows.length; start += ROWS_PER_PIECE) {
        const slice = rows.slice(start, start + ROWS_PER_PIECE).map((row) => `[${row[0]},${row[1]},${row[2]},${row[3]}]`);
        pieces.push((start > 0 ? ',' : '') + slice.join(','));
      }
      pieces.push(']}');
      if (header.resolved) {
        const etag = strongEtag(pieces.join(''));
        reply.header('ETag', etag).header('Cache-Control', `private, max-age=${config.api.immutableMaxAgeSeconds}, immutable`);
        if (ifNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send(null);
      } else {
        reply.header('Cache-Control', `private, max-age=${config.api.openMarketMaxAgeSeconds}`);
      }
      reply.header('Content-Type', 'application/json; charset=utf-8').header('Content-Encoding', 'gzip');
      // A stream bypasses the serializer: the 200 schema documents the gunzipped body the pieces spell.
      return reply.send(Readable.from(pieces).pipe(createGzip()) as unknown as z.infer<typeof tapeSchema>);
    },
  );
}
