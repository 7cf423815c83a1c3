// Users and learners: use cases on the one users table. Every change goes through commitPersonChange, the one
// place that writes a person, withdraws the enrolments of someone who stops being a learner, and records the
// events of both views in the same transaction:
//   user.created | user.updated | user.removed        — whenever the user as GET /v1/users shows it changes;
//   learner.created | learner.updated | learner.removed — whenever the person joins, changes in or leaves the
//   learner list (joins: gets the learner role or is re-activated; leaves: removed or loses the role).
// Decisions where §4 is silent: a removed person cannot be PATCHed (409 conflict); DELETE of a removed person
// answers 200 with the tombstone and changes nothing; POST /v1/learners with the e-mail of a removed person
// re-activates them as a learner; POST /v1/users defaults roles to ["learner"].
import type { AppContext } from '../../context.js';
import type { Trx } from '../../db/index.js';
import { uniqueViolation } from '../../db/index.js';
import type { Row } from '../../db/types.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { AppError, notFound } from '../../http/errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { normaliseInstant, toPage, type Page } from '../../http/pagination.js';
import { recordEvent } from '../../events/record.js';
import { withdrawActiveEnrolmentsOf } from '../enrolments/service.js';
import { listCertificates, type Certificate } from '../certificates/service.js';
import * as repo from './repo.js';
import {
  rolesOf,
  toLearner,
  toUser,
  type Learner,
  type LearnerCreateInput,
  type LearnerPatchInput,
  type Role,
  type User,
  type UserCreateInput,
  type UserPatchInput,
} from './schemas.js';

const isActiveLearner = (row: Row<'users'> | null) => !!row && row.is_learner === 1 && row.status !== 'removed';
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Writes the person (insert when `before` is null) and records the events; false when nothing visible changed. */
async function commitPersonChange(trx: Trx, ctx: AppContext, before: Row<'users'> | null, after: Row<'users'>): Promise<boolean> {
  const orgId = after.org_id;
  if (before) {
    if (same(toUser({ ...after, updated_at: before.updated_at }), toUser(before))) return false;
    const { id: _id, org_id: _org, created_at: _created, ...changes } = after;
    await repo.updateUser(trx, orgId, after.id, changes);
  } else {
    await repo.insertUser(trx, after);
  }
  const wasLearner = isActiveLearner(before);
  const isLearner = isActiveLearner(after);
  if (wasLearner && !isLearner) await withdrawActiveEnrolmentsOf(trx, ctx, orgId, after.id);

  const userType = !before ? 'user.created' : after.status === 'removed' && before.status !== 'removed' ? 'user.removed' : 'user.updated';
  await recordEvent(trx, ctx.clock, { orgId, type: userType, object: toUser(after) });
  if (!wasLearner && isLearner) {
    await recordEvent(trx, ctx.clock, { orgId, type: 'learner.created', object: toLearner(after) });
  } else if (wasLearner && !isLearner) {
    await recordEvent(trx, ctx.clock, { orgId, type: 'learner.removed', object: toLearner(after) });
  } else if (wasLearner && !same(toLearner({ ...after, updated_at: before!.updated_at }), toLearner(before!))) {
    await recordEvent(trx, ctx.clock, { orgId, type: 'learner.updated', object: toLearner(after) });
  }
  return true;
}

/** A transaction over people, mapping the unique indexes to 409 conflict. */
async function inPeopleTransaction<T>(ctx: AppContext, work: (trx: Trx) => Promise<T>): Promise<T> {
  try {
    return await ctx.db.kysely.transaction().execute(work);
  } catch (err) {
    const index = uniqueViolation(err);
    if (index === 'users_org_email') throw new AppError('conflict', 'Another user of the organization has this e-mail address.');
    if (index === 'users_org_external') throw new AppError('conflict', 'Another user of the organization has this external_id.');
    throw err;
  }
}

function newPerson(ctx: AppContext, orgId: string, input: UserCreateInput, roles: Role[]): Row<'users'> {
  const now = iso(ctx.clock.now());
  return {
    id: newId('user'),
    org_id: orgId,
    email: input.email.trim(),
    email_normalized: repo.normaliseEmail(input.email),
    first_name: input.first_name,
    last_name: input.last_name,
    external_id: input.external_id ?? null,
    department: input.department ?? null,
    roles: JSON.stringify(roles),
    is_learner: roles.includes('learner') ? 1 : 0,
    status: input.status ?? 'active',
    created_at: now,
    updated_at: now,
  };
}

