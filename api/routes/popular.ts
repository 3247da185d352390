/** `GET /popular`: the shelf of popular traders (the provider's leaderboard and the most watched). */
import type { RouteContext } from '../../operations/context.ts';
import { type ApiApp, errorResponses } from '../http.ts';
import { listPopularTraders, popularSchema } from '../../operations/popular.ts';
export function registerPopularRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/popular',
    {
      schema: {
        operationId: 'list_popular_traders',
        summary: 'Popular traders',
        description: `The curated shelf: up to ${context.config.api.popularLimit} traders, those of the upstream provider's leaderboard and those live sessions watch; watching is the number of live-plane sessions (WebSocket /live) watching the trader now, on every instance. Most watched first, then by leaderboard rank.`,
        response: { 200: popularSchema, ...errorResponses() },
      },
    },
    async () => listPopularTraders(context),
  );
}
