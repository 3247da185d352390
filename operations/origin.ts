/**
 * The Origin check of the service's browser-reachable endpoints (`/mcp`, the live plane's upgrade): a
 * browser page of another origin must not drive them with a caller's credentials. No Origin (a client
 * that is not a browser) passes; otherwise it must be the service's own, as PUBLIC_URL names it or as the
 * request reached it (its Host).
 */

/** What the check reads of a request (a Fastify request has these). */
export interface OriginRequest {
  headers: { origin?: string | string[] | undefined };
  protocol: string;
  host: string;
}

export function originAllowed(
  ownOrigin: string,
  request: OriginRequest,
): { allowed: true } | { allowed: false; origin: string } {
  const header = request.headers.origin;
  if (header === undefined) return { allowed: true };
  const origin = Array.isArray(header) ? header.join(', ') : header;
  const refused = { allowed: false as const, origin };
  let stated: string;
  let reached: string;
  try {
    stated = new URL(origin).origin;
    reached = new URL(`${request.protocol}://${request.host}`).origin;
  } catch {
    return refused;
  }
  // An opaque origin (a sandboxed frame, a file) serialises as the string "null" and matches nothing.
  if (stated === 'null' || (stated !== ownOrigin && stated !== reached)) return refused;
  return { allowed: true };
}
