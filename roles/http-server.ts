/**
 * The HTTP server of the `api` and `all` roles: the REST app (api/app.ts) with the MCP endpoint
 * (mcp/server.ts) mounted on it, over the same context (gates, cursors, read cache) and the same keys.
 * The live plane's connections accept what MCP accepts (API keys, and OAuth access tokens when an
 * issuer is configured). api/ and mcp/ never import each other (test/import-graph): they meet here.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOptions, type ReadApiShared } from '../api/app.ts';
import type { LiveAuthentication } from '../api/routes/live.ts';
import { mcpAuthentication } from '../mcp/auth.ts';
import { OAuthVerifier } from '../mcp/oauth.ts';
import { registerMcp } from '../mcp/server.ts';

/** `buildApp` with MCP mounted when the read API is served (without it, the app only answers the probes). */
export async function buildHttpServer(options: AppOptions): Promise<FastifyInstance> {
  return buildApp(
    options.api ? { ...options, api: { ...options.api, mount: registerMcp, liveAuthentication } } : options,
  );
}

/** A live connection's caller: an API key or an OAuth access token, exactly as on /mcp (failures counted there). */
function liveAuthentication({ context, authenticator }: ReadApiShared): LiveAuthentication {
  const { config } = context;
  const authenticate = mcpAuthentication({
    authenticator,
    budget: context.budget,
    store: context.store,
    config,
    oauth: config.mcp.oauth ? new OAuthVerifier(config.mcp.oauth) : null,
  });
  return (authorization, ip, recheck = false) =>
    authenticate({ headers: { authorization }, query: {}, ip }, { countsFailures: !recheck });
}
