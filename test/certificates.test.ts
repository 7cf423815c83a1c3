import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';
import { inspectPdf, decodeQrFromOperators } from './pdf-inspect.js';
import { ManualClock, iso } from '../src/clock.js';
import { newId } from '../src/ids.js';
import type { Row } from '../src/db/types.js';
import { addMonths, issueCertificateForEnrolment, type Certificate } from '../src/modules/certificates/service.js';
import { expireCertificates, startCertificateExpiryJob } from '../src/modules/certificates/expiry.js';
import { prefersJson } from '../src/modules/certificates/routes.js';
import { ALL_SCOPES } from '../src/auth/scopes.js';

const clock = new ManualClock(new Date('2026-03-10T09:00:00.000Z'));
let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await createTestApp({ clock });
  tenant = await t.tenant();
});
afterAll(() => t.close());

/** Inserts a learner, a course and a completed enrolment directly (no HTTP), as the enrolment service would. */
async function completedEnrolment(
  orgId: string,
  course: { certificate: boolean; validityMonths?: number | null; title?: string },
  learner: { first: string; last: string } = { first: 'Ada', last: 'Lovelace' },
): Promise<Row<'enrolments'>> {
  const db = t.ctx.db.kysely;
  const now = iso(clock.now());
  const learnerId = newId('user');
  await db
    .insertInto('users')
    .values({
      id: learnerId,
      org_id: orgId,
      email: `${learnerId}@example.com`,
      email_normalized: `${learnerId}@example.com`,
      first_name: learner.first,
      last_name: learner.last,
      external_id: null,
      department: null,
      roles: '["learner"]',
      is_learner: 1,
      status: 'active',
      created_at: now,
      updated_at: now,
    })
    .execute();
  const courseId = newId('course');
  await db
    .insertInto('courses')
    .values({
      id: courseId,
      title: course.title ?? `Course ${courseId.slice(-6)}`,
      summary: '',
      category_id: null,
      language: 'en',
      duration_minutes: 30,
      tags: '[]',
      status: 'published',
      published_at: now,
      certificate_enabled: course.certificate ? 1 : 0,
      certificate_validity_months: course.validityMonths ?? null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const enrolment: Row<'enrolments'> = {
    id: newId('enrolment'),
    org_id: orgId,
    learner_id: learnerId,
    course_id: courseId,
    status: 'completed',
    progress: 100,
    score: 90,
    enrolled_at: now,
    started_at: now,
    completed_at: now,
    withdrawn_at: null,
    due_at: null,
    certificate_id: null,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('enrolments').values(enrolment).execute();
  return enrolment;
}

function issue(enrolment: Row<'enrolments'>) {
  return t.ctx.db.kysely.transaction().execute((trx) => issueCertificateForEnrolment(trx, t.ctx, enrolment));
}

describe('issueCertificateForEnrolment', () => {
  it('issues a valid certificate with number, verification URL and expiry, links the enrolment and records certificate.issued', async () => {
    const enrolment = await completedEnrolment(tenant.orgId, { certificate: true, validityMonths: 12 });
    const cert = await issue(enrolment);
    expect(cert).toMatchObject({
      object: 'certificate',
      learner_id: enrolment.learner_id,
      course_id: enrolment.course_id,
      enrolment_id: enrolment.id,
      status: 'valid',
      issued_at: enrolment.completed_at,
      expires_at: '2027-03-10T09:00:00.000Z',
      revoked_at: null,
      revocation_reason: null,
    });
    expect(cert!.id).toMatch(/^crt_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(cert!.number).toMatch(/^LMS-2026-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
    const code = cert!.verification_url.replace('http://127.0.0.1:3000/verify/', '');
    expect(code).toMatch(/^[A-Za-z0-9_-]{27}$/); // 160 bits
    const linked = await t.ctx.db.kysely.selectFrom('enrolments').select('certificate_id').where('id', '=', enrolment.id).executeTakeFirstOrThrow();
    expect(linked.certificate_id).toBe(cert!.id);
    const events = await t.ctx.db.kysely.selectFrom('events').selectAll().where('type', '=', 'certificate.issued').where('org_id', '=', tenant.orgId).execute();
    expect(events.map((e) => JSON.parse(e.payload).data.object)).toContainEqual(cert);
  });

  it('returns null and records nothing when the course grants no certificate', async () => {
    const enrolment = await completedEnrolment(tenant.orgId, { certificate: false });
    const before = await t.ctx.db.kysely.selectFrom('events').select('id').execute();
    expect(await issue(enrolment)).toBeNull();
    expect(await t.ctx.db.kysely.selectFrom('events').select('id').execute()).toHaveLength(before.length);
    expect(await t.ctx.db.kysely.selectFrom('certificates').select('id').where('enrolment_id', '=', enrolment.id).execute()).toHaveLength(0);
  });

  it('gives no expiry without validity, and never a second certificate (or event) for one enrolment, even concurrently', async () => {
    const enrolment = await completedEnrolment(tenant.orgId, { certificate: true, validityMonths: null });
    const results = await Promise.all([issue(enrolment), issue(enrolment), issue(enrolment)]);
    expect(new Set(results.map((c) => c!.id)).size).toBe(1);
    expect(results[0]!.expires_at).toBeNull();
    const rows = await t.ctx.db.kysely.selectFrom('certificates').select('id').where('enrolment_id', '=', enrolment.id).execute();
    expect(rows).toHaveLength(1);
    const events = await t.ctx.db.kysely.selectFrom('events').select('payload').where('type', '=', 'certificate.issued').execute();
    expect(events.filter((e) => JSON.parse(e.payload).data.object.enrolment_id === enrolment.id)).toHaveLength(1);
  });

  it('gives every certificate a unique number when many are issued at once', async () => {
    const enrolments = await Promise.all(Array.from({ length: 20 }, () => completedEnrolment(tenant.orgId, { certificate: true, validityMonths: 6 })));
    const certs = await Promise.all(enrolments.map(issue));
    expect(new Set(certs.map((c) => c!.number)).size).toBe(20);
    expect(new Set(certs.map((c) => c!.verification_url)).size).toBe(20);
  });

  it('adds calendar months, clamping to the end of a shorter month', () => {
    expect(addMonths('2026-01-31T10:00:00.000Z', 1)).toBe('2026-02-28T10:00:00.000Z');
    expect(addMonths('2028-01-31T10:00:00.000Z', 1)).toBe('2028-02-29T10:00:00.000Z');
    expect(addMonths('2026-11-15T00:00:00.000Z', 24)).toBe('2028-11-15T00:00:00.000Z');
  });
});


const DAY = 86_400_000;

/** A learner, a course and a completed enrolment with its certificate, made directly (not over HTTP). */
async function certificateFor(
  orgId: string,
  opts: { validityMonths?: number | null; title?: string; first?: string; last?: string } = {},
): Promise<Certificate> {
  const enrolment = await completedEnrolment(
    orgId,
    { certificate: true, validityMonths: opts.validityMonths ?? null, title: opts.title },
    { first: opts.first ?? 'Grace', last: opts.last ?? 'Hopper' },
  );
  return (await issue(enrolment))!;
}

const verifyPath = (cert: Certificate) => new URL(cert.verification_url).pathname;

async function verifyJson(cert: Certificate) {
  const res = await t.request({ method: 'GET', url: verifyPath(cert), headers: { accept: 'application/json' } });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  return res.json();
}

async function eventsOf(type: string, certificateId: string) {
  const rows = await t.ctx.db.kysely.selectFrom('events').select('payload').where('type', '=', type).orderBy('id').execute();
  return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.data.object.id === certificateId);
}

describe('GET /v1/certificates and /v1/certificates/{id}', () => {
  it('shows a certificate with every field of the contract', async () => {
    const cert = await certificateFor(tenant.orgId, { validityMonths: 24 });
    const res = await t.request({ method: 'GET', url: `/v1/certificates/${cert.id}`, token: tenant.token });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(cert);
    expect(Object.keys(res.json()).sort()).toEqual(
      ['id', 'object', 'created_at', 'updated_at', 'learner_id', 'course_id', 'enrolment_id', 'number', 'status', 'issued_at', 'expires_at', 'revoked_at', 'revocation_reason', 'verification_url'].sort(),
    );
    expect(cert.verification_url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/verify\/[A-Za-z0-9_-]{27}$/);
  });

  it('carries an ETag and answers 304 to a matching If-None-Match, and a new ETag once revoked', async () => {
    const cert = await certificateFor(tenant.orgId);
    const first = await t.request({ method: 'GET', url: `/v1/certificates/${cert.id}`, token: tenant.token });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[^"]+"$/);
    const cached = await t.request({ method: 'GET', url: `/v1/certificates/${cert.id}`, token: tenant.token, headers: { 'if-none-match': etag } });
    expect(cached.statusCode).toBe(304);
    expect(cached.body).toBe('');
    await t.request({ method: 'POST', url: `/v1/certificates/${cert.id}/revoke`, token: tenant.token, payload: { reason: 'x' } });
    const changed = await t.request({ method: 'GET', url: `/v1/certificates/${cert.id}`, token: tenant.token, headers: { 'if-none-match': etag } });
    expect(changed.statusCode).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
  });

  it('lists with filters, keyset pages and a Link header', async () => {
    const other = await t.tenant();
    const a = await certificateFor(other.orgId, { title: 'Filter course A' });
    const b = await certificateFor(other.orgId, { title: 'Filter course B' });
    const c = await certificateFor(other.orgId, { title: 'Filter course C' });
    const list = async (query: string) => {
      const res = await t.request({ method: 'GET', url: `/v1/certificates${query}`, token: other.token });
      expect(res.statusCode).toBe(200);
      return res;
    };
    const ids = (res: { json(): { data: { id: string }[] } }) => res.json().data.map((x) => x.id);
    expect(ids(await list(''))).toEqual([a.id, b.id, c.id]);
    expect(ids(await list(`?learner_id=${b.learner_id}`))).toEqual([b.id]);
    expect(ids(await list(`?course_id=${c.course_id}`))).toEqual([c.id]);
    expect(ids(await list('?issued_since=2999-01-01T00:00:00Z'))).toEqual([]);
    expect(ids(await list(`?issued_since=${encodeURIComponent(a.issued_at)}`))).toEqual([a.id, b.id, c.id]);
    const first = await list('?limit=2');
    expect(ids(first)).toEqual([a.id, b.id]);
    expect(first.headers.link).toBe(`<http://127.0.0.1:3000/v1/certificates?limit=2&cursor=${first.json().next_cursor}>; rel="next"`);
    const second = await list(`?limit=2&cursor=${first.json().next_cursor}`);
    expect(ids(second)).toEqual([c.id]);
    expect(second.json().next_cursor).toBeNull();

    clock.advance(1000);
    await t.request({ method: 'POST', url: `/v1/certificates/${b.id}/revoke`, token: other.token, payload: { reason: 'issued in error' } });
    expect(ids(await list('?status=revoked'))).toEqual([b.id]);
    expect(ids(await list('?status=valid'))).toEqual([a.id, c.id]);
    expect(ids(await list(`?updated_since=${encodeURIComponent(iso(clock.now()))}`))).toEqual([b.id]);
    for (const bad of ['status=lost', 'issued_since=yesterday', 'limit=0', 'colour=blue']) {
      const res = await t.request({ method: 'GET', url: `/v1/certificates?${bad}`, token: other.token });
      expect(res.statusCode, bad).toBe(400);
    }
  });

  it("keeps organizations apart: another organization's certificate is 404 everywhere, like an unknown id", async () => {
    const mine = await certificateFor(tenant.orgId);
    const other = await t.tenant();
    for (const [method, url, payload] of [
      ['GET', `/v1/certificates/${mine.id}`],
      ['GET', `/v1/certificates/${mine.id}/pdf`],
      ['POST', `/v1/certificates/${mine.id}/revoke`, { reason: 'not yours' }],
    ] as const) {
      const foreign = await t.request({ method, url, payload, token: other.token });
      const unknown = await t.request({ method, url: url.replace(mine.id, 'crt_01JUNKNOWNUNKNOWNUNKNOWN00'), payload, token: other.token });
      expect(foreign.statusCode, url).toBe(404);
      expect(problemOf(foreign).code).toBe('not_found');
      expect(problemOf(foreign).detail).toBe(problemOf(unknown).detail);
    }
    const list = (await t.request({ method: 'GET', url: '/v1/certificates?limit=100', token: other.token })).json();
    expect(list.data.map((c: { id: string }) => c.id)).not.toContain(mine.id);
    expect((await t.request({ method: 'GET', url: `/v1/certificates/${mine.id}`, token: tenant.token })).json().status).toBe('valid');
  });

  it('needs a token and the right scope', async () => {
    const cert = await certificateFor(tenant.orgId);
    const noToken = await t.request({ method: 'GET', url: '/v1/certificates' });
    expect(noToken.statusCode).toBe(401);
    expect(problemOf(noToken).code).toBe('invalid_token');
    const coursesOnly = await tenant.tokenWith(['courses:read']);
    for (const url of ['/v1/certificates', `/v1/certificates/${cert.id}`, `/v1/certificates/${cert.id}/pdf`]) {
      const res = await t.request({ method: 'GET', url, token: coursesOnly });
      expect(res.statusCode, url).toBe(403);
      expect(res.headers['www-authenticate']).toContain('scope="certificates:read"');
    }
    const readOnly = await tenant.tokenWith(['certificates:read']);
    const revoke = await t.request({ method: 'POST', url: `/v1/certificates/${cert.id}/revoke`, token: readOnly, payload: { reason: 'x' } });
    expect(revoke.statusCode).toBe(403);
    expect(revoke.headers['www-authenticate']).toContain('scope="certificates:write"');
  });
});

describe('GET /v1/certificates/{id}/pdf', () => {
  it('is a real one-page PDF with the name, course, number, dates and the verification URL as text and QR code', async () => {
    const cert = await certificateFor(tenant.orgId, { validityMonths: 12, title: 'Fire Safety & Evacuation', first: 'Zoë', last: "O'Brien-Müller" });
    const res = await t.request({ method: 'GET', url: `/v1/certificates/${cert.id}/pdf`, token: tenant.token });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.headers['content-disposition']).toBe(`inline; filename="certificate-${cert.number}.pdf"`);
    expect(res.rawPayload.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const pdf = await inspectPdf(res.rawPayload);
    expect(pdf.pageCount).toBe(1);
    expect(pdf.texts).toContain("Zoë O'Brien-Müller");
    expect(pdf.texts).toContain('Fire Safety & Evacuation');
    expect(pdf.texts).toContain(cert.number);
    expect(pdf.texts).toContain('10 March 2026'); // issued (the test clock's day)
    expect(pdf.texts).toContain('10 March 2027'); // valid until
    expect(pdf.texts).toContain(cert.verification_url);
    expect(decodeQrFromOperators(pdf.operators)).toBe(cert.verification_url);
  });

  it('says on the page when a certificate has been revoked, and copes with names outside Latin-1', async () => {
    const cert = await certificateFor(tenant.orgId, { first: 'Łukasz', last: 'Dvořák 王' });
    await t.request({ method: 'POST', url: `/v1/certificates/${cert.id}/revoke`, token: tenant.token, payload: { reason: 'fraud' } });
    const res = await t.request({ method: 'GET', url: `/v1/certificates/${cert.id}/pdf`, token: tenant.token });
    const pdf = await inspectPdf(res.rawPayload);
    expect(pdf.pageCount).toBe(1);
    expect(pdf.texts).toContain('Does not expire');
    expect(pdf.texts.some((s) => s.startsWith('REVOKED on '))).toBe(true);
    // The standard fonts know only Windows-1252: letters fall back to their base form, other scripts to "?".
    expect(pdf.texts).toContain('Lukasz Dvorák ?'); // á is in Windows-1252, ř and Ł are not
  });
});

describe('revocation', () => {
  it('revokes once with a reason and certificate.revoked; a second revoke is 409 invalid_state', async () => {
    const cert = await certificateFor(tenant.orgId);
    clock.advance(60_000);
    const res = await t.request({ method: 'POST', url: `/v1/certificates/${cert.id}/revoke`, token: tenant.token, payload: { reason: '  Issued to the wrong person ' } });
    expect(res.statusCode).toBe(200);
    const revoked = res.json();
    expect(revoked).toMatchObject({ id: cert.id, status: 'revoked', revoked_at: iso(clock.now()), revocation_reason: 'Issued to the wrong person', updated_at: iso(clock.now()) });
    const events = await eventsOf('certificate.revoked', cert.id);
    expect(events).toHaveLength(1);
    expect(events[0].data.object).toEqual(revoked);
    const again = await t.request({ method: 'POST', url: `/v1/certificates/${cert.id}/revoke`, token: tenant.token, payload: { reason: 'again' } });
    expect(again.statusCode).toBe(409);
    expect(problemOf(again).code).toBe('invalid_state');
    expect(await eventsOf('certificate.revoked', cert.id)).toHaveLength(1);
  });

  it('refuses a body without a reason or with unknown fields', async () => {
    const cert = await certificateFor(tenant.orgId);
    for (const payload of [{}, { reason: '' }, { reason: 'x', status: 'valid' }, { reason: 42 }]) {
      const res = await t.request({ method: 'POST', url: `/v1/certificates/${cert.id}/revoke`, token: tenant.token, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(problemOf(res).code).toBe('validation_failed');
    }
    expect((await verifyJson(cert)).status).toBe('valid');
  });

  it('lets exactly one of several concurrent revokes win', async () => {
    const cert = await certificateFor(tenant.orgId);
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => t.request({ method: 'POST', url: `/v1/certificates/${cert.id}/revoke`, token: tenant.token, payload: { reason: `r${i}` } })),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(await eventsOf('certificate.revoked', cert.id)).toHaveLength(1);
  });
});

describe('GET /verify/{code} (public)', () => {
  it('answers JSON with exactly validity, status, name, course and dates, and no token is needed', async () => {
    const cert = await certificateFor(tenant.orgId, { validityMonths: 12, title: 'Working at Height', first: 'Ada', last: 'Byron' });
    const body = await verifyJson(cert);
    expect(body).toEqual({
      valid: true,
      status: 'valid',
      learner_name: 'Ada Byron',
      course_title: 'Working at Height',
      issued_at: cert.issued_at,
      expires_at: cert.expires_at,
      revoked_at: null,
    });
  });

  it('shows an accessible HTML page by default that escapes the data and shows nothing beyond it', async () => {
    const cert = await certificateFor(tenant.orgId, { title: 'Ethics <101>', first: '<script>alert(1)</script>', last: 'Doe' });
    const res = await t.request({ method: 'GET', url: verifyPath(cert), headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers.vary).toContain('Accept');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.body).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(res.body).toContain('Valid: this certificate is genuine and in force.');
    expect(res.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt; Doe');
    expect(res.body).toContain('Ethics &lt;101&gt;');
    expect(res.body).not.toContain('<script>');
    expect(res.body).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/); // no external assets
    for (const secret of [cert.id, cert.learner_id, cert.course_id, cert.enrolment_id, tenant.orgId, '@example.com']) expect(res.body).not.toContain(secret);
    const bare = await t.request({ method: 'GET', url: verifyPath(cert) });
    expect(bare.headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('answers 404 for an unknown code: problem+json for JSON clients, an HTML page for browsers', async () => {
    const json = await t.request({ method: 'GET', url: '/verify/AAAAAAAAAAAAAAAAAAAAAAAAAAA', headers: { accept: 'application/json' } });
    expect(json.statusCode).toBe(404);
    expect(problemOf(json).code).toBe('not_found');
    const html = await t.request({ method: 'GET', url: '/verify/not-a-code' });
    expect(html.statusCode).toBe(404);
    expect(html.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(html.body).toContain('Certificate not found');
  });

  it('picks JSON only when the client prefers it', () => {
    expect(prefersJson(undefined)).toBe(false);
    expect(prefersJson('*/*')).toBe(false);
    expect(prefersJson('application/json')).toBe(true);
    expect(prefersJson('text/html, application/json;q=0.5')).toBe(false);
    expect(prefersJson('text/html;q=0.4, application/json')).toBe(true);
    expect(prefersJson('application/json;q=0')).toBe(false);
  });

  it('says valid, then revoked after a revoke', async () => {
    const cert = await certificateFor(tenant.orgId);
    expect((await verifyJson(cert)).valid).toBe(true);
    await t.request({ method: 'POST', url: `/v1/certificates/${cert.id}/revoke`, token: tenant.token, payload: { reason: 'x' } });
    const after = await verifyJson(cert);
    expect(after).toMatchObject({ valid: false, status: 'revoked', revoked_at: iso(clock.now()) });
    const html = await t.request({ method: 'GET', url: verifyPath(cert) });
    expect(html.body).toContain('Revoked: the issuer has withdrawn this certificate.');
  });
});

describe('the full learning path over HTTP (issue 3, acceptance 3)', () => {
  it('learner → enrol → progress → complete → certificate with verification URL, PDF, verify valid → revoked; another expires with the clock', async () => {
    await t.loadCatalogue();
    const token = await tenant.tokenWith(ALL_SCOPES);
    const call = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object, status = 200) => {
      const res = await t.request({ method, url, payload, token });
      expect(res.statusCode, `${method} ${url}: ${res.body.slice(0, 300)}`).toBe(status);
      return res;
    };
    const courses = (await call('GET', '/v1/courses?limit=100')).json().data as { id: string; title: string; certificate: { enabled: boolean; validity_months: number | null } }[];
    const course = courses.find((c) => c.certificate.enabled && c.certificate.validity_months !== null)!;
    expect(course).toBeDefined();

    /** One learner's whole path; returns the certificate the completion issued. */
    const learnAndComplete = async (first: string, last: string): Promise<Certificate & { learnerId: string }> => {
      const learner = (await call('POST', '/v1/learners', { email: `${first}.${last}@example.com`.toLowerCase(), first_name: first, last_name: last }, 201)).json();
      const enrolment = (await call('POST', '/v1/enrolments', { learner_id: learner.id, course_id: course.id }, 201)).json();
      expect(enrolment).toMatchObject({ status: 'enrolled', certificate_id: null });
      expect((await call('PATCH', `/v1/enrolments/${enrolment.id}`, { progress: 60 })).json()).toMatchObject({ status: 'in_progress', progress: 60 });
      const completed = (await call('POST', `/v1/enrolments/${enrolment.id}/complete`, { score: 92 })).json();
      expect(completed).toMatchObject({ status: 'completed', certificate_id: expect.stringMatching(/^crt_/) });
      const cert = (await call('GET', `/v1/certificates/${completed.certificate_id}`)).json();
      expect(cert).toMatchObject({ learner_id: learner.id, course_id: course.id, enrolment_id: enrolment.id, status: 'valid', issued_at: completed.completed_at });
      expect(cert.expires_at).toBe(addMonths(completed.completed_at, course.certificate.validity_months!));
      expect(cert.verification_url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/verify\/[A-Za-z0-9_-]{27}$/);
      const ofLearner = (await call('GET', `/v1/learners/${learner.id}/certificates`)).json().data;
      expect(ofLearner).toEqual([cert]);
      const issued = (await call('GET', '/v1/events?type=certificate.issued&limit=100')).json().data as { data: { object: { id: string } } }[];
      expect(issued.filter((e) => e.data.object.id === cert.id).map((e) => e.data.object)).toEqual([cert]);
      return { ...cert, learnerId: learner.id };
    };

    const cert = await learnAndComplete('Katherine', 'Johnson');
    const pdfRes = await call('GET', `/v1/certificates/${cert.id}/pdf`);
    expect(pdfRes.headers['content-type']).toBe('application/pdf');
    expect(pdfRes.rawPayload.subarray(0, 4).toString('latin1')).toBe('%PDF');
    const pdf = await inspectPdf(pdfRes.rawPayload);
    expect(pdf.pageCount).toBe(1);
    expect(pdf.texts).toContain('Katherine Johnson');
    expect(pdf.texts).toContain(course.title);
    expect(pdf.texts).toContain(cert.verification_url);
    expect(decodeQrFromOperators(pdf.operators)).toBe(cert.verification_url);

    expect(await verifyJson(cert)).toMatchObject({ valid: true, status: 'valid', learner_name: 'Katherine Johnson', course_title: course.title });
    expect((await t.request({ method: 'GET', url: verifyPath(cert) })).body).toContain('Valid: this certificate is genuine and in force.');
    await call('POST', `/v1/certificates/${cert.id}/revoke`, { reason: 'Completed on behalf of someone else' });
    expect(await verifyJson(cert)).toMatchObject({ valid: false, status: 'revoked' });
    expect((await t.request({ method: 'GET', url: verifyPath(cert) })).body).toContain('Revoked: the issuer has withdrawn this certificate.');

    const lapsing = await learnAndComplete('Dorothy', 'Vaughan');
    clock.set(new Date(lapsing.expires_at!).getTime() + 1000);
    await expireCertificates(t.ctx, clock.now());
    expect(await verifyJson(lapsing)).toMatchObject({ valid: false, status: 'expired', expires_at: lapsing.expires_at });
    expect((await t.request({ method: 'GET', url: verifyPath(lapsing) })).body).toContain('Expired: this certificate was genuine but is no longer in force.');
    const fresh = await tenant.tokenWith(['certificates:read', 'events:read']);
    expect((await t.request({ method: 'GET', url: `/v1/certificates/${lapsing.id}`, token: fresh })).json().status).toBe('expired');
    const expiredEvents = (await t.request({ method: 'GET', url: '/v1/events?type=certificate.expired&limit=100', token: fresh })).json().data as { data: { object: { id: string; status: string } } }[];
    expect(expiredEvents.filter((e) => e.data.object.id === lapsing.id).map((e) => e.data.object.status)).toEqual(['expired']);
  });
});

describe('the expiry job', () => {
  it('moves valid certificates past expires_at to expired with certificate.expired, in bounded batches', async () => {
    const start = clock.now().getTime();
    const expiring = [];
    for (let i = 0; i < 5; i++) expiring.push(await certificateFor(tenant.orgId, { validityMonths: 1 }));
    const lasting = await certificateFor(tenant.orgId, { validityMonths: 120 });
    const forever = await certificateFor(tenant.orgId, { validityMonths: null });
    const revoked = await certificateFor(tenant.orgId, { validityMonths: 1 });
    const writer = await tenant.tokenWith(['certificates:write']); // earlier tests moved the clock past older tokens
    const revoke = await t.request({ method: 'POST', url: `/v1/certificates/${revoked.id}/revoke`, token: writer, payload: { reason: 'x' } });
    expect(revoke.statusCode).toBe(200);

    expect(await expireCertificates(t.ctx, clock.now())).toBe(0);
    clock.set(start + 40 * DAY);
    // The public page never vouches for a lapsed certificate, even before the job has run…
    expect(await verifyJson(expiring[0])).toMatchObject({ valid: false, status: 'expired' });
    // …while the stored status changes only when the job runs. (Tokens live an hour: take a new one.)
    const token = await tenant.tokenWith(['certificates:read']);
    expect((await t.request({ method: 'GET', url: `/v1/certificates/${expiring[0].id}`, token })).json().status).toBe('valid');

    expect(await expireCertificates(t.ctx, clock.now(), { batchSize: 2, maxBatches: 1 })).toBe(2);
    expect(await expireCertificates(t.ctx, clock.now(), { batchSize: 2 })).toBeGreaterThanOrEqual(3);
    expect(await expireCertificates(t.ctx, clock.now())).toBe(0);

    for (const cert of expiring) {
      const now = await t.request({ method: 'GET', url: `/v1/certificates/${cert.id}`, token });
      expect(now.json()).toMatchObject({ status: 'expired', updated_at: iso(clock.now()) });
      const events = await eventsOf('certificate.expired', cert.id);
      expect(events).toHaveLength(1);
      expect(events[0].data.object).toEqual(now.json());
      expect(await verifyJson(cert)).toMatchObject({ valid: false, status: 'expired', expires_at: cert.expires_at });
    }
    expect((await verifyJson(lasting)).status).toBe('valid');
    expect((await verifyJson(forever)).status).toBe('valid');
    expect((await verifyJson(revoked)).status).toBe('revoked');
    expect(await eventsOf('certificate.expired', revoked.id)).toHaveLength(0);
  });

  it('runs by itself on an interval once started, and stops when told', async () => {
    const cert = await certificateFor(tenant.orgId, { validityMonths: 1 });
    const runs: number[] = [];
    const stop = startCertificateExpiryJob(t.ctx, { intervalMs: 20, onRun: (n) => runs.push(n) });
    try {
      await expect.poll(() => runs.length, { timeout: 5000 }).toBeGreaterThan(1);
      expect((await verifyJson(cert)).status).toBe('valid');
      clock.advance(32 * DAY);
      const token = await tenant.tokenWith(['certificates:read']);
      await expect.poll(async () => (await t.request({ method: 'GET', url: `/v1/certificates/${cert.id}`, token })).json().status, { timeout: 5000 }).toBe('expired');
    } finally {
      await stop();
    }
    const count = runs.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(runs.length).toBe(count);
  });
});
