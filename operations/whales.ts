/** The whale-flow operation (REST `GET /flow/whales`; no MCP tool): large live accumulations across markets, ranked. */
import { z } from 'zod';
import { WHALE_RANKINGS, type whaleFlowSchema } from '../projections/whales.ts';
import type { Config } from '../config.ts';
import type { RouteContext } from './context.ts';
import { limitParameter, pageLimit, queryInt, queryNumber } from './parameters.ts';

const whaleLimits = ({ whales }: Config) => ({ defaultLimit: whales.defaultLimit, maxLimit: whales.maxLimit });

/** Query of the whale flow. */
export const whaleFlowQuerySchema = (config: Config) => {
  const { whales } = config;
  return z.object({
    min_usd: queryNumber(
      `Minimum ranking USD; default ${whales.defaultMinUsd}; clamped up to coverage.exact_above_usd.`,
      { default: whales.defaultMinUsd },
    ).optional(),
    by: z
      .enum(WHALE_RANKINGS)
      .optional()
      .meta({ description: 'burst (default) or window; any other value is 422.', default: 'burst' }),
    window_h: queryInt(
      `Window in hours; default ${whales.defaultWindowHours}; clamped to 1..${whales.maxWindowHours}.`,
      { default: whales.defaultWindowHours },
    ).optional(),
    limit: limitParameter(whaleLimits(config), 'rows'),
  });
};

/** The ranked accumulations: `limit` and `window_h` clamped, `min_usd` clamped up to the coverage threshold by the read. */
export async function getWhaleFlow(
  context: RouteContext,
  query: z.infer<ReturnType<typeof whaleFlowQuerySchema>>,
): Promise<z.infer<typeof whaleFlowSchema>> {
  const { whales } = context.config;
  const limit = pageLimit(query.limit, whaleLimits(context.config));
  const windowHours = Math.min(whales.maxWindowHours, Math.max(1, query.window_h ?? whales.defaultWindowHours));
  return context.reader.whaleFlow(
    {
      minUsd: query.min_usd ?? whales.defaultMinUsd,
      by: query.by ?? 'burst',
      windowHours,
      limit,
      nowSeconds: context.now(),
    },
    { exactAboveUsd: whales.exactAboveUsd, burstGapSeconds: whales.burstGapSeconds },
  );
}
