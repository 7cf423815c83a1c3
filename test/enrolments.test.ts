import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';
import type { ManualClock } from '../src/clock.js';
import { transition } from '../src/modules/enrolments/state.js';
import type { EnrolmentStatus, Row } from '../src/db/types.js';

let t: TestApp;
let org: Tenant;
let clock: ManualClock;
let plain: string[]; // published courses without a certificate
let certCourse: { id: string; certificate_validity_months: number | null };

beforeAll(async () => {
  t = await createTestApp();
  clock = t.clock as ManualClock;
  await t.loadCatalogue();
  org = await t.tenant({ seats: 50 });
  const db = t.ctx.db.kysely;
  plain = (await db.selectFrom('courses').select('id').where('status', '=', 'published').where('certificate_enabled', '=', 0).orderBy('id').execute()).map((c) => c.id);
  certCourse = await db
    .selectFrom('courses')
    .select(['id', 'certificate_validity_months'])
    .where('status', '=', 'published')
    .where('certificate_enabled', '=', 1)
    .where('certificate_validity_months', 'is not', null)
    .executeTakeFirstOrThrow();
});
afterAll(() => t.close());

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const req = (method: Method, url: string, payload?: object, headers: Record<string, string> = {}, token = org.token) =>
  t.request({ method, url, payload, token, headers });
let n = 0;
async function newLearner(extra: Record<string, unknown> = {}, token = org.token): Promise<{ id: string; email: string }> {
  n++;
  const res = await req('POST', '/v1/learners', { email: `e${n}@example.com`, first_name: 'En', last_name: `Rol ${n}`, ...extra }, {}, token);
  expect(res.statusCode).toBe(201);
  return res.json();
}
const enrol = (learner_id: string, course_id: string, extra: object = {}) => req('POST', '/v1/enrolments', { learner_id, course_id, ...extra });
const seats = async (token = org.token) => (await req('GET', '/v1/seats', undefined, {}, token)).json();
async function eventTypes(id: string) {
  const rows = await t.ctx.db.kysely.selectFrom('events').select('payload').orderBy('id').execute();
  return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.object.id === id || e.data.object.enrolment_id === id);
}

describe('the state table (one transition function)', () => {
  const row = (status: EnrolmentStatus): Row<'enrolments'> => ({
    id: 'enr_x', org_id: 'org_x', learner_id: 'usr_x', course_id: 'crs_x', status, progress: 0, score: null,
    enrolled_at: 'a', started_at: null, completed_at: null, withdrawn_at: null, due_at: null, certificate_id: null, created_at: 'a', updated_at: 'a',
  });
  const table: [EnrolmentStatus, 'update' | 'complete' | 'withdraw', EnrolmentStatus | 'invalid_state'][] = [
    ['enrolled', 'update', 'in_progress'],
    ['in_progress', 'update', 'in_progress'],
    ['completed', 'update', 'invalid_state'],
    ['withdrawn', 'update', 'invalid_state'],
    ['enrolled', 'complete', 'completed'],
    ['in_progress', 'complete', 'completed'],
    ['completed', 'complete', 'invalid_state'],
    ['withdrawn', 'complete', 'invalid_state'],
    ['enrolled', 'withdraw', 'withdrawn'],
    ['in_progress', 'withdraw', 'withdrawn'],
    ['completed', 'withdraw', 'invalid_state'],
    ['withdrawn', 'withdraw', 'invalid_state'],
  ];
  it.each(table)('%s --%s--> %s', (from, kind, to) => {
    const action = kind === 'update' ? { kind, progress: 10 } : kind === 'complete' ? { kind, completed_at: 'b' } : { kind };
    if (to === 'invalid_state') {
      expect(() => transition(row(from), action as never, 'now')).toThrow(expect.objectContaining({ code: 'invalid_state' }));
    } else {
      const r = transition(row(from), action as never, 'now');
      expect(r.changes.status).toBe(to);
      expect(r.releasesSeat).toBe(to === 'completed' || to === 'withdrawn');
    }
  });
});

