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
import { openGateStore, openSlotStore } from '../operations/gates/open.ts';
import type { WalletRequestLog } from '../operations/wallet-requests.ts';
import { storeAnswers, type Store } from '../projections/store.ts';

/** `buildApp` with MCP mounted when the read API is served (without it, the app only answers the probes). */
export async function buildHttpServer(options: AppOptions): Promise<FastifyInstance> {
  return buildApp(
    options.api ? { ...options, api: { ...options.api, mount: registerMcp, liveAuthentication } } : options,
  );
}

/**
 * The HTTP server of a role (`api`, `live`, `all`) with its deployment's gate and slot stores (Redis with
 * REDIS_URL, else process memory). The server owns them: it closes them when it closes, after the live
 * plane has told its clients goodbye. With `plane`, the role serves the live plane beside the read API
 * (`all` in process, `live` on Kafka): the plane streams what the role's log carries, and its recordings go
 * back on the same log.
 */
export async function buildRoleServer(options: {
  log: Logger;
  store: Store;
  readiness: AppOptions['readiness'];
  config: Config;
  walletRequests?: WalletRequestLog | undefined;
  plane?: { eventLog: EventLog; topics: TopicNames; publisher: EventSink };
}): Promise<FastifyInstance> {
  const { log, store, readiness, config, walletRequests, plane } = options;
  const gates = openGateStore(config, log);
  const slots = openSlotStore(config, log);
  const closeStores = async () => {
    await gates.close();
    await slots.close();
  };
  try {
    const app = await buildHttpServer({
      log,
      storeAlive: () => storeAnswers(store),
      readiness,
      api: {
        config,
        store,
        gates,
        slots,
        ...(walletRequests ? { walletRequests } : {}),
        ...(plane ? livePlaneOn({ config, ...plane, log }) : {}),
      },
    });
    app.addHook('onClose', closeStores);
    return app;
  } catch (error) {
    await closeStores();
    throw error;
  }
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
