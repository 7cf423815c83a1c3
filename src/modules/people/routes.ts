// /v1/users and /v1/learners: thin routes over people/service.ts.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { authOf } from '../../auth/bearer.js';
import { ERROR_CODES, errorResponses, type AppError } from '../../http/errors.js';
import { IdParams } from '../../http/schemas.js';
import { withLinkHeader } from '../../http/pagination.js';
import { CacheHeaders, ConditionalHeaders, etagOf, ifMatchOf, notModifiedResponse, sendWithEtag } from '../../http/etag.js';
import { IdempotencyHeaders } from '../../http/idempotency.js';
import {
  LearnerBulk,
  LearnerBulkResult,
  LearnerCreate,
  LearnerListQuery,
  LearnerPage,
  LearnerPatch,
  LearnerSchema,
  UserCreate,
  UserListQuery,
  UserPage,
  UserPatch,
  UserSchema,
} from './schemas.js';
import * as service from './service.js';
import { CertificatePage, CertificateSchema } from '../certificates/schemas.js';
import { LearnerCertificateListQuery } from './schemas.js';

/** A bulk item's problem: the fields of problem+json that make sense outside a response. */
export function itemProblem(err: AppError) {
  return { code: err.code, status: err.status, title: ERROR_CODES[err.code].title, detail: err.message };
}

