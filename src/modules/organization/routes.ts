import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { authOf } from '../../auth/bearer.js';
import { errorResponses } from '../../http/errors.js';
import { OrganizationSchema, SeatAllowanceSchema } from './schemas.js';
import * as service from './service.js';

export const organizationRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.addSchema(OrganizationSchema);
  app.addSchema(SeatAllowanceSchema);

  app.get(
    '/v1/organization',
    {
      config: { scope: 'organization:read' },
      schema: {
        tags: ['Organization'],
        summary: "The caller's organization",
        response: { 200: Type.Ref(OrganizationSchema), ...errorResponses(404) },
      },
    },
    async (request) => service.getOrganization(ctx, authOf(request).orgId),
  );

  app.get(
    '/v1/seats',
    {
      config: { scope: 'seats:read' },
      schema: {
        tags: ['Seats'],
        summary: "The caller's seat allowance: total, in use, available",
        response: { 200: Type.Ref(SeatAllowanceSchema), ...errorResponses(404) },
      },
    },
    async (request) => service.getSeatAllowance(ctx, authOf(request).orgId),
  );
};
