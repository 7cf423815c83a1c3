// Organizations and seat allowances: read through the API, created and resized by operators (CLI, console).
import type { AppContext } from '../../context.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { AppError, notFound } from '../../http/errors.js';
import { uniqueViolation } from '../../db/index.js';
import { recordEvent } from '../../events/record.js';
import { recordAudit } from '../audit/service.js';
import * as repo from './repo.js';
import { toOrganization, toSeatAllowance, type Organization, type SeatAllowance } from './schemas.js';

export async function getOrganization(ctx: AppContext, orgId: string): Promise<Organization> {
  const row = await repo.findOrganization(ctx.db.kysely, orgId);
  if (!row) throw notFound('organization');
  return toOrganization(row);
}

export async function getSeatAllowance(ctx: AppContext, orgId: string): Promise<SeatAllowance> {
  const row = await repo.findSeatAllowance(ctx.db.kysely, orgId);
  if (!row) throw notFound('seat allowance');
  return toSeatAllowance(row);
}

export function slugify(name: string): string {
  return (
    name
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'org'
  );
}

export async function createOrganization(
  ctx: AppContext,
  input: { name: string; seats: number; slug?: string },
  /** Who does it, for the audit log: "cli" or "operator:<email>". */
  actor = 'cli',
): Promise<Organization & { seats: SeatAllowance }> {
  if (!input.name.trim()) throw new AppError('validation_failed', 'The organization needs a name.');
  if (!Number.isInteger(input.seats) || input.seats < 0) throw new AppError('validation_failed', 'Seats must be a whole number ≥ 0.');
  const now = iso(ctx.clock.now());
  const org = { id: newId('organization'), name: input.name.trim(), slug: input.slug ?? slugify(input.name), created_at: now, updated_at: now };
  const seats = { org_id: org.id, total: input.seats, in_use: 0, updated_at: now };
  try {
    await ctx.db.kysely.transaction().execute(async (trx) => {
      await trx.insertInto('organizations').values(org).execute();
      await trx.insertInto('seat_allowances').values(seats).execute();
      await recordAudit(trx, ctx.clock, { actor, action: 'organization.created', target: org.id, details: { name: org.name, seats: seats.total } });
    });
  } catch (err) {
    if (uniqueViolation(err)) throw new AppError('conflict', `An organization with the slug "${org.slug}" exists already.`);
    throw err;
  }
  return { ...toOrganization(org), seats: toSeatAllowance(seats) };
}

/** Changes an organization's seat total. Seats in use are kept even when the new total is lower. */
export async function setSeatTotal(ctx: AppContext, orgId: string, total: number, actor = 'cli'): Promise<SeatAllowance> {
  if (!Number.isInteger(total) || total < 0) throw new AppError('validation_failed', 'Seats must be a whole number ≥ 0.');
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const now = iso(ctx.clock.now());
    const result = await trx.updateTable('seat_allowances').set({ total, updated_at: now }).where('org_id', '=', orgId).executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw notFound('organization');
    const seats = toSeatAllowance((await repo.findSeatAllowance(trx, orgId))!);
    await recordEvent(trx, ctx.clock, { orgId, type: 'seats.updated', object: seats });
    await recordAudit(trx, ctx.clock, { actor, action: 'organization.seats_changed', target: orgId, details: { total } });
    return seats;
  });
}

export async function listOrganizations(ctx: AppContext) {
  return ctx.db.kysely
    .selectFrom('organizations')
    .innerJoin('seat_allowances', 'seat_allowances.org_id', 'organizations.id')
    .selectAll('organizations')
    .select(['seat_allowances.total', 'seat_allowances.in_use'])
    .orderBy('organizations.id')
    .execute();
}
