import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await createTestApp();
  await t.loadCatalogue();
  tenant = await t.tenant({ seats: 3 });
});
afterAll(() => t.close());

const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers: Record<string, string> = {}) =>
  t.request({ method, url, payload, token: tenant.token, headers });
const person = (email: string, extra: Record<string, unknown> = {}) => ({ email, first_name: 'Alan', last_name: 'Turing', ...extra });
const typesFor = async (id: string) =>
  (await t.ctx.db.kysely.selectFrom('events').select('payload').orderBy('id').execute())
    .map((r) => JSON.parse(r.payload))
    .filter((e) => e.data.object.id === id)
    .map((e) => e.type);

describe('users', () => {
  it('creates a user (roles default to learner), reads it with an ETag, lists it', async () => {
    const res = await req('POST', '/v1/users', person('alan@example.com', { external_id: 'u-1' }));
    expect(res.statusCode).toBe(201);
    const u = res.json();
    expect(u).toMatchObject({ object: 'user', email: 'alan@example.com', roles: ['learner'], status: 'active', external_id: 'u-1' });
    expect(res.headers.location).toBe(`/v1/users/${u.id}`);
    const one = await req('GET', `/v1/users/${u.id}`);
    expect(one.json()).toEqual(u);
    expect(one.headers.etag).toBe(res.headers.etag);
    expect(await typesFor(u.id)).toEqual(['user.created', 'learner.created']);
    expect((await req('GET', '/v1/learners?email=alan@example.com')).json().data[0].id).toBe(u.id);
  });

  it('e-mail is unique per organization case-insensitively → 409 conflict', async () => {
    const res = await req('POST', '/v1/users', person('ALAN@EXAMPLE.COM'));
    expect(res.statusCode).toBe(409);
    expect(problemOf(res).code).toBe('conflict');
  });

  it('filters by email, external_id, role and status', async () => {
    const admin = (await req('POST', '/v1/users', person('boss@example.com', { roles: ['admin', 'manager'] }))).json();
    await req('POST', '/v1/users', person('mgr@example.com', { roles: ['manager'], status: 'suspended' }));
    const admins = (await req('GET', '/v1/users?role=admin')).json().data;
    expect(admins.map((u: { id: string }) => u.id)).toEqual([admin.id]);
    expect((await req('GET', '/v1/users?role=manager')).json().data).toHaveLength(2);
    expect((await req('GET', '/v1/users?role=learner')).json().data.map((u: { email: string }) => u.email)).toEqual(['alan@example.com']);
    expect((await req('GET', '/v1/users?status=suspended')).json().data[0].email).toBe('mgr@example.com');
    expect((await req('GET', '/v1/users?email=Boss@Example.com')).json().data[0].id).toBe(admin.id);
    expect((await req('GET', '/v1/users?external_id=u-1')).json().data[0].email).toBe('alan@example.com');
    expect((await req('GET', '/v1/users?role=owner')).statusCode).toBe(400);
  });

  it('PATCH changes fields; status removed cannot be set by PATCH; If-Match is honoured', async () => {
    const u = (await req('POST', '/v1/users', person('patch@example.com', { roles: ['manager'] }))).json();
    const etag = (await req('GET', `/v1/users/${u.id}`)).headers.etag as string;
    const res = await req('PATCH', `/v1/users/${u.id}`, { first_name: 'Alonzo', external_id: 'x-9' }, { 'if-match': etag });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ first_name: 'Alonzo', external_id: 'x-9' });
    expect((await req('PATCH', `/v1/users/${u.id}`, { status: 'removed' })).statusCode).toBe(400);
    expect((await req('PATCH', `/v1/users/${u.id}`, { first_name: 'Late' }, { 'if-match': etag })).statusCode).toBe(412);
    expect((await req('PATCH', `/v1/users/${u.id}`, { external_id: null })).json().external_id).toBeNull();
    expect(await typesFor(u.id)).toEqual(['user.created', 'user.updated', 'user.updated']);
  });

  it('giving a user the learner role adds them to the learner list; taking it away removes them and withdraws enrolments', async () => {
    const u = (await req('POST', '/v1/users', person('roles@example.com', { roles: ['manager'] }))).json();
    const add = await req('PATCH', `/v1/users/${u.id}`, { roles: ['manager', 'learner'] });
    expect(add.json().roles).toEqual(['manager', 'learner']);
    expect((await req('GET', `/v1/learners/${u.id}`)).statusCode).toBe(200);
    const course = (await req('GET', '/v1/courses?limit=1')).json().data[0];
    const e = (await req('POST', '/v1/enrolments', { learner_id: u.id, course_id: course.id })).json();
    await req('PATCH', `/v1/users/${u.id}`, { roles: ['manager'] });
    expect((await req('GET', `/v1/enrolments/${e.id}`)).json().status).toBe('withdrawn');
    expect((await req('GET', '/v1/seats')).json().in_use).toBe(0);
    expect(await typesFor(u.id)).toEqual(['user.created', 'user.updated', 'learner.created', 'user.updated', 'learner.removed']);
  });

  it('DELETE /v1/users/{id} of a learner sets removed, withdraws active enrolments and frees seats', async () => {
    const u = (await req('POST', '/v1/users', person('bye@example.com'))).json();
    const course = (await req('GET', '/v1/courses?limit=1')).json().data[0];
    const e = (await req('POST', '/v1/enrolments', { learner_id: u.id, course_id: course.id })).json();
    expect((await req('GET', '/v1/seats')).json().in_use).toBe(1);
    const res = await req('DELETE', `/v1/users/${u.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('removed');
    expect((await req('GET', `/v1/enrolments/${e.id}`)).json().status).toBe('withdrawn');
    expect((await req('GET', '/v1/seats')).json().in_use).toBe(0);
    expect((await req('GET', '/v1/users')).json().data.some((x: { id: string }) => x.id === u.id)).toBe(false);
    expect((await req('GET', `/v1/users/${u.id}`)).json().status).toBe('removed');
    expect(await typesFor(u.id)).toEqual(['user.created', 'learner.created', 'user.removed', 'learner.removed']);
  });

  it('unknown and malformed ids are 404 not_found', async () => {
    for (const id of ['usr_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'nonsense']) {
      const res = await req('GET', `/v1/users/${id}`);
      expect(res.statusCode).toBe(404);
      expect(problemOf(res).code).toBe('not_found');
    }
  });
});
