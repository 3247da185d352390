/**
 * The MCP endpoint (read-api.md, Tool-protocol surface): streamable HTTP, stateless, at `/mcp` on the
 * same Fastify app as the REST API, served with the SDK's 2.x line (`@modelcontextprotocol/server`).
 * Every POST gets a new McpServer built for that request's caller; the tools call the REST routes'
 * operations through the same gates. GET and DELETE (server-sent streams, session ends) answer 405.
 *
 * One endpoint, three protocol revisions, chosen by what the client sends (the SDK's own classifier,
 * `isLegacyRequest`, which is the routing step of `createMcpHandler`):
 * - 2026-07-28 (a request carrying the per-request `_meta` envelope: stateless, no `initialize`,
 *   `server/discover`, `MCP-Method` / `MCP-Protocol-Version` headers checked against the body) →
 *   `createMcpHandler(…, {legacy: 'reject'})`, the SDK's modern serving entry;
 * - 2025-11-25 and 2025-06-18 (and the older revisions the SDK still negotiates: any request without
 *   the envelope, `initialize` first) → a stateless `WebStandardStreamableHTTPServerTransport` with
 *   JSON answers, as before the move to 2.x (the SDK's own legacy fallback would answer over SSE).
 * Both legs build their server from the same factory, so tools, prompts, costs and gates cannot differ.
 *
 * Order of a request: the Host check (DNS-rebinding protection, config MCP_ALLOWED_HOSTS) → the Origin
 * check (a browser's Origin must be the service's own: 403 otherwise) → the bearer
 * key or OAuth token (401 / 403 insufficient_scope / too_many_auth_failures) → the body (Fastify's
 * http.bodyLimitBytes: 413) → the SDK. Connecting, discovery, tools/list, prompts/list, resources/* and
 * prompts/get are free; each tools/call is one call of the budget, admitted inside the tool.
 */
import {
  createMcpHandler,
  isLegacyRequest,
  McpServer,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../operations/auth.ts';
import type { RouteContext } from '../operations/context.ts';
import { originAllowed } from '../operations/origin.ts';
import { hostnameOf, type Config } from '../config.ts';
import { OAuthVerifier } from './oauth.ts';
import { mcpAuthentication, protectedResourceMetadataUrl } from './auth.ts';
import { registerPrompts } from './prompts.ts';
import { registerChartResources } from './resources/index.ts';
import type { McpSession, Tool } from './tool.ts';
import { buildTools } from './tools/index.ts';

const MCP_SERVER_INFO = { name: 'trader-analytics', version: '1.0.0' } as const;

export interface McpOptions {
  context: RouteContext;
  /** The app's own (REST's) authenticator: one key cache, one 401. */
  authenticator: Authenticator;
}

/** What the server tells a model once, at connection. */
function serverInstructions(): string {
  return [
    'Read-only analytics of prediction-market traders: career cards, ranked markets, per-market statistics, sampled price charts with fills, profit curves, recent fills, popular traders.',
    'Each tool call costs one request of your budget (whoami states the plan, limits and what is left); listing tools and prompts and reading resources (chart templates, MCP Apps) costs nothing. Keep answers small with limit, n and points.',
    "The one profit to quote for a trader is upstream.pnl from get_trader_card. A resolved market's pnl_usd is a result; an open market's is cash flow, whose standing is pnl_marked_usd.",
    'A result with isError carries a message written for a human: relay it. depth_gated and wallet_quota are plan walls (do not retry); daily_limit and monthly_limit mean the budget is spent (stop); rate_limited, busy and overloaded are transient (wait retry_after seconds).',
    `The prompt crack_this_trader scripts a full investigation of one trader.`,
  ].join(' ');
}

/** A JSON-RPC error body without a request id (the SDK's shape for HTTP-level refusals). */
function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0' as const, error: { code, message }, id: null };
}

/** DNS-rebinding protection: the Host (X-Forwarded-Host behind a trusted proxy) must name an allowed host; ports are ignored. */
function hostAllowed(config: Config, request: FastifyRequest): { allowed: true } | { allowed: false; host: string } {
  const { allowedHosts } = config.mcp;
  if (allowedHosts === '*') return { allowed: true };
  const host = typeof request.host === 'string' ? request.host : '';
  const hostname = hostnameOf(host);
  return hostname !== null && allowedHosts.includes(hostname) ? { allowed: true } : { allowed: false, host };
}

/**
 * The Fetch API view of a Fastify request, as the SDK's 2.x entries take it: method, URL and headers;
 * no body (Fastify read and parsed it under its own limit; it is handed over as `parsedBody`). Its
 * signal aborts when the HTTP exchange ends.
 */
function webRequestOf(request: FastifyRequest, origin: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(new URL(request.url, origin), { method: request.method, headers, signal });
}

/** Writes a Fetch API response to the hijacked Node response. */
async function sendWebResponse(response: Response, reply: FastifyReply): Promise<void> {
  const body = response.body ? Buffer.from(await response.arrayBuffer()) : undefined;
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  if (body) headers['content-length'] = String(body.length);
  reply.raw.writeHead(response.status, headers).end(body);
}

