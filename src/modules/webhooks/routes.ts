import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { authOf } from '../../auth/bearer.js';
import { errorResponses } from '../../http/errors.js';
import { IdParams } from '../../http/schemas.js';
import { withLinkHeader } from '../../http/pagination.js';
import { CacheHeaders, ConditionalHeaders, etagOf, ifMatchOf, notModifiedResponse, sendWithEtag } from '../../http/etag.js';
import { IdempotencyHeaders } from '../../http/idempotency.js';
import {
  CreateWebhookBody,
  DeliveryListQuery,
  DeliveryPage,
  UpdateWebhookBody,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
  WebhookEndpointWithSecretSchema,
  WebhookListQuery,
  WebhookPage,
} from './schemas.js';
import * as service from './service.js';

const tags = ['Webhooks'];
const DeliveryParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64 }),
  delivery_id: Type.String({ minLength: 1, maxLength: 64 }),
});

export const webhookRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.addSchema(WebhookEndpointSchema);
  app.addSchema(WebhookEndpointWithSecretSchema);
  app.addSchema(WebhookDeliverySchema);

  app.get(
    '/v1/webhooks',
    {
      config: { scope: 'webhooks:read' },
      schema: { tags, summary: 'List webhook endpoints', querystring: WebhookListQuery, response: { 200: WebhookPage } },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await service.listEndpoints(ctx, authOf(request).orgId, request.query), ctx.config.publicUrl),
  );

  app.post(
    '/v1/webhooks',
    {
      config: { scope: 'webhooks:write', idempotent: true },
      schema: {
        tags,
        summary: 'Register a webhook endpoint (the response carries its signing secret, once)',
        headers: IdempotencyHeaders,
        body: CreateWebhookBody,
        response: { 201: Type.Ref(WebhookEndpointWithSecretSchema), ...errorResponses(422) },
      },
    },
    async (request, reply) => {
      const endpoint = await service.createEndpoint(ctx, authOf(request).orgId, request.body);
      reply.header('Cache-Control', 'no-store').header('Location', `/v1/webhooks/${endpoint.id}`);
      return reply.code(201).send(endpoint);
    },
  );

  app.get(
    '/v1/webhooks/:id',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        summary: 'Get a webhook endpoint',
        params: IdParams(),
        headers: CacheHeaders,
        response: { 200: Type.Ref(WebhookEndpointSchema), ...notModifiedResponse, ...errorResponses(404) },
      },
    },
    async (request, reply) => sendWithEtag(request, reply, await service.getEndpoint(ctx, authOf(request).orgId, request.params.id)),
  );

  app.patch(
    '/v1/webhooks/:id',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        summary: 'Change a webhook endpoint (URL, events, description, enabled/disabled)',
        params: IdParams(),
        headers: ConditionalHeaders,
        body: UpdateWebhookBody,
        response: { 200: Type.Ref(WebhookEndpointSchema), ...errorResponses(404, 412, 422) },
      },
    },
    async (request, reply) => {
      const endpoint = await service.updateEndpoint(ctx, authOf(request).orgId, request.params.id, request.body, ifMatchOf(request));
      return reply.header('ETag', etagOf(endpoint)).send(endpoint);
    },
  );

  app.delete(
    '/v1/webhooks/:id',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        summary: 'Delete a webhook endpoint and its delivery log',
        params: IdParams(),
        headers: ConditionalHeaders,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...errorResponses(404, 412) },
      },
    },
    async (request, reply) => {
      await service.deleteEndpoint(ctx, authOf(request).orgId, request.params.id, ifMatchOf(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/v1/webhooks/:id/rotate-secret',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        summary: 'Replace the signing secret; the old one also signs for 24 hours',
        params: IdParams(),
        response: { 200: Type.Ref(WebhookEndpointWithSecretSchema), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      return service.rotateSecret(ctx, authOf(request).orgId, request.params.id);
    },
  );

  app.post(
    '/v1/webhooks/:id/test',
    {
      config: { scope: 'webhooks:write', idempotent: true },
      schema: {
        tags,
        summary: 'Send a webhook.test event to this endpoint; answers with its delivery',
        params: IdParams(),
        headers: IdempotencyHeaders,
        response: { 202: Type.Ref(WebhookDeliverySchema), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => reply.code(202).send(await service.sendTestEvent(ctx, authOf(request).orgId, request.params.id)),
  );

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        summary: "The endpoint's deliveries, each with its attempts",
        params: IdParams(),
        querystring: DeliveryListQuery,
        response: { 200: DeliveryPage, ...errorResponses(404) },
      },
    },
    async (request, reply) =>
      withLinkHeader(
        request,
        reply,
        await service.listDeliveries(ctx, authOf(request).orgId, request.params.id, request.query),
        ctx.config.publicUrl,
      ),
  );

  app.post(
    '/v1/webhooks/:id/deliveries/:delivery_id/retry',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        summary: 'Attempt a delivery again now',
        params: DeliveryParams,
        response: { 202: Type.Ref(WebhookDeliverySchema), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) =>
      reply.code(202).send(await service.retryDelivery(ctx, authOf(request).orgId, request.params.id, request.params.delivery_id)),
  );
};
