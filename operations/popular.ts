/** The popular-traders operation (REST `GET /popular`, MCP list_popular_traders): the shelf of most watched traders. */
import { z } from 'zod';
import { popularTraderSchema, readPopularTraders } from '../projections/popular.ts';
import type { RouteContext } from './context.ts';

export const popularSchema = z.object({ traders: z.array(popularTraderSchema), count: z.int().min(0) });

/**
 * list_popular_traders (not trader-scoped: no wallet is counted). `watching` is the live plane's sessions
 * now, on every instance (the slot store); none where no slot store is kept.
 */
export async function listPopularTraders(context: RouteContext): Promise<z.infer<typeof popularSchema>> {
  const watching = (await context.liveWatching?.()) ?? new Map<string, number>();
  const traders = await readPopularTraders(context.store, context.config.api.popularLimit, watching);
  return { traders, count: traders.length };
}
