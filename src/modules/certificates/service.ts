// Certificates: issued when an enrolment of a certificate-granting course completes, revoked by the
// organization, expired by a periodic job (expiry.ts), printed as PDF (pdf.ts) and verified publicly.
import { randomBytes, randomInt } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/index.js';
import type { Row } from '../../db/types.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { AppError, notFound } from '../../http/errors.js';
import { normaliseInstant, toPage, type Page } from '../../http/pagination.js';
import { recordEvent } from '../../events/record.js';
import * as repo from './repo.js';
import { renderCertificatePdf } from './pdf.js';
import { toCertificate, type Certificate, type CertificateListQueryType, type Verification } from './schemas.js';

export type { Certificate } from './schemas.js';

// Crockford base32 without I, L, O, U: easy to read out and type, case-insensitive.
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A human-readable serial such as LMS-2026-7KQ3-M9XD-2F4H: the issue year plus 60 random bits. Random rather
 * than a counter, so concurrent issuers on several processes never need to coordinate (a read-then-increment
 * counter would race); the unique index and a retry cover the negligible chance of a collision.
 */
export function newCertificateNumber(issuedAt: Date): string {
  let random = '';
  for (let i = 0; i < 12; i++) random += CROCKFORD[randomInt(32)];
  return `LMS-${issuedAt.getUTCFullYear()}-${random.slice(0, 4)}-${random.slice(4, 8)}-${random.slice(8)}`;
}

/** The public verification code: 160 random bits, base64url (27 characters), so it cannot be guessed. */
export function newVerificationCode(): string {
  return randomBytes(20).toString('base64url');
}

/** Adds calendar months in UTC, clamping the day (31 January + 1 month = 28/29 February). */
export function addMonths(instant: string, months: number): string {
  const d = new Date(instant);
  const target = new Date(
    Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()),
  );
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d.getUTCDate(), lastDay));
  return target.toISOString();
}

/**
 * Issues the certificate for a completed enrolment, inside the caller's transaction (the enrolment's
 * completion), if the course grants one; returns null when it does not. Records `certificate.issued` in the
 * same transaction and links the enrolment (enrolments.certificate_id). `issued_at` is the enrolment's
 * `completed_at` (or now); `expires_at` adds the course's validity in months (null: no expiry).
 * At most one certificate exists per enrolment (unique index): calling again returns the existing one and
 * records no second event.
 */
export async function issueCertificateForEnrolment(trx: Trx, ctx: AppContext, enrolment: Row<'enrolments'>): Promise<Certificate | null> {
  const course = await repo.findCourseForCertificate(trx, enrolment.course_id);
  if (!course || !course.certificate_enabled) return null;
  const now = iso(ctx.clock.now());
  const issuedAt = enrolment.completed_at ?? now;
  const expiresAt = course.certificate_validity_months ? addMonths(issuedAt, course.certificate_validity_months) : null;
  for (let attempt = 0; attempt < 5; attempt++) {
    const row: Row<'certificates'> = {
      id: newId('certificate'),
      org_id: enrolment.org_id,
      learner_id: enrolment.learner_id,
      course_id: enrolment.course_id,
      enrolment_id: enrolment.id,
      number: newCertificateNumber(new Date(issuedAt)),
      verification_code: newVerificationCode(),
      status: 'valid',
      issued_at: issuedAt,
      expires_at: expiresAt,
      revoked_at: null,
      revocation_reason: null,
      created_at: now,
      updated_at: now,
    };
    if (await repo.insertCertificateIfAbsent(trx, row)) {
      await repo.linkEnrolment(trx, enrolment.org_id, enrolment.id, row.id);
      const certificate = toCertificate(row, ctx.config.publicUrl);
      await recordEvent(trx, ctx.clock, { orgId: enrolment.org_id, type: 'certificate.issued', object: certificate });
      return certificate;
    }
    // Not inserted: either this enrolment already has its certificate, or (astronomically rarely) the
    // random number or code collided with another certificate's; then try fresh values.
    const existing = await repo.findCertificateForEnrolment(trx, enrolment.org_id, enrolment.id);
    if (existing) return toCertificate(existing, ctx.config.publicUrl);
  }
  throw new Error('could not allocate a unique certificate number');
}

