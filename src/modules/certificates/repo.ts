// Typed queries on certificates. Every function takes the organization id first, except the two that serve
// the public verification page and the expiry job, which by their nature look across organizations.
import type { Executor } from '../../db/index.js';
import type { CertificateStatus, NewRow, Row } from '../../db/types.js';
import { applyPage, type PageParams } from '../../http/pagination.js';

export interface CertificateFilter extends PageParams {
  learner_id?: string;
  course_id?: string;
  status?: CertificateStatus;
  /** Normalised RFC 3339 (see normaliseInstant). */
  issued_since?: string;
}

/**
 * A page of the organization's certificates (keyset by id; limit + 1 rows, see toPage). Certificates are never
 * deleted, so delta sync needs no tombstones here: a revoked or expired certificate is simply an update.
 */
export function listCertificates(db: Executor, orgId: string, f: CertificateFilter): Promise<Row<'certificates'>[]> {
  let q = db.selectFrom('certificates').selectAll().where('org_id', '=', orgId);
  if (f.learner_id) q = q.where('learner_id', '=', f.learner_id);
  if (f.course_id) q = q.where('course_id', '=', f.course_id);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.issued_since) q = q.where('issued_at', '>=', f.issued_since);
  if (f.updated_since) q = q.where('updated_at', '>=', f.updated_since);
  return applyPage(q, f).execute();
}

export function findCertificate(db: Executor, orgId: string, id: string): Promise<Row<'certificates'> | undefined> {
  return db.selectFrom('certificates').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
}

export function findCertificateForEnrolment(db: Executor, orgId: string, enrolmentId: string): Promise<Row<'certificates'> | undefined> {
  return db
    .selectFrom('certificates')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('enrolment_id', '=', enrolmentId)
    .executeTakeFirst();
}

/**
 * Inserts unless a unique index (number, verification code or one-per-enrolment) already holds the values;
 * returns whether the row went in. ON CONFLICT DO NOTHING works on both SQLite and PostgreSQL and, unlike
 * catching the error, leaves a PostgreSQL transaction usable, so the caller can retry or read the winner.
 */
export async function insertCertificateIfAbsent(db: Executor, row: NewRow<'certificates'>): Promise<boolean> {
  const result = await db
    .insertInto('certificates')
    .values(row)
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
}

/** valid|expired → revoked, as one conditional UPDATE (two concurrent revokes: exactly one wins). */
export async function markRevoked(db: Executor, orgId: string, id: string, reason: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable('certificates')
    .set({ status: 'revoked', revoked_at: now, revocation_reason: reason, updated_at: now })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('status', '!=', 'revoked')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** The next few certificates whose validity has run out (any organization), oldest expiry first. */
export function findExpiredValid(db: Executor, now: string, limit: number): Promise<Row<'certificates'>[]> {
  return db
    .selectFrom('certificates')
    .selectAll()
    .where('status', '=', 'valid')
    .where('expires_at', 'is not', null)
    .where('expires_at', '<=', now)
    .orderBy('expires_at', 'asc')
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
}

/** valid → expired for one certificate; false when something else (a revoke, another job) changed it first. */
export async function markExpired(db: Executor, orgId: string, id: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable('certificates')
    .set({ status: 'expired', updated_at: now })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('status', '=', 'valid')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** What the public verification page shows, looked up by the unguessable code (any organization). */
export function findForVerification(db: Executor, code: string) {
  return db
    .selectFrom('certificates as c')
    .innerJoin('users as u', 'u.id', 'c.learner_id')
    .innerJoin('courses as k', 'k.id', 'c.course_id')
    .select([
      'c.status',
      'c.issued_at',
      'c.expires_at',
      'c.revoked_at',
      'u.first_name',
      'u.last_name',
      'k.title as course_title',
    ])
    .where('c.verification_code', '=', code)
    .executeTakeFirst();
}

/** The learner's name and the course title for the PDF (same organization as the certificate). */
export function findPrintDetails(db: Executor, orgId: string, certificate: Row<'certificates'>) {
  return db
    .selectFrom('users as u')
    .innerJoin('courses as k', (join) => join.on('k.id', '=', certificate.course_id))
    .select(['u.first_name', 'u.last_name', 'k.title as course_title', 'k.duration_minutes'])
    .where('u.org_id', '=', orgId)
    .where('u.id', '=', certificate.learner_id)
    .executeTakeFirst();
}

export function findCourseForCertificate(db: Executor, courseId: string) {
  return db
    .selectFrom('courses')
    .select(['id', 'certificate_enabled', 'certificate_validity_months'])
    .where('id', '=', courseId)
    .executeTakeFirst();
}

/** Links the enrolment to its certificate (enrolments.certificate_id). */
export async function linkEnrolment(db: Executor, orgId: string, enrolmentId: string, certificateId: string): Promise<void> {
  await db
    .updateTable('enrolments')
    .set({ certificate_id: certificateId })
    .where('org_id', '=', orgId)
    .where('id', '=', enrolmentId)
    .execute();
}
