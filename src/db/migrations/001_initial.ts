// The initial schema: every table of the service. One set of migrations runs on SQLite and PostgreSQL,
// so only portable types are used (text, integer, bigint) and timestamps are RFC 3339 text.
import { sql, type Kysely } from 'kysely';

const ts = 'text';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('seat_allowances')
    .addColumn('org_id', 'text', (c) => c.primaryKey().references('organizations.id'))
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('in_use', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addCheckConstraint('seat_allowances_in_use_non_negative', sql`in_use >= 0 and total >= 0`)
    .execute();

  await db.schema
    .createTable('applications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.references('organizations.id'))
    .addColumn('developer_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('requested_org', 'text')
    .addColumn('requested_scopes', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('scopes', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('rejection_reason', 'text')
    .addColumn('secret_hash', 'text')
    .addColumn('credential_version', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('reviewed_by', 'text')
    .addColumn('reviewed_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('applications_developer').on('applications').columns(['developer_id', 'id']).execute();
  await db.schema.createIndex('applications_status').on('applications').columns(['status', 'id']).execute();

  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_jwk', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('retired_at', ts)
    .execute();

  await db.schema
    .createTable('course_categories')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('parent_id', 'text', (c) => c.references('course_categories.id'))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('courses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('summary', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('category_id', 'text', (c) => c.references('course_categories.id'))
    .addColumn('language', 'text', (c) => c.notNull())
    .addColumn('duration_minutes', 'integer', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('published_at', ts)
    .addColumn('certificate_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('certificate_validity_months', 'integer')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('courses_status_id').on('courses').columns(['status', 'id']).execute();
  await db.schema.createIndex('courses_category').on('courses').columns(['category_id', 'status', 'id']).execute();
  await db.schema.createIndex('courses_updated').on('courses').columns(['updated_at']).execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_normalized', 'text', (c) => c.notNull())
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text')
    .addColumn('department', 'text')
    .addColumn('roles', 'text', (c) => c.notNull())
    .addColumn('is_learner', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('users_org_email').unique().on('users').columns(['org_id', 'email_normalized']).execute();
  await db.schema.createIndex('users_org_external').unique().on('users').columns(['org_id', 'external_id']).execute();
  await db.schema.createIndex('users_org_id').on('users').columns(['org_id', 'id']).execute();
  await db.schema.createIndex('users_org_learner_id').on('users').columns(['org_id', 'is_learner', 'id']).execute();
  await db.schema.createIndex('users_org_updated').on('users').columns(['org_id', 'updated_at']).execute();

  await db.schema
    .createTable('enrolments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('learner_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('course_id', 'text', (c) => c.notNull().references('courses.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('progress', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('score', 'integer')
    .addColumn('enrolled_at', ts, (c) => c.notNull())
    .addColumn('started_at', ts)
    .addColumn('completed_at', ts)
    .addColumn('withdrawn_at', ts)
    .addColumn('due_at', ts)
    .addColumn('certificate_id', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  // At most one active enrolment of a learner in a course, enforced by the database itself.
  await db.schema
    .createIndex('enrolments_one_active')
    .unique()
    .on('enrolments')
    .columns(['org_id', 'learner_id', 'course_id'])
    .where(sql<boolean>`status in ('enrolled', 'in_progress')`)
    .execute();
  await db.schema.createIndex('enrolments_org_id').on('enrolments').columns(['org_id', 'id']).execute();
  await db.schema.createIndex('enrolments_org_learner').on('enrolments').columns(['org_id', 'learner_id', 'id']).execute();
  await db.schema.createIndex('enrolments_org_updated').on('enrolments').columns(['org_id', 'updated_at']).execute();

  await db.schema
    .createTable('certificates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('learner_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('course_id', 'text', (c) => c.notNull().references('courses.id'))
    .addColumn('enrolment_id', 'text', (c) => c.notNull().references('enrolments.id'))
    .addColumn('number', 'text', (c) => c.notNull().unique())
    .addColumn('verification_code', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('issued_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts)
    .addColumn('revoked_at', ts)
    .addColumn('revocation_reason', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('certificates_org_id').on('certificates').columns(['org_id', 'id']).execute();
  await db.schema.createIndex('certificates_status_expiry').on('certificates').columns(['status', 'expires_at']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_headers', 'text')
    .addColumn('response_body', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['app_id', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expiry').on('idempotency_keys').columns(['expires_at']).execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_org_id').on('events').columns(['org_id', 'id']).execute();
  await db.schema.createIndex('events_created').on('events').columns(['created_at']).execute();

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_org_id').on('webhook_endpoints').columns(['org_id', 'id']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ts)
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', ts)
    .addColumn('last_attempt_at', ts)
    .addColumn('last_status_code', 'integer')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema
    .createIndex('webhook_deliveries_endpoint')
    .on('webhook_deliveries')
    .columns(['org_id', 'endpoint_id', 'id'])
    .execute();
  await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').columns(['event_id']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id'))
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('attempted_at', ts, (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_excerpt', 'text')
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'id']).execute();

  await db.schema
    .createTable('developers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_normalized', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('operators')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_normalized', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sign_in_links')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('email_normalized', 'text', (c) => c.notNull())
    .addColumn('audience', 'text', (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('used_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sign_in_links_expiry').on('sign_in_links').columns(['expires_at']).execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('audience', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sessions_expiry').on('sessions').columns(['expires_at']).execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target', 'text')
    .addColumn('details', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('the initial migration cannot be undone; restore a backup instead');
}
