import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, decodeProtectedHeader, decodeJwt, generateKeyPair, jwtVerify, createLocalJWKSet, importJWK } from 'jose';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';
import { ManualClock } from '../src/clock.js';

let t: TestApp;
let tenant: Tenant;
const clock = new ManualClock(new Date('2026-11-22T10:00:00Z'));

beforeAll(async () => {
  t = await createTestApp({ clock });
  tenant = await t.tenant({ scopes: ['courses:read', 'seats:read', 'organization:read'] });
});
afterAll(() => t.close());

const tokenRequest = (payload: unknown, headers: Record<string, string> = {}) =>
  t.request({ method: 'POST', url: '/v1/oauth/token', payload: payload as never, headers });

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('POST /v1/oauth/token', () => {
  it('issues an RFC 9068 access token for JSON credentials', async () => {
    const { client_id, client_secret } = tenant.credentials;
    const res = await tokenRequest({ client_id, client_secret });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, scope: 'courses:read seats:read organization:read' });
    const header = decodeProtectedHeader(body.access_token);
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'at+jwt', kid: expect.any(String) });
    const claims = decodeJwt(body.access_token);
    expect(claims).toMatchObject({
      iss: 'http://127.0.0.1:3000',
      aud: 'http://127.0.0.1:3000/v1',
      sub: client_id,
      client_id,
      org_id: tenant.orgId,
      scope: 'courses:read seats:read organization:read',
    });
    expect(claims.exp! - claims.iat!).toBe(3600);
    expect(claims.iat).toBe(Math.floor(clock.now().getTime() / 1000));
    expect(claims.jti).toEqual(expect.any(String));
    // The published JWKS verifies it.
    const jwks = (await t.request({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    const verified = await jwtVerify(body.access_token, createLocalJWKSet(jwks), { currentDate: clock.now() });
    expect(verified.payload.sub).toBe(client_id);
  });

  it('accepts grant_type=client_credentials in JSON, form-encoded bodies and HTTP Basic', async () => {
    const { client_id, client_secret } = tenant.credentials;
    const json = await tokenRequest({ grant_type: 'client_credentials', client_id, client_secret });
    expect(json.statusCode).toBe(200);
    const formBody = await tokenRequest(form({ grant_type: 'client_credentials', client_id, client_secret }), FORM);
    expect(formBody.statusCode).toBe(200);
    const viaBasic = await tokenRequest(form({ grant_type: 'client_credentials' }), { ...FORM, authorization: basic(client_id, client_secret) });
    expect(viaBasic.statusCode).toBe(200);
    expect(viaBasic.json().token_type).toBe('Bearer');
  });

  it('narrows the token to a requested subset of the approved scopes', async () => {
    const { client_id, client_secret } = tenant.credentials;
    const res = await tokenRequest({ client_id, client_secret, scope: 'courses:read' });
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('courses:read');
    const seats = await t.request({ method: 'GET', url: '/v1/seats', token: res.json().access_token });
    expect(seats.statusCode).toBe(403);
    expect(problemOf(seats).code).toBe('insufficient_scope');
  });

  const oauthErrors: [string, () => Promise<{ statusCode: number; json(): any; headers: Record<string, unknown> }>, number, string][] = [
    ['a wrong secret', () => tokenRequest({ client_id: tenant.credentials.client_id, client_secret: 'lms_secret_wrong' }), 401, 'invalid_client'],
    ['an unknown client', () => tokenRequest({ client_id: 'app_unknown', client_secret: tenant.credentials.client_secret }), 401, 'invalid_client'],
    ['no credentials', () => tokenRequest({}), 401, 'invalid_client'],
    [
      'Basic and body credentials together',
      () =>
        tokenRequest(form({ client_id: tenant.credentials.client_id, client_secret: tenant.credentials.client_secret }), {
          ...FORM,
          authorization: basic(tenant.credentials.client_id, tenant.credentials.client_secret),
        }),
      400,
      'invalid_request',
    ],
    ['a wrong grant type', () => tokenRequest({ grant_type: 'password', client_id: tenant.credentials.client_id, client_secret: tenant.credentials.client_secret }), 400, 'unsupported_grant_type'],
    ['an unapproved scope', () => tokenRequest({ client_id: tenant.credentials.client_id, client_secret: tenant.credentials.client_secret, scope: 'courses:read learners:write' }), 400, 'invalid_scope'],
    ['an unknown scope', () => tokenRequest({ client_id: tenant.credentials.client_id, client_secret: tenant.credentials.client_secret, scope: 'admin' }), 400, 'invalid_scope'],
    ['a non-string field', () => tokenRequest({ client_id: 42, client_secret: tenant.credentials.client_secret }), 400, 'invalid_request'],
    ['malformed JSON', () => tokenRequest('{"client_id": ', { 'content-type': 'application/json' }), 400, 'invalid_request'],
  ];

  it.each(oauthErrors)('answers %s with the RFC 6749 error', async (_name, send, status, error) => {
    const res = await send();
    expect(res.statusCode).toBe(status);
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({ error, error_description: expect.any(String) });
  });

  it('answers a wrong secret and an unknown client identically, with a Basic challenge when Basic was used', async () => {
    const wrong = await tokenRequest({ client_id: tenant.credentials.client_id, client_secret: 'nope' });
    const unknown = await tokenRequest({ client_id: 'app_01NOTREAL', client_secret: 'nope' });
    expect(wrong.json()).toEqual(unknown.json());
    const viaBasic = await tokenRequest(form({ grant_type: 'client_credentials' }), { ...FORM, authorization: basic(tenant.credentials.client_id, 'nope') });
    expect(viaBasic.statusCode).toBe(401);
    expect(viaBasic.headers['www-authenticate']).toBe('Basic realm="lms"');
  });

  it('refuses a suspended application like an unknown one, and its tokens stop working', async () => {
    const other = await t.tenant({ scopes: ['courses:read'] });
    await t.ctx.db.kysely.updateTable('applications').set({ status: 'suspended' }).where('id', '=', other.credentials.client_id).execute();
    t.ctx.tokens.forgetApplication(other.credentials.client_id);
    const res = await tokenRequest({ client_id: other.credentials.client_id, client_secret: other.credentials.client_secret });
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toBe('invalid_client');
    const courses = await t.request({ method: 'GET', url: '/v1/courses', token: other.token });
    expect(courses.statusCode).toBe(401);
  });
});

