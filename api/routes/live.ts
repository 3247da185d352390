/**
 * The live plane's WebSocket at `{base_url}/live` (docs/live.md). The route only carries frames: the
 * plane (operations/live/plane.ts) runs the commands, the subscriptions and the slots.
 *
 * Authentication: the same API keys (and, where the role adds them, OAuth access tokens) as the rest of
 * the service, from the `Authorization` header, or, for a browser (which cannot set that header on a
 * WebSocket), from the subprotocol list: the client offers `trader-analytics.live.v1` and
 * `bearer.<API_KEY>`, and the server selects the former (it never echoes a credential). A refused
 * connection is told why (an error message) and closed with a code and the error as its reason; a
 * blocked address is refused before the upgrade (429 too_many_auth_failures, like every path), and so is
 * a browser page of another origin (403, the Origin check of /mcp: operations/origin.ts). An open
 * connection's credential is checked again while it lives (a revoked key's streams close).
 *
 * Streams consume no request quota: the plane meters its slots, and the store lookups of its commands.
 */
import websocket, { type WebSocket } from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.ts';
import type { Caller } from '../../operations/auth.ts';
import { ApiError } from '../../operations/errors.ts';
import { LIVE_CHART_CSP, liveChartPage } from '../../operations/charts/templates.ts';
import { CLOSE_CODES, type LiveErrorCode } from '../../operations/live/messages.ts';
import { originAllowed } from '../../operations/origin.ts';
import type { LiveConnection, LivePlane } from '../../operations/live/plane.ts';
import { liveDisconnects } from '../../metrics/registry.ts';

/**
 * The caller of a live connection from its bearer credential, or the ApiError to answer (failures already
 * counted). `recheck`: the credential of an open connection checked again, whose refusal is not a failed
 * authentication of the address (it is not counted).
 */
export type LiveAuthentication = (
  authorization: string | undefined,
  address: string,
  recheck?: boolean,
) => Promise<Caller>;

const BEARER_PROTOCOL = 'bearer.';
/** Commands a client may send before its `ready`. */
const EARLY_FRAMES = 64;

/** The bearer credential of an upgrade: the Authorization header, else a `bearer.<token>` subprotocol. */
function authorizationOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const header = headers.authorization;
  if (typeof header === 'string') return header;
  const offered = headers['sec-websocket-protocol'];
  const protocols = (Array.isArray(offered) ? offered.join(',') : (offered ?? '')).split(',').map((p) => p.trim());
  const bearer = protocols.find((protocol) => protocol.startsWith(BEARER_PROTOCOL));
  return bearer ? `Bearer ${bearer.slice(BEARER_PROTOCOL.length)}` : undefined;
}

function closeCodeOf(refusal: ApiError): { code: LiveErrorCode; close: number } {
  if (refusal.code === 'too_many_auth_failures') return { code: refusal.code, close: CLOSE_CODES.tooMany };
  if (refusal.code === 'insufficient_scope') return { code: refusal.code, close: CLOSE_CODES.insufficientScope };
  return { code: 'unauthorized', close: CLOSE_CODES.unauthorized };
}

export async function registerLiveRoute(
  app: FastifyInstance,
  config: Config,
  plane: LivePlane,
  authenticate: LiveAuthentication,
): Promise<void> {
  const { protocol, maxMessageBytes } = config.live;
  const ownOrigin = new URL(config.mcp.publicUrl).origin;
  // Its own scope: the WebSocket plugin's hooks touch this route only, never the REST routes.
  await app.register(async (scope) => {
    await scope.register(websocket, {
      options: {
        maxPayload: maxMessageBytes,
        // The plane's protocol when offered; never a `bearer.` entry (a credential is not echoed).
        handleProtocols: (offered) => (offered.has(protocol) ? protocol : false),
      },
      // The plane says goodbye to its clients itself (plane.close), with a reason.
      preClose: (done) => done(),
    });
    // The live chart page: no data and no credential in it (the browser keeps them in the fragment), so
    // it is served to anyone; the page itself connects to the plane above with the key it was given.
    const livePath = `${config.api.prefix}${config.live.path}`;
    scope.get(`${livePath}/chart`, (_request, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('Content-Security-Policy', LIVE_CHART_CSP)
        .send(liveChartPage(livePath, protocol)),
    );
    scope.route({
      method: 'GET',
      url: livePath,
      // Before the upgrade: a browser page of another origin is refused as /mcp refuses it.
      onRequest: async (request, reply) => {
        const check = originAllowed(ownOrigin, request);
        if (check.allowed) return;
        const origin = check.origin.slice(0, 200);
        request.log.warn({ origin, address: request.ip }, 'live upgrade from a foreign Origin');
        return reply.code(403).send({
          error: 'forbidden_origin',
          message: `Invalid Origin header: ${origin || '(empty)'}. A browser page may connect to the live plane from this service's own origin only (see docs/live.md).`,
        });
      },
      // A plain GET (no upgrade) is told how to connect.
      handler: (_request, reply) =>
        reply
          .code(426)
          .header('Upgrade', 'websocket')
          .send({
            error: 'upgrade_required',
            message: `The live plane is a WebSocket: connect with ws:// or wss:// and the subprotocol ${protocol} (see docs/live.md).`,
          }),
      wsHandler: (socket: WebSocket, request) => {
        // Frames that arrive while the key is being checked wait for the connection (a few: a client
        // that floods before it is known is closed).
        const early: string[] = [];
        let connection: LiveConnection | null = null;
        let gone = false;
        socket.on('message', (data, isBinary) => {
          const text = isBinary ? '' : data.toString();
          if (connection) connection.receive(text);
          else if (early.length < EARLY_FRAMES) early.push(text);
          else socket.close(CLOSE_CODES.policy, 'bad_message');
        });
        socket.on('pong', (payload) => connection?.pong(payload.toString()));
        socket.on('close', () => {
          gone = true;
          void connection?.closed();
        });
        void (async () => {
          let caller: Caller;
          try {
            caller = await authenticate(authorizationOf(request.headers), request.ip);
          } catch (failure) {
            const refusal = failure instanceof ApiError ? failure : null;
            if (!refusal) request.log.error({ err: failure }, 'live authentication failed');
            const { code, close } = refusal
              ? closeCodeOf(refusal)
              : { code: 'internal' as const, close: CLOSE_CODES.internal };
            const message = refusal?.message ?? 'Something went wrong on our side. Try again.';
            socket.send(JSON.stringify({ type: 'error', code, message }));
            socket.close(close, code);
            liveDisconnects.inc({ reason: code });
            return;
          }
          if (gone) return;
          const authorization = authorizationOf(request.headers);
          connection = await plane.connect(
            caller,
            {
              send: (text) => socket.send(text),
              bufferedBytes: () => socket.bufferedAmount,
              ping: (payload) => socket.ping(payload),
              close: (code, reason) => socket.close(code, reason),
            },
            () => authenticate(authorization, request.ip, true),
          );
          if (gone) return void connection.closed();
          for (const text of early.splice(0)) connection.receive(text);
        })().catch((failure: unknown) => {
          // Never an unexplained drop: the client hears it was our failure.
          request.log.error({ err: failure }, 'live connection failed');
          socket.close(CLOSE_CODES.internal, 'internal');
        });
      },
    });
  });
}
