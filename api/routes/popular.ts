/** `GET /popular`: the shelf of popular traders (most live watchers). */
import type { ApiApp, RouteContext } from '../context.ts';
import { errorResponses } from '../http.ts';
import { listPopularTraders, popularSchema } from '../operations/popular.ts';
export function registerPopularRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/popular',
    {
      schema: {
        operationId: 'list_popular_traders',
        summary: 'Popular traders',
        description: `The curated shelf: up to ${context.config.api.popularLimit} traders with the most live watchers now (watching is the live watcher count), most watched first.`,
        response: { 200: popularSchema, ...errorResponses() },
      },
    },
    async () => listPopularTraders(context),
  );
}