export async function listCertificates(ctx: AppContext, orgId: string, q: CertificateListQueryType): Promise<Page<Certificate>> {
  const params: repo.CertificateFilter = {
    ...q,
    updated_since: q.updated_since && normaliseInstant(q.updated_since, '/updated_since'),
    issued_since: q.issued_since && normaliseInstant(q.issued_since, '/issued_since'),
  };
  const rows = await repo.listCertificates(ctx.db.kysely, orgId, params);
  return toPage(rows, params, (row) => toCertificate(row, ctx.config.publicUrl));
}

export async function getCertificate(ctx: AppContext, orgId: string, id: string): Promise<Certificate> {
  const row = await repo.findCertificate(ctx.db.kysely, orgId, id);
  if (!row) throw notFound('certificate');
  return toCertificate(row, ctx.config.publicUrl);
}

/** valid|expired → revoked, with `certificate.revoked` in the same transaction. Revoking twice → 409. */
export async function revokeCertificate(ctx: AppContext, orgId: string, id: string, reason: string): Promise<Certificate> {
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const now = iso(ctx.clock.now());
    if (!(await repo.markRevoked(trx, orgId, id, reason.trim(), now))) {
      const row = await repo.findCertificate(trx, orgId, id);
      if (!row) throw notFound('certificate');
      throw new AppError('invalid_state', 'The certificate is already revoked.');
    }
    const certificate = toCertificate((await repo.findCertificate(trx, orgId, id))!, ctx.config.publicUrl);
    await recordEvent(trx, ctx.clock, { orgId, type: 'certificate.revoked', object: certificate });
    return certificate;
  });
}

/**
 * What the public page says about a verification code, or null for an unknown code. A certificate whose
 * `expires_at` has passed is reported as expired even if the periodic job has not moved it yet: the public
 * page must never vouch for a lapsed certificate.
 */
export async function verifyCertificate(ctx: AppContext, code: string): Promise<Verification | null> {
  if (!/^[A-Za-z0-9_-]{10,64}$/.test(code)) return null;
  const row = await repo.findForVerification(ctx.db.kysely, code);
  if (!row) return null;
  const now = iso(ctx.clock.now());
  const status = row.status === 'valid' && row.expires_at !== null && row.expires_at <= now ? 'expired' : row.status;
  return {
    valid: status === 'valid',
    status,
    learner_name: `${row.first_name} ${row.last_name}`.trim(),
    course_title: row.course_title,
    issued_at: row.issued_at,
    expires_at: row.expires_at,
    revoked_at: row.revoked_at,
  };
}

/** The one-page PDF of a certificate of the organization, with the file name to offer. */
export async function getCertificatePdf(ctx: AppContext, orgId: string, id: string): Promise<{ filename: string; pdf: Uint8Array }> {
  const row = await repo.findCertificate(ctx.db.kysely, orgId, id);
  if (!row) throw notFound('certificate');
  const details = await repo.findPrintDetails(ctx.db.kysely, orgId, row);
  if (!details) throw notFound('certificate');
  const certificate = toCertificate(row, ctx.config.publicUrl);
  const pdf = await renderCertificatePdf(
    {
      learnerName: `${details.first_name} ${details.last_name}`.trim(),
      courseTitle: details.course_title,
      number: row.number,
      status: row.status,
      issuedAt: row.issued_at,
      expiresAt: row.expires_at,
      revokedAt: row.revoked_at,
      verificationUrl: certificate.verification_url,
    },
    ctx.clock.now(),
  );
  return { filename: `certificate-${row.number}.pdf`, pdf };
}
