import { Type, type Static } from '@sinclair/typebox';
import { Nullable, NullableTimestamp, Timestamp, resourceFields } from '../../http/schemas.js';
import { PageQuery, pageOf } from '../../http/pagination.js';
import type { EnrolmentStatus, Row } from '../../db/types.js';

const Status = Type.Union([Type.Literal('enrolled'), Type.Literal('in_progress'), Type.Literal('completed'), Type.Literal('withdrawn')]);
const Percent = Type.Integer({ minimum: 0, maximum: 100 });

export const EnrolmentSchema = Type.Object(
  {
    ...resourceFields('enrolment'),
    learner_id: Type.String(),
    course_id: Type.String(),
    status: Status,
    progress: { ...Percent, description: 'Percent complete, 0–100.' },
    score: Nullable(Percent),
    enrolled_at: Timestamp,
    started_at: NullableTimestamp,
    completed_at: NullableTimestamp,
    withdrawn_at: NullableTimestamp,
    due_at: NullableTimestamp,
    overdue: Type.Boolean({ description: 'due_at has passed and the enrolment is neither completed nor withdrawn.' }),
    certificate_id: Nullable(Type.String()),
  },
  { $id: 'Enrolment', title: 'Enrolment' },
);
export type Enrolment = Static<typeof EnrolmentSchema>;

const DueAt = Nullable(Type.String({ format: 'date-time', description: 'When the learner should have completed the course.' }));

export const EnrolmentCreate = Type.Object(
  { learner_id: Type.String({ minLength: 1, maxLength: 64 }), course_id: Type.String({ minLength: 1, maxLength: 64 }), due_at: Type.Optional(DueAt) },
  { additionalProperties: false, title: 'EnrolmentCreate' },
);
export type EnrolmentCreateInput = Static<typeof EnrolmentCreate>;

export const EnrolmentPatch = Type.Object(
  {
    progress: Type.Optional({ ...Percent, description: 'Progress above 0 moves an enrolled enrolment to in_progress.' }),
    due_at: Type.Optional(DueAt),
  },
  { additionalProperties: false, title: 'EnrolmentPatch' },
);
export type EnrolmentPatchInput = Static<typeof EnrolmentPatch>;

export const EnrolmentComplete = Type.Object(
  {
    score: Type.Optional(Nullable(Percent)),
    completed_at: Type.Optional(Type.String({ format: 'date-time', description: 'Default: now. Not in the future.' })),
  },
  { additionalProperties: false, title: 'EnrolmentComplete' },
);
export type EnrolmentCompleteInput = Static<typeof EnrolmentComplete>;

export const EnrolmentWithdraw = Type.Object({}, { additionalProperties: false, title: 'EnrolmentWithdraw' });

export const BULK_MAX = 500;

export const EnrolmentBulkItem = Type.Object(
  {
    learner_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    email: Type.Optional(Type.String({ minLength: 3, maxLength: 254 })),
    external_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    course_id: Type.String({ minLength: 1, maxLength: 64 }),
    due_at: Type.Optional(DueAt),
  },
  { additionalProperties: false, title: 'EnrolmentBulkItem', description: 'Name the learner by exactly one of learner_id, email or external_id.' },
);
export type EnrolmentBulkItemInput = Static<typeof EnrolmentBulkItem>;

export const EnrolmentBulk = Type.Object(
  { enrolments: Type.Array(EnrolmentBulkItem, { minItems: 1, maxItems: BULK_MAX }) },
  { additionalProperties: false, title: 'EnrolmentBulk' },
);

export const EnrolmentBulkResult = Type.Object(
  {
    object: Type.Literal('bulk_result'),
    data: Type.Array(
      Type.Object({
        index: Type.Integer(),
        result: Type.Union([Type.Literal('created'), Type.Literal('error')]),
        enrolment: Type.Optional(Type.Ref(EnrolmentSchema)),
        error: Type.Optional(Type.Object({ code: Type.String(), status: Type.Integer(), title: Type.String(), detail: Type.String() })),
      }),
    ),
  },
  { title: 'EnrolmentBulkResult' },
);

export const EnrolmentListQuery = Type.Object(
  {
    ...PageQuery,
    learner_id: Type.Optional(Type.String({ maxLength: 64 })),
    course_id: Type.Optional(Type.String({ maxLength: 64 })),
    status: Type.Optional(Status),
  },
  { additionalProperties: false },
);
export const LearnerEnrolmentListQuery = Type.Object(
  { ...PageQuery, course_id: Type.Optional(Type.String({ maxLength: 64 })), status: Type.Optional(Status) },
  { additionalProperties: false },
);

export const EnrolmentPage = pageOf(Type.Ref(EnrolmentSchema), 'EnrolmentPage');

export const ACTIVE_STATUSES: EnrolmentStatus[] = ['enrolled', 'in_progress'];

/** The enrolment as the API shows it; `overdue` is derived from the clock at the time of reading. */
export function toEnrolment(row: Row<'enrolments'>, now: string): Enrolment {
  return {
    id: row.id,
    object: 'enrolment',
    learner_id: row.learner_id,
    course_id: row.course_id,
    status: row.status,
    progress: row.progress,
    score: row.score,
    enrolled_at: row.enrolled_at,
    started_at: row.started_at,
    completed_at: row.completed_at,
    withdrawn_at: row.withdrawn_at,
    due_at: row.due_at,
    overdue: row.due_at !== null && row.due_at < now && ACTIVE_STATUSES.includes(row.status),
    certificate_id: row.certificate_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
