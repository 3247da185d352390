/**
 * The HTTP server of the `api` and `all` roles: the REST app (api/app.ts) with the MCP endpoint
 * (mcp/server.ts) mounted on it, over the same context (gates, cursors) and the same keys, and the read
 * caches observed by the metrics registry. api/ and mcp/ never import each other, and projections/
 * imports no metrics (test/import-graph): they meet here.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOptions } from '../api/app.ts';
import { registerMcp } from '../mcp/server.ts';
import { readCacheLookups } from '../metrics/registry.ts';
import { observeReads } from '../projections/read-cache.ts';

/** `buildApp` with MCP mounted when the read API is served (without it, the app only answers the probes). */
export async function buildHttpServer(options: AppOptions): Promise<FastifyInstance> {
  // trader_analytics_read_cache_lookups_total, by answer and outcome (the caches of every store of this process).
  observeReads({ cacheLookup: (cache, outcome) => readCacheLookups.inc({ cache, outcome }) });
  return buildApp(options.api ? { ...options, api: { ...options.api, mount: registerMcp } } : options);
}