/** The person after applying a patch (fields left out keep their value). */
function patched(ctx: AppContext, row: Row<'users'>, patch: UserPatchInput): Row<'users'> {
  const roles = patch.roles ?? rolesOf(row);
  return {
    ...row,
    email: patch.email?.trim() ?? row.email,
    email_normalized: patch.email ? repo.normaliseEmail(patch.email) : row.email_normalized,
    first_name: patch.first_name ?? row.first_name,
    last_name: patch.last_name ?? row.last_name,
    external_id: patch.external_id === undefined ? row.external_id : patch.external_id,
    department: patch.department === undefined ? row.department : patch.department,
    roles: JSON.stringify(roles),
    is_learner: roles.includes('learner') ? 1 : 0,
    status: patch.status ?? row.status,
    updated_at: iso(ctx.clock.now()),
  };
}

function withLearnerRole(row: Row<'users'>): Row<'users'> {
  const roles = rolesOf(row);
  return { ...row, roles: JSON.stringify(roles.includes('learner') ? roles : ['learner', ...roles]), is_learner: 1 };
}

const listParams = <F extends { updated_since?: string }>(f: F): F => ({
  ...f,
  updated_since: f.updated_since && normaliseInstant(f.updated_since, '/updated_since'),
});

// ---- users ----

export function createUser(ctx: AppContext, orgId: string, input: UserCreateInput): Promise<User> {
  return inPeopleTransaction(ctx, async (trx) => {
    const row = newPerson(ctx, orgId, input, input.roles ?? ['learner']);
    await commitPersonChange(trx, ctx, null, row);
    return toUser(row);
  });
}

export async function getUser(ctx: AppContext, orgId: string, id: string): Promise<User> {
  const row = await repo.findUser(ctx.db.kysely, orgId, id);
  if (!row) throw notFound('user');
  return toUser(row);
}

export async function listUsers(ctx: AppContext, orgId: string, f: repo.PersonFilter): Promise<Page<User>> {
  const params = listParams(f);
  return toPage(await repo.listUsers(ctx.db.kysely, orgId, params), params, toUser);
}

export function updateUser(ctx: AppContext, orgId: string, id: string, patch: UserPatchInput, ifMatch?: string): Promise<User> {
  return inPeopleTransaction(ctx, async (trx) => {
    const row = await repo.findUser(trx, orgId, id, ctx.db.dialect);
    if (!row) throw notFound('user');
    assertIfMatch(ifMatch, toUser(row));
    if (row.status === 'removed') throw new AppError('conflict', 'The user has been removed and cannot be changed.');
    const after = patched(ctx, row, patch);
    return toUser((await commitPersonChange(trx, ctx, row, after)) ? after : row);
  });
}

export function removeUser(ctx: AppContext, orgId: string, id: string, ifMatch?: string): Promise<User> {
  return inPeopleTransaction(ctx, async (trx) => {
    const row = await repo.findUser(trx, orgId, id, ctx.db.dialect);
    if (!row) throw notFound('user');
    assertIfMatch(ifMatch, toUser(row));
    if (row.status === 'removed') return toUser(row);
    const after: Row<'users'> = { ...row, status: 'removed', updated_at: iso(ctx.clock.now()) };
    await commitPersonChange(trx, ctx, row, after);
    return toUser(after);
  });
}

// ---- learners ----

async function findLearner(trx: Trx, ctx: AppContext, orgId: string, id: string): Promise<Row<'users'>> {
  const row = await repo.findUser(trx, orgId, id, ctx.db.dialect);
  if (!row || row.is_learner !== 1) throw notFound('learner');
  return row;
}

/**
 * Adds a learner: a new user with the learner role, or the role added to the existing user with that e-mail
 * (re-activating a removed one). 409 conflict when that user is already an active learner.
 */
export function createLearner(ctx: AppContext, orgId: string, input: LearnerCreateInput): Promise<Learner> {
  return inPeopleTransaction(ctx, async (trx) => {
    const existing = await repo.findUserByEmail(trx, orgId, input.email, ctx.db.dialect);
    if (existing && isActiveLearner(existing)) {
      throw new AppError('conflict', 'This person is already a learner of the organization.');
    }
    const after = existing ? learnerFrom(ctx, existing, input) : newPerson(ctx, orgId, input, ['learner']);
    await commitPersonChange(trx, ctx, existing ?? null, after);
    return toLearner(after);
  });
}

/** An existing person updated from a learner's fields, with the learner role, re-activated if removed. */
function learnerFrom(ctx: AppContext, row: Row<'users'>, input: LearnerCreateInput): Row<'users'> {
  const next = withLearnerRole(patched(ctx, row, input));
  return row.status === 'removed' ? { ...next, status: 'active' } : next;
}

