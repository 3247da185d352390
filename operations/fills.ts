/** The fills operation (REST `GET /traders/{trader}/fills`, MCP get_recent_fills): a trader's fills across markets since a time, oldest first. */
import { z } from 'zod';
import { traderFillSchema, type FillPosition } from '../projections/fills.ts';
import { traderSchema } from '../projections/traders.ts';
import type { Config } from '../config.ts';
import { traderOf, type Call, type RouteContext } from './context.ts';
import { limitParameter, pageLimit, queryCursor, queryEpochSeconds } from './parameters.ts';

export const fillsPageSchema = z.object({
  trader: traderSchema,
  fills: z.array(traderFillSchema),
  next_cursor: z
    .string()
    .nullable()
    .meta({ description: 'Pass back as cursor for the next page; null at the end (for now).' }),
});

/** Query of the fills endpoint (REST) and the parameters of get_recent_fills (MCP) beside `trader`. */
export const fillsQuerySchema = (config: Config) =>
  z.object({
    since: queryEpochSeconds('Fills at or after this time.').optional(),
    cursor: queryCursor,
    limit: limitParameter(config.api.fills, 'fills'),
  });

const fillCursor = (context: RouteContext) =>
  context.cursors.codec<FillPosition, [number, string, string]>(
    'fills',
    (position) => [position.ts, position.conditionId, position.fillId],
    z.tuple([z.int().min(0), z.string().max(200), z.string().max(400)]),
    ([ts, conditionId, fillId]) => ({ ts, conditionId, fillId }),
  );

/** get_recent_fills: one chronological page of the call's trader's fills across markets (clamped to the visible set). */
export async function getRecentFills(
  context: RouteContext,
  call: Call,
  query: z.infer<ReturnType<typeof fillsQuerySchema>>,
): Promise<z.infer<typeof fillsPageSchema>> {
  const limit = pageLimit(query.limit, context.config.api.fills);
  const trader = await traderOf(call.admitted);
  const cursor = fillCursor(context);
  const after = cursor.decode(query.cursor, trader.wallet);
  const page = await context.reader.fillsPage(trader.wallet, {
    since: query.since,
    after,
    limit,
    historyDepth: call.caller.limits.historyDepth,
  });
  return { trader, fills: page.fills, next_cursor: page.next ? cursor.encode(trader.wallet, page.next) : null };
}