export async function registerMcp(app: FastifyInstance, options: McpOptions): Promise<void> {
  const { context } = options;
  const { config } = context;
  const log = context.log.child({ name: 'mcp' });
  const tools = buildTools(config);
  const instructions = serverInstructions();
  const oauth = config.mcp.oauth ? new OAuthVerifier(config.mcp.oauth) : null;
  const authenticate = mcpAuthentication({
    authenticator: options.authenticator,
    budget: context.budget,
    store: context.store,
    config,
    oauth,
  });
  const origin = new URL(config.mcp.publicUrl).origin;

  // The caller of each exchange, by its Fetch API request (the modern entry hands that very request to the factory).
  const sessions = new WeakMap<Request, McpSession>();
  const modern = createMcpHandler(
    ({ requestInfo }) => {
      const session = requestInfo ? sessions.get(requestInfo) : undefined;
      if (!session) throw new Error('an MCP exchange without its session');
      return createMcpServer(session, tools, instructions);
    },
    {
      // 2025-era requests never reach this entry (routed below); a stray one gets the SDK's unsupported-version answer.
      legacy: 'reject',
      onerror: (failure) => log.debug({ err: failure }, 'MCP request refused or failed in the SDK'),
    },
  );
  app.addHook('onClose', async () => modern.close());

  /** 2025-11-25 / 2025-06-18: one stateless transport and server per request, plain JSON answers. */
  async function serveLegacy(web: Request, session: McpSession, parsedBody: unknown): Promise<Response> {
    const server = createMcpServer(session, tools, instructions);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      return await transport.handleRequest(web, { parsedBody });
    } finally {
      void transport.close();
      void server.close();
    }
  }

  const methodNotAllowed = async (_request: FastifyRequest, reply: FastifyReply) =>
    reply.code(405).header('Allow', 'POST').send(jsonRpcError(-32000, 'Method not allowed.'));

  await app.register(async (scope) => {
    scope.addHook('onRequest', async (request, reply) => {
      const check = hostAllowed(config, request);
      if (check.allowed) return;
      log.warn(
        { host: check.host, address: request.ip },
        'MCP request with a Host that is not allowed (DNS-rebinding protection)',
      );
      return reply.code(403).send(jsonRpcError(-32000, `Invalid Host header: ${check.host.slice(0, 200) || '(none)'}`));
    });

    scope.post(
      config.mcp.path,
      {
        schema: { hide: true },
        // Before the body is read: where from, then who calls (an unauthenticated request is never parsed).
        onRequest: async (request, reply) => {
          const check = originAllowed(origin, request);
          if (!check.allowed) {
            log.warn({ origin: check.origin.slice(0, 200), address: request.ip }, 'MCP request from a foreign Origin');
            return reply
              .code(403)
              .send(jsonRpcError(-32000, `Invalid Origin header: ${check.origin.slice(0, 200) || '(empty)'}`));
          }
          request.caller = await authenticate(request);
        },
      },
      async (request, reply) => {
        const exchange = new AbortController();
        reply.raw.once('close', () => exchange.abort());
        const session: McpSession = {
          context,
          caller: request.caller!,
          address: request.ip,
          signal: exchange.signal,
          log,
        };
        const web = webRequestOf(request, origin, exchange.signal);
        reply.hijack();
        try {
          let response: Response;
          if (await isLegacyRequest(web, request.body)) {
            response = await serveLegacy(web, session, request.body);
          } else {
            sessions.set(web, session);
            response = await modern.fetch(web, { parsedBody: request.body });
          }
          if (!reply.raw.destroyed) await sendWebResponse(response, reply);
        } catch (failure) {
          log.error({ err: failure }, 'MCP request failed');
          if (!reply.raw.headersSent && !reply.raw.destroyed) {
            reply.raw
              .writeHead(500, { 'content-type': 'application/json' })
              .end(JSON.stringify(jsonRpcError(-32603, 'Internal server error')));
          }
        }
      },
    );
    scope.get(config.mcp.path, { schema: { hide: true } }, methodNotAllowed);
    if (oauth) {
      // RFC 9728 protected-resource metadata (no key, no quota): where an MCP client learns whom to ask for a token.
      const metadataPath = new URL(protectedResourceMetadataUrl(config.mcp.publicUrl)).pathname;
      const metadata = async () => oauth.metadata();
      scope.get(metadataPath, { schema: { hide: true } }, metadata);
      if (metadataPath !== '/.well-known/oauth-protected-resource')
        scope.get('/.well-known/oauth-protected-resource', { schema: { hide: true } }, metadata);
    }
    scope.delete(config.mcp.path, { schema: { hide: true } }, methodNotAllowed);
  });
}

/** One request's server: the tools bound to its caller, and the prompt (the same for every protocol revision). */
function createMcpServer(session: McpSession, tools: readonly Tool[], instructions: string): McpServer {
  const server = new McpServer(MCP_SERVER_INFO, { instructions });
  for (const tool of tools) tool.register(server, session);
  registerPrompts(server, session.context.config);
  registerChartResources(server, session.context.config);
  return server;
}
