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
import type { Config } from '../config.ts';
import type { EventLog } from '../ingest/bus/types.ts';
import type { TopicNames } from '../ingest/contract/topics.ts';
import { livePlaneOn } from '../ingest/live-feed.ts';
import type { EventSink } from '../ingest/publisher.ts';
import type { Logger } from '../log.ts';
import type { GateStore } from '../operations/gates/store.ts';
import type { SlotStore } from '../operations/gates/slots.ts';
import { storeAnswers, type Store } from '../projections/store.ts';

/** `buildApp` with MCP mounted when the read API is served (without it, the app only answers the probes). */
export async function buildHttpServer(options: AppOptions): Promise<FastifyInstance> {
  return buildApp(
    options.api ? { ...options, api: { ...options.api, mount: registerMcp, liveAuthentication } } : options,
  );
}

/**
 * The HTTP server of a role that serves the live plane beside the read API (`all` in process, `live` on
 * Kafka): the plane streams what the role's log carries, and its recordings go back on the same log.
 */
export function buildHttpServerWithPlane(options: {
  log: Logger;
  store: Store;
  readiness: AppOptions['readiness'];
  config: Config;
  gates: GateStore;
  slots: SlotStore;
  plane: { eventLog: EventLog; topics: TopicNames; publisher: EventSink };
}): Promise<FastifyInstance> {
  const { log, store, readiness, config, gates, slots, plane } = options;
  return buildHttpServer({
    log,
    storeAlive: () => storeAnswers(store),
    readiness,
    api: { config, store, gates, slots, ...livePlaneOn({ config, ...plane, log }) },
  });
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
