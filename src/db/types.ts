// Row types of every table, as Kysely sees them. Timestamps are RFC 3339 UTC strings (they sort as text on
// both SQLite and PostgreSQL); booleans are 0/1 integers; lists and objects are JSON text. Every
// organization-owned table carries org_id, and its indexes lead with it.
import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

export interface OrganizationsTable {
  id: string;
  name: string;
  slug: string;
  created_at: string;
  updated_at: string;
}

export interface SeatAllowancesTable {
  org_id: string;
  total: number;
  in_use: number;
  updated_at: string;
}

export type ApplicationStatus = 'pending' | 'approved' | 'rejected' | 'suspended';

export interface ApplicationsTable {
  id: string; // also the OAuth client_id
  org_id: string | null; // bound on approval
  developer_id: string | null; // null for applications made with the CLI
  name: string;
  description: string;
  requested_org: string | null; // the organization named by the developer when applying
  requested_scopes: string; // JSON string[]
  scopes: string; // JSON string[]: the granted scopes
  status: ApplicationStatus;
  rejection_reason: string | null;
  secret_hash: string | null;
  credential_version: number; // bumped on secret reset and suspension: older tokens stop working
  reviewed_by: string | null;
  reviewed_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface SigningKeysTable {
  kid: string;
  alg: string;
  public_jwk: string;
  private_jwk: string;
  created_at: string;
  retired_at: string | null;
}

export interface CourseCategoriesTable {
  id: string;
  name: string;
  parent_id: string | null;
  created_at: string;
  updated_at: string;
}

export type CourseStatus = 'draft' | 'published' | 'retired';

export interface CoursesTable {
  id: string;
  title: string;
  summary: string;
  category_id: string | null;
  language: string;
  duration_minutes: number;
  tags: string; // JSON string[]
  status: CourseStatus;
  published_at: string | null;
  certificate_enabled: number;
  certificate_validity_months: number | null;
  created_at: string;
  updated_at: string;
}

export type UserStatus = 'active' | 'suspended' | 'removed';

export interface UsersTable {
  id: string;
  org_id: string;
  email: string;
  email_normalized: string; // lower-cased: e-mail is unique per organization, case-insensitively
  first_name: string;
  last_name: string;
  external_id: string | null;
  department: string | null;
  roles: string; // JSON ('learner' | 'manager' | 'admin')[]
  is_learner: number; // 1 when roles include learner (indexed: the learner list)
  status: UserStatus;
  created_at: string;
  updated_at: string;
}

export type EnrolmentStatus = 'enrolled' | 'in_progress' | 'completed' | 'withdrawn';

export interface EnrolmentsTable {
  id: string;
  org_id: string;
  learner_id: string;
  course_id: string;
  status: EnrolmentStatus;
  progress: number;
  score: number | null;
  enrolled_at: string;
  started_at: string | null;
  completed_at: string | null;
  withdrawn_at: string | null;
  due_at: string | null;
  certificate_id: string | null;
  created_at: string;
  updated_at: string;
}

export type CertificateStatus = 'valid' | 'expired' | 'revoked';

export interface CertificatesTable {
  id: string;
  org_id: string;
  learner_id: string;
  course_id: string;
  enrolment_id: string;
  number: string;
  verification_code: string;
  status: CertificateStatus;
  issued_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  revocation_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface IdempotencyKeysTable {
  app_id: string;
  key: string;
  request_hash: string;
  state: 'in_flight' | 'done';
  response_status: number | null;
  response_headers: string | null; // JSON object
  response_body: string | null;
  created_at: string;
  expires_at: string;
}

export interface EventsTable {
  id: string;
  org_id: string | null; // null: a catalogue event, visible to every organization
  type: string;
  payload: string; // the event JSON exactly as delivered and as GET /v1/events/{id} shows it
  created_at: string;
}

export type WebhookStatus = 'enabled' | 'disabled';

export interface WebhookEndpointsTable {
  id: string;
  org_id: string;
  url: string;
  events: string; // JSON string[]
  description: string | null;
  status: WebhookStatus;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  failing_since: string | null; // first failed attempt since the last success (migration 003)
  created_at: string;
  updated_at: string;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookDeliveriesTable {
  id: string;
  org_id: string;
  endpoint_id: string;
  event_id: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  lease_owner: string | null;
  lease_expires_at: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttemptsTable {
  id: string;
  org_id: string;
  delivery_id: string;
  endpoint_id: string;
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

export interface DevelopersTable {
  id: string;
  email: string;
  email_normalized: string;
  created_at: string;
  updated_at: string;
}

export interface OperatorsTable {
  id: string;
  email: string;
  email_normalized: string;
  created_at: string;
}

export type Audience = 'portal' | 'console';

export interface SignInLinksTable {
  token_hash: string;
  email_normalized: string;
  audience: Audience;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

export interface SessionsTable {
  id_hash: string;
  audience: Audience;
  subject_id: string; // developer or operator id
  csrf_token: string;
  expires_at: string;
  created_at: string;
}

export interface AuditLogTable {
  id: string;
  actor: string; // "operator:<email>", "developer:<email>", "cli", "system"
  action: string; // e.g. application.approved, application.secret_reset
  target: string | null;
  details: string; // JSON object
  created_at: string;
}

export interface Database {
  organizations: OrganizationsTable;
  seat_allowances: SeatAllowancesTable;
  applications: ApplicationsTable;
  signing_keys: SigningKeysTable;
  course_categories: CourseCategoriesTable;
  courses: CoursesTable;
  users: UsersTable;
  enrolments: EnrolmentsTable;
  certificates: CertificatesTable;
  idempotency_keys: IdempotencyKeysTable;
  events: EventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  developers: DevelopersTable;
  operators: OperatorsTable;
  sign_in_links: SignInLinksTable;
  sessions: SessionsTable;
  audit_log: AuditLogTable;
}

export type Row<T extends keyof Database> = Selectable<Database[T]>;
export type NewRow<T extends keyof Database> = Insertable<Database[T]>;
export type RowUpdate<T extends keyof Database> = Updateable<Database[T]>;
// Generated is re-exported for tables that later gain database-generated columns.
export type { Generated };
