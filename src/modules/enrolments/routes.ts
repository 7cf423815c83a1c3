// /v1/enrolments (and a learner's enrolments): thin routes over enrolments/service.ts.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { authOf } from '../../auth/bearer.js';
import { errorResponses } from '../../http/errors.js';
import { IdParams } from '../../http/schemas.js';
import { withLinkHeader } from '../../http/pagination.js';
import { CacheHeaders, ConditionalHeaders, etagOf, ifMatchOf, notModifiedResponse, sendWithEtag } from '../../http/etag.js';
import { IdempotencyHeaders } from '../../http/idempotency.js';
import { itemProblem } from '../people/routes.js';
import {
  EnrolmentBulk,
  EnrolmentBulkResult,
  EnrolmentComplete,
  EnrolmentCreate,
  EnrolmentListQuery,
  EnrolmentPage,
  EnrolmentPatch,
  EnrolmentSchema,
  EnrolmentWithdraw,
  LearnerEnrolmentListQuery,
} from './schemas.js';
import * as service from './service.js';
import { bulkEnrol } from './bulk.js';

/** complete and withdraw may be sent without a body: treat a missing one as {} before validation. */
async function emptyBodyAsObject(request: FastifyRequest): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {};
}

export const enrolmentRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.addSchema(EnrolmentSchema);
  const Enrolment = Type.Ref(EnrolmentSchema);

  app.get(
    '/v1/enrolments',
    {
      config: { scope: 'enrolments:read' },
      schema: { tags: ['Enrolments'], summary: 'List enrolments', querystring: EnrolmentListQuery, response: { 200: EnrolmentPage } },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await service.listEnrolments(ctx, authOf(request).orgId, request.query), ctx.config.publicUrl),
  );

  app.post(
    '/v1/enrolments',
    {
      config: { scope: 'enrolments:write', idempotent: true },
      schema: {
        tags: ['Enrolments'],
        summary: 'Enrol a learner in a published course (takes a seat)',
        headers: IdempotencyHeaders,
        body: EnrolmentCreate,
        response: { 201: Enrolment, ...errorResponses(404, 409, 422) },
      },
    },
    async (request, reply) => {
      const enrolment = await service.createEnrolment(ctx, authOf(request).orgId, request.body);
      return reply.code(201).header('Location', `/v1/enrolments/${enrolment.id}`).header('ETag', etagOf(enrolment)).send(enrolment);
    },
  );

  app.post(
    '/v1/enrolments/bulk',
    {
      config: { scope: 'enrolments:write', idempotent: true },
      schema: {
        tags: ['Enrolments'],
        summary: 'Enrol up to 500 learners (by learner_id, email or external_id); one result per item, in input order',
        headers: IdempotencyHeaders,
        body: EnrolmentBulk,
        response: { 200: EnrolmentBulkResult, ...errorResponses(409, 422) },
      },
    },
    async (request) => {
      const outcomes = await bulkEnrol(ctx, authOf(request).orgId, request.body.enrolments);
      return {
        object: 'bulk_result' as const,
        data: outcomes.map((o) =>
          o.result === 'error'
            ? { index: o.index, result: o.result, error: itemProblem(o.error) }
            : { index: o.index, result: 'created' as const, enrolment: o.value },
        ),
      };
    },
  );

  app.get(
    '/v1/enrolments/:id',
    {
      config: { scope: 'enrolments:read' },
      schema: { tags: ['Enrolments'], summary: 'Get an enrolment', params: IdParams(), headers: CacheHeaders, response: { 200: Enrolment, ...notModifiedResponse, ...errorResponses(404) } },
    },
    async (request, reply) => sendWithEtag(request, reply, await service.getEnrolment(ctx, authOf(request).orgId, request.params.id)),
  );

  app.patch(
    '/v1/enrolments/:id',
    {
      config: { scope: 'enrolments:write' },
      schema: {
        tags: ['Enrolments'],
        summary: 'Record progress (progress > 0 starts the enrolment) or change due_at',
        params: IdParams(),
        headers: ConditionalHeaders,
        body: EnrolmentPatch,
        response: { 200: Enrolment, ...errorResponses(404, 409, 412) },
      },
    },
    async (request, reply) => {
      const enrolment = await service.updateEnrolment(ctx, authOf(request).orgId, request.params.id, request.body, ifMatchOf(request));
      return reply.header('ETag', etagOf(enrolment)).send(enrolment);
    },
  );

  app.post(
    '/v1/enrolments/:id/complete',
    {
      preValidation: emptyBodyAsObject,
      config: { scope: 'enrolments:write', idempotent: true },
      schema: {
        tags: ['Enrolments'],
        summary: 'Complete an enrolment (frees the seat; issues a certificate if the course grants one)',
        params: IdParams(),
        headers: IdempotencyHeaders,
        body: EnrolmentComplete,
        response: { 200: Enrolment, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      const enrolment = await service.completeEnrolment(ctx, authOf(request).orgId, request.params.id, request.body ?? {});
      return reply.header('ETag', etagOf(enrolment)).send(enrolment);
    },
  );

  app.post(
    '/v1/enrolments/:id/withdraw',
    {
      preValidation: emptyBodyAsObject,
      config: { scope: 'enrolments:write', idempotent: true },
      schema: {
        tags: ['Enrolments'],
        summary: 'Withdraw an enrolment (frees the seat)',
        params: IdParams(),
        headers: IdempotencyHeaders,
        body: EnrolmentWithdraw,
        response: { 200: Enrolment, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      const enrolment = await service.withdrawEnrolment(ctx, authOf(request).orgId, request.params.id);
      return reply.header('ETag', etagOf(enrolment)).send(enrolment);
    },
  );

  app.get(
    '/v1/learners/:id/enrolments',
    {
      config: { scope: 'enrolments:read' },
      schema: {
        tags: ['Learners'],
        summary: "A learner's enrolments",
        params: IdParams(),
        querystring: LearnerEnrolmentListQuery,
        response: { 200: EnrolmentPage, ...errorResponses(404) },
      },
    },
    async (request, reply) =>
      withLinkHeader(
        request,
        reply,
        await service.listEnrolmentsOfLearner(ctx, authOf(request).orgId, request.params.id, request.query),
        ctx.config.publicUrl,
      ),
  );
};
