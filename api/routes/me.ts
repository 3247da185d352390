/** `GET /me`: the caller's plan, its limits, usage, and the calling key's label and last four characters. */
import type { RouteContext } from '../../operations/context.ts';
import { type ApiApp, callOf, errorResponses } from '../http.ts';
import { meSchema, whoami } from '../../operations/me.ts';
export function registerMeRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/me',
    {
      schema: {
        operationId: 'whoami',
        summary: "The caller's plan, limits and usage",
        description:
          "GET /me is the authoritative statement of the caller's real numbers (do not hard-code a tier: a founder seat resolves to Pro limits). The governing call window is the nonzero one: Basic has a daily cap (usage.day), Pro and Max a monthly one (usage.month). key names the calling key by label and last four characters. usage.live.slots_in_use counts the live slots held now (the WebSocket plane at /live; docs/live.md); usage.library the tapes that Pro and Max watches are recorded as, against limits.library_bytes.",
        response: { 200: meSchema, ...errorResponses() },
      },
    },
    async (request) => whoami(context, callOf(request)),
  );
}
