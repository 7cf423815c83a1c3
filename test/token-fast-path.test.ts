// The fast paths of token handling (see src/auth/tokens.ts): tokens signed with node:crypto must be ordinary
// RFC 9068 JWTs that jose verifies against the published JWKS, and the cache of verified tokens must not keep a
// token alive past its expiry, its application's suspension or a credential reset, nor accept a forged variant.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { ManualClock } from '../src/clock.js';
import { createTestApp, type TestApp } from './helpers.js';

describe('token fast paths', () => {
  let t: TestApp;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = new ManualClock(new Date());
    t = await createTestApp({ clock });
    await t.loadCatalogue();
  });
  afterEach(async () => t.close());

  it('issues tokens that jose verifies against /.well-known/jwks.json with the pinned algorithm, type, issuer and audience', async () => {
    const tenant = await t.tenant({ scopes: ['courses:read', 'learners:read'] });
    const jwks = (await t.request({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    const { payload, protectedHeader } = await jwtVerify(tenant.token, createLocalJWKSet(jwks), {
      algorithms: ['EdDSA'],
      typ: 'at+jwt',
      issuer: t.config.tokenIssuer,
      audience: t.config.tokenAudience,
      currentDate: clock.now(),
    });
    expect(protectedHeader.kid).toBe(jwks.keys[0].kid);
    expect(payload).toMatchObject({ sub: tenant.credentials.client_id, client_id: tenant.credentials.client_id, org_id: tenant.orgId, scope: 'courses:read learners:read' });
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(typeof payload.jti).toBe('string');
    expect(decodeProtectedHeader(tenant.token)).toEqual({ alg: 'EdDSA', typ: 'at+jwt', kid: jwks.keys[0].kid });
  });

  it('a token verified once (and cached) stops working when it expires', async () => {
    const tenant = await t.tenant();
    expect((await t.request({ method: 'GET', url: '/v1/courses', token: tenant.token })).statusCode).toBe(200);
    clock.advance(3599_000);
    expect((await t.request({ method: 'GET', url: '/v1/courses', token: tenant.token })).statusCode).toBe(200);
    clock.advance(1_000);
    expect((await t.request({ method: 'GET', url: '/v1/courses', token: tenant.token })).statusCode).toBe(401);
  });

  it('a cached token stops working when its application is suspended or its secret reset', async () => {
    const a = await t.tenant();
    const b = await t.tenant();
    for (const tenant of [a, b]) expect((await t.request({ method: 'GET', url: '/v1/courses', token: tenant.token })).statusCode).toBe(200);
    await t.ctx.db.kysely.updateTable('applications').set({ status: 'suspended' }).where('id', '=', a.credentials.client_id).execute();
    await t.ctx.db.kysely.updateTable('applications').set({ credential_version: 1 }).where('id', '=', b.credentials.client_id).execute();
    t.ctx.tokens.forgetApplication(a.credentials.client_id);
    t.ctx.tokens.forgetApplication(b.credentials.client_id);
    for (const tenant of [a, b]) expect((await t.request({ method: 'GET', url: '/v1/courses', token: tenant.token })).statusCode).toBe(401);
  });

  it('a forged variant of a cached token is refused', async () => {
    const tenant = await t.tenant({ scopes: ['courses:read'] });
    expect((await t.request({ method: 'GET', url: '/v1/courses', token: tenant.token })).statusCode).toBe(200);
    const [header, payload, signature] = tenant.token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const widened = Buffer.from(JSON.stringify({ ...claims, scope: 'courses:read learners:write' })).toString('base64url');
    const flipped = signature.slice(0, -2) + (signature.at(-2) === 'A' ? 'B' : 'A') + signature.at(-1);
    for (const forged of [`${header}.${widened}.${signature}`, `${header}.${payload}.${flipped}`]) {
      expect((await t.request({ method: 'GET', url: '/v1/courses', token: forged })).statusCode).toBe(401);
    }
  });
});