export async function getLearner(ctx: AppContext, orgId: string, id: string): Promise<Learner> {
  const row = await repo.findUser(ctx.db.kysely, orgId, id);
  if (!row || row.is_learner !== 1) throw notFound('learner');
  return toLearner(row);
}

export async function listLearners(ctx: AppContext, orgId: string, f: repo.PersonFilter): Promise<Page<Learner>> {
  const params = listParams({ ...f, learnersOnly: true });
  return toPage(await repo.listUsers(ctx.db.kysely, orgId, params), params, toLearner);
}

/** GET /v1/learners/{id}/certificates: 404 unless the learner is one of the organization's (removed ones too). */
export async function listCertificatesOfLearner(
  ctx: AppContext,
  orgId: string,
  id: string,
  f: Omit<Parameters<typeof listCertificates>[2], 'learner_id'>,
): Promise<Page<Certificate>> {
  const row = await repo.findUser(ctx.db.kysely, orgId, id);
  if (!row || row.is_learner !== 1) throw notFound('learner');
  return listCertificates(ctx, orgId, { ...f, learner_id: id });
}

export function updateLearner(ctx: AppContext, orgId: string, id: string, patch: LearnerPatchInput, ifMatch?: string): Promise<Learner> {
  return inPeopleTransaction(ctx, async (trx) => {
    const row = await findLearner(trx, ctx, orgId, id);
    assertIfMatch(ifMatch, toLearner(row));
    if (row.status === 'removed') throw new AppError('conflict', 'The learner has been removed and cannot be changed.');
    const after = patched(ctx, row, patch);
    return toLearner((await commitPersonChange(trx, ctx, row, after)) ? after : row);
  });
}

/** Removes a learner (status removed): their active enrolments are withdrawn and the seats freed; certificates stay. */
export function removeLearner(ctx: AppContext, orgId: string, id: string, ifMatch?: string): Promise<Learner> {
  return inPeopleTransaction(ctx, async (trx) => {
    const row = await findLearner(trx, ctx, orgId, id);
    assertIfMatch(ifMatch, toLearner(row));
    if (row.status === 'removed') return toLearner(row);
    const after: Row<'users'> = { ...row, status: 'removed', updated_at: iso(ctx.clock.now()) };
    await commitPersonChange(trx, ctx, row, after);
    return toLearner(after);
  });
}

export type BulkOutcome<T> =
  | { index: number; result: 'created' | 'updated'; value: T }
  | { index: number; result: 'error'; error: AppError };

/**
 * Upserts one learner of a bulk request: matched by external_id when given, else by e-mail. "created" when the
 * person joins the learner list, "updated" when they were on it already.
 */
export function upsertLearner(ctx: AppContext, orgId: string, input: LearnerCreateInput): Promise<{ result: 'created' | 'updated'; learner: Learner }> {
  return inPeopleTransaction(ctx, async (trx) => {
    let existing = input.external_id ? await repo.findUserByExternalId(trx, orgId, input.external_id, ctx.db.dialect) : undefined;
    if (!existing) {
      existing = await repo.findUserByEmail(trx, orgId, input.email, ctx.db.dialect);
      if (existing && input.external_id && existing.external_id && existing.external_id !== input.external_id) {
        throw new AppError('conflict', `The user with this e-mail has another external_id (${existing.external_id}).`);
      }
    }
    const after = existing ? learnerFrom(ctx, existing, input) : newPerson(ctx, orgId, input, ['learner']);
    const wasLearner = isActiveLearner(existing ?? null);
    const changed = await commitPersonChange(trx, ctx, existing ?? null, after);
    return { result: wasLearner ? 'updated' : 'created', learner: toLearner(changed ? after : existing!) };
  });
}

/** POST /v1/learners/bulk: each item in its own transaction, so one bad item does not fail the others. */
export async function bulkUpsertLearners(ctx: AppContext, orgId: string, items: LearnerCreateInput[]): Promise<BulkOutcome<Learner>[]> {
  const out: BulkOutcome<Learner>[] = [];
  for (const [index, item] of items.entries()) {
    try {
      let r;
      try {
        r = await upsertLearner(ctx, orgId, item);
      } catch (err) {
        // A concurrent writer created the same person between our read and our insert: the retry updates it.
        if (!(err instanceof AppError && err.code === 'conflict')) throw err;
        r = await upsertLearner(ctx, orgId, item);
      }
      out.push({ index, result: r.result, value: r.learner });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      out.push({ index, result: 'error', error: err });
    }
  }
  return out;
}
