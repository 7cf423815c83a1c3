import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await createTestApp();
  await t.loadCatalogue();
  tenant = await t.tenant();
});
afterAll(() => t.close());

describe('GET /v1/courses', () => {
  it('returns a page of published courses with next_cursor and a Link header', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/courses?limit=5', token: tenant.token });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.data).toHaveLength(5);
    expect(body.data.every((c: { status: string; object: string }) => c.status === 'published' && c.object === 'course')).toBe(true);
    expect(body.next_cursor).toEqual(expect.any(String));
    expect(res.headers.link).toBe(`<http://127.0.0.1:3000/v1/courses?limit=5&cursor=${body.next_cursor}>; rel="next"`);
  });

  it('walks the whole catalogue by cursor with no duplicates and no gaps', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await t.request({ method: 'GET', url: `/v1/courses?limit=3${cursor ? `&cursor=${cursor}` : ''}`, token: tenant.token });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      seen.push(...body.data.map((c: { id: string }) => c.id));
      cursor = body.next_cursor;
      if (!cursor) expect(res.headers.link).toBeUndefined();
      pages++;
    } while (cursor && pages < 50);
    const all = await t.ctx.db.kysely.selectFrom('courses').select('id').where('status', '=', 'published').orderBy('id').execute();
    expect(all.length).toBe(24);
    expect(seen).toEqual(all.map((r) => r.id));
  });

  it.each(['limit=0', 'limit=101', 'limit=abc', 'cursor=bm9wZQ', 'updated_since=yesterday', 'colour=blue'])('rejects %s with 400 problem+json', async (query) => {
    const res = await t.request({ method: 'GET', url: `/v1/courses?${query}`, token: tenant.token });
    expect(res.statusCode).toBe(400);
    expect(problemOf(res).code).toBe('invalid_request');
  });

  it('filters by category, language and text, and by updated_since', async () => {
    const de = (await t.request({ method: 'GET', url: '/v1/courses?language=de', token: tenant.token })).json();
    expect(de.data.map((c: { title: string }) => c.title)).toEqual(['Datenschutz im Arbeitsalltag']);
    const q = (await t.request({ method: 'GET', url: '/v1/courses?q=PHISHING', token: tenant.token })).json();
    expect(q.data.map((c: { title: string }) => c.title)).toEqual(['Phishing Awareness']);
    const percent = (await t.request({ method: 'GET', url: '/v1/courses?q=%25', token: tenant.token })).json();
    expect(percent.data).toHaveLength(0);
    const cat = q.data[0].category_id;
    const inCat = (await t.request({ method: 'GET', url: `/v1/courses?category_id=${cat}&limit=100`, token: tenant.token })).json();
    expect(inCat.data.length).toBeGreaterThan(1);
    expect(inCat.data.every((c: { category_id: string }) => c.category_id === cat)).toBe(true);
    const future = (await t.request({ method: 'GET', url: '/v1/courses?updated_since=2999-01-01T00:00:00Z', token: tenant.token })).json();
    expect(future.data).toHaveLength(0);
    const past = (await t.request({ method: 'GET', url: '/v1/courses?updated_since=2000-01-01T00:00:00Z&limit=100', token: tenant.token })).json();
    // delta sync includes the retired course as a tombstone, never the draft
    expect(past.data).toHaveLength(25);
    expect(past.data.filter((c: { status: string }) => c.status === 'retired').map((c: { title: string }) => c.title)).toEqual([
      'Legacy Health and Safety Induction',
    ]);
  });

  it('shows a published course and hides drafts and retired ones as 404', async () => {
    const list = (await t.request({ method: 'GET', url: '/v1/courses?limit=1', token: tenant.token })).json();
    const one = await t.request({ method: 'GET', url: `/v1/courses/${list.data[0].id}`, token: tenant.token });
    expect(one.statusCode).toBe(200);
    expect(one.json().id).toBe(list.data[0].id);
    const draft = await t.ctx.db.kysely.selectFrom('courses').select('id').where('status', '=', 'draft').executeTakeFirstOrThrow();
    const res = await t.request({ method: 'GET', url: `/v1/courses/${draft.id}`, token: tenant.token });
    expect(res.statusCode).toBe(404);
    expect(problemOf(res).code).toBe('not_found');
  });
});

describe('GET /v1/course-categories', () => {
  it('lists categories as a tree with course counts', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/course-categories?limit=100', token: tenant.token });
    expect(res.statusCode).toBe(200);
    const cats = res.json().data as { id: string; name: string; parent_id: string | null; course_count: number }[];
    expect(cats).toHaveLength(7);
    const privacy = cats.find((c) => c.name === 'Data Protection')!;
    const compliance = cats.find((c) => c.name === 'Compliance & Ethics')!;
    expect(privacy.parent_id).toBe(compliance.id);
    expect(privacy.course_count).toBe(3);
    const one = await t.request({ method: 'GET', url: `/v1/course-categories/${privacy.id}`, token: tenant.token });
    expect(one.json()).toMatchObject({ id: privacy.id, object: 'course_category', course_count: 3 });
    const missing = await t.request({ method: 'GET', url: '/v1/course-categories/cat_nope', token: tenant.token });
    expect(problemOf(missing).code).toBe('not_found');
  });
});
