/**
 * The HTTP application, built apart from the listening server so tests drive it with `app.inject`.
 * Liveness and readiness at the root (no key); the read API under `/api/agent/v1` when a store is given,
 * with a short index at `/` (no key).
 *
 * Every route declares zod request and response schemas (fastify-type-provider-zod): requests are
 * validated by them (type errors are 422 with the contract's `detail` body), responses are serialized
 * through them (undeclared fields never leak), and @fastify/swagger derives OpenAPI 3.1 from them.
 */
import swagger from '@fastify/swagger';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
} from 'fastify';
import { jsonSchemaTransform, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { QueryTimeoutError, withQueryTimeout, type Store } from '../projections/store.ts';
import { Authenticator, type Caller } from '../operations/auth.ts';
import type { WalletRequestLog } from '../operations/wallet-requests.ts';
import { admitCall, resolveTrader, type AdmittedCall, type RouteContext } from '../operations/context.ts';
import { Cursors } from '../operations/cursors.ts';
import type { ReadCache } from '../operations/read-cache.ts';
import { readCacheOf, Reader } from '../operations/reads.ts';
import { ApiError, errors, toApiError } from '../operations/errors.ts';
import { Budget } from '../operations/gates/budget.ts';
import { InFlightLimiter } from '../operations/gates/in-flight.ts';
import { storeWithSlots } from '../operations/gates/store-slot.ts';
import { MemoryGates } from '../operations/gates/memory.ts';
import type { GateStore } from '../operations/gates/store.ts';
import { MemorySlots, type SlotStore } from '../operations/gates/slots.ts';
import { LivePlane } from '../operations/live/plane.ts';
import type { RecordingSink } from '../operations/live/recording.ts';
import { clientMessageSchema, serverMessageSchema } from '../operations/live/messages.ts';
import { registerLiveRoute, type LiveAuthentication } from './routes/live.ts';
import { type ApiApp, errorResponses } from './http.ts';
import { responseSerializerCompiler } from '../operations/response-schema.ts';
import { registerChartRoutes } from './routes/charts.ts';
import { registerEquityRoutes } from './routes/equity.ts';
import { registerFillRoutes } from './routes/fills.ts';
import { registerIndexRoute } from './routes/index.ts';
import { registerMarketRoutes } from './routes/markets.ts';
import { registerMeRoutes } from './routes/me.ts';
import { registerPopularRoutes } from './routes/popular.ts';
import { registerPriceRoutes } from './routes/prices.ts';
import { registerTraderRoutes } from './routes/traders.ts';
import { registerSkillRoutes } from './routes/skill.ts';
import { registerLeaderboardRoutes } from './routes/leaderboard.ts';
import { registerWhaleRoutes } from './routes/whales.ts';
import { registerTapeRoutes } from './routes/tapes.ts';
import type { TapeDownloads } from '../operations/tapes.ts';
import { LocalTapeDownloads } from './downloads.ts';
import { API_DESCRIPTION } from './openapi-description.ts';
import { registerHttpMetrics } from '../metrics/http.ts';
import { readinessDetail, stalledLoops } from '../metrics/progress.ts';
import { instrumentStore } from '../metrics/store.ts';
import { readCacheLookups } from '../metrics/registry.ts';

/** How a route meets the gates (read-api.md, What counts against the call quota). */
interface RouteBudget {
  /** Not a metered call (the OpenAPI document, like MCP's tools/list). */
  free?: boolean;
  /** Reads a `{trader}`: Basic counts its wallet toward the distinct-wallet cap. */
  traderScoped?: boolean;
  /** Takes a slot of the admission lane (tape events, raw ticks, full tape) while it runs. */
  heavy?: (query: Record<string, unknown>) => boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
    admitted: AdmittedCall | null;
  }
  interface FastifyContextConfig {
    budget?: RouteBudget;
  }
}

export interface Readiness {
  ready: boolean;
  /** What the service is doing while not ready (for example the demo backfill's progress). */
  detail: Record<string, unknown>;
}

