import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';
import type { ManualClock } from '../src/clock.js';

let t: TestApp;
let tenant: Tenant;
let courses: { id: string }[];

beforeAll(async () => {
  t = await createTestApp();
  await t.loadCatalogue();
  tenant = await t.tenant({ seats: 10 });
  courses = (await t.request({ method: 'GET', url: '/v1/courses?limit=5', token: tenant.token })).json().data;
});
afterAll(() => t.close());

const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  t.request({ method: 'POST', url, payload: payload as object, token: tenant.token, headers });
const get = (url: string, headers: Record<string, string> = {}) => t.request({ method: 'GET', url, token: tenant.token, headers });
const person = (email: string, extra: Record<string, unknown> = {}) => ({ email, first_name: 'Grace', last_name: 'Hopper', ...extra });

async function eventsOf(type: string, objectId: string) {
  const rows = await t.ctx.db.kysely.selectFrom('events').select(['type', 'payload']).where('type', '=', type).orderBy('id').execute();
  return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.object.id === objectId);
}

describe('POST /v1/learners', () => {
  it('creates a learner (201, Location, ETag) and records learner.created and user.created with the resource as shown', async () => {
    const res = await post('/v1/learners', person('Grace@Example.com', { external_id: 'hr-1', department: 'Navy' }));
    expect(res.statusCode).toBe(201);
    const l = res.json();
    expect(l).toMatchObject({ object: 'learner', email: 'Grace@Example.com', external_id: 'hr-1', department: 'Navy', status: 'active' });
    expect(l.id).toMatch(/^usr_/);
    expect(res.headers.location).toBe(`/v1/learners/${l.id}`);
    expect(res.headers.etag).toMatch(/^"/);
    const [created] = await eventsOf('learner.created', l.id);
    expect(created.data.object).toEqual(l);
    const [userCreated] = await eventsOf('user.created', l.id);
    expect(userCreated.data.object).toMatchObject({ object: 'user', id: l.id, roles: ['learner'] });
    const user = (await get(`/v1/users/${l.id}`)).json();
    expect(user.roles).toEqual(['learner']);
  });

  it('409 conflict when the person is already a learner (e-mail compared case-insensitively)', async () => {
    const res = await post('/v1/learners', person('GRACE@example.COM'));
    expect(res.statusCode).toBe(409);
    expect(problemOf(res).code).toBe('conflict');
  });

  it('adds the learner role to an existing user with that e-mail', async () => {
    const u = (await post('/v1/users', person('manager@example.com', { roles: ['manager'] }))).json();
    expect((await get(`/v1/learners/${u.id}`)).statusCode).toBe(404);
    const res = await post('/v1/learners', person('Manager@example.com', { first_name: 'Mia' }));
    expect(res.statusCode).toBe(201);
    expect(res.json().id).toBe(u.id);
    expect(res.json().first_name).toBe('Mia');
    expect((await get(`/v1/users/${u.id}`)).json().roles).toEqual(['learner', 'manager']);
    expect(await eventsOf('learner.created', u.id)).toHaveLength(1);
    expect(await eventsOf('user.updated', u.id)).toHaveLength(1);
  });

  it('external_id is unique within the organization (409), but not across organizations', async () => {
    const res = await post('/v1/learners', person('other@example.com', { external_id: 'hr-1' }));
    expect(res.statusCode).toBe(409);
    expect(problemOf(res).detail).toContain('external_id');
    const other = await t.tenant();
    const elsewhere = await t.request({ method: 'POST', url: '/v1/learners', token: other.token, payload: person('grace@example.com', { external_id: 'hr-1' }) });
    expect(elsewhere.statusCode).toBe(201);
  });

  it('rejects a malformed e-mail and unknown fields with 400 validation_failed', async () => {
    const bad = await post('/v1/learners', person('not-an-email'));
    expect(bad.statusCode).toBe(400);
    expect(problemOf(bad).errors?.[0].pointer).toBe('/email');
    const extra = await post('/v1/learners', { ...person('x@example.com'), roles: ['admin'] });
    expect(problemOf(extra).code).toBe('validation_failed');
  });
});

describe('GET /v1/learners', () => {
  it('filters by email, external_id, status and department; leaves out non-learners', async () => {
    await post('/v1/learners', person('dept1@example.com', { department: 'Sales' }));
    await post('/v1/learners', person('dept2@example.com', { department: 'Sales', external_id: 'hr-sales-2' }));
    await post('/v1/users', person('admin-only@example.com', { roles: ['admin'] }));
    const sales = (await get('/v1/learners?department=Sales')).json().data;
    expect(sales.map((l: { email: string }) => l.email).sort()).toEqual(['dept1@example.com', 'dept2@example.com']);
    expect((await get('/v1/learners?email=DEPT1@example.com')).json().data).toHaveLength(1);
    expect((await get('/v1/learners?external_id=hr-sales-2')).json().data[0].email).toBe('dept2@example.com');
    const all = (await get('/v1/learners?limit=100')).json().data;
    expect(all.some((l: { email: string }) => l.email === 'admin-only@example.com')).toBe(false);
    expect(all.every((l: { object: string }) => l.object === 'learner')).toBe(true);
    const suspended = all[0];
    await t.request({ method: 'PATCH', url: `/v1/learners/${suspended.id}`, token: tenant.token, payload: { status: 'suspended' } });
    const s = (await get('/v1/learners?status=suspended')).json().data;
    expect(s.map((l: { id: string }) => l.id)).toEqual([suspended.id]);
  });

  it('400 on a bad filter value', async () => {
    expect((await get('/v1/learners?status=sleeping')).statusCode).toBe(400);
    expect((await get('/v1/learners?limit=0')).statusCode).toBe(400);
  });
});

describe('PATCH and ETag', () => {
  it('GET carries an ETag; If-None-Match → 304; PATCH with a stale If-Match → 412; with the current one → 200', async () => {
    const l = (await post('/v1/learners', person('etag@example.com'))).json();
    const first = await get(`/v1/learners/${l.id}`);
    const etag = first.headers.etag as string;
    expect(etag).toBeTruthy();
    const cached = await get(`/v1/learners/${l.id}`, { 'if-none-match': etag });
    expect(cached.statusCode).toBe(304);
    expect(cached.body).toBe('');
    expect((await get(`/v1/learners/${l.id}`, { 'if-none-match': `W/${etag}` })).statusCode).toBe(304);

    const patched = await t.request({ method: 'PATCH', url: `/v1/learners/${l.id}`, token: tenant.token, payload: { last_name: 'Brewster' }, headers: { 'if-match': etag } });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().last_name).toBe('Brewster');
    expect(patched.headers.etag).not.toBe(etag);
    expect((await get(`/v1/learners/${l.id}`)).headers.etag).toBe(patched.headers.etag);

    const stale = await t.request({ method: 'PATCH', url: `/v1/learners/${l.id}`, token: tenant.token, payload: { last_name: 'Again' }, headers: { 'if-match': etag } });
    expect(stale.statusCode).toBe(412);
    expect(problemOf(stale).code).toBe('precondition_failed');
    const staleDelete = await t.request({ method: 'DELETE', url: `/v1/learners/${l.id}`, token: tenant.token, headers: { 'if-match': etag } });
    expect(staleDelete.statusCode).toBe(412);
    expect((await get(`/v1/learners/${l.id}`)).json().status).toBe('active');
    expect((await get(`/v1/learners/${l.id}`, { 'if-none-match': etag })).statusCode).toBe(200);
  });

  it('concurrent PATCHes with the same If-Match: exactly one wins, the others get 412', async () => {
    const l = (await post('/v1/learners', person('race-etag@example.com'))).json();
    const etag = (await get(`/v1/learners/${l.id}`)).headers.etag as string;
    const results = await Promise.all(
      ['A', 'B', 'C', 'D', 'E'].map((name) =>
        t.request({ method: 'PATCH', url: `/v1/learners/${l.id}`, token: tenant.token, payload: { first_name: name }, headers: { 'if-match': etag } }),
      ),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 412, 412, 412, 412]);
    const winner = results.find((r) => r.statusCode === 200)!.json();
    expect((await get(`/v1/learners/${l.id}`)).json().first_name).toBe(winner.first_name);
  });

  it('records learner.updated and user.updated; a PATCH that changes nothing records nothing', async () => {
    const l = (await post('/v1/learners', person('events@example.com'))).json();
    const res = await t.request({ method: 'PATCH', url: `/v1/learners/${l.id}`, token: tenant.token, payload: { department: 'R&D' } });
    const [updated] = await eventsOf('learner.updated', l.id);
    expect(updated.data.object).toEqual(res.json());
    expect(await eventsOf('user.updated', l.id)).toHaveLength(1);
    const again = await t.request({ method: 'PATCH', url: `/v1/learners/${l.id}`, token: tenant.token, payload: { department: 'R&D' } });
    expect(again.json()).toEqual(res.json());
    expect(await eventsOf('learner.updated', l.id)).toHaveLength(1);
  });

  it('changing the e-mail to one another user has → 409 conflict', async () => {
    const a = (await post('/v1/learners', person('a-mail@example.com'))).json();
    await post('/v1/learners', person('b-mail@example.com'));
    const res = await t.request({ method: 'PATCH', url: `/v1/learners/${a.id}`, token: tenant.token, payload: { email: 'B-MAIL@example.com' } });
    expect(res.statusCode).toBe(409);
    expect(problemOf(res).code).toBe('conflict');
  });
});