describe('POST /v1/enrolments', () => {
  it('enrols (201, Location, ETag), takes a seat and records enrolment.created with the resource as shown', async () => {
    const l = await newLearner();
    const before = (await seats()).in_use;
    const res = await enrol(l.id, plain[0], { due_at: '2099-01-01T00:00:00+02:00' });
    expect(res.statusCode).toBe(201);
    const e = res.json();
    expect(e).toMatchObject({
      object: 'enrolment', learner_id: l.id, course_id: plain[0], status: 'enrolled', progress: 0, score: null,
      started_at: null, completed_at: null, withdrawn_at: null, due_at: '2098-12-31T22:00:00.000Z', overdue: false, certificate_id: null,
    });
    expect(res.headers.location).toBe(`/v1/enrolments/${e.id}`);
    expect((await req('GET', `/v1/enrolments/${e.id}`)).headers.etag).toBe(res.headers.etag);
    expect((await seats()).in_use).toBe(before + 1);
    const [created] = await eventTypes(e.id);
    expect(created.type).toBe('enrolment.created');
    expect(created.data.object).toEqual(e);
  });

  it('409 already_enrolled while active; enrolling again after completion is allowed', async () => {
    const l = await newLearner();
    const e = (await enrol(l.id, plain[1])).json();
    const again = await enrol(l.id, plain[1]);
    expect(again.statusCode).toBe(409);
    expect(problemOf(again).code).toBe('already_enrolled');
    await req('POST', `/v1/enrolments/${e.id}/complete`, {});
    expect((await enrol(l.id, plain[1])).statusCode).toBe(201);
  });

  it('422 course_not_available for a draft, retired or unknown course', async () => {
    const l = await newLearner();
    const db = t.ctx.db.kysely;
    const draft = await db.selectFrom('courses').select('id').where('status', '=', 'draft').executeTakeFirstOrThrow();
    const retired = await db.selectFrom('courses').select('id').where('status', '=', 'retired').executeTakeFirst();
    for (const id of [draft.id, retired?.id ?? 'crs_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'crs_01ARZ3NDEKTSV4RRFFQ69G5FAV']) {
      const res = await enrol(l.id, id);
      expect(res.statusCode).toBe(422);
      expect(problemOf(res).code).toBe('course_not_available');
    }
  });

  it('a suspended learner cannot be enrolled (409 conflict); an unknown learner is 404', async () => {
    const l = await newLearner();
    await req('PATCH', `/v1/learners/${l.id}`, { status: 'suspended' });
    const res = await enrol(l.id, plain[0]);
    expect(res.statusCode).toBe(409);
    expect(problemOf(res).code).toBe('conflict');
    const unknown = await enrol('usr_01ARZ3NDEKTSV4RRFFQ69G5FAV', plain[0]);
    expect(unknown.statusCode).toBe(404);
    // A user without the learner role is not a learner.
    const manager = (await req('POST', '/v1/users', { email: 'mgr-enrol@example.com', first_name: 'M', last_name: 'G', roles: ['manager'] })).json();
    expect((await enrol(manager.id, plain[0])).statusCode).toBe(404);
  });

  it('409 seat_limit_reached when every seat is in use; a freed seat can be taken again', async () => {
    const small = await t.tenant({ seats: 1 });
    const a = await newLearner({}, small.token);
    const b = await newLearner({}, small.token);
    const first = await req('POST', '/v1/enrolments', { learner_id: a.id, course_id: plain[0] }, {}, small.token);
    expect(first.statusCode).toBe(201);
    const second = await req('POST', '/v1/enrolments', { learner_id: b.id, course_id: plain[0] }, {}, small.token);
    expect(second.statusCode).toBe(409);
    expect(problemOf(second).code).toBe('seat_limit_reached');
    await req('POST', `/v1/enrolments/${first.json().id}/withdraw`, {}, {}, small.token);
    expect((await seats(small.token)).in_use).toBe(0);
    expect((await req('POST', '/v1/enrolments', { learner_id: b.id, course_id: plain[0] }, {}, small.token)).statusCode).toBe(201);
  });
});

describe('progress, completion, withdrawal', () => {
  it('PATCH progress > 0 moves enrolled → in_progress (enrolment.updated); progress 0 keeps enrolled', async () => {
    const l = await newLearner();
    const e = (await enrol(l.id, plain[2])).json();
    const zero = await req('PATCH', `/v1/enrolments/${e.id}`, { progress: 0, due_at: '2099-06-01T00:00:00Z' });
    expect(zero.json()).toMatchObject({ status: 'enrolled', progress: 0, due_at: '2099-06-01T00:00:00.000Z' });
    const res = await req('PATCH', `/v1/enrolments/${e.id}`, { progress: 40 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'in_progress', progress: 40, started_at: expect.any(String) });
    expect((await eventTypes(e.id)).map((x) => x.type)).toEqual(['enrolment.created', 'enrolment.updated', 'enrolment.updated']);
    expect((await req('PATCH', `/v1/enrolments/${e.id}`, { progress: 101 })).statusCode).toBe(400);
    expect((await req('PATCH', `/v1/enrolments/${e.id}`, { status: 'completed' })).statusCode).toBe(400);
  });

  it('complete with score and completed_at frees the seat, issues the certificate in the same transaction, records both events', async () => {
    const l = await newLearner();
    const e = (await enrol(l.id, certCourse.id)).json();
    await req('PATCH', `/v1/enrolments/${e.id}`, { progress: 50 });
    const before = (await seats()).in_use;
    const completedAt = new Date(clock.now().getTime() - 3600_000).toISOString();
    const res = await req('POST', `/v1/enrolments/${e.id}/complete`, { score: 87, completed_at: completedAt });
    expect(res.statusCode).toBe(200);
    const done = res.json();
    expect(done).toMatchObject({ status: 'completed', progress: 100, score: 87, completed_at: completedAt, certificate_id: expect.stringMatching(/^crt_/) });
    expect((await seats()).in_use).toBe(before - 1);
    const events = await eventTypes(e.id);
    expect(events.map((x) => x.type)).toEqual(['enrolment.created', 'enrolment.updated', 'certificate.issued', 'enrolment.completed']);
    expect(events[3].data.object).toEqual(done);
    expect(events[2].data.object).toMatchObject({ id: done.certificate_id, enrolment_id: e.id, learner_id: l.id, status: 'valid' });
    const certs = (await req('GET', `/v1/learners/${l.id}/certificates`)).json().data;
    expect(certs.map((c: { id: string }) => c.id)).toEqual([done.certificate_id]);
    // Terminal: any further transition is invalid_state and changes nothing.
    for (const [method, url, body] of [
      ['POST', `/v1/enrolments/${e.id}/complete`, {}],
      ['POST', `/v1/enrolments/${e.id}/withdraw`, {}],
      ['PATCH', `/v1/enrolments/${e.id}`, { progress: 10 }],
    ] as const) {
      const r = await req(method, url, body);
      expect(r.statusCode).toBe(409);
      expect(problemOf(r).code).toBe('invalid_state');
    }
    expect((await seats()).in_use).toBe(before - 1);
  });

  it('completion without a body works; a course without a certificate issues none; completed_at in the future → 400', async () => {
    const l = await newLearner();
    const e = (await enrol(l.id, plain[3])).json();
    const future = await req('POST', `/v1/enrolments/${e.id}/complete`, { completed_at: '2999-01-01T00:00:00Z' });
    expect(future.statusCode).toBe(400);
    const res = await t.request({ method: 'POST', url: `/v1/enrolments/${e.id}/complete`, token: org.token });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'completed', certificate_id: null, score: null });
  });

  it('withdraw frees the seat and records enrolment.withdrawn', async () => {
    const l = await newLearner();
    const e = (await enrol(l.id, plain[4])).json();
    const before = (await seats()).in_use;
    const res = await req('POST', `/v1/enrolments/${e.id}/withdraw`, {});
    expect(res.json()).toMatchObject({ status: 'withdrawn', withdrawn_at: expect.any(String) });
    expect((await seats()).in_use).toBe(before - 1);
    expect((await eventTypes(e.id)).map((x) => x.type)).toEqual(['enrolment.created', 'enrolment.withdrawn']);
  });

  it('overdue is derived: due_at passed and neither completed nor withdrawn', async () => {
    const l = await newLearner();
    const due = new Date(clock.now().getTime() + 60_000).toISOString();
    const a = (await enrol(l.id, plain[5], { due_at: due })).json();
    const b = (await enrol(l.id, plain[6], { due_at: due })).json();
    expect(a.overdue).toBe(false);
    await req('POST', `/v1/enrolments/${b.id}/complete`, {});
    clock.advance(120_000);
    expect((await req('GET', `/v1/enrolments/${a.id}`)).json().overdue).toBe(true);
    expect((await req('GET', `/v1/enrolments/${b.id}`)).json().overdue).toBe(false);
    const cleared = await req('PATCH', `/v1/enrolments/${a.id}`, { due_at: null });
    expect(cleared.json()).toMatchObject({ due_at: null, overdue: false });
  });

  it('If-Match on PATCH: stale → 412 and nothing changes; If-None-Match on GET → 304', async () => {
    const l = await newLearner();
    const e = await enrol(l.id, plain[7]);
    const etag = e.headers.etag as string;
    expect((await req('GET', `/v1/enrolments/${e.json().id}`, undefined, { 'if-none-match': etag })).statusCode).toBe(304);
    const ok = await req('PATCH', `/v1/enrolments/${e.json().id}`, { progress: 5 }, { 'if-match': etag });
    expect(ok.statusCode).toBe(200);
    const stale = await req('PATCH', `/v1/enrolments/${e.json().id}`, { progress: 9 }, { 'if-match': etag });
    expect(stale.statusCode).toBe(412);
    expect((await req('GET', `/v1/enrolments/${e.json().id}`)).json().progress).toBe(5);
  });
});

