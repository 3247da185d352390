/**
 * The HTTP application, built apart from the listening server so tests drive it with `app.inject`.
 * This issue serves liveness and readiness; the read API under /api/agent/v1 registers here as a plugin.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from '../log.ts';

export interface Readiness {
  ready: boolean;
  /** What the service is doing while not ready (for example the demo backfill's progress). */
  detail: Record<string, unknown>;
}

export interface AppOptions {
  log: Logger;
  /** Liveness of the store (a cheap query). */
  storeAlive: () => Promise<boolean>;
  readiness: () => Readiness;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const loggerInstance: FastifyBaseLogger = options.log.child({ name: 'http' });
  // Probes (health, readiness) would flood the log; requests of the API are logged by their routes.
  const app = Fastify({ loggerInstance, logController: new LogController({ disableRequestLogging: true }) });

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const storeAlive = await options.storeAlive();
    const readiness = options.readiness();
    const ready = storeAlive && readiness.ready;
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'starting', store: storeAlive ? 'ok' : 'unreachable', ...readiness.detail });
  });

  return app;
}