describe('DELETE /v1/learners/{id}', () => {
  it('sets status removed, withdraws active enrolments and frees their seats in one go; certificates stay; events recorded', async () => {
    const l = (await post('/v1/learners', person('leaver@example.com'))).json();
    const certCourse = await t.ctx.db.kysely.selectFrom('courses').select('id').where('status', '=', 'published').where('certificate_enabled', '=', 1).where('id', 'not in', [courses[0].id, courses[1].id]).executeTakeFirstOrThrow();
    const e1 = (await post('/v1/enrolments', { learner_id: l.id, course_id: courses[0].id })).json();
    const e2 = (await post('/v1/enrolments', { learner_id: l.id, course_id: courses[1].id })).json();
    const e3 = (await post('/v1/enrolments', { learner_id: l.id, course_id: certCourse.id })).json();
    const done = (await post(`/v1/enrolments/${e3.id}/complete`, {})).json();
    expect(done.certificate_id).toMatch(/^crt_/);
    const before = (await get('/v1/seats')).json().in_use;

    const res = await t.request({ method: 'DELETE', url: `/v1/learners/${l.id}`, token: tenant.token });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: l.id, object: 'learner', status: 'removed' });
    expect((await get('/v1/seats')).json().in_use).toBe(before - 2);
    for (const e of [e1, e2]) {
      const now = (await get(`/v1/enrolments/${e.id}`)).json();
      expect(now.status).toBe('withdrawn');
      expect(await eventsOf('enrolment.withdrawn', e.id)).toHaveLength(1);
    }
    expect((await get(`/v1/enrolments/${e3.id}`)).json().status).toBe('completed');
    const certs = (await get(`/v1/learners/${l.id}/certificates`)).json().data;
    expect(certs.map((c: { id: string; status: string }) => [c.id, c.status])).toEqual([[done.certificate_id, 'valid']]);
    expect(await eventsOf('learner.removed', l.id)).toHaveLength(1);
    expect(await eventsOf('user.removed', l.id)).toHaveLength(1);

    // Removing again changes nothing; PATCHing a removed learner is a conflict.
    const again = await t.request({ method: 'DELETE', url: `/v1/learners/${l.id}`, token: tenant.token });
    expect(again.statusCode).toBe(200);
    expect(await eventsOf('learner.removed', l.id)).toHaveLength(1);
    const patch = await t.request({ method: 'PATCH', url: `/v1/learners/${l.id}`, token: tenant.token, payload: { first_name: 'Z' } });
    expect(patch.statusCode).toBe(409);
    // A removed learner cannot be enrolled.
    const enrol = await post('/v1/enrolments', { learner_id: l.id, course_id: courses[3].id });
    expect(enrol.statusCode).toBe(409);
    expect(problemOf(enrol).code).toBe('conflict');
  });

  it('POST /v1/learners with a removed learner’s e-mail re-activates them', async () => {
    const l = (await post('/v1/learners', person('comeback@example.com'))).json();
    await t.request({ method: 'DELETE', url: `/v1/learners/${l.id}`, token: tenant.token });
    const res = await post('/v1/learners', person('comeback@example.com'));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ id: l.id, status: 'active' });
  });
});

