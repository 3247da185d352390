/** The popular-traders operation (REST `GET /popular`, MCP list_popular_traders): the shelf of most watched traders. */
import { z } from 'zod';
import { popularTraderSchema, readPopularTraders } from '../projections/popular.ts';
import type { RouteContext } from './context.ts';

export const popularSchema = z.object({ traders: z.array(popularTraderSchema), count: z.int().min(0) });

/** list_popular_traders (not trader-scoped: no wallet is counted). */
export async function listPopularTraders(context: RouteContext): Promise<z.infer<typeof popularSchema>> {
  const traders = await readPopularTraders(context.store, context.config.api.popularLimit);
  return { traders, count: traders.length };
}
