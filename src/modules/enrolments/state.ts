// The enrolment state table of §4, in one place. Every change of an enrolment's status goes through transition():
//
//   from                   action     to            also
//   enrolled               update     in_progress   when progress > 0 (started_at = now)
//   in_progress            update     in_progress   progress / due_at change
//   enrolled, in_progress  complete   completed     progress 100, frees the seat, certificate if the course grants one
//   enrolled, in_progress  withdraw   withdrawn     frees the seat
//   anything else                     409 invalid_state
// (Creation — → enrolled, taking a seat — is the insert in service.createEnrolment.)
import type { EnrolmentStatus, Row, RowUpdate } from '../../db/types.js';
import type { EventType } from '../../events/record.js';
import { AppError } from '../../http/errors.js';
import { ACTIVE_STATUSES } from './schemas.js';

export type EnrolmentAction =
  | { kind: 'update'; progress?: number; due_at?: string | null }
  | { kind: 'complete'; score?: number | null; completed_at: string }
  | { kind: 'withdraw' };

export interface Transition {
  changes: RowUpdate<'enrolments'> & { status: EnrolmentStatus };
  event: EventType;
  /** The enrolment stops being active: give its seat back. */
  releasesSeat: boolean;
  /** Nothing visible changes (e.g. a PATCH repeating the current values): write nothing, record nothing. */
  noop: boolean;
}

const FROM: Record<EnrolmentAction['kind'], EnrolmentStatus[]> = {
  update: ['enrolled', 'in_progress'],
  complete: ['enrolled', 'in_progress'],
  withdraw: ['enrolled', 'in_progress'],
};

export function transition(row: Row<'enrolments'>, action: EnrolmentAction, now: string): Transition {
  if (!FROM[action.kind].includes(row.status)) {
    throw new AppError('invalid_state', `A ${row.status} enrolment cannot be ${action.kind === 'update' ? 'changed' : action.kind === 'complete' ? 'completed' : 'withdrawn'}.`);
  }
  let changes: Transition['changes'];
  let event: EventType;
  switch (action.kind) {
    case 'update': {
      const progress = action.progress ?? row.progress;
      const starts = row.status === 'enrolled' && progress > 0;
      changes = {
        status: starts ? 'in_progress' : row.status,
        progress,
        due_at: action.due_at === undefined ? row.due_at : action.due_at,
        started_at: starts ? now : row.started_at,
      };
      event = 'enrolment.updated';
      const noop = changes.status === row.status && changes.progress === row.progress && changes.due_at === row.due_at;
      return { changes: { ...changes, updated_at: now }, event, releasesSeat: false, noop };
    }
    case 'complete':
      changes = {
        status: 'completed',
        progress: 100,
        score: action.score === undefined ? row.score : action.score,
        completed_at: action.completed_at,
        started_at: row.started_at ?? action.completed_at,
      };
      event = 'enrolment.completed';
      break;
    case 'withdraw':
      changes = { status: 'withdrawn', withdrawn_at: now };
      event = 'enrolment.withdrawn';
      break;
  }
  const releasesSeat = ACTIVE_STATUSES.includes(row.status) && !ACTIVE_STATUSES.includes(changes.status);
  return { changes: { ...changes, updated_at: now }, event, releasesSeat, noop: false };
}