describe('delta sync (acceptance 4)', () => {
  it('without updated_since removed learners are left out; with it they come back as tombstones', async () => {
    const clock = t.clock as ManualClock;
    clock.advance(60_000);
    const since = new Date(clock.now()).toISOString();
    clock.advance(1000);
    const stay = (await post('/v1/learners', person('stay@example.com'))).json();
    const gone = (await post('/v1/learners', person('gone@example.com'))).json();
    await t.request({ method: 'DELETE', url: `/v1/learners/${gone.id}`, token: tenant.token });

    const plain = (await get('/v1/learners?limit=100')).json().data.map((l: { id: string }) => l.id);
    expect(plain).toContain(stay.id);
    expect(plain).not.toContain(gone.id);

    const delta = (await get(`/v1/learners?updated_since=${encodeURIComponent(since)}&limit=100`)).json().data;
    expect(delta.map((l: { id: string }) => l.id)).toEqual([stay.id, gone.id]);
    expect(delta[1].status).toBe('removed');
    const users = (await get(`/v1/users?updated_since=${encodeURIComponent(since)}&limit=100`)).json().data;
    expect(users.find((u: { id: string }) => u.id === gone.id)?.status).toBe('removed');
    const later = (await get(`/v1/learners?updated_since=${encodeURIComponent(new Date(clock.now().getTime() + 1).toISOString())}`)).json().data;
    expect(later).toEqual([]);
  });

  it('walking pages while learners are being created never skips or repeats one that existed when the walk began', async () => {
    const org = await t.tenant();
    const req = (method: string, url: string, payload?: object) => t.request({ method: method as 'GET', url, payload, token: org.token });
    for (let i = 0; i < 23; i++) await req('POST', '/v1/learners', person(`walk${i}@example.com`));
    const existing = (await t.ctx.db.kysely.selectFrom('users').select('id').where('org_id', '=', org.orgId).orderBy('id').execute()).map((r) => r.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let n = 0;
    do {
      const page: { data: { id: string }[]; next_cursor: string | null } = (await req('GET', `/v1/learners?limit=4${cursor ? `&cursor=${cursor}` : ''}`)).json();
      seen.push(...page.data.map((l: { id: string }) => l.id));
      cursor = page.next_cursor;
      // Meanwhile, others create learners.
      await req('POST', '/v1/learners', person(`during${n}@example.com`));
      await req('POST', '/v1/learners', person(`during${n}b@example.com`));
      n++;
    } while (cursor && n < 100);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of existing) expect(seen.filter((s) => s === id)).toHaveLength(1);
  });
});

