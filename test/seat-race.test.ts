// Acceptance 1 (issue 3): the seat rule under real concurrency — the app listens on 127.0.0.1:0 and 50 HTTP
// requests race over separate connections. Runs on SQLite and, with TEST_DATABASE_URL, on PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { createTestApp, type TestApp, type Tenant } from './helpers.js';

let t: TestApp;
let base = '';
let courseId = '';
const agent = new Agent({ connections: 60, pipelining: 0 });

beforeAll(async () => {
  t = await createTestApp();
  await t.loadCatalogue();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const org = await t.tenant();
  courseId = (await t.request({ method: 'GET', url: '/v1/courses?limit=1', token: org.token })).json().data[0].id;
});
afterAll(async () => {
  await agent.close();
  await t.close();
});

async function http(method: 'GET' | 'POST', path: string, token: string, body?: object) {
  const res = await request(`${base}${path}`, {
    method,
    dispatcher: agent,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.statusCode, body: (await res.body.json()) as any };
}

async function learners(org: Tenant, n: number): Promise<string[]> {
  const res = await t.request({
    method: 'POST',
    url: '/v1/learners/bulk',
    token: org.token,
    payload: { learners: Array.from({ length: n }, (_, i) => ({ email: `racer${i}@example.com`, first_name: 'R', last_name: `${i}` })) },
  });
  return res.json().data.map((d: { learner: { id: string } }) => d.learner.id);
}

describe('seat race', () => {
  it('5 free seats, 50 concurrent enrolments of different learners → exactly 5 × 201, 45 × 409 seat_limit_reached, 5 in use', async () => {
    const org = await t.tenant({ seats: 5 });
    const ids = await learners(org, 50);
    const results = await Promise.all(ids.map((id) => http('POST', '/v1/enrolments', org.token, { learner_id: id, course_id: courseId })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 409)).toHaveLength(45);
    expect(results.filter((r) => r.status === 409).every((r) => r.body.code === 'seat_limit_reached')).toBe(true);
    const seats = await http('GET', '/v1/seats', org.token);
    expect(seats.body).toMatchObject({ total: 5, in_use: 5, available: 0 });
    const rows = await t.ctx.db.kysely.selectFrom('enrolments').select('id').where('org_id', '=', org.orgId).execute();
    expect(rows).toHaveLength(5);
  });

  it('50 concurrent enrolments of one learner in one course → exactly one enrolment, the rest 409 already_enrolled', async () => {
    const org = await t.tenant({ seats: 5 });
    const [id] = await learners(org, 1);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => http('POST', '/v1/enrolments', org.token, { learner_id: id, course_id: courseId })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    const others = results.filter((r) => r.status !== 201);
    expect(others).toHaveLength(49);
    expect(others.every((r) => r.status === 409 && r.body.code === 'already_enrolled')).toBe(true);
    const rows = await t.ctx.db.kysely.selectFrom('enrolments').select('id').where('org_id', '=', org.orgId).execute();
    expect(rows).toHaveLength(1);
    expect((await http('GET', '/v1/seats', org.token)).body.in_use).toBe(1);
  });

  it('completions and withdrawals racing new enrolments never over-allocate and the count stays exact', async () => {
    const org = await t.tenant({ seats: 3 });
    const ids = await learners(org, 20);
    const first = await Promise.all(ids.slice(0, 3).map((id) => http('POST', '/v1/enrolments', org.token, { learner_id: id, course_id: courseId })));
    expect(first.every((r) => r.status === 201)).toBe(true);
    const results = await Promise.all([
      http('POST', `/v1/enrolments/${first[0].body.id}/complete`, org.token, {}),
      http('POST', `/v1/enrolments/${first[1].body.id}/withdraw`, org.token, {}),
      http('POST', `/v1/enrolments/${first[1].body.id}/withdraw`, org.token, {}),
      ...ids.slice(3).map((id) => http('POST', '/v1/enrolments', org.token, { learner_id: id, course_id: courseId })),
    ]);
    const doubleWithdraw = [results[1].status, results[2].status].sort();
    expect(doubleWithdraw).toEqual([200, 409]);
    const active = await t.ctx.db.kysely
      .selectFrom('enrolments')
      .select('id')
      .where('org_id', '=', org.orgId)
      .where('status', 'in', ['enrolled', 'in_progress'])
      .execute();
    const seats = (await http('GET', '/v1/seats', org.token)).body;
    expect(active.length).toBeLessThanOrEqual(3);
    expect(seats.in_use).toBe(active.length);
    // Two seats were freed; at most two of the racing enrolments got them.
    expect(results.slice(3).filter((r) => r.status === 201).length).toBe(active.length - 1);
  });
});
