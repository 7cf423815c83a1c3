// The console's organization and catalogue pages: forms drive the organization and catalogue services, and
// catalogue changes integrators can see record their course.* event in the same transaction.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type Tenant } from './helpers.js';
import { addOperator } from '../src/modules/accounts/service.js';
import { WebClient, signInByMail } from './web-helpers.js';

let t: TestApp;
let op: WebClient;
let tenant: Tenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await t.tenant({ scopes: ['courses:read', 'seats:read'] });
  await addOperator(t.ctx, 'cat-op@example.com');
  op = new WebClient(t.app);
  await signInByMail(t, op, 'console', 'cat-op@example.com');
});
afterAll(() => t.close());

const eventsOf = async (type: string) => t.ctx.db.kysely.selectFrom('events').selectAll().where('type', '=', type).execute();
const idFrom = (location: unknown, kind: string) => new RegExp(`/(${kind}_[0-9A-Z]+)`).exec(String(location))![1];

describe('organizations in the console', () => {
  it('creates an organization and changes its seats (seats.updated), with audit entries', async () => {
    let csrf = await op.csrf('/console/organizations');
    const created = await op.post('/console/organizations', { _csrf: csrf, name: 'Initech', seats: '12' });
    expect(created.statusCode).toBe(303);
    const page = await op.get('/console/organizations');
    expect(page.body).toContain('Initech');
    const org = await t.ctx.db.kysely.selectFrom('organizations').select('id').where('name', '=', 'Initech').executeTakeFirstOrThrow();
    csrf = await op.csrf('/console/organizations');
    expect((await op.post(`/console/organizations/${org.id}/seats`, { _csrf: csrf, seats: '30' })).statusCode).toBe(303);
    const seats = await t.ctx.db.kysely.selectFrom('seat_allowances').selectAll().where('org_id', '=', org.id).executeTakeFirstOrThrow();
    expect(seats.total).toBe(30);
    expect((await eventsOf('seats.updated')).some((e) => e.org_id === org.id)).toBe(true);
    const audit = await t.ctx.db.kysely.selectFrom('audit_log').select(['actor', 'action']).where('target', '=', org.id).orderBy('id').execute();
    expect(audit).toEqual([
      { actor: 'operator:cat-op@example.com', action: 'organization.created' },
      { actor: 'operator:cat-op@example.com', action: 'organization.seats_changed' },
    ]);
    const bad = await op.post(`/console/organizations/${org.id}/seats`, { _csrf: csrf, seats: '-1' });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toMatch(/^text\/html/);
  });
});

describe('the catalogue in the console', () => {
  it('creates a category and a draft course, publishes, edits and retires it, each visible change with its event', async () => {
    let csrf = await op.csrf('/console/catalogue');
    expect((await op.post('/console/categories', { _csrf: csrf, name: 'Safety', parent_id: '' })).statusCode).toBe(303);
    const cat = await t.ctx.db.kysely.selectFrom('course_categories').select('id').where('name', '=', 'Safety').executeTakeFirstOrThrow();
    const form = {
      title: 'Fire safety basics',
      summary: 'Evacuation and extinguishers.',
      category_id: cat.id,
      language: 'en',
      duration_minutes: '45',
      tags: 'safety, onboarding',
      certificate_enabled: 'on',
      certificate_validity_months: '12',
    };
    csrf = await op.csrf('/console/courses/new');
    const created = await op.post('/console/courses', { _csrf: csrf, ...form });
    expect(created.statusCode).toBe(303);
    const courseId = idFrom(created.headers.location, 'crs');
    const list = async () => (await t.request({ method: 'GET', url: '/v1/courses?limit=100', token: tenant.token })).json().data as { id: string; title: string }[];
    expect((await list()).some((c) => c.id === courseId)).toBe(false); // a draft is invisible
    expect(await eventsOf('course.published')).toHaveLength(0);

    csrf = await op.csrf(`/console/courses/${courseId}`);
    expect((await op.post(`/console/courses/${courseId}/publish`, { _csrf: csrf })).statusCode).toBe(303);
    const published = await eventsOf('course.published');
    expect(published).toHaveLength(1);
    expect(JSON.parse(published[0].payload).data.object).toMatchObject({ id: courseId, status: 'published', tags: ['safety', 'onboarding'], certificate: { enabled: true, validity_months: 12 } });
    expect((await list()).map((c) => c.id)).toContain(courseId);

    csrf = await op.csrf(`/console/courses/${courseId}`);
    expect((await op.post(`/console/courses/${courseId}`, { _csrf: csrf, ...form, title: 'Fire safety essentials' })).statusCode).toBe(303);
    const updated = await eventsOf('course.updated');
    expect(updated).toHaveLength(1);
    expect(JSON.parse(updated[0].payload).data.object.title).toBe('Fire safety essentials');
    const viaApi = await t.request({ method: 'GET', url: `/v1/courses/${courseId}`, token: tenant.token });
    expect(viaApi.json().title).toBe('Fire safety essentials');

    csrf = await op.csrf(`/console/courses/${courseId}`);
    expect((await op.post(`/console/courses/${courseId}/retire`, { _csrf: csrf })).statusCode).toBe(303);
    expect(await eventsOf('course.retired')).toHaveLength(1);
    expect((await list()).some((c) => c.id === courseId)).toBe(false);
    // Retiring twice is a clear 409 page, and records nothing more.
    const again = await op.post(`/console/courses/${courseId}/retire`, { _csrf: csrf });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain('is retired already');
    expect(await eventsOf('course.retired')).toHaveLength(1);
  });

  it('refuses a bad course form with a clear page and saves nothing', async () => {
    const before = await t.ctx.db.kysely.selectFrom('courses').select('id').execute();
    const csrf = await op.csrf('/console/courses/new');
    const res = await op.post('/console/courses', {
      _csrf: csrf,
      title: 'Bad',
      summary: '',
      category_id: '',
      language: 'not a language',
      duration_minutes: '10',
      tags: '',
      certificate_validity_months: '',
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('BCP 47');
    expect(await t.ctx.db.kysely.selectFrom('courses').select('id').execute()).toHaveLength(before.length);
  });

  it('will not put a category inside itself', async () => {
    let csrf = await op.csrf('/console/catalogue');
    await op.post('/console/categories', { _csrf: csrf, name: 'Parent', parent_id: '' });
    const parent = await t.ctx.db.kysely.selectFrom('course_categories').select('id').where('name', '=', 'Parent').executeTakeFirstOrThrow();
    csrf = await op.csrf('/console/catalogue');
    await op.post('/console/categories', { _csrf: csrf, name: 'Child', parent_id: parent.id });
    const child = await t.ctx.db.kysely.selectFrom('course_categories').select('id').where('name', '=', 'Child').executeTakeFirstOrThrow();
    csrf = await op.csrf(`/console/categories/${parent.id}`);
    const res = await op.post(`/console/categories/${parent.id}`, { _csrf: csrf, name: 'Parent', parent_id: child.id });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('inside itself');
    const row = await t.ctx.db.kysely.selectFrom('course_categories').select('parent_id').where('id', '=', parent.id).executeTakeFirstOrThrow();
    expect(row.parent_id).toBeNull();
  });
});
