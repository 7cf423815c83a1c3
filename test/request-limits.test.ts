// Request limits (JSON depth, string and array caps, prototype poisoning, 413, 415, unknown fields, `limit`),
// security headers, and 500s that leak nothing but are logged with the request id — on the real app.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import pino from 'pino';
import { sql } from 'kysely';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { createContext, type AppContext } from '../src/context.js';
import { MAX_ARRAY_ITEMS, MAX_DEPTH, MAX_STRING_LENGTH } from '../src/http/limits.js';
import { createTestApp, freshDatabase, problemOf, testConfig, type TestApp, type TestDatabase, type Tenant } from './helpers.js';
import { operationsOf, fillPath } from './support/openapi-requests.js';

describe('JSON body limits', () => {
  let db: TestDatabase;
  let ctx: AppContext;
  let app: FastifyInstance;
  beforeAll(async () => {
    db = await freshDatabase();
    ctx = await createContext(testConfig(db), { schema: db.schema });
    app = await buildApp(ctx);
    // A route that accepts any JSON, so that only the parser's limits can refuse a body.
    app.post('/v1/anything', { config: { public: true }, schema: { body: Type.Unknown() } }, async (request) => ({ ok: true, body: request.body }));
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await ctx.db.close();
    await db.drop();
  });
  const send = (payload: string) => app.inject({ method: 'POST', url: '/v1/anything', payload, headers: { 'content-type': 'application/json' } });
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

  it(`accepts nesting up to ${MAX_DEPTH} levels and refuses deeper with 400 invalid_request`, async () => {
    expect((await send(nested(MAX_DEPTH))).statusCode).toBe(200);
    const res = await send(nested(MAX_DEPTH + 1));
    expect(res.statusCode).toBe(400);
    expect(problemOf(res).code).toBe('invalid_request');
    expect(problemOf(res).detail).toMatch(/nested deeper than 32/);
    // A deeply nested body of 1 MiB costs one bounded walk, not a stack overflow.
    const huge = await send(nested(500_000));
    expect(huge.statusCode).toBe(400);
  });

  it(`caps strings at ${MAX_STRING_LENGTH} characters and arrays at ${MAX_ARRAY_ITEMS} items`, async () => {
    expect((await send(JSON.stringify({ s: 'x'.repeat(MAX_STRING_LENGTH) }))).statusCode).toBe(200);
    const long = await send(JSON.stringify({ s: 'x'.repeat(MAX_STRING_LENGTH + 1) }));
    expect(long.statusCode).toBe(400);
    expect(problemOf(long).errors).toEqual([{ pointer: '/s', message: expect.stringContaining('longer than') }]);
    expect((await send(JSON.stringify({ a: Array(MAX_ARRAY_ITEMS).fill(1) }))).statusCode).toBe(200);
    expect(problemOf(await send(JSON.stringify({ a: Array(MAX_ARRAY_ITEMS + 1).fill(1) }))).code).toBe('invalid_request');
    expect((await send(JSON.stringify({ ['k'.repeat(MAX_STRING_LENGTH + 1)]: 1 }))).statusCode).toBe(400);
  });

  it('refuses prototype poisoning (__proto__, constructor.prototype) like secure-json-parse', async () => {
    for (const body of ['{"__proto__":{"isAdmin":true}}', '{"a":[{"__proto__":{}}]}', '{"constructor":{"prototype":{"isAdmin":true}}}']) {
      const res = await send(body);
      expect(res.statusCode, body).toBe(400);
      expect(problemOf(res).detail).toMatch(/forbidden key/);
    }
    // A field merely named "constructor" is fine.
    expect((await send('{"constructor":"x"}')).statusCode).toBe(200);
    expect(({} as { isAdmin?: boolean }).isAdmin).toBeUndefined();
  });

  it('refuses empty and malformed JSON, a body over 1 MiB and non-JSON media types', async () => {
    expect(problemOf(await send('')).code).toBe('invalid_request');
    expect(problemOf(await send('{"a":')).code).toBe('invalid_request');
    const big = await send(JSON.stringify({ s: 'x'.repeat(1024 * 1024) }));
    expect(big.statusCode).toBe(413);
    expect(problemOf(big).code).toBe('payload_too_large');
    for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await app.inject({ method: 'POST', url: '/v1/anything', payload: 'a=1', headers: { 'content-type': type } });
      expect(res.statusCode, type).toBe(415);
      expect(problemOf(res).code).toBe('unsupported_media_type');
    }
  });

  it('answers the token endpoint in the OAuth format for the same refusals', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/oauth/token', payload: '{"__proto__":{}}', headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('forbidden key') });
  });
});

