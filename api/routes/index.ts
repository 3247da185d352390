/**
 * `GET /`: a short index for whoever opens the service's address first, a person or an agent: where the
 * REST API, its OpenAPI document, MCP and the probes are, how to authenticate, how to get a key, and
 * where the documentation is. Like the probes it needs no key and costs no quota; it reads nothing.
 *
 * It stays out of the OpenAPI document (`hide`): that document describes the versioned read API under
 * its prefix, every operation of which takes a key; the index is unversioned discovery, like /healthz.
 */
import type { FastifyInstance } from 'fastify';

export interface IndexPaths {
  /** The read API's prefix (config.api.prefix). */
  apiPrefix: string;
  /** The MCP endpoint (config.mcp.path). */
  mcpPath: string;
}

/** The index's body: relative links (they hold behind any proxy or host name). */
function indexBody({ apiPrefix, mcpPath }: IndexPaths) {
  return {
    name: 'Trader Analytics',
    description: 'Read-only trader analytics for software agents, over REST and MCP.',
    links: {
      rest: apiPrefix,
      openapi: `${apiPrefix}/openapi.json`,
      mcp: mcpPath,
      healthz: '/healthz',
      readyz: '/readyz',
      metrics: '/metrics',
    },
    auth: `Every REST and MCP call takes a key: Authorization: Bearer <key> (the OpenAPI document too; it costs no quota). Start with GET ${apiPrefix}/me.`,
    keys: {
      demo: '`npm start` (role all, embedded) prints a Basic, a Pro and a Max demo key when it starts.',
      operators:
        'npx tsx main.ts keys mint --user <account_id> --plan basic|pro|max --label <label> (the key is printed once; `keys list`, `keys revoke` too).',
    },
    docs: {
      readme: 'README.md (in the repository)',
      guides: 'docs/ (in the repository)',
      mcp: 'mcp/README.md (in the repository)',
    },
  };
}

export function registerIndexRoute(app: FastifyInstance, paths: IndexPaths): void {
  const body = indexBody(paths);
  app.get('/', { schema: { hide: true } }, async () => body);
}
