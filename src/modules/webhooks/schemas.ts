import { Type, type Static } from '@sinclair/typebox';
import { Nullable, NullableTimestamp, Timestamp, resourceFields, jsonList } from '../../http/schemas.js';
import { PageQuery, pageOf } from '../../http/pagination.js';
import { EVENT_TYPES } from '../../events/record.js';
import type { Row } from '../../db/types.js';

export const SUBSCRIBABLE_TYPES = EVENT_TYPES.filter((t) => t !== 'webhook.test');

const EventTypeOrStar = Type.Union([...SUBSCRIBABLE_TYPES.map((t) => Type.Literal(t)), Type.Literal('*')], {
  description: 'An event type, or "*" for every type.',
});
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'https:// URL that receives the events.' });
const Events = Type.Array(EventTypeOrStar, { minItems: 1, maxItems: 50, uniqueItems: true });
const Description = Type.String({ maxLength: 500 });

export const WebhookEndpointSchema = Type.Object(
  {
    ...resourceFields('webhook_endpoint'),
    url: Type.String(),
    events: Type.Array(Type.String()),
    description: Nullable(Type.String()),
    status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
    disabled_reason: Nullable(Type.String({ description: 'Why the endpoint was disabled (410 Gone, days of failures, or by you).' })),
  },
  { $id: 'WebhookEndpoint', title: 'WebhookEndpoint' },
);
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>;

export const WebhookEndpointWithSecretSchema = Type.Object(
  {
    ...WebhookEndpointSchema.properties,
    secret: Type.String({ description: 'whsec_ + base64 key for verifying signatures. Shown only here: keep it.' }),
  },
  { $id: 'WebhookEndpointWithSecret', title: 'WebhookEndpointWithSecret' },
);
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecretSchema>;

export const CreateWebhookBody = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Nullable(Description)) },
  { additionalProperties: false },
);
export type CreateWebhookInput = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Nullable(Description)),
    status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateWebhookInput = Static<typeof UpdateWebhookBody>;

export const WebhookAttemptSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('webhook_attempt'),
    attempted_at: Timestamp,
    status_code: Nullable(Type.Integer({ description: 'HTTP status of the response; null when none came.' })),
    duration_ms: Type.Integer(),
    response_excerpt: Nullable(Type.String({ description: 'The first bytes of the response body.' })),
    error: Nullable(Type.String({ description: 'Why the attempt failed without a response (timeout, refused target, ...).' })),
  },
  { title: 'WebhookAttempt' },
);

export const WebhookDeliverySchema = Type.Object(
  {
    ...resourceFields('webhook_delivery'),
    endpoint_id: Type.String(),
    event_id: Type.String(),
    event_type: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
    attempt_count: Type.Integer(),
    next_attempt_at: NullableTimestamp,
    last_attempt_at: NullableTimestamp,
    last_status_code: Nullable(Type.Integer()),
    attempts: Type.Array(WebhookAttemptSchema),
  },
  { $id: 'WebhookDelivery', title: 'WebhookDelivery' },
);
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;

export const WebhookListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const WebhookPage = pageOf(Type.Ref(WebhookEndpointSchema), 'WebhookEndpointPage');
export const DeliveryListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')])),
  },
  { additionalProperties: false },
);
export const DeliveryPage = pageOf(Type.Ref(WebhookDeliverySchema), 'WebhookDeliveryPage');

export function toEndpoint(row: Row<'webhook_endpoints'>): WebhookEndpoint {
  return {
    id: row.id,
    object: 'webhook_endpoint',
    url: row.url,
    events: jsonList(row.events),
    description: row.description,
    status: row.status,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function toAttempt(row: Row<'webhook_attempts'>): Static<typeof WebhookAttemptSchema> {
  return {
    id: row.id,
    object: 'webhook_attempt',
    attempted_at: row.attempted_at,
    status_code: row.status_code,
    duration_ms: row.duration_ms,
    response_excerpt: row.response_excerpt,
    error: row.error,
  };
}

export function toDelivery(row: Row<'webhook_deliveries'> & { event_type: string }, attempts: Row<'webhook_attempts'>[]): WebhookDelivery {
  return {
    id: row.id,
    object: 'webhook_delivery',
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempt_count: row.attempts,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    last_attempt_at: row.last_attempt_at,
    last_status_code: row.last_status_code,
    attempts: attempts.map(toAttempt),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
