// Applications (OAuth clients). Not organization-scoped: an application is looked up by its client id,
// and the token it gets carries the organization it was bound to on approval. Portal queries take the
// developer id first, so a developer can only ever reach their own applications.
import type { Executor } from '../../db/index.js';
import type { ApplicationStatus, NewRow, Row, RowUpdate } from '../../db/types.js';

export function findApplication(db: Executor, id: string): Promise<Row<'applications'> | undefined> {
  return db.selectFrom('applications').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertApplication(db: Executor, row: NewRow<'applications'>): Promise<void> {
  await db.insertInto('applications').values(row).execute();
}

export function findDeveloperApplication(db: Executor, developerId: string, id: string): Promise<Row<'applications'> | undefined> {
  return db.selectFrom('applications').selectAll().where('developer_id', '=', developerId).where('id', '=', id).executeTakeFirst();
}

export function listDeveloperApplications(db: Executor, developerId: string): Promise<Row<'applications'>[]> {
  return db.selectFrom('applications').selectAll().where('developer_id', '=', developerId).orderBy('id', 'desc').limit(200).execute();
}

/** For the console: applications with their developer's e-mail and bound organization's name. */
export function listApplicationsForReview(db: Executor, statuses: ApplicationStatus[], limit = 200) {
  return db
    .selectFrom('applications')
    .leftJoin('developers', 'developers.id', 'applications.developer_id')
    .leftJoin('organizations', 'organizations.id', 'applications.org_id')
    .selectAll('applications')
    .select(['developers.email as developer_email', 'organizations.name as org_name'])
    .where('applications.status', 'in', statuses)
    .orderBy('applications.id', 'desc')
    .limit(limit)
    .execute();
}

/**
 * Changes an application only if it is still in one of the expected states: a conditional UPDATE, so two
 * operators acting at once cannot both approve (or approve and reject) the same application.
 */
export async function updateApplicationIf(
  db: Executor,
  id: string,
  from: ApplicationStatus[],
  changes: RowUpdate<'applications'>,
): Promise<boolean> {
  const result = await db.updateTable('applications').set(changes).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