interface ReadApiOptions {
  config: Config;
  store: Store;
  /** Epoch seconds; tests pin it. */
  now?: () => number;
  /** Where the gates keep the budgets; default process memory. The owner closes it. */
  gates?: GateStore;
  /** The gates' clock in milliseconds; tests pin it. Default: the gate store's own (Redis TIME). */
  gatesClockMs?: () => number;
  /** Notes the wallets clients ask about for the upstream poller; the owner closes it. */
  walletRequests?: WalletRequestLog;
  /** The read cache (default: one of config.api.readCache over `store`); tests and benchmarks pass their own to look inside. */
  cache?: ReadCache;
  /** Load shedding (default: one limiter from config.api.inFlight); benchmarks pass their own to read its counters. */
  inFlight?: InFlightLimiter;
  /** The clock of the key lookup cache (`api.keyCacheSeconds`), in milliseconds; tests pin it. Default: the wall clock. */
  authClockMs?: (() => number) | undefined;
  /** The live plane's slots (default: process memory); the owner closes it. */
  slots?: SlotStore;
  /** The slots' clock in milliseconds; tests pin it. Default: the slot store's own (Redis TIME). */
  slotsClockMs?: () => number;
  /**
   * Starts what feeds the live plane (the roles read the log: ingest/live-feed.ts, which api/ never
   * imports). Absent, no live plane is served (an instance without the log has nothing to stream).
   */
  liveFeed?: (plane: LivePlane) => Promise<{ stop(): Promise<void> }>;
  /** Where the live plane's recordings go (the roles publish them on the log); absent, watches are not recorded. */
  liveRecordings?: RecordingSink;
  /** How a live connection is authenticated (default: API keys; the roles add OAuth tokens). */
  liveAuthentication?: ((shared: ReadApiShared) => LiveAuthentication) | undefined;
  /**
   * Another surface on the same app, after the REST routes (the roles mount the MCP endpoint here:
   * roles/http-server.ts). api/ never imports it.
   */
  mount?: ((app: FastifyInstance, shared: ReadApiShared) => Promise<void>) | undefined;
}

/** What a mounted surface shares with the REST routes: the context (gates, cursors) and the keys (one key cache, one 401). */
export interface ReadApiShared {
  context: RouteContext;
  authenticator: Authenticator;
}

export interface AppOptions {
  log: Logger;
  /** Liveness of the store (a cheap query). */
  storeAlive: () => Promise<boolean>;
  /** May read the store (figures for the probe's body). */
  readiness: () => Readiness | Promise<Readiness>;
  /** The read API; absent, the app only answers the probes. */
  api?: ReadApiOptions;
}

/** Liveness, readiness and the index: open to every address (load balancers and orchestrators ask them; none takes a key). */
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/']);

/** Request validation with zod, reporting the offending input (for the 422 body). */
function validatorCompiler({ schema }: { schema: z.ZodType }) {
  return (data: unknown) => {
    const result = schema.safeParse(data, { reportInput: true });
    return result.success ? { value: result.data } : { error: result.error.issues as unknown as Error };
  };
}

const VALIDATION_LOCATION: Record<string, string> = {
  querystring: 'query',
  params: 'path',
  headers: 'header',
  body: 'body',
};

interface ZodIssueLike {
  code: string;
  message: string;
  path: (string | number | symbol)[];
  input?: unknown;
  [extra: string]: unknown;
}

