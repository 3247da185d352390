/** `GET /popular`: the shelf of popular traders (the provider's leaderboard and the most watched). */
import { z } from 'zod';
import { popularTraderSchema, readPopularTraders } from '../../projections/popular.ts';
import type { ApiApp, RouteContext } from '../context.ts';
import { errorResponses } from '../http.ts';

export const popularSchema = z.object({ traders: z.array(popularTraderSchema), count: z.int().min(0) });

/** list_popular_traders (not trader-scoped: no wallet is counted). */
export async function listPopularTraders(context: RouteContext): Promise<z.infer<typeof popularSchema>> {
  const traders = await readPopularTraders(context.store, context.config.api.popularLimit);
  return { traders, count: traders.length };
}

export function registerPopularRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/popular',
    {
      schema: {
        operationId: 'list_popular_traders',
        summary: 'Popular traders',
        description: `The curated shelf: up to ${context.config.api.popularLimit} traders, those of the upstream provider's leaderboard and those with live watchers (watching is the live watcher count now), most watched first, then by leaderboard rank.`,
        response: { 200: popularSchema, ...errorResponses() },
      },
    },
    async () => listPopularTraders(context),
  );
}
