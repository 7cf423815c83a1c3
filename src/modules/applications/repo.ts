// Applications (OAuth clients). Not organization-scoped: an application is looked up by its client id,
// and the token it gets carries the organization it was bound to on approval.
import type { Executor } from '../../db/index.js';
import type { NewRow, Row } from '../../db/types.js';

export function findApplication(db: Executor, id: string): Promise<Row<'applications'> | undefined> {
  return db.selectFrom('applications').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertApplication(db: Executor, row: NewRow<'applications'>): Promise<void> {
  await db.insertInto('applications').values(row).execute();
}
