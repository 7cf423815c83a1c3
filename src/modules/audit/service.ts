// The audit log: who decided what about which application or credential, and when. Written inside the same
// transaction as the change it describes (like recordEvent), so a rolled-back decision leaves no entry and a
// committed one always has its entry. Secrets never go into `details`.
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import type { Clock } from '../../clock.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import type { Row } from '../../db/types.js';

export type AuditAction =
  | 'application.created'
  | 'application.submitted'
  | 'application.approved'
  | 'application.rejected'
  | 'application.suspended'
  | 'application.reinstated'
  | 'application.secret_reset'
  | 'application.credentials_mailed'
  | 'application.credentials_mail_failed'
  | 'operator.added'
  | 'organization.created'
  | 'organization.seats_changed'
  | 'course.created'
  | 'course.updated'
  | 'course.published'
  | 'course.retired'
  | 'category.created'
  | 'category.updated';

export interface AuditEntry {
  /** "operator:<email>", "developer:<email>", "cli" or "system". */
  actor: string;
  action: AuditAction;
  target: string | null;
  details?: Record<string, unknown>;
}

export async function recordAudit(db: Executor, clock: Clock, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      id: newId('audit'),
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      details: JSON.stringify(entry.details ?? {}),
      created_at: iso(clock.now()),
    })
    .execute();
}

/** Newest first (ids are time-ordered); `before` is the last id of the previous page. */
export async function listAuditLog(
  ctx: AppContext,
  opts: { before?: string; limit?: number; target?: string } = {},
): Promise<{ entries: Row<'audit_log'>[]; nextBefore: string | null }> {
  const limit = opts.limit ?? 50;
  let q = ctx.db.kysely.selectFrom('audit_log').selectAll();
  if (opts.before) q = q.where('id', '<', opts.before);
  if (opts.target) q = q.where('target', '=', opts.target);
  const rows = await q.orderBy('id', 'desc').limit(limit + 1).execute();
  const more = rows.length > limit;
  const entries = more ? rows.slice(0, limit) : rows;
  return { entries, nextBefore: more ? entries[entries.length - 1].id : null };
}
