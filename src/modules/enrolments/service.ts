// Enrolment use cases. Each owns its transaction; the seat, the enrolment row and the event change together.
//
// Decisions where §4 is silent:
// - An unknown learner (or another organization's) is 404 not_found, like any unknown id.
// - A learner who is not active (suspended or removed) cannot be enrolled: 409 conflict — the request is
//   well-formed, it conflicts with the learner's current state (like already_enrolled / seat_limit_reached).
// - An unknown, draft or retired course is 422 course_not_available.
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
import { releaseSeat, takeSeat } from '../organization/repo.js';
import { findCourse } from '../catalogue/repo.js';
import { issueCertificateForEnrolment } from '../certificates/service.js';
import * as people from '../people/repo.js';
import * as repo from './repo.js';
import { transition, type EnrolmentAction } from './state.js';
import { toEnrolment, type Enrolment, type EnrolmentCompleteInput, type EnrolmentCreateInput, type EnrolmentPatchInput } from './schemas.js';

const nowOf = (ctx: AppContext) => iso(ctx.clock.now());

function dueAtOf(value: string | null | undefined): string | null | undefined {
  return value ? normaliseInstant(value, '/due_at') : value;
}

/**
 * Enrols a learner, inside the caller's transaction: the checks, the seat (one conditional UPDATE) and the insert
 * commit or roll back together, and the partial unique index enrolments_one_active settles a race between two
 * requests for the same learner and course.
 */
export async function enrolInTransaction(
  trx: Trx,
  ctx: AppContext,
  orgId: string,
  learner: Row<'users'> | undefined,
  input: { course_id: string; due_at?: string | null },
): Promise<Enrolment> {
  if (!learner || learner.is_learner !== 1) throw notFound('learner');
  if (learner.status !== 'active') {
    throw new AppError('conflict', `The learner is ${learner.status}; only active learners can be enrolled.`);
  }
  const course = await findCourse(trx, input.course_id);
  if (!course) throw new AppError('course_not_available', 'The course does not exist or is not published.');
  if (await repo.findActiveEnrolment(trx, orgId, learner.id, course.id)) {
    throw new AppError('already_enrolled', 'The learner is already enrolled in this course.');
  }
  const now = nowOf(ctx);
  if (!(await takeSeat(trx, orgId, now))) {
    throw new AppError('seat_limit_reached', 'Every seat of the organization is in use. Complete or withdraw an enrolment, or ask for more seats.');
  }
  const row: Row<'enrolments'> = {
    id: newId('enrolment'),
    org_id: orgId,
    learner_id: learner.id,
    course_id: course.id,
    status: 'enrolled',
    progress: 0,
    score: null,
    enrolled_at: now,
    started_at: null,
    completed_at: null,
    withdrawn_at: null,
    due_at: dueAtOf(input.due_at) ?? null,
    certificate_id: null,
    created_at: now,
    updated_at: now,
  };
  await repo.insertEnrolment(trx, row);
  const enrolment = toEnrolment(row, now);
  await recordEvent(trx, ctx.clock, { orgId, type: 'enrolment.created', object: enrolment });
  return enrolment;
}

/** Runs an enrolment use case, turning a lost race on enrolments_one_active into 409 already_enrolled. */
export async function inEnrolmentTransaction<T>(ctx: AppContext, work: (trx: Trx) => Promise<T>): Promise<T> {
  try {
    return await ctx.db.kysely.transaction().execute(work);
  } catch (err) {
    if (uniqueViolation(err) === 'enrolments_one_active') {
      throw new AppError('already_enrolled', 'The learner is already enrolled in this course.');
    }
    throw err;
  }
}

export function createEnrolment(ctx: AppContext, orgId: string, input: EnrolmentCreateInput): Promise<Enrolment> {
  return inEnrolmentTransaction(ctx, async (trx) =>
    enrolInTransaction(trx, ctx, orgId, await people.findUser(trx, orgId, input.learner_id, ctx.db.dialect), input),
  );
}

/**
 * Applies one transition of the state table to a (locked) row, inside the caller's transaction: the row update,
 * the freed seat, the certificate and the event commit together.
 */
