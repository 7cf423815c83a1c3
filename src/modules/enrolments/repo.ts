// The enrolments table. Every query takes the organization id first.
import type { Dialect, Executor } from '../../db/index.js';
import type { EnrolmentStatus, NewRow, Row, RowUpdate } from '../../db/types.js';
import { applyPage, type PageParams } from '../../http/pagination.js';
import { ACTIVE_STATUSES } from './schemas.js';

export interface EnrolmentFilter extends PageParams {
  learner_id?: string;
  course_id?: string;
  status?: EnrolmentStatus;
}

/** One enrolment; `lock` (PostgreSQL) holds a row lock until the transaction ends (SQLite transactions are serial). */
export function findEnrolment(db: Executor, orgId: string, id: string, lock?: Dialect): Promise<Row<'enrolments'> | undefined> {
  const q = db.selectFrom('enrolments').selectAll().where('org_id', '=', orgId).where('id', '=', id);
  return (lock === 'postgres' ? q.forUpdate() : q).executeTakeFirst();
}

export function findActiveEnrolment(db: Executor, orgId: string, learnerId: string, courseId: string) {
  return db
    .selectFrom('enrolments')
    .select('id')
    .where('org_id', '=', orgId)
    .where('learner_id', '=', learnerId)
    .where('course_id', '=', courseId)
    .where('status', 'in', ACTIVE_STATUSES)
    .executeTakeFirst();
}

export function activeEnrolmentsOf(db: Executor, orgId: string, learnerId: string, lock?: Dialect): Promise<Row<'enrolments'>[]> {
  const q = db
    .selectFrom('enrolments')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('learner_id', '=', learnerId)
    .where('status', 'in', ACTIVE_STATUSES)
    .orderBy('id');
  return (lock === 'postgres' ? q.forUpdate() : q).execute();
}

export function listEnrolments(db: Executor, orgId: string, f: EnrolmentFilter): Promise<Row<'enrolments'>[]> {
  let q = db.selectFrom('enrolments').selectAll().where('org_id', '=', orgId);
  if (f.learner_id) q = q.where('learner_id', '=', f.learner_id);
  if (f.course_id) q = q.where('course_id', '=', f.course_id);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.updated_since) q = q.where('updated_at', '>=', f.updated_since);
  return applyPage(q, f).execute();
}

export async function insertEnrolment(db: Executor, row: NewRow<'enrolments'>): Promise<void> {
  await db.insertInto('enrolments').values(row).execute();
}

export async function updateEnrolment(db: Executor, orgId: string, id: string, changes: RowUpdate<'enrolments'>): Promise<void> {
  await db.updateTable('enrolments').set(changes).where('org_id', '=', orgId).where('id', '=', id).execute();
}