describe('GET /v1/enrolments', () => {
  it('filters by learner_id, course_id, status and updated_since; a learner’s enrolments; paging', async () => {
    const other = await t.tenant({ seats: 10 });
    const a = await newLearner({}, other.token);
    const b = await newLearner({}, other.token);
    const r = (method: Method, url: string, payload?: object) => req(method, url, payload, {}, other.token);
    const e1 = (await r('POST', '/v1/enrolments', { learner_id: a.id, course_id: plain[0] })).json();
    const e2 = (await r('POST', '/v1/enrolments', { learner_id: a.id, course_id: plain[1] })).json();
    const e3 = (await r('POST', '/v1/enrolments', { learner_id: b.id, course_id: plain[0] })).json();
    clock.advance(1000);
    const since = clock.now().toISOString();
    await r('POST', `/v1/enrolments/${e2.id}/withdraw`, {});
    const ids = async (url: string) => (await r('GET', url)).json().data.map((e: { id: string }) => e.id);
    expect(await ids('/v1/enrolments')).toEqual([e1.id, e2.id, e3.id]);
    expect(await ids(`/v1/enrolments?learner_id=${a.id}`)).toEqual([e1.id, e2.id]);
    expect(await ids(`/v1/enrolments?course_id=${plain[0]}`)).toEqual([e1.id, e3.id]);
    expect(await ids('/v1/enrolments?status=withdrawn')).toEqual([e2.id]);
    expect(await ids(`/v1/enrolments?updated_since=${encodeURIComponent(since)}`)).toEqual([e2.id]);
    expect(await ids(`/v1/learners/${a.id}/enrolments?status=enrolled`)).toEqual([e1.id]);
    const page = await r('GET', '/v1/enrolments?limit=2');
    expect(page.json().data).toHaveLength(2);
    expect(page.headers.link).toContain('rel="next"');
    expect(await ids(`/v1/enrolments?limit=2&cursor=${page.json().next_cursor}`)).toEqual([e3.id]);
    expect((await r('GET', '/v1/enrolments?status=finished')).statusCode).toBe(400);
    expect((await r('GET', '/v1/learners/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV/enrolments')).statusCode).toBe(404);
    // The organization's enrolments only.
    expect(await ids(`/v1/enrolments?learner_id=${a.id}&limit=100`)).toHaveLength(2);
    expect((await req('GET', `/v1/enrolments?learner_id=${a.id}`)).json().data).toEqual([]);
  });
});

