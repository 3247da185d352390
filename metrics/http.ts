/**
 * HTTP metrics of a Fastify app (the `api` and `all` roles): fastify-metrics times every request into
 * a histogram by method, route template and status code, and `GET /metrics` answers the process's
 * whole exposition (this app's histogram plus the shared registry).
 *
 * The histogram lives on a registry of the app's own: several apps in one process (tests build many)
 * each register theirs without colliding, while the shared metrics stay defined once.
 */
import type { FastifyInstance } from 'fastify';
import fastifyMetricsModule from 'fastify-metrics';
import { Registry } from 'prom-client';
import { exposition, HTTP_REQUEST_DURATION } from './registry.ts';

// A CommonJS module: its plugin is the `default` export of module.exports.
const fastifyMetrics = fastifyMetricsModule.default;

/** The route label of a request that matched no route (unknown paths, refused URLs): never the raw URL. */
const UNMATCHED_ROUTE = 'unmatched';

/** Registers request metrics and `GET /metrics` on the app. Call it before any route is declared. */
export async function registerHttpMetrics(app: FastifyInstance): Promise<void> {
  const appRegistry = new Registry();
  await app.register(fastifyMetrics, {
    endpoint: null,
    // Runtime metrics are collected once per process on the shared registry.
    defaultMetrics: { enabled: false },
    routeMetrics: {
      enabled: { histogram: true, summary: false },
      // Every request counts (a 404 too), under its route template or `unmatched`.
      registeredRoutesOnly: false,
      invalidRouteGroup: UNMATCHED_ROUTE,
      overrides: {
        histogram: {
          name: HTTP_REQUEST_DURATION,
          help: 'HTTP request latency by method, route template and status code.',
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
          registers: [appRegistry],
        },
        // The plugin creates its summary even when disabled: keep it off every registry that is scraped.
        summary: { registers: [new Registry()] },
      },
    },
  });
  app.get(
    '/metrics',
    { schema: { hide: true }, config: { disableMetrics: true }, logLevel: 'warn' },
    async (_request, reply) => {
      const { contentType, body } = await exposition([appRegistry]);
      return reply.type(contentType).send(body);
    },
  );
}