describe('limits on every operation (from the OpenAPI document)', () => {
  let t: TestApp;
  let tenant: Tenant;
  let doc: any;
  beforeAll(async () => {
    t = await createTestApp();
    await t.loadCatalogue();
    tenant = await t.tenant();
    doc = t.app.swagger();
  });
  afterAll(() => t.close());

  it('every list refuses limit outside 1..100 and accepts its bounds', async () => {
    const lists = operationsOf(doc).filter((op) => op.method === 'GET' && op.query.some((q) => q.name === 'limit'));
    expect(lists.map((op) => op.path)).toContain('/v1/courses');
    for (const op of lists) {
      const url = fillPath(op.path, {});
      for (const bad of ['0', '101', '-1', '1.5', 'ten', '1e3']) {
        const res = await t.request({ method: 'GET', url: `${url}?limit=${bad}`, token: tenant.token });
        if (op.pathParams.length === 0) expect(res.statusCode, `${op.path}?limit=${bad}`).toBe(400);
        else expect([400, 404], `${op.path}?limit=${bad}`).toContain(res.statusCode);
      }
      if (op.pathParams.length === 0) {
        for (const good of ['1', '100']) {
          expect((await t.request({ method: 'GET', url: `${url}?limit=${good}`, token: tenant.token })).statusCode, `${op.path}?limit=${good}`).toBe(200);
        }
      }
    }
  });

  it('every operation with a JSON body answers 413 over 1 MiB and 415 for other media types', async () => {
    const withBody = operationsOf(doc).filter((op) => op.body && op.path !== '/v1/oauth/token');
    for (const op of withBody) {
      const url = fillPath(op.path, {});
      const big = await t.request({ method: op.method as 'POST', url, token: tenant.token, payload: JSON.stringify({ x: 'y'.repeat(1024 * 1024 + 10) }), headers: { 'content-type': 'application/json' } });
      expect(big.statusCode, `${op.method} ${op.path}`).toBe(413);
      const xml = await t.request({ method: op.method as 'POST', url, token: tenant.token, payload: '<a/>', headers: { 'content-type': 'application/xml' } });
      expect(xml.statusCode, `${op.method} ${op.path}`).toBe(415);
    }
    // The token endpoint refuses an oversized body in its own (OAuth) format.
    const token = await t.request({ method: 'POST', url: '/v1/oauth/token', payload: JSON.stringify({ client_id: 'x'.repeat(1024 * 1024 + 10) }), headers: { 'content-type': 'application/json' } });
    expect(token.statusCode).toBe(400);
    expect(token.json().error).toBe('invalid_request');
  });

  it('every query refuses unknown parameters', async () => {
    const gets = operationsOf(doc).filter((op) => op.method === 'GET' && op.scope && op.pathParams.length === 0);
    expect(gets.length).toBeGreaterThan(2);
    for (const op of gets) {
      const res = await t.request({ method: 'GET', url: `${op.path}?is_admin=true`, token: tenant.token });
      expect(res.statusCode, op.path).toBe(400);
      expect(problemOf(res).code).toBe('invalid_request');
    }
  });
});

