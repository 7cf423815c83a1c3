// Certificates: at most one certificate per enrolment (issuing twice for one completion is then impossible,
// whatever the caller does), and org-leading indexes for the list filters, delta sync and the learner's list.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('certificates_enrolment').unique().on('certificates').columns(['enrolment_id']).execute();
  await db.schema.createIndex('certificates_org_learner').on('certificates').columns(['org_id', 'learner_id', 'id']).execute();
  await db.schema.createIndex('certificates_org_course').on('certificates').columns(['org_id', 'course_id', 'id']).execute();
  await db.schema.createIndex('certificates_org_updated').on('certificates').columns(['org_id', 'updated_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const name of ['certificates_enrolment', 'certificates_org_learner', 'certificates_org_course', 'certificates_org_updated']) {
    await db.schema.dropIndex(name).ifExists().execute();
  }
}
