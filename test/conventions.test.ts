// §1 conventions that hold for every response: problem+json for every failure, X-Request-Id, API-Version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { createContext, type AppContext } from '../src/context.js';
import { freshDatabase, problemOf, testConfig, type TestDatabase } from './helpers.js';

let db: TestDatabase;
let ctx: AppContext;
let app: FastifyInstance;

// The app under test plus one route with a JSON body, so that body errors of a problem+json route can be
// exercised before any module with such a route is involved.
beforeAll(async () => {
  db = await freshDatabase();
  ctx = await createContext(testConfig(db), { schema: db.schema });
  app = await buildApp(ctx);
  app.post(
    '/v1/echo',
    {
      config: { public: true },
      schema: {
        body: Type.Object({ name: Type.String({ maxLength: 10 }), count: Type.Optional(Type.Integer()) }, { additionalProperties: false }),
      },
    },
    async (request) => request.body,
  );
  app.get('/v1/boom', { config: { public: true } }, async () => {
    throw new Error('secret detail: SELECT * FROM users at /srv/app/src/x.ts:12');
  });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await ctx.db.close();
  await db.drop();
});

const echo = (payload: string, contentType = 'application/json') =>
  app.inject({ method: 'POST', url: '/v1/echo', payload, headers: { 'content-type': contentType } });

describe('problem+json for every failure', () => {
  it('unknown route → 404 not_found', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(problemOf(res)).toMatchObject({ code: 'not_found', title: 'Not found', type: expect.stringContaining('not_found') });
  });

  it('wrong method → 405 method_not_allowed with Allow', async () => {
    const res = await app.inject({ method: 'DELETE', url: '/v1/courses' });
    expect(res.statusCode).toBe(405);
    expect(problemOf(res).code).toBe('method_not_allowed');
    expect(res.headers.allow).toBe('GET, HEAD');
    const withParam = await app.inject({ method: 'PUT', url: '/v1/courses/crs_123' });
    expect(problemOf(withParam).code).toBe('method_not_allowed');
  });

  it('malformed JSON → 400 invalid_request', async () => {
    const res = await echo('{"name": "x",');
    expect(res.statusCode).toBe(400);
    expect(problemOf(res).code).toBe('invalid_request');
  });

  it('wrong content type → 415 unsupported_media_type', async () => {
    const res = await echo('name=x', 'text/plain');
    expect(res.statusCode).toBe(415);
    expect(problemOf(res).code).toBe('unsupported_media_type');
  });

  it('body over 1 MiB → 413 payload_too_large', async () => {
    const res = await echo(JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }));
    expect(res.statusCode).toBe(413);
    expect(problemOf(res).code).toBe('payload_too_large');
  });

  it('unknown fields, wrong types and missing fields → 400 validation_failed with pointers', async () => {
    const res = await echo(JSON.stringify({ name: 'ok', is_admin: true }));
    expect(res.statusCode).toBe(400);
    const p = problemOf(res);
    expect(p.code).toBe('validation_failed');
    expect(p.errors).toEqual([{ pointer: '/is_admin', message: 'is not a known field' }]);
    const types = problemOf(await echo(JSON.stringify({ name: 'ok', count: '5' })));
    expect(types.errors).toEqual([{ pointer: '/count', message: expect.any(String) }]);
    const missing = problemOf(await echo(JSON.stringify({})));
    expect(missing.errors).toEqual([{ pointer: '/name', message: 'is required' }]);
  });

  it('a valid body passes through untouched', async () => {
    const res = await echo(JSON.stringify({ name: 'ok', count: 5 }));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ name: 'ok', count: 5 });
  });

  it('500 → internal_error with no stack trace, SQL or file path', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/boom' });
    expect(res.statusCode).toBe(500);
    const p = problemOf(res);
    expect(p.code).toBe('internal_error');
    expect(res.body).not.toMatch(/SELECT|\/srv\/|\.ts|at /);
  });
});

describe('headers on every response', () => {
  it('echoes a sane X-Request-Id and puts it in the problem', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/nothing', headers: { 'x-request-id': 'req-abc.123' } });
    expect(res.headers['x-request-id']).toBe('req-abc.123');
    expect(res.json().request_id).toBe('req-abc.123');
  });

  it('replaces an insane X-Request-Id with its own', async () => {
    const res = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'bad id\twith<html>' } });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('sends API-Version: 1.0', async () => {
    for (const url of ['/healthz', '/v1/courses', '/v1/openapi.json']) {
      expect((await app.inject({ method: 'GET', url })).headers['api-version']).toBe('1.0');
    }
  });
});

describe('health', () => {
  it('/healthz and /readyz answer', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', checks: { process: 'ok', database: 'ok' } });
  });
});
