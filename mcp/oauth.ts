/**
 * MCP as an OAuth 2.1 resource server (MCP authorization spec; RFC 9728 protected-resource metadata):
 * JWT access tokens from one configured issuer, verified against its JWKS with `jose`, the audience
 * being the MCP URL and the scope `analytics:read`. The token's subject is an account id: the session
 * draws from that user's one budget, like the user's keys.
 */
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';

export interface OAuthSettings {
  /** The authorization server (the `iss` every token must carry). */
  issuer: string;
  /** Where the issuer publishes its signing keys. */
  jwksUrl: string;
  /** The MCP URL: every token's `aud` must name it. */
  audience: string;
  scope: string;
  clockToleranceSeconds: number;
}

export type OAuthVerdict =
  | { ok: true; subject: string; clientId: string | null }
  /** A genuine token of the issuer, for this resource, without the scope: RFC 6750 `403 insufficient_scope`, not a 401. */
  | { ok: false; insufficientScope: true; description: string }
  | { ok: false; insufficientScope?: false; description: string };

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Asymmetric algorithms only: a shared-secret (HS*) token could be minted by anyone holding the "public" key. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

export class OAuthVerifier {
  readonly #keys: JWTVerifyGetKey;

  constructor(
    readonly settings: OAuthSettings,
    /** Tests may pass a local key set; production fetches (and caches) the issuer's JWKS. */
    keys?: JWTVerifyGetKey,
  ) {
    this.#keys =
      keys ??
      createRemoteJWKSet(new URL(settings.jwksUrl), {
        timeoutDuration: 5000,
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
      });
  }

  /** An API key is `tak_…`; a JWT is three base64url segments. */
  static isJwt(token: string): boolean {
    return JWT_SHAPE.test(token);
  }

  async verify(token: string): Promise<OAuthVerdict> {
    try {
      const { payload } = await jwtVerify(token, this.#keys, {
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        algorithms: ALGORITHMS,
        clockTolerance: this.settings.clockToleranceSeconds,
        requiredClaims: ['sub', 'exp'],
      });
      const scopes =
        typeof payload.scope === 'string'
          ? payload.scope.split(' ')
          : Array.isArray(payload.scp)
            ? payload.scp.map(String)
            : [];
      if (!scopes.includes(this.settings.scope))
        return { ok: false, insufficientScope: true, description: `the token lacks the scope ${this.settings.scope}` };
      const clientId =
        typeof payload.client_id === 'string'
          ? payload.client_id
          : typeof payload.azp === 'string'
            ? payload.azp
            : null;
      return { ok: true, subject: payload.sub!, clientId };
    } catch (failure) {
      return { ok: false, description: describeFailure(failure) };
    }
  }

  /** RFC 9728 protected-resource metadata of the MCP endpoint. */
  metadata(): Record<string, unknown> {
    return {
      resource: this.settings.audience,
      authorization_servers: [this.settings.issuer],
      scopes_supported: [this.settings.scope],
      bearer_methods_supported: ['header'],
      resource_name: 'Trader Analytics MCP',
    };
  }
}

function describeFailure(failure: unknown): string {
  if (failure instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (failure instanceof joseErrors.JWTClaimValidationFailed)
    return `the token's ${failure.claim} claim is not accepted here`;
  if (failure instanceof joseErrors.JWSSignatureVerificationFailed || failure instanceof joseErrors.JWKSNoMatchingKey)
    return 'the token is not signed by the issuer';
  if (failure instanceof joseErrors.JOSEError) return 'the token is not a valid access token';
  return 'the token could not be verified';
}