describe('POST /v1/enrolments/bulk', () => {
  it('names learners by learner_id, email or external_id; per-item results in input order; one bad item fails alone', async () => {
    const small = await t.tenant({ seats: 3 });
    const a = await newLearner({ external_id: 'EXT-A' }, small.token);
    const b = await newLearner({}, small.token);
    const c = await newLearner({}, small.token);
    const d = await newLearner({}, small.token);
    const res = await req(
      'POST',
      '/v1/enrolments/bulk',
      {
        enrolments: [
          { external_id: 'EXT-A', course_id: plain[0] },
          { email: b.email.toUpperCase(), course_id: plain[0], due_at: '2099-01-01T00:00:00Z' },
          { learner_id: a.id, course_id: plain[0] }, // already enrolled
          { email: 'nobody@example.com', course_id: plain[0] },
          { learner_id: c.id, email: c.email, course_id: plain[0] }, // two references
          { learner_id: c.id, course_id: 'crs_01ARZ3NDEKTSV4RRFFQ69G5FAV' },
          { learner_id: c.id, course_id: plain[1] },
          { learner_id: d.id, course_id: plain[1] }, // no seat left
        ],
      },
      {},
      small.token,
    );
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data.map((x: { index: number; result: string; error?: { code: string } }) => [x.index, x.result, x.error?.code])).toEqual([
      [0, 'created', undefined],
      [1, 'created', undefined],
      [2, 'error', 'already_enrolled'],
      [3, 'error', 'not_found'],
      [4, 'error', 'validation_failed'],
      [5, 'error', 'course_not_available'],
      [6, 'created', undefined],
      [7, 'error', 'seat_limit_reached'],
    ]);
    expect(data[0].enrolment.learner_id).toBe(a.id);
    expect(data[1].enrolment).toMatchObject({ learner_id: b.id, due_at: '2099-01-01T00:00:00.000Z' });
    expect((await seats(small.token))).toMatchObject({ total: 3, in_use: 3 });
  });

  it('seats are never over-allocated by a large batch; 501 items are refused', async () => {
    const small = await t.tenant({ seats: 7 });
    const learners = (
      await req(
        'POST',
        '/v1/learners/bulk',
        { learners: Array.from({ length: 40 }, (_, i) => ({ email: `bulk${i}@example.com`, first_name: 'B', last_name: `${i}` })) },
        {},
        small.token,
      )
    ).json().data.map((x: { learner: { id: string } }) => x.learner.id);
    const body = { enrolments: learners.map((id: string) => ({ learner_id: id, course_id: plain[0] })) };
    const [one, two] = await Promise.all([
      req('POST', '/v1/enrolments/bulk', body, {}, small.token),
      req('POST', '/v1/enrolments/bulk', body, {}, small.token),
    ]);
    const created = [...one.json().data, ...two.json().data].filter((x: { result: string }) => x.result === 'created');
    expect(created).toHaveLength(7);
    expect((await seats(small.token)).in_use).toBe(7);
    const tooMany = await req('POST', '/v1/enrolments/bulk', { enrolments: Array.from({ length: 501 }, () => ({ learner_id: learners[0], course_id: plain[0] })) }, {}, small.token);
    expect(tooMany.statusCode).toBe(400);
  });
});