export async function applyTransition(trx: Trx, ctx: AppContext, row: Row<'enrolments'>, action: EnrolmentAction): Promise<Enrolment> {
  const now = nowOf(ctx);
  const t = transition(row, action, now);
  if (t.noop) return toEnrolment(row, now);
  let updated: Row<'enrolments'> = { ...row, ...t.changes } as Row<'enrolments'>;
  if (t.releasesSeat) await releaseSeat(trx, row.org_id, now);
  await repo.updateEnrolment(trx, row.org_id, row.id, t.changes);
  if (action.kind === 'complete') updated = await issueCertificate(trx, ctx, updated);
  const enrolment = toEnrolment(updated, now);
  await recordEvent(trx, ctx.clock, { orgId: row.org_id, type: t.event, object: enrolment });
  return enrolment;
}

/**
 * The certificates module issues the certificate if the course grants one (and records certificate.issued and
 * sets enrolments.certificate_id) in this same transaction.
 */
async function issueCertificate(trx: Trx, ctx: AppContext, row: Row<'enrolments'>): Promise<Row<'enrolments'>> {
  const certificate = await issueCertificateForEnrolment(trx, ctx, row);
  return certificate ? { ...row, certificate_id: certificate.id } : row;
}

async function changeEnrolment(ctx: AppContext, orgId: string, id: string, action: EnrolmentAction, ifMatch?: string): Promise<Enrolment> {
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const row = await repo.findEnrolment(trx, orgId, id, ctx.db.dialect);
    if (!row) throw notFound('enrolment');
    assertIfMatch(ifMatch, toEnrolment(row, nowOf(ctx)));
    return applyTransition(trx, ctx, row, action);
  });
}

export function updateEnrolment(ctx: AppContext, orgId: string, id: string, input: EnrolmentPatchInput, ifMatch?: string) {
  return changeEnrolment(ctx, orgId, id, { kind: 'update', progress: input.progress, due_at: dueAtOf(input.due_at) }, ifMatch);
}

export function completeEnrolment(ctx: AppContext, orgId: string, id: string, input: EnrolmentCompleteInput) {
  const now = ctx.clock.now();
  let completedAt = iso(now);
  if (input.completed_at) {
    completedAt = normaliseInstant(input.completed_at, '/completed_at');
    if (completedAt > iso(now)) {
      throw new AppError('validation_failed', 'completed_at cannot be in the future.', {
        errors: [{ pointer: '/completed_at', message: 'must not be in the future' }],
      });
    }
  }
  return changeEnrolment(ctx, orgId, id, { kind: 'complete', score: input.score, completed_at: completedAt });
}

export function withdrawEnrolment(ctx: AppContext, orgId: string, id: string) {
  return changeEnrolment(ctx, orgId, id, { kind: 'withdraw' });
}

/** Withdraws every active enrolment of a learner (their removal), freeing the seats, in the caller's transaction. */
export async function withdrawActiveEnrolmentsOf(trx: Trx, ctx: AppContext, orgId: string, learnerId: string): Promise<number> {
  const rows = await repo.activeEnrolmentsOf(trx, orgId, learnerId, ctx.db.dialect);
  for (const row of rows) await applyTransition(trx, ctx, row, { kind: 'withdraw' });
  return rows.length;
}

export async function getEnrolment(ctx: AppContext, orgId: string, id: string): Promise<Enrolment> {
  const row = await repo.findEnrolment(ctx.db.kysely, orgId, id);
  if (!row) throw notFound('enrolment');
  return toEnrolment(row, nowOf(ctx));
}

export async function listEnrolments(ctx: AppContext, orgId: string, f: repo.EnrolmentFilter): Promise<Page<Enrolment>> {
  const params = { ...f, updated_since: f.updated_since && normaliseInstant(f.updated_since, '/updated_since') };
  const rows = await repo.listEnrolments(ctx.db.kysely, orgId, params);
  const now = nowOf(ctx);
  return toPage(rows, params, (r) => toEnrolment(r, now));
}

/** GET /v1/learners/{id}/enrolments: 404 unless the learner is one of the organization's. */
export async function listEnrolmentsOfLearner(ctx: AppContext, orgId: string, learnerId: string, f: repo.EnrolmentFilter) {
  const learner = await people.findUser(ctx.db.kysely, orgId, learnerId);
  if (!learner || learner.is_learner !== 1) throw notFound('learner');
  return listEnrolments(ctx, orgId, { ...f, learner_id: learnerId });
}
