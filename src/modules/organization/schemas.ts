import { Type, type Static } from '@sinclair/typebox';
import { Timestamp, resourceFields } from '../../http/schemas.js';
import type { Row } from '../../db/types.js';

export const OrganizationSchema = Type.Object(
  { ...resourceFields('organization'), name: Type.String(), slug: Type.String() },
  { $id: 'Organization', title: 'Organization' },
);
export type Organization = Static<typeof OrganizationSchema>;

export const SeatAllowanceSchema = Type.Object(
  {
    object: Type.Literal('seat_allowance'),
    total: Type.Integer({ description: 'Seats the organization has.' }),
    in_use: Type.Integer({ description: 'Enrolments that are enrolled or in progress.' }),
    available: Type.Integer({ description: 'total − in_use (never below 0).' }),
    updated_at: Timestamp,
  },
  { $id: 'SeatAllowance', title: 'SeatAllowance' },
);
export type SeatAllowance = Static<typeof SeatAllowanceSchema>;

export function toOrganization(row: Row<'organizations'>): Organization {
  return { id: row.id, object: 'organization', name: row.name, slug: row.slug, created_at: row.created_at, updated_at: row.updated_at };
}

export function toSeatAllowance(row: Row<'seat_allowances'>): SeatAllowance {
  return {
    object: 'seat_allowance',
    total: row.total,
    in_use: row.in_use,
    available: Math.max(0, row.total - row.in_use),
    updated_at: row.updated_at,
  };
}