function validationBody(error: FastifyError & { validation: unknown[]; validationContext?: string }) {
  const location = VALIDATION_LOCATION[error.validationContext ?? ''] ?? error.validationContext ?? 'request';
  return {
    detail: (error.validation as ZodIssueLike[]).map((issue) => {
      const { code, message, path, input, ...ctx } = issue;
      return {
        loc: [location, ...path.map((part) => (typeof part === 'number' ? part : String(part)))],
        msg: message,
        type: code,
        ...(input === undefined ? {} : { input }),
        ...(Object.keys(ctx).length > 0 ? { ctx } : {}),
      };
    }),
  };
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  // Set once the read API is registered; the router's error hook (created first) authenticates with it.
  const frameworkAuthenticator: { current: Authenticator | undefined } = { current: undefined };
  const loggerInstance: FastifyBaseLogger = options.log.child({ name: 'http' });
  // Probes (health, readiness) would flood the log; requests of the API are logged by their routes.
  const limits = options.api?.config.http;
  const app = Fastify({
    loggerInstance,
    // Slow and idle clients are cut off (Fastify's own defaults leave requests and idle sockets open
    // forever): see `http` in config-derived.ts.
    ...(limits
      ? {
          connectionTimeout: limits.idleTimeoutMs,
          keepAliveTimeout: limits.keepAliveTimeoutMs,
          requestTimeout: limits.requestTimeoutMs,
          bodyLimit: limits.bodyLimitBytes,
          http: {
            headersTimeout: limits.headersTimeoutMs,
            maxHeaderSize: limits.maxHeaderBytes,
            // Node enforces the headers and request bounds on this sweep (default every 30 s, which
            // would let a slow client overstay a short bound by that much).
            connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
          },
        }
      : {}),
    logController: new LogController({ disableRequestLogging: true }),
    // Profile URLs and names travel in the path: let any length reach the route (the request line is
    // bounded by Node's header limit anyway), where it is authenticated and answered with a contract code.
    routerOptions: { maxParamLength: 16_384 },
    // The client address is what too_many_auth_failures blocks: behind proxies, the right-most
    // X-Forwarded-For hop that is not one of the configured proxies (none by default).
    trustProxy: options.api?.config.http.trustProxy.length ? [...options.api.config.http.trustProxy] : false,
    // The router's own refusals (a malformed percent-escape…) still authenticate first, then answer in
    // the contract's shape.
    frameworkErrors: (error, request, rawReply) => {
      const reply = rawReply as unknown as FastifyReply;
      void (async () => {
        const prefix = options.api?.config.api.prefix;
        if (prefix && request.url.startsWith(prefix) && frameworkAuthenticator.current) {
          try {
            await frameworkAuthenticator.current.authenticate(request.headers.authorization, {});
          } catch (refusal) {
            if (refusal instanceof ApiError)
              return reply.code(refusal.status).headers(refusal.headers).send(refusal.body());
            throw refusal;
          }
        }
        return reply.code(400).send({
          error: 'bad_request',
          message: `The request URL could not be read (${error.message}). Percent-encode path segments with encodeURIComponent.`,
        });
      })().catch((failure: unknown) => {
        request.log.error({ err: failure }, 'framework error handler failed');
        const internal = errors.internal();
        void reply.code(internal.status).send(internal.body());
      });
    },
  });
  // First, so that its timing hooks cover every route declared below.
  await registerHttpMetrics(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler);
  app.decorateRequest('caller', null);
  app.decorateRequest('admitted', null);

  app.setErrorHandler(
    (error: FastifyError & { validation?: unknown[]; validationContext?: string }, request, reply) => {
      if (error.validation)
        return reply.code(422).send(validationBody(error as FastifyError & { validation: unknown[] }));
      const status = error.statusCode ?? 500;
      if (!(error instanceof ApiError) && !(error instanceof QueryTimeoutError) && status >= 400 && status < 500) {
        // Fastify's own refusals (unsupported media type, oversized headers…): the contract's shape.
        return reply.code(status).send({ error: 'bad_request', message: error.message });
      }
      // The one mapping MCP tool calls use too.
      const refusal = toApiError(error, request.log, { url: request.url });
      return reply.code(refusal.status).headers(refusal.headers).send(refusal.body());
    },
  );

  // A loop of this process that stopped advancing (the archive's in the all role) makes it unhealthy.
  app.get('/healthz', { schema: { hide: true } }, async (_request, reply) => {
    const stalled = stalledLoops();
    return stalled.length > 0 ? reply.code(503).send({ status: 'stalled', loops: stalled }) : { status: 'ok' };
  });

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const storeAlive = await options.storeAlive();
    const readiness = await options.readiness();
    const ready = storeAlive && readiness.ready;
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'starting',
      store: storeAlive ? 'ok' : 'unreachable',
      ...readiness.detail,
      ...readinessDetail(),
    });
  });

  if (options.api) {
    frameworkAuthenticator.current = await registerReadApi(app, options.api, options.log);
    registerIndexRoute(app, { apiPrefix: options.api.config.api.prefix, mcpPath: options.api.config.mcp.path });
  }
  return app;
}

