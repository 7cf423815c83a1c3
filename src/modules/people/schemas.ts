// Users and learners: one table (users), two views. A learner is a user whose roles include "learner", shown
// without roles and with object "learner"; its id is the user's id.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, jsonList, resourceFields } from '../../http/schemas.js';
import { PageQuery, pageOf } from '../../http/pagination.js';
import type { Row, UserStatus } from '../../db/types.js';

export const ROLES = ['learner', 'manager', 'admin'] as const;
export type Role = (typeof ROLES)[number];

const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254, description: 'Unique within the organization, case-insensitively.' });
const Name = Type.String({ minLength: 1, maxLength: 100 });
const ExternalId = Type.String({ minLength: 1, maxLength: 255, description: "Your own id for the person; unique within the organization." });
const Department = Type.String({ minLength: 1, maxLength: 100 });
const Role = Type.Union(ROLES.map((r) => Type.Literal(r)));
const Roles = Type.Array(Role, { uniqueItems: true, maxItems: 3 });
const Status = Type.Union([Type.Literal('active'), Type.Literal('suspended'), Type.Literal('removed')]);
/** Writable statuses: removal goes through DELETE. */
const SettableStatus = Type.Union([Type.Literal('active'), Type.Literal('suspended')]);

export const UserSchema = Type.Object(
  {
    ...resourceFields('user'),
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    external_id: Nullable(Type.String()),
    department: Nullable(Type.String()),
    roles: Type.Array(Role),
    status: Status,
  },
  { $id: 'User', title: 'User', description: 'A person account in the organization.' },
);
export type User = Static<typeof UserSchema>;

export const LearnerSchema = Type.Object(
  {
    ...resourceFields('learner'),
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    external_id: Nullable(Type.String()),
    department: Nullable(Type.String()),
    status: Status,
  },
  { $id: 'Learner', title: 'Learner', description: 'A user with the learner role; `id` is the user id.' },
);
export type Learner = Static<typeof LearnerSchema>;

export const UserCreate = Type.Object(
  {
    email: Email,
    first_name: Name,
    last_name: Name,
    external_id: Type.Optional(Nullable(ExternalId)),
    department: Type.Optional(Nullable(Department)),
    roles: Type.Optional({ ...Roles, description: 'Default ["learner"].' }),
    status: Type.Optional(SettableStatus),
  },
  { additionalProperties: false, title: 'UserCreate' },
);
export type UserCreateInput = Static<typeof UserCreate>;

export const UserPatch = Type.Object(
  {
    email: Type.Optional(Email),
    first_name: Type.Optional(Name),
    last_name: Type.Optional(Name),
    external_id: Type.Optional(Nullable(ExternalId)),
    department: Type.Optional(Nullable(Department)),
    roles: Type.Optional(Roles),
    status: Type.Optional(SettableStatus),
  },
  { additionalProperties: false, title: 'UserPatch' },
);
export type UserPatchInput = Static<typeof UserPatch>;

export const LearnerCreate = Type.Object(
  {
    email: Email,
    first_name: Name,
    last_name: Name,
    external_id: Type.Optional(Nullable(ExternalId)),
    department: Type.Optional(Nullable(Department)),
  },
  { additionalProperties: false, title: 'LearnerCreate' },
);
export type LearnerCreateInput = Static<typeof LearnerCreate>;

export const LearnerPatch = Type.Object(
  {
    email: Type.Optional(Email),
    first_name: Type.Optional(Name),
    last_name: Type.Optional(Name),
    external_id: Type.Optional(Nullable(ExternalId)),
    department: Type.Optional(Nullable(Department)),
    status: Type.Optional(SettableStatus),
  },
  { additionalProperties: false, title: 'LearnerPatch' },
);
export type LearnerPatchInput = Static<typeof LearnerPatch>;

export const BULK_MAX = 500;

export const LearnerBulk = Type.Object(
  {
    learners: Type.Array(LearnerCreate, {
      minItems: 1,
      maxItems: BULK_MAX,
      description: 'Each item is matched to an existing user by external_id (when given) or else by e-mail, then updated; otherwise created.',
    }),
  },
  { additionalProperties: false, title: 'LearnerBulk' },
);

const BulkProblem = Type.Object({
  code: Type.String(),
  status: Type.Integer(),
  title: Type.String(),
  detail: Type.String(),
});

export const LearnerBulkResult = Type.Object(
  {
    object: Type.Literal('bulk_result'),
    data: Type.Array(
      Type.Object({
        index: Type.Integer({ description: 'Position of the item in the request.' }),
        result: Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('error')]),
        learner: Type.Optional(Type.Ref(LearnerSchema)),
        error: Type.Optional(BulkProblem),
      }),
    ),
  },
  { title: 'LearnerBulkResult' },
);

const PersonFilters = {
  email: Type.Optional(Type.String({ maxLength: 254, description: 'Exact e-mail, case-insensitive.' })),
  external_id: Type.Optional(Type.String({ maxLength: 255 })),
  status: Type.Optional(Status),
};

export const UserListQuery = Type.Object(
  { ...PageQuery, ...PersonFilters, role: Type.Optional(Role) },
  { additionalProperties: false },
);
export const LearnerListQuery = Type.Object(
  { ...PageQuery, ...PersonFilters, department: Type.Optional(Type.String({ maxLength: 100 })) },
  { additionalProperties: false },
);

export const LearnerCertificateListQuery = Type.Object(
  {
    ...PageQuery,
    course_id: Type.Optional(Type.String({ maxLength: 64 })),
    status: Type.Optional(Type.Union([Type.Literal('valid'), Type.Literal('expired'), Type.Literal('revoked')])),
  },
  { additionalProperties: false },
);

export const UserPage = pageOf(Type.Ref(UserSchema), 'UserPage');
export const LearnerPage = pageOf(Type.Ref(LearnerSchema), 'LearnerPage');

export { type UserStatus };

export function rolesOf(row: Pick<Row<'users'>, 'roles'>): Role[] {
  return jsonList<Role>(row.roles);
}

export function toUser(row: Row<'users'>): User {
  return {
    id: row.id,
    object: 'user',
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    external_id: row.external_id,
    department: row.department,
    roles: rolesOf(row),
    status: row.status,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function toLearner(row: Row<'users'>): Learner {
  return {
    id: row.id,
    object: 'learner',
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    external_id: row.external_id,
    department: row.department,
    status: row.status,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
