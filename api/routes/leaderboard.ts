/** `GET /leaderboard`: the skill leaderboard, by shrunk edge, calibration or pnl, paged. */
import type { RouteContext } from '../../operations/context.ts';
import { leaderboardQuerySchema, leaderboardSchema, listSkilledTraders } from '../../operations/leaderboard.ts';
import { type ApiApp, errorResponses, notModifiedSchema, replyAsOf } from '../http.ts';

export function registerLeaderboardRoutes(app: ApiApp, context: RouteContext): void {
  app.get(
    '/leaderboard',
    {
      schema: {
        operationId: 'list_skilled_traders',
        summary: 'Traders ranked by skill',
        description:
          'Wallets with enough resolved markets with entries in the window (min_markets), ranked by edge (shrunk by its evidence: a few lucky markets do not outrank many good ones), calibration (Brier score of the entry prices) or pnl. Page with next_cursor until it is null. Rankings are recomputed every few minutes. as_of (epoch seconds): the board as known then, over the markets resolved by then (immutable, with an ETag). Formulas: docs/skill.md. Pass a wallet to get_trader_skill for the full answer.',
        querystring: leaderboardQuerySchema,
        response: { 200: leaderboardSchema, 304: notModifiedSchema, ...errorResponses(400) },
      },
    },
    async (request, reply) =>
      replyAsOf(request, reply, await listSkilledTraders(context, request.query), request.query.as_of, context.config),
  );
}
