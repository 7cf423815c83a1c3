// Organizations and their seat allowances. Every query takes the organization id first.
import type { Executor } from '../../db/index.js';
import type { Row } from '../../db/types.js';

export function findOrganization(db: Executor, orgId: string): Promise<Row<'organizations'> | undefined> {
  return db.selectFrom('organizations').selectAll().where('id', '=', orgId).executeTakeFirst();
}

export function findSeatAllowance(db: Executor, orgId: string): Promise<Row<'seat_allowances'> | undefined> {
  return db.selectFrom('seat_allowances').selectAll().where('org_id', '=', orgId).executeTakeFirst();
}

/**
 * Takes one seat if one is free, as a single conditional UPDATE: the check and the write are one atomic step on
 * both SQLite and PostgreSQL, so concurrent requests can never take more seats than the total.
 */
export async function takeSeat(db: Executor, orgId: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable('seat_allowances')
    .set((eb) => ({ in_use: eb('in_use', '+', 1), updated_at: now }))
    .where('org_id', '=', orgId)
    .whereRef('in_use', '<', 'total')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Gives back one seat (completion, withdrawal, removal of a learner). */
export async function releaseSeat(db: Executor, orgId: string, now: string): Promise<void> {
  await db
    .updateTable('seat_allowances')
    .set((eb) => ({ in_use: eb('in_use', '-', 1), updated_at: now }))
    .where('org_id', '=', orgId)
    .where('in_use', '>', 0)
    .execute();
}