describe('security headers', () => {
  let t: TestApp;
  let tenant: Tenant;
  beforeAll(async () => {
    t = await createTestApp();
    tenant = await t.tenant();
  });
  afterAll(() => t.close());

  it('API answers: nosniff, no-store, no framing, no referrer, no X-Powered-By, no CORS', async () => {
    const answers = [
      await t.request({ method: 'GET', url: '/v1/organization', token: tenant.token, headers: { origin: 'https://evil.example' } }),
      await t.request({ method: 'GET', url: '/v1/organization', headers: { origin: 'https://evil.example' } }),
      await t.request({ method: 'GET', url: '/v1/nope', token: tenant.token }),
      await t.request({ method: 'POST', url: '/v1/oauth/token', payload: {} }),
    ];
    for (const res of answers) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['x-powered-by']).toBeUndefined();
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    }
    const preflight = await t.request({
      method: 'OPTIONS',
      url: '/v1/organization',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.statusCode).toBeGreaterThanOrEqual(400);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('HTML pages carry a Content-Security-Policy without unsafe script sources; /docs its own', async () => {
    const docs = await t.request({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/^text\/html/);
    const htmlPages = ['/docs/', '/verify/not-a-code', ...t.app.registeredRoutes.filter((r) => r.method === 'GET' && /^\/(portal|console)\/sign-in$/.test(r.url)).map((r) => r.url)];
    expect(htmlPages.length).toBeGreaterThanOrEqual(4);
    for (const url of htmlPages) {
      const res = await t.request({ method: 'GET', url });
      expect(String(res.headers['content-type']), url).toMatch(/^text\/html/);
      const csp = String(res.headers['content-security-policy']);
      expect(csp, url).toMatch(/default-src '(self|none)'/);
      expect(csp, url).not.toMatch(/script-src[^;]*'unsafe-(inline|eval)'/);
      expect(csp, url).toMatch(/object-src 'none'|default-src 'none'/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });
});

describe('500s', () => {
  it('a database failure is internal_error with no SQL, stack or path in the body, and is logged with the request id', async () => {
    const db = await freshDatabase();
    const ctx = await createContext(testConfig(db), { schema: db.schema });
    const lines: any[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        cb();
      },
    });
    const app = await buildApp(ctx, { loggerInstance: pino({ level: 'info' }, sink) as never });
    await app.ready();
    try {
      const { createOrganization } = await import('../src/modules/organization/service.js');
      const { createApprovedApplication } = await import('../src/modules/applications/service.js');
      const org = await createOrganization(ctx, { name: 'Broken', seats: 1 });
      const creds = await createApprovedApplication(ctx, { orgId: org.id, name: 'b', scopes: ['courses:read'] });
      const token = (await app.inject({ method: 'POST', url: '/v1/oauth/token', payload: { client_id: creds.client_id, client_secret: creds.client_secret } })).json().access_token;
      // Break the database under the running app: the table the route reads is gone.
      await sql`alter table courses rename to courses_moved_away`.execute(ctx.db.kysely);
      const res = await app.inject({ method: 'GET', url: '/v1/courses', headers: { authorization: `Bearer ${token}`, 'x-request-id': 'req-db-failure-1' } });
      expect(res.statusCode).toBe(500);
      const problem = problemOf(res);
      expect(problem.code).toBe('internal_error');
      expect(problem).toMatchObject({ request_id: 'req-db-failure-1' });
      for (const leak of [/select/i, /courses/i, /sqlite|postgres|relation/i, /\bat\s+\S+\s*\(/, /\.ts\b|\.js\b/, /\/(work|srv|home|tmp|usr)\//, /node_modules/]) {
        expect(res.body).not.toMatch(leak);
      }
      const logged = lines.find((l) => l.level >= 50 && l.reqId === 'req-db-failure-1');
      expect(logged, JSON.stringify(lines.slice(-3))).toBeDefined();
      expect(JSON.stringify(logged.err)).toMatch(/courses/);
    } finally {
      await app.close();
      await ctx.db.close();
      await db.drop();
    }
  });
});
