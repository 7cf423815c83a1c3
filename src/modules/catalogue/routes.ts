import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { errorResponses } from '../../http/errors.js';
import { IdParams } from '../../http/schemas.js';
import { withLinkHeader } from '../../http/pagination.js';
import { CategoryListQuery, CategoryPage, CategorySchema, CourseListQuery, CoursePage, CourseSchema } from './schemas.js';
import * as service from './service.js';

export const catalogueRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.addSchema(CourseSchema);
  app.addSchema(CategorySchema);

  app.get(
    '/v1/courses',
    {
      config: { scope: 'courses:read' },
      schema: {
        tags: ['Courses'],
        summary: 'List published courses',
        querystring: CourseListQuery,
        response: { 200: CoursePage },
      },
    },
    async (request, reply) => withLinkHeader(request, reply, await service.listPublishedCourses(ctx, request.query), ctx.config.publicUrl),
  );

  app.get(
    '/v1/courses/:id',
    {
      config: { scope: 'courses:read' },
      schema: {
        tags: ['Courses'],
        summary: 'Get a published course',
        params: IdParams(),
        response: { 200: Type.Ref(CourseSchema), ...errorResponses(404) },
      },
    },
    async (request) => service.getPublishedCourse(ctx, request.params.id),
  );

  app.get(
    '/v1/course-categories',
    {
      config: { scope: 'courses:read' },
      schema: {
        tags: ['Courses'],
        summary: 'List course categories',
        querystring: CategoryListQuery,
        response: { 200: CategoryPage },
      },
    },
    async (request, reply) => withLinkHeader(request, reply, await service.listCategories(ctx, request.query), ctx.config.publicUrl),
  );

  app.get(
    '/v1/course-categories/:id',
    {
      config: { scope: 'courses:read' },
      schema: {
        tags: ['Courses'],
        summary: 'Get a course category',
        params: IdParams(),
        response: { 200: Type.Ref(CategorySchema), ...errorResponses(404) },
      },
    },
    async (request) => service.getCategory(ctx, request.params.id),
  );
};
