/**
 * Who calls the MCP endpoint. One function, so that OAuth access tokens (decisions.md: MCP is an OAuth
 * 2.1 resource server) are recognized here next to API keys and draw from the same user's budget.
 *
 * Today: the API key in `Authorization: Bearer <key>`, read by the app's own Authenticator (the same
 * keys, cache and 401 as REST). A failed authentication counts toward too_many_auth_failures by client
 * address exactly like REST: the address's 429 replaces the 401 once it is blocked.
 */
import type { FastifyRequest } from 'fastify';
import type { Authenticator, Caller } from '../api/auth.ts';
import { ApiError } from '../api/errors.ts';
import type { Budget } from '../api/gates/budget.ts';

export type McpAuthentication = (request: FastifyRequest) => Promise<Caller>;

export function mcpAuthentication(authenticator: Authenticator, budget: Budget): McpAuthentication {
  return async function authenticateMcp(request) {
    try {
      return await authenticator.authenticate(request.headers.authorization, request.query);
    } catch (refusal) {
      if (refusal instanceof ApiError && refusal.status === 401) throw (await budget.authenticationFailed(request.ip)) ?? refusal;
      throw refusal;
    }
  };
}
