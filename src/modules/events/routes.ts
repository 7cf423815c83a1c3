// GET /v1/events and /v1/events/{id}: the event log (see service.ts).
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { authOf } from '../../auth/bearer.js';
import { errorResponses } from '../../http/errors.js';
import { IdParams, Timestamp } from '../../http/schemas.js';
import { PageQuery, pageOf, withLinkHeader } from '../../http/pagination.js';
import { EVENT_TYPES } from '../../events/record.js';
import { getEvent, listEvents } from './service.js';
import { CacheHeaders, notModifiedResponse, sendWithEtag } from '../../http/etag.js';

export const EventSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('event'),
    type: Type.Union(EVENT_TYPES.map((t) => Type.Literal(t))),
    created_at: Timestamp,
    data: Type.Object({ object: Type.Unknown({ description: 'The resource as the API shows it, at the time of the event.' }) }),
  },
  { $id: 'Event', title: 'Event' },
);

export const EventListQuery = Type.Object(
  {
    ...PageQuery,
    type: Type.Optional(Type.Union(EVENT_TYPES.map((t) => Type.Literal(t)), { description: 'Only events of this type.' })),
    created_since: Type.Optional(Type.String({ format: 'date-time', description: 'Only events created at or after this instant.' })),
  },
  { additionalProperties: false },
);
export type EventListParams = Static<typeof EventListQuery>;

export const eventRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.addSchema(EventSchema);

  app.get(
    '/v1/events',
    {
      config: { scope: 'events:read' },
      schema: {
        tags: ['Events'],
        summary: "The organization's events and the catalogue events, oldest first (kept at least 30 days)",
        querystring: EventListQuery,
        response: { 200: pageOf(Type.Ref(EventSchema), 'EventPage') },
      },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await listEvents(ctx, authOf(request).orgId, request.query), ctx.config.publicUrl),
  );

  app.get(
    '/v1/events/:id',
    {
      config: { scope: 'events:read' },
      schema: {
        tags: ['Events'],
        summary: 'Get an event',
        params: IdParams(),
        headers: CacheHeaders,
        response: { 200: Type.Ref(EventSchema), ...notModifiedResponse, ...errorResponses(404) },
      },
    },
    async (request, reply) => sendWithEtag(request, reply, await getEvent(ctx, authOf(request).orgId, request.params.id)),
  );
};
