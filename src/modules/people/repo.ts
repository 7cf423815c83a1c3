// The users table (users and learners). Every query takes the organization id first.
import { sql } from 'kysely';
import type { Dialect, Executor } from '../../db/index.js';
import type { NewRow, Row, RowUpdate, UserStatus } from '../../db/types.js';
import { applyPage, type PageParams } from '../../http/pagination.js';

export const normaliseEmail = (email: string) => email.trim().toLowerCase();

export interface PersonFilter extends PageParams {
  email?: string;
  external_id?: string;
  status?: UserStatus;
  role?: 'learner' | 'manager' | 'admin';
  department?: string;
  learnersOnly?: boolean;
}

/**
 * Reads one user. `lock` (PostgreSQL) takes a row lock for the rest of the transaction, so that a read-check-write
 * (If-Match, state checks) cannot interleave with another writer; SQLite transactions are already serial.
 */
export function findUser(db: Executor, orgId: string, id: string, lock?: Dialect): Promise<Row<'users'> | undefined> {
  const q = db.selectFrom('users').selectAll().where('org_id', '=', orgId).where('id', '=', id);
  return (lock === 'postgres' ? q.forUpdate() : q).executeTakeFirst();
}

export function findUserByEmail(db: Executor, orgId: string, email: string, lock?: Dialect): Promise<Row<'users'> | undefined> {
  const q = db.selectFrom('users').selectAll().where('org_id', '=', orgId).where('email_normalized', '=', normaliseEmail(email));
  return (lock === 'postgres' ? q.forUpdate() : q).executeTakeFirst();
}

export function findUserByExternalId(db: Executor, orgId: string, externalId: string, lock?: Dialect): Promise<Row<'users'> | undefined> {
  const q = db.selectFrom('users').selectAll().where('org_id', '=', orgId).where('external_id', '=', externalId);
  return (lock === 'postgres' ? q.forUpdate() : q).executeTakeFirst();
}

/**
 * A page of users. Removed users are left out unless the caller syncs (updated_since: they are its tombstones)
 * or asks for status=removed.
 */
export function listUsers(db: Executor, orgId: string, f: PersonFilter): Promise<Row<'users'>[]> {
  let q = db.selectFrom('users').selectAll().where('org_id', '=', orgId);
  if (f.learnersOnly) q = q.where('is_learner', '=', 1);
  if (f.email) q = q.where('email_normalized', '=', normaliseEmail(f.email));
  if (f.external_id) q = q.where('external_id', '=', f.external_id);
  if (f.department) q = q.where('department', '=', f.department);
  if (f.status) q = q.where('status', '=', f.status);
  else if (!f.updated_since) q = q.where('status', '!=', 'removed');
  if (f.updated_since) q = q.where('updated_at', '>=', f.updated_since);
  if (f.role === 'learner') q = q.where('is_learner', '=', 1);
  else if (f.role) q = q.where('roles', 'like', sql<string>`${`%"${f.role}"%`}`);
  return applyPage(q, f).execute();
}

export async function insertUser(db: Executor, row: NewRow<'users'>): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

export async function updateUser(db: Executor, orgId: string, id: string, changes: RowUpdate<'users'>): Promise<void> {
  await db.updateTable('users').set(changes).where('org_id', '=', orgId).where('id', '=', id).execute();
}
