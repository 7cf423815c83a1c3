// Acceptance 5 (issue 3): Idempotency-Key on creating POSTs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';
import type { ManualClock } from '../src/clock.js';
import { claimKey, requestFingerprint } from '../src/http/idempotency.js';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await createTestApp();
  await t.loadCatalogue();
  tenant = await t.tenant();
});
afterAll(() => t.close());

const person = (email: string, extra: Record<string, unknown> = {}) => ({ email, first_name: 'Kay', last_name: 'Key', ...extra });
const create = (token: string, key: string, payload: object) =>
  t.request({ method: 'POST', url: '/v1/learners', payload, token, headers: { 'idempotency-key': key } });
const learnersWith = async (email: string) =>
  t.ctx.db.kysely.selectFrom('users').select(['id', 'org_id']).where('email_normalized', '=', email).execute();

describe('Idempotency-Key', () => {
  it('same key and body twice → one learner; the second answer is identical to the first', async () => {
    const first = await create(tenant.token, 'key-1', person('idem@example.com'));
    const second = await create(tenant.token, 'key-1', person('idem@example.com'));
    expect(first.statusCode).toBe(201);
    expect(second.statusCode).toBe(201);
    expect(second.body).toBe(first.body);
    expect(second.headers.location).toBe(first.headers.location);
    expect(second.headers.etag).toBe(first.headers.etag);
    expect(second.headers['content-type']).toBe(first.headers['content-type']);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(await learnersWith('idem@example.com')).toHaveLength(1);
  });

  it('the body is compared as JSON: key order does not matter', async () => {
    const a = await create(tenant.token, 'key-order', { email: 'order@example.com', first_name: 'A', last_name: 'B' });
    const b = await create(tenant.token, 'key-order', { last_name: 'B', first_name: 'A', email: 'order@example.com' });
    expect(b.body).toBe(a.body);
  });

  it('same key with a different body → 422 idempotency_key_reused, nothing created', async () => {
    await create(tenant.token, 'key-2', person('one@example.com'));
    const res = await create(tenant.token, 'key-2', person('two@example.com'));
    expect(res.statusCode).toBe(422);
    expect(problemOf(res).code).toBe('idempotency_key_reused');
    expect(await learnersWith('two@example.com')).toHaveLength(0);
  });

  it('the same key on another endpoint is a different request → 422', async () => {
    await create(tenant.token, 'key-3', person('ep@example.com'));
    const res = await t.request({ method: 'POST', url: '/v1/users', payload: person('ep@example.com'), token: tenant.token, headers: { 'idempotency-key': 'key-3' } });
    expect(res.statusCode).toBe(422);
  });

  it("another application's same key is its own, independent request", async () => {
    const otherApp = await tenant.tokenWith(['learners:write', 'learners:read']);
    const mine = await create(tenant.token, 'shared-key', person('mine@example.com'));
    const theirs = await create(otherApp, 'shared-key', person('theirs@example.com'));
    expect(mine.statusCode).toBe(201);
    expect(theirs.statusCode).toBe(201);
    expect(theirs.json().id).not.toBe(mine.json().id);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    // Another organization's application too.
    const other = await t.tenant();
    const third = await create(other.token, 'shared-key', person('mine@example.com'));
    expect(third.statusCode).toBe(201);
    expect(third.json().id).not.toBe(mine.json().id);
  });

  it('a key still in flight → 409 idempotency_key_in_use', async () => {
    const body = person('flight@example.com');
    // Another request holds the key right now (claimed, not finished).
    await claimKey(t.ctx.db.kysely, tenant.credentials.client_id, 'key-flight', requestFingerprint('POST', '/v1/learners', body), t.clock.now());
    const res = await create(tenant.token, 'key-flight', body);
    expect(res.statusCode).toBe(409);
    expect(problemOf(res).code).toBe('idempotency_key_in_use');
    expect(await learnersWith('flight@example.com')).toHaveLength(0);
  });

  it('concurrent requests with one key create exactly one learner; every answer is the first one or 409 in use', async () => {
    const body = person('race@example.com');
    const results = await Promise.all(Array.from({ length: 10 }, () => create(tenant.token, 'key-race', body)));
    const created = results.filter((r) => r.statusCode === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.json().id)).size).toBe(1);
    for (const r of results) if (r.statusCode !== 201) expect(problemOf(r).code).toBe('idempotency_key_in_use');
    expect(await learnersWith('race@example.com')).toHaveLength(1);
  });

  it('error answers (4xx) are replayed too; validation failures do not claim the key', async () => {
    const dup = person('idem@example.com');
    const a = await create(tenant.token, 'key-409', dup);
    expect(a.statusCode).toBe(409);
    const b = await create(tenant.token, 'key-409', dup);
    expect(b.statusCode).toBe(409);
    expect(b.body).toBe(a.body);
    const invalid = await create(tenant.token, 'key-400', { email: 'x' });
    expect(invalid.statusCode).toBe(400);
    const valid = await create(tenant.token, 'key-400', person('after-400@example.com'));
    expect(valid.statusCode).toBe(201);
  });

  it('a key longer than 255 characters → 400', async () => {
    const res = await create(tenant.token, 'k'.repeat(256), person('long@example.com'));
    expect(res.statusCode).toBe(400);
    expect(await learnersWith('long@example.com')).toHaveLength(0);
    expect((await create(tenant.token, 'k'.repeat(255), person('long@example.com'))).statusCode).toBe(201);
  });

  it('after 24 h the key is forgotten: the same key runs a new request', async () => {
    const clock = t.clock as ManualClock;
    const first = await create(tenant.token, 'key-day', person('day1@example.com'));
    clock.advance(24 * 3600 * 1000 + 1000);
    const fresh = await t.request({
      method: 'POST',
      url: '/v1/oauth/token',
      payload: { client_id: tenant.credentials.client_id, client_secret: tenant.credentials.client_secret },
    });
    const second = await create(fresh.json().access_token, 'key-day', person('day2@example.com'));
    expect(second.statusCode).toBe(201);
    expect(second.json().id).not.toBe(first.json().id);
  });

  it('applies to POST /v1/enrolments: a retried enrolment takes one seat', async () => {
    const org = await t.tenant({ seats: 2 });
    const l = (await t.request({ method: 'POST', url: '/v1/learners', payload: person('enr@example.com'), token: org.token })).json();
    const course = (await t.request({ method: 'GET', url: '/v1/courses?limit=1', token: org.token })).json().data[0];
    const send = () =>
      t.request({ method: 'POST', url: '/v1/enrolments', payload: { learner_id: l.id, course_id: course.id }, token: org.token, headers: { 'idempotency-key': 'enr-1' } });
    const a = await send();
    const b = await send();
    expect(a.statusCode).toBe(201);
    expect(b.body).toBe(a.body);
    expect((await t.request({ method: 'GET', url: '/v1/seats', token: org.token })).json().in_use).toBe(1);
  });

  it('the same key on another resource’s path is a different request (422), not a replay of the first', async () => {
    const org = await t.tenant({ seats: 5 });
    const l = (await t.request({ method: 'POST', url: '/v1/learners', payload: person('two-enr@example.com'), token: org.token })).json();
    const courses = (await t.request({ method: 'GET', url: '/v1/courses?limit=2', token: org.token })).json().data;
    const ids: string[] = [];
    for (const c of courses) {
      ids.push((await t.request({ method: 'POST', url: '/v1/enrolments', payload: { learner_id: l.id, course_id: c.id }, token: org.token })).json().id);
    }
    const complete = (id: string) =>
      t.request({ method: 'POST', url: `/v1/enrolments/${id}/complete`, payload: {}, token: org.token, headers: { 'idempotency-key': 'done-1' } });
    expect((await complete(ids[0])).statusCode).toBe(200);
    const other = await complete(ids[1]);
    expect(other.statusCode).toBe(422);
    expect(problemOf(other).code).toBe('idempotency_key_reused');
    expect((await t.request({ method: 'GET', url: `/v1/enrolments/${ids[1]}`, token: org.token })).json().status).toBe('enrolled');
  });
});

