// The certificate as the API shows it, its list query, and the public verification answer (which shows
// nothing beyond validity, the learner's name, the course title and dates: no ids, e-mails or organization).
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, NullableTimestamp, Timestamp, resourceFields } from '../../http/schemas.js';
import { PageQuery, pageOf } from '../../http/pagination.js';
import type { CertificateStatus, Row } from '../../db/types.js';

export const CertificateStatusSchema = Type.Union([Type.Literal('valid'), Type.Literal('expired'), Type.Literal('revoked')]);

export const CertificateSchema = Type.Object(
  {
    ...resourceFields('certificate'),
    learner_id: Type.String(),
    course_id: Type.String(),
    enrolment_id: Type.String(),
    number: Type.String({ description: 'Human-readable serial number, unique.', examples: ['LMS-2026-7KQ3-M9XD-2F4H'] }),
    status: CertificateStatusSchema,
    issued_at: Timestamp,
    expires_at: Type.Union([Timestamp, Type.Null()], { description: 'null: the certificate does not expire.' }),
    revoked_at: NullableTimestamp,
    revocation_reason: Nullable(Type.String()),
    verification_url: Type.String({
      format: 'uri',
      description: 'Public page (HTML, or JSON with Accept: application/json) that states whether the certificate is valid.',
    }),
  },
  { $id: 'Certificate', title: 'Certificate' },
);
export type Certificate = Static<typeof CertificateSchema>;

export const CertificateListQuery = Type.Object(
  {
    ...PageQuery,
    learner_id: Type.Optional(Type.String({ maxLength: 64 })),
    course_id: Type.Optional(Type.String({ maxLength: 64 })),
    status: Type.Optional(CertificateStatusSchema),
    issued_since: Type.Optional(Type.String({ format: 'date-time', description: 'Only certificates issued at or after this instant.' })),
  },
  { additionalProperties: false },
);
export type CertificateListQueryType = Static<typeof CertificateListQuery>;

export const CertificatePage = pageOf(Type.Ref(CertificateSchema), 'CertificatePage');

export const RevokeBody = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: 500, description: 'Why the certificate is revoked (shown in the API, not on the public page).' }) },
  { additionalProperties: false },
);

export const VerificationSchema = Type.Object(
  {
    valid: Type.Boolean({ description: 'True only while the certificate is neither revoked nor expired.' }),
    status: CertificateStatusSchema,
    learner_name: Type.String(),
    course_title: Type.String(),
    issued_at: Timestamp,
    expires_at: NullableTimestamp,
    revoked_at: NullableTimestamp,
  },
  { $id: 'CertificateVerification', title: 'CertificateVerification', additionalProperties: false },
);
export type Verification = Static<typeof VerificationSchema>;

export function verificationUrl(publicUrl: string, code: string): string {
  return `${publicUrl}/verify/${code}`;
}

export function toCertificate(row: Row<'certificates'>, publicUrl: string): Certificate {
  return {
    id: row.id,
    object: 'certificate',
    learner_id: row.learner_id,
    course_id: row.course_id,
    enrolment_id: row.enrolment_id,
    number: row.number,
    status: row.status as CertificateStatus,
    issued_at: row.issued_at,
    expires_at: row.expires_at,
    revoked_at: row.revoked_at,
    revocation_reason: row.revocation_reason,
    verification_url: verificationUrl(publicUrl, row.verification_code),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