describe('bearer verification', () => {
  const courses = (token?: string, headers: Record<string, string> = {}) => t.request({ method: 'GET', url: '/v1/courses', token, headers });

  async function expectInvalidToken(res: Awaited<ReturnType<typeof courses>>) {
    expect(res.statusCode).toBe(401);
    expect(problemOf(res).code).toBe('invalid_token');
    expect(res.headers['www-authenticate']).toBe('Bearer realm="lms", error="invalid_token"');
  }

  it('accepts a valid token', async () => {
    expect((await courses(tenant.token)).statusCode).toBe(200);
  });

  it('refuses a missing or malformed Authorization header', async () => {
    await expectInvalidToken(await courses());
    await expectInvalidToken(await courses(undefined, { authorization: `Basic ${tenant.token}` }));
    await expectInvalidToken(await courses('not-a-jwt'));
  });

  it('refuses an expired token', async () => {
    const token = (await tokenRequest({ client_id: tenant.credentials.client_id, client_secret: tenant.credentials.client_secret })).json().access_token;
    clock.advance(3601 * 1000);
    try {
      await expectInvalidToken(await courses(token));
    } finally {
      clock.advance(-3601 * 1000);
    }
    expect((await courses(token)).statusCode).toBe(200);
  });

  it('refuses a tampered token', async () => {
    const [h, p, s] = tenant.token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    claims.scope = 'courses:read learners:write';
    const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    await expectInvalidToken(await courses(forged));
    const flipped = `${h}.${p}.${s.slice(0, -2)}${s.endsWith('AA') ? 'BB' : 'AA'}`;
    await expectInvalidToken(await courses(flipped));
  });

  it('refuses alg:none', async () => {
    const claims = decodeJwt(tenant.token);
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url');
    const unsigned = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    await expectInvalidToken(await courses(unsigned));
  });

  it('refuses a token signed with a foreign key, even under our kid', async () => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const claims = decodeJwt(tenant.token);
    const kid = decodeProtectedHeader(tenant.token).kid!;
    const foreign = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid }).sign(privateKey);
    await expectInvalidToken(await courses(foreign));
  });

  it('refuses a correctly signed token with the wrong audience, issuer or type', async () => {
    const row = await t.ctx.db.kysely.selectFrom('signing_keys').selectAll().executeTakeFirstOrThrow();
    const key = await importJWK(JSON.parse(row.private_jwk), 'EdDSA');
    const claims = decodeJwt(tenant.token);
    const sign = (c: object, typ = 'at+jwt') => new SignJWT({ ...claims, ...c }).setProtectedHeader({ alg: 'EdDSA', typ, kid: row.kid }).sign(key);
    expect((await courses(await sign({}))).statusCode).toBe(200); // the control: our own key and claims pass
    await expectInvalidToken(await courses(await sign({ aud: 'https://elsewhere.example/v1' })));
    await expectInvalidToken(await courses(await sign({ iss: 'https://evil.example' })));
    await expectInvalidToken(await courses(await sign({}, 'JWT')));
  });

  it('answers a token without the scope with 403 insufficient_scope and the needed scope', async () => {
    const token = await tenant.tokenWith(['seats:read']);
    const res = await courses(token);
    expect(res.statusCode).toBe(403);
    expect(problemOf(res).code).toBe('insufficient_scope');
    expect(res.headers['www-authenticate']).toBe('Bearer realm="lms", error="insufficient_scope", scope="courses:read"');
  });
});

describe('tenancy of organization and seats', () => {
  it('shows each organization only its own organization and seats', async () => {
    const a = await t.tenant({ seats: 7, name: 'Alpha Corp' });
    const b = await t.tenant({ seats: 3, name: 'Beta GmbH' });
    const orgA = (await t.request({ method: 'GET', url: '/v1/organization', token: a.token })).json();
    const orgB = (await t.request({ method: 'GET', url: '/v1/organization', token: b.token })).json();
    expect(orgA).toMatchObject({ id: a.orgId, object: 'organization', name: 'Alpha Corp', slug: 'alpha-corp' });
    expect(orgB).toMatchObject({ id: b.orgId, name: 'Beta GmbH' });
    const seatsA = await t.request({ method: 'GET', url: '/v1/seats', token: a.token });
    expect(seatsA.json()).toMatchObject({ object: 'seat_allowance', total: 7, in_use: 0, available: 7 });
    const seatsB = await t.request({ method: 'GET', url: '/v1/seats', token: b.token });
    expect(seatsB.json()).toMatchObject({ total: 3, available: 3 });
    expect(JSON.stringify(orgA) + seatsA.body).not.toContain(b.orgId);
  });
});
