/**
 * The small metrics port of the worker roles (ingest, simulate, the sources), which serve no HTTP
 * otherwise: `GET /metrics` (the exposition), `GET /healthz` (the process answers and every watched loop
 * advanced within its period: 503 naming the stalled ones otherwise, progress.ts) and `GET /readyz` (the
 * same: a worker takes no traffic, so readiness only gates the rollout). Plain node:http: a whole
 * Fastify app would be more than this needs.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readinessDetail, stalledLoops } from './progress.ts';
import { exposition } from './registry.ts';

export interface MetricsServer {
  /** The port it listens on (the configured one, or the one picked for port 0). */
  readonly port: number;
  close(): Promise<void>;
}

export async function startMetricsServer(options: { host: string; port: number }): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const stalled = stalledLoops();
      if (stalled.length > 0) {
        response
          .writeHead(503, { 'content-type': 'application/json' })
          .end(JSON.stringify({ status: 'stalled', loops: stalled }));
        return;
      }
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: 'ok', ...(path === '/readyz' ? readinessDetail() : {}) }));
      return;
    }
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
      return;
    }
    exposition().then(
      ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body),
      () => response.writeHead(500).end(),
    );
  });
  // Scrapes are short; do not let an idle keep-alive connection hold the process at shutdown.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