export const peopleRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.addSchema(UserSchema);
  app.addSchema(LearnerSchema);
  const User = Type.Ref(UserSchema);
  const Learner = Type.Ref(LearnerSchema);

  // ---- users ----
  app.get(
    '/v1/users',
    {
      config: { scope: 'users:read' },
      schema: { tags: ['Users'], summary: 'List users', querystring: UserListQuery, response: { 200: UserPage } },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await service.listUsers(ctx, authOf(request).orgId, request.query), ctx.config.publicUrl),
  );

  app.post(
    '/v1/users',
    {
      config: { scope: 'users:write', idempotent: true },
      schema: { tags: ['Users'], summary: 'Create a user', headers: IdempotencyHeaders, body: UserCreate, response: { 201: User, ...errorResponses(409, 422) } },
    },
    async (request, reply) => {
      const user = await service.createUser(ctx, authOf(request).orgId, request.body);
      return reply.code(201).header('Location', `/v1/users/${user.id}`).header('ETag', etagOf(user)).send(user);
    },
  );

  app.get(
    '/v1/users/:id',
    {
      config: { scope: 'users:read' },
      schema: { tags: ['Users'], summary: 'Get a user', params: IdParams(), headers: CacheHeaders, response: { 200: User, ...notModifiedResponse, ...errorResponses(404) } },
    },
    async (request, reply) => sendWithEtag(request, reply, await service.getUser(ctx, authOf(request).orgId, request.params.id)),
  );

  app.patch(
    '/v1/users/:id',
    {
      config: { scope: 'users:write' },
      schema: {
        tags: ['Users'],
        summary: 'Change a user',
        params: IdParams(),
        headers: ConditionalHeaders,
        body: UserPatch,
        response: { 200: User, ...errorResponses(404, 409, 412) },
      },
    },
    async (request, reply) => {
      const user = await service.updateUser(ctx, authOf(request).orgId, request.params.id, request.body, ifMatchOf(request));
      return reply.header('ETag', etagOf(user)).send(user);
    },
  );

  app.delete(
    '/v1/users/:id',
    {
      config: { scope: 'users:write' },
      schema: {
        tags: ['Users'],
        summary: 'Remove a user (status removed; a learner’s active enrolments are withdrawn)',
        params: IdParams(),
        headers: ConditionalHeaders,
        response: { 200: User, ...errorResponses(404, 412) },
      },
    },
    async (request, reply) => {
      const user = await service.removeUser(ctx, authOf(request).orgId, request.params.id, ifMatchOf(request));
      return reply.header('ETag', etagOf(user)).send(user);
    },
  );

  // ---- learners ----
  app.get(
    '/v1/learners',
    {
      config: { scope: 'learners:read' },
      schema: { tags: ['Learners'], summary: 'List learners', querystring: LearnerListQuery, response: { 200: LearnerPage } },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await service.listLearners(ctx, authOf(request).orgId, request.query), ctx.config.publicUrl),
  );

  app.post(
    '/v1/learners',
    {
      config: { scope: 'learners:write', idempotent: true },
      schema: {
        tags: ['Learners'],
        summary: 'Add a learner (creates the user, or gives the learner role to the user with that e-mail)',
        headers: IdempotencyHeaders,
        body: LearnerCreate,
        response: { 201: Learner, ...errorResponses(409, 422) },
      },
    },
    async (request, reply) => {
      const learner = await service.createLearner(ctx, authOf(request).orgId, request.body);
      return reply.code(201).header('Location', `/v1/learners/${learner.id}`).header('ETag', etagOf(learner)).send(learner);
    },
  );

  app.post(
    '/v1/learners/bulk',
    {
      config: { scope: 'learners:write', idempotent: true },
      schema: {
        tags: ['Learners'],
        summary: 'Upsert up to 500 learners (by external_id, else e-mail); one result per item, in input order',
        headers: IdempotencyHeaders,
        body: LearnerBulk,
        response: { 200: LearnerBulkResult, ...errorResponses(409, 422) },
      },
    },
    async (request) => {
      const outcomes = await service.bulkUpsertLearners(ctx, authOf(request).orgId, request.body.learners);
      return {
        object: 'bulk_result' as const,
        data: outcomes.map((o) =>
          o.result === 'error' ? { index: o.index, result: o.result, error: itemProblem(o.error) } : { index: o.index, result: o.result, learner: o.value },
        ),
      };
    },
  );

  app.get(
    '/v1/learners/:id',
    {
      config: { scope: 'learners:read' },
      schema: { tags: ['Learners'], summary: 'Get a learner', params: IdParams(), headers: CacheHeaders, response: { 200: Learner, ...notModifiedResponse, ...errorResponses(404) } },
    },
    async (request, reply) => sendWithEtag(request, reply, await service.getLearner(ctx, authOf(request).orgId, request.params.id)),
  );

  app.patch(
    '/v1/learners/:id',
    {
      config: { scope: 'learners:write' },
      schema: {
        tags: ['Learners'],
        summary: 'Change a learner',
        params: IdParams(),
        headers: ConditionalHeaders,
        body: LearnerPatch,
        response: { 200: Learner, ...errorResponses(404, 409, 412) },
      },
    },
    async (request, reply) => {
      const learner = await service.updateLearner(ctx, authOf(request).orgId, request.params.id, request.body, ifMatchOf(request));
      return reply.header('ETag', etagOf(learner)).send(learner);
    },
  );

  app.delete(
    '/v1/learners/:id',
    {
      config: { scope: 'learners:write' },
      schema: {
        tags: ['Learners'],
        summary: 'Remove a learner (status removed; active enrolments are withdrawn, freeing seats; certificates stay)',
        params: IdParams(),
        headers: ConditionalHeaders,
        response: { 200: Learner, ...errorResponses(404, 412) },
      },
    },
    async (request, reply) => {
      const learner = await service.removeLearner(ctx, authOf(request).orgId, request.params.id, ifMatchOf(request));
      return reply.header('ETag', etagOf(learner)).send(learner);
    },
  );

  app.addSchema(CertificateSchema);
  app.get(
    '/v1/learners/:id/certificates',
    {
      config: { scope: 'certificates:read' },
      schema: {
        tags: ['Learners'],
        summary: "A learner's certificates (kept after the learner is removed)",
        params: IdParams(),
        querystring: LearnerCertificateListQuery,
        response: { 200: CertificatePage, ...errorResponses(404) },
      },
    },
    async (request, reply) =>
      withLinkHeader(
        request,
        reply,
        await service.listCertificatesOfLearner(ctx, authOf(request).orgId, request.params.id, request.query),
        ctx.config.publicUrl,
      ),
  );
};
