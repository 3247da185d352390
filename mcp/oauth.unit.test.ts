import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { OAuthVerifier, type OAuthSettings } from './oauth.ts';

const settings: OAuthSettings = {
  issuer: 'https://issuer.test',
  jwksUrl: 'https://issuer.test/jwks',
  audience: 'http://localhost:8080/mcp',
  scope: 'analytics:read',
  clockToleranceSeconds: 5,
};
let signingKey: CryptoKey;
let otherKey: CryptoKey;
let verifier: OAuthVerifier;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  signingKey = pair.privateKey;
  otherKey = (await generateKeyPair('ES256')).privateKey;
  const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
  verifier = new OAuthVerifier(settings, createLocalJWKSet({ keys: [jwk] }));
});

function token(
  claims: Record<string, unknown> = {},
  options: { key?: CryptoKey; expiresIn?: string | number; audience?: string; issuer?: string } = {},
) {
  return new SignJWT({ scope: 'openid analytics:read', client_id: 'agent-app', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setSubject('acct-1')
    .setIssuer(options.issuer ?? settings.issuer)
    .setAudience(options.audience ?? settings.audience)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '10m')
    .sign(options.key ?? signingKey);
}

describe('OAuthVerifier', () => {
  it('accepts a token of the issuer for this audience and scope, and names its subject', async () => {
    expect(await verifier.verify(await token())).toEqual({ ok: true, subject: 'acct-1', clientId: 'agent-app' });
    expect(await verifier.verify(await token({ scope: undefined, scp: ['analytics:read'] }))).toMatchObject({
      ok: true,
    });
  });

  it('refuses another audience, an expired token, a missing scope, another issuer, another signer', async () => {
    expect(await verifier.verify(await token({}, { audience: 'http://elsewhere/mcp' }))).toEqual({
      ok: false,
      description: "the token's aud claim is not accepted here",
    });
    expect(await verifier.verify(await token({}, { expiresIn: Math.floor(Date.now() / 1000) - 60 }))).toEqual({
      ok: false,
      description: 'the token has expired',
    });
    // Genuine but without the scope: told apart (403 insufficient_scope, not 401).
    expect(await verifier.verify(await token({ scope: 'openid profile' }))).toEqual({
      ok: false,
      insufficientScope: true,
      description: 'the token lacks the scope analytics:read',
    });
    expect(await verifier.verify(await token({}, { issuer: 'https://impostor.test' }))).toMatchObject({ ok: false });
    expect(await verifier.verify(await token({}, { key: otherKey }))).toEqual({
      ok: false,
      description: 'the token is not signed by the issuer',
    });
  });

  it('refuses a shared-secret (HS256) token and garbage', async () => {
    const hs = await new SignJWT({ scope: 'analytics:read' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('acct-1')
      .setIssuer(settings.issuer)
      .setAudience(settings.audience)
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('x'.repeat(32)));
    expect((await verifier.verify(hs)).ok).toBe(false);
    expect((await verifier.verify('a.b.c')).ok).toBe(false);
    expect(OAuthVerifier.isJwt('tak_0123456789abcdefghijABCDEFGHIJ0123456789')).toBe(false);
    expect(OAuthVerifier.isJwt(await token())).toBe(true);
  });

  it('publishes the protected-resource metadata', () => {
    expect(verifier.metadata()).toMatchObject({
      resource: settings.audience,
      authorization_servers: [settings.issuer],
      scopes_supported: ['analytics:read'],
    });
  });
});
