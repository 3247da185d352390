/**
 * The HTTP server of the `api` and `all` roles: the REST app (api/app.ts) with the MCP endpoint
 * (mcp/server.ts) mounted on it, over the same context (gates, cursors, read cache) and the same keys.
 * api/ and mcp/ never import each other (test/import-graph): they meet here.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOptions } from '../api/app.ts';
import { registerMcp } from '../mcp/server.ts';

/** `buildApp` with MCP mounted when the read API is served (without it, the app only answers the probes). */
export async function buildHttpServer(options: AppOptions): Promise<FastifyInstance> {
  return buildApp(options.api ? { ...options, api: { ...options.api, mount: registerMcp } } : options);
}