describe('Idempotency-Key on a failing handler', () => {
  it('a 5xx answer releases the key, so the retry runs again and its answer is the one kept', async () => {
    const { default: Fastify } = await import('fastify');
    const { registerConventions } = await import('../src/http/conventions.js');
    const { registerIdempotency } = await import('../src/http/idempotency.js');
    const app = Fastify();
    registerConventions(app);
    app.decorateRequest('auth', null);
    app.addHook('onRequest', async (request) => {
      request.auth = { appId: 'app_flaky', orgId: 'org_x', scopes: [], tokenId: 'j' };
    });
    registerIdempotency(app, t.ctx);
    let calls = 0;
    app.post('/flaky', { config: { idempotent: true } }, async (_request, reply) => {
      calls++;
      if (calls === 1) throw new Error('database went away');
      return reply.code(201).send({ call: calls });
    });
    await app.ready();
    const send = () => app.inject({ method: 'POST', url: '/flaky', payload: { a: 1 }, headers: { 'idempotency-key': 'k' } });
    const first = await send();
    expect(first.statusCode).toBe(500);
    const second = await send();
    expect(second.statusCode).toBe(201);
    expect(second.json()).toEqual({ call: 2 });
    const third = await send();
    expect(third.json()).toEqual({ call: 2 });
    expect(calls).toBe(2);
    await app.close();
  });
});