describe('POST /v1/learners/bulk', () => {
  it('upserts by external_id or e-mail and answers one result per item in input order', async () => {
    const org = await t.tenant();
    const req = (payload: object, headers = {}) => t.request({ method: 'POST', url: '/v1/learners/bulk', payload, token: org.token, headers });
    await t.request({ method: 'POST', url: '/v1/learners', token: org.token, payload: person('known@example.com') });
    await t.request({ method: 'POST', url: '/v1/learners', token: org.token, payload: person('ext@example.com', { external_id: 'E-1' }) });
    await t.request({ method: 'POST', url: '/v1/learners', token: org.token, payload: person('taken@example.com') });
    const res = await req({
      learners: [
        person('new1@example.com'),
        person('KNOWN@example.com', { department: 'Ops' }),
        person('renamed@example.com', { external_id: 'E-1' }),
        person('taken@example.com', { external_id: 'E-1' }), // E-1 belongs to another person now → that person's e-mail is taken
        person('new2@example.com', { external_id: 'E-2' }),
        person('new1@example.com', { last_name: 'Twice' }),
      ],
    });
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data.map((d: { index: number; result: string }) => [d.index, d.result])).toEqual([
      [0, 'created'],
      [1, 'updated'],
      [2, 'updated'],
      [3, 'error'],
      [4, 'created'],
      [5, 'updated'],
    ]);
    expect(data[1].learner.department).toBe('Ops');
    expect(data[2].learner.email).toBe('renamed@example.com');
    expect(data[3].error).toMatchObject({ code: 'conflict', status: 409 });
    expect(data[5].learner.last_name).toBe('Twice');
    const list = (await t.request({ method: 'GET', url: '/v1/learners?limit=100', token: org.token })).json().data;
    expect(list).toHaveLength(5); // known, ext (renamed), taken, new1, new2
  });

  it('accepts 500 items and refuses 501', async () => {
    const org = await t.tenant();
    const items = (n: number) => Array.from({ length: n }, (_, i) => person(`b${i}@example.com`, { external_id: `B-${i}` }));
    const tooMany = await t.request({ method: 'POST', url: '/v1/learners/bulk', payload: { learners: items(501) }, token: org.token });
    expect(tooMany.statusCode).toBe(400);
    expect(problemOf(tooMany).code).toBe('validation_failed');
    const ok = await t.request({ method: 'POST', url: '/v1/learners/bulk', payload: { learners: items(500) }, token: org.token });
    expect(ok.statusCode).toBe(200);
    const data = ok.json().data;
    expect(data).toHaveLength(500);
    expect(data.every((d: { result: string; index: number }, i: number) => d.result === 'created' && d.index === i)).toBe(true);
  });
});
