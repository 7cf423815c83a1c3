// The one place where a state change records its event. Call it inside the transaction that made the change,
// with the resource exactly as the API shows it: a rolled-back change then emits nothing, and a committed one
// is never lost. The webhook outbox adds one delivery row per subscribed endpoint here, in the same transaction.
import type { Executor } from '../db/index.js';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { newId } from '../ids.js';
import { enqueueDeliveries } from '../webhooks/outbox.js';

export const EVENT_TYPES = [
  'learner.created',
  'learner.updated',
  'learner.removed',
  'user.created',
  'user.updated',
  'user.removed',
  'enrolment.created',
  'enrolment.updated',
  'enrolment.completed',
  'enrolment.withdrawn',
  'certificate.issued',
  'certificate.revoked',
  'certificate.expired',
  'seats.updated',
  'course.published',
  'course.updated',
  'course.retired',
  'webhook.test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface RecordedEvent {
  id: string;
  object: 'event';
  type: EventType;
  created_at: string;
  data: { object: unknown };
}

export interface EventInput {
  /** null for catalogue events, which reach every organization. */
  orgId: string | null;
  type: EventType;
  object: unknown;
  /** `webhook.test` only: the endpoint being tested, which alone receives the event. */
  onlyEndpointId?: string;
}

export async function recordEvent(db: Executor, clock: Clock, input: EventInput): Promise<RecordedEvent> {
  const event: RecordedEvent = {
    id: newId('event'),
    object: 'event',
    type: input.type,
    created_at: iso(clock.now()),
    data: { object: input.object },
  };
  await db
    .insertInto('events')
    .values({ id: event.id, org_id: input.orgId, type: event.type, payload: JSON.stringify(event), created_at: event.created_at })
    .execute();
  await enqueueDeliveries(db, { id: event.id, type: event.type, created_at: event.created_at, orgId: input.orgId, onlyEndpointId: input.onlyEndpointId });
  return event;
}