/** A zod schema as an OpenAPI 3.1 schema object (JSON Schema 2020-12, without its `$schema`). */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { io: 'output' }) as Record<string, unknown>;
  return json;
}

/** A live connection's caller by API key, a failure counted toward too_many_auth_failures as on REST. */
function keyAuthentication(context: RouteContext, authenticator: Authenticator): LiveAuthentication {
  return async (authorization, address, recheck = false) => {
    try {
      return await authenticator.authenticate(authorization, {});
    } catch (refusal) {
      if (!recheck && refusal instanceof ApiError && refusal.status === 401)
        throw (await context.budget.authenticationFailed(address)) ?? refusal;
      throw refusal;
    }
  };
}

async function registerReadApi(app: FastifyInstance, api: ReadApiOptions, log: Logger): Promise<Authenticator> {
  const { config } = api;
  // A read inside a metered call takes the call's slot of the store's work first (load shedding).
  const store = storeWithSlots(instrumentStore(withQueryTimeout(api.store, config.clickhouse.queryTimeoutSeconds)));
  // Cache hits are no statements: the cache sits outside the store's instrumentation.
  let cache = api.cache;
  if (!cache) {
    const own = readCacheOf(config, api.store, {
      observe: (answer, outcome) => readCacheLookups.inc({ cache: answer, outcome }),
    });
    app.addHook('onClose', async () => own.close());
    cache = own;
  }
  const reader = new Reader(store, cache, config.api.readCache);
  if (config.api.cursorSecret === null)
    log.info(
      'API_CURSOR_SECRET is not set: cursors are signed with a per-process secret (set it when several API processes serve one deployment)',
    );
  const slots = api.slots ?? new MemorySlots();
  const slotsClockMs = api.slotsClockMs ?? null;
  const context: RouteContext = {
    config,
    store,
    reader,
    log,
    cursors: new Cursors(config.api.cursorSecret ?? randomBytes(32).toString('base64url')),
    now: api.now ?? (() => Math.floor(Date.now() / 1000)),
    resolveTrader: (identifier) => resolveTrader(reader, identifier),
    budget: new Budget(api.gates ?? new MemoryGates(), config, log.child({ name: 'gates' }), api.gatesClockMs ?? null),
    ...(api.walletRequests ? { walletRequests: api.walletRequests } : {}),
    inFlight: api.inFlight ?? new InFlightLimiter(config.api.inFlight),
    liveSlotsInUse: async (userId) => {
      try {
        return await slots.inUse(userId, slotsClockMs ? slotsClockMs() : null);
      } catch (failure) {
        log.warn({ err: failure }, 'slot store unavailable: /me reports no live slots in use');
        return 0;
      }
    },
    liveWatching: async () => {
      try {
        return await slots.watching(slotsClockMs ? slotsClockMs() : null);
      } catch (failure) {
        log.warn({ err: failure }, 'slot store unavailable: /popular reports nobody watching');
        return new Map();
      }
    },
  };

  const authenticator = new Authenticator(store, config, api.authClockMs ?? Date.now);
  // too_many_auth_failures holds on every path and protocol (REST, MCP, free and unknown paths, links)
  // before any key is looked at: a blocked address gets one answer whatever its key, so the block
  // cannot be used to tell valid keys from invalid ones. Only the probes stay open.
  app.addHook('onRequest', async (request) => {
    if (PROBE_PATHS.has(request.routeOptions.url ?? '')) return;
    const blocked = await context.budget.addressBlock(request.ip);
    if (blocked) throw blocked;
  });
  // Tape downloads: an S3-compatible store when configured, else local objects behind signed links served here.
  let downloads: TapeDownloads;
  if (config.tapes.download.s3) {
    // Loaded only when configured: the AWS SDK is large (and warns about Node versions at import).
    const { S3TapeDownloads } = await import('./downloads-s3.ts');
    downloads = new S3TapeDownloads(config.tapes.download.s3, config.tapes.download.expiresInSeconds);
  } else {
    const local = new LocalTapeDownloads(config.tapes.download);
    local.register(app, context.now);
    downloads = local;
  }

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Trader Analytics Read API', version: '1.0.0', description: API_DESCRIPTION },
      components: {
        // The live plane's messages (a WebSocket, so no path describes them): the JSON Schemas of both directions.
        schemas: {
          LiveClientMessage: jsonSchemaOf(clientMessageSchema),
          LiveServerMessage: jsonSchemaOf(serverMessageSchema),
        },
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'Authorization: Bearer <API_KEY>. Never in the query string.',
          },
        },
      },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });

  await app.register(
    async (scope) => {
      const v1 = scope.withTypeProvider<ZodTypeProvider>() as unknown as ApiApp;
      // Before anything else: who calls, and may they (the gates run before validation, so a 422 on a
      // real route is a call like a 400). A request for no route is not a call.
      v1.addHook('onRequest', async (request, reply) => {
        try {
          request.caller = await authenticator.authenticate(request.headers.authorization, request.query);
        } catch (refusal) {
          if (refusal instanceof ApiError && refusal.status === 401)
            throw (await context.budget.authenticationFailed(request.ip)) ?? refusal;
          throw refusal;
        }
        const budget = request.routeOptions.config.budget;
        if (request.is404 || budget?.free) return;
        // A heavy-read slot comes back on every exit path: the response sent or failed (onResponse
        // below), or the connection closed under the call at any point, even while it is being admitted
        // (a client that went away; 'close' also follows every finished response).
        const connection = new AbortController();
        reply.raw.once('close', () => connection.abort());
        request.admitted = await admitCall(context, request.caller, {
          address: request.ip,
          trader: budget?.traderScoped ? (request.params as { trader?: string }).trader : undefined,
          heavy: budget?.heavy?.(request.query as Record<string, unknown>) ?? false,
          signal: connection.signal,
        });
      });
      // The route's handler runs as its call, so that its store reads take the call's slot (and a
      // call answered from memory takes none). Callback style: the handler is called from `done`.
      v1.addHook('preHandler', (request, _reply, done) => {
        if (request.admitted) request.admitted.storeSlot.run(done);
        else done();
      });
      v1.addHook('onResponse', async (request) => {
        request.admitted?.release();
      });
      v1.setNotFoundHandler((request, reply) => {
        const notFound = errors.notFound(request.url.split('?')[0] ?? '');
        return reply.code(notFound.status).send(notFound.body());
      });
      registerMeRoutes(v1, context);
      registerPopularRoutes(v1, context);
      registerTraderRoutes(v1, context);
      registerSkillRoutes(v1, context);
      registerLeaderboardRoutes(v1, context);
      registerMarketRoutes(v1, context);
      registerPriceRoutes(v1, context);
      registerEquityRoutes(v1, context);
      registerFillRoutes(v1, context);
      registerChartRoutes(v1, context);
      registerWhaleRoutes(v1, context);
      registerTapeRoutes(v1, context, downloads);
      // Free, so never shed: every error response but 503 overloaded.
      const { 503: _neverShed, ...openApiErrors } = errorResponses();
      v1.get(
        '/openapi.json',
        {
          config: { budget: { free: true } },
          schema: {
            operationId: 'openapi',
            summary: 'This document (OpenAPI 3.1.0)',
            description: 'The machine-readable description of this API.',
            response: {
              200: z.record(z.string(), z.unknown()).meta({ description: 'An OpenAPI 3.1.0 document.' }),
              ...openApiErrors,
            },
          },
        },
        async () => app.swagger() as unknown as Record<string, unknown>,
      );
    },
    { prefix: config.api.prefix },
  );
  if (api.liveFeed) {
    const plane = new LivePlane({ context, slots, slotsClockMs, recordings: api.liveRecordings ?? null });
    const authenticate =
      api.liveAuthentication?.({ context, authenticator }) ?? keyAuthentication(context, authenticator);
    await registerLiveRoute(app, config, plane, authenticate);
    const feed = await api.liveFeed(plane);
    // Before the server stops listening: every client is told why its connection ends.
    app.addHook('preClose', async () => {
      await plane.close();
      await feed.stop();
    });
  }
  // The same data as tools, on the same server: the same context (gates, cursors) and the same keys.
  if (api.mount) await api.mount(app, { context, authenticator });
  return authenticator;
}
