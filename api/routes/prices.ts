/**
 * Routes of a trader's market prices: the sampled chart with the trader's complete fills, raw tick pages
 * (`raw=1`), and the full per-second tape (gzip, uncapped, streamed). The reads are the operations of
 * `operations/prices.ts`; this module holds only HTTP: schemas, caching, the tape's streaming.
 */
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { z } from 'zod';
import { marketHeaderSchema } from '../../projections/market-schemas.ts';
import { traderSchema } from '../../projections/traders.ts';
import type { RouteContext } from '../../operations/context.ts';
import {
  type ApiApp,
  applyMarketCaching,
  callOf,
  errorResponses,
  ifNoneMatch,
  notModifiedSchema,
  strongEtag,
} from '../http.ts';
import { historyDepthNote, marketDepthWall, marketParamsSchema } from '../../operations/markets.ts';
import {
  getMarketChart,
  getMarketTape,
  getMarketTicks,
  rawLimitsOf,
  rawTicksQuerySchema,
  rawTicksSchema,
  sampledChartQuerySchema,
  sampledChartSchema,
  tapeSchema,
} from '../../operations/prices.ts';
import { encodeResponse } from '../../operations/response-schema.ts';

const booleanText = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1')
  .meta({ description: 'true or 1: raw tick pages instead of the sampled chart.', default: 'false' });

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
          historyDepthNote(
            config,
            (depth) => `${marketDepthWall(depth)} This holds for the sampled chart and for raw=1.`,
          ),
          'A market the trader never traded is 404 market_not_found.',
        ]
          .filter(Boolean)
          .join('\n\n'),
        params: marketParamsSchema,
        querystring: z.object({
          ...sampledChartQuerySchema(config).shape,
          raw: booleanText.optional(),
          ...rawTicksQuerySchema(config).shape,
        }),
        response: {
          200: z.union([sampledChartSchema, rawTicksSchema]),
          304: notModifiedSchema,
          ...errorResponses(400, 403, 404, 504),
        },
      },
    },
    async (request, reply) => {
      const { raw, ...query } = request.query;
      const input = { condition_id: request.params.condition_id, ...query };
      if (raw) return getMarketTicks(context, callOf(request), input);
      const body = await getMarketChart(context, callOf(request), input);
      if (applyMarketCaching(request, reply, body, body.market.resolved, config) === 'not-modified')
        return reply.code(304).send(null);
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
          "The full tape {market, trader, tape}: uncapped and streamed, always gzip-encoded (Content-Encoding: gzip). A row is emitted for a second only when its (last, lo, hi) differs from the previously emitted row (a 53-day market is roughly 27,000 rows). A resolved market ends pinned at the winner level; its tape is immutable (strong ETag, If-None-Match → 304); an open market's tape is cached briefly. REST only (no MCP tool).",
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
      const { market: header, trader, tape: rows } = await getMarketTape(context, callOf(request), request.params);
      // Built as text pieces: only declared fields (the header goes through its schema), numbers as JSON writes them.
      const route = `GET ${request.routeOptions.url}`;
      const pieces = [
        `{"market":${JSON.stringify(encodeResponse(marketHeaderSchema, header, route))},"trader":${JSON.stringify(encodeResponse(traderSchema, trader, route))},"tape":[`,
      ];
      const ROWS_PER_PIECE = 4096;
      for (let start = 0; start < rows.length; start += ROWS_PER_PIECE) {
        const slice = rows
          .slice(start, start + ROWS_PER_PIECE)
          .map((row) => `[${row[0]},${row[1]},${row[2]},${row[3]}]`);
        pieces.push((start > 0 ? ',' : '') + slice.join(','));
      }
      pieces.push(']}');
      if (header.resolved) {
        const etag = strongEtag(pieces.join(''));
        reply
          .header('ETag', etag)
          .header('Cache-Control', `private, max-age=${config.api.immutableMaxAgeSeconds}, immutable`);
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
