import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type Tenant } from './helpers.js';
import { ManualClock, iso } from '../src/clock.js';
import { newId } from '../src/ids.js';
import type { Row } from '../src/db/types.js';
import { addMonths, issueCertificateForEnrolment } from '../src/modules/certificates/service.js';

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

