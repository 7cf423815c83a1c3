// Resource ids: a type prefix plus a ULID (48-bit time + 80 random bits), so they sort by creation time
// (keyset pagination orders by id) and cannot be guessed.
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

export const ID_PREFIXES = {
  organization: 'org',
  user: 'usr',
  course: 'crs',
  category: 'cat',
  enrolment: 'enr',
  certificate: 'crt',
  webhook: 'whk',
  event: 'evt',
  delivery: 'dlv',
  application: 'app',
  attempt: 'att',
  developer: 'dev',
  operator: 'opr',
  audit: 'aud',
  mail: 'mail',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${ulid()}`;
}
