// The OpenAPI 3.1 document, generated from the same TypeBox schemas that validate requests and serialize
// responses. Scopes are declared once on each route (config.scope) and appear here as OAuth2 client-credentials
// security requirements; the common error responses are added to every /v1 operation from the error table.
import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { SCOPES } from './auth/scopes.js';
import { errorResponses } from './http/errors.js';
import { requiresToken } from './auth/bearer.js';

export const API_VERSION = '1.0';

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  const publicUrl = app.ctx.config.publicUrl;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Learning-Management Integration API',
        version: API_VERSION,
        description:
          'Provision learners, read the published course catalogue, enrol learners within your seat allowance, collect ' +
          'certificates and receive signed webhooks. Every `/v1` endpoint except the token endpoint needs a bearer token ' +
          'from `POST /v1/oauth/token`. Errors are RFC 9457 problem details with a stable `code`.',
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        contact: { name: 'API support', email: 'api-support@lmsapi.dev' },
      },
      servers: [{ url: publicUrl }],
      components: {
        securitySchemes: {
          oauth2: {
            type: 'oauth2',
            description: 'OAuth 2.0 client credentials. Tokens live 1 hour; there is no refresh token.',
            flows: { clientCredentials: { tokenUrl: `${publicUrl}/v1/oauth/token`, scopes: { ...SCOPES } } },
          },
        },
      },
      tags: [
        { name: 'Authentication', description: 'Exchange client credentials for an access token.' },
        { name: 'Organization', description: "The caller's organization." },
        { name: 'Seats', description: 'Seat total and seats in use.' },
        { name: 'Courses', description: 'The published course catalogue and its categories.' },
        { name: 'Users', description: "The organization's user accounts." },
        { name: 'Learners', description: 'The users with the learner role; bulk upsert.' },
        { name: 'Enrolments', description: 'Enrolments within the seat allowance, and their state changes.' },
        { name: 'Certificates', description: "Certificates earned by the organization's learners: list, PDF, revoke." },
        { name: 'Verification', description: 'The public certificate verification page behind every verification URL and QR code (no token).' },
        { name: 'Meta', description: 'Health, readiness and this description.' },
        { name: 'Developer portal (HTML)', description: 'Server-rendered pages for developers at /portal: sign in by e-mail, apply for credentials, reset secrets.' },
        { name: 'Operator console (HTML)', description: 'Server-rendered pages for operators at /console: review applications, organizations, catalogue, audit log.' },
      ],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transform: ({ schema, url, route }) => {
      const s = { ...(schema ?? {}) } as Record<string, any>;
      const scope = (route.config as { scope?: string } | undefined)?.scope;
      if (scope) s.security = [{ oauth2: [scope] }];
      if (!('security' in s)) s.security = [];
      if (url.startsWith('/v1/')) {
        const common = requiresToken({ url, config: route.config }) ? [400, 401, 403, 429, 500] : [400, 429, 500];
        // Any request that can carry a body can be refused for its size or its media type (src/http/limits.ts).
        const methods = [route.method].flat().map(String);
        const carriesBody = methods.some((m) => m !== 'GET' && m !== 'HEAD');
        if (carriesBody && !(route.config as { oauthErrors?: boolean } | undefined)?.oauthErrors) common.push(413, 415);
        // An Idempotency-Key can be in use (409) or reused with another request (422) on any route that honours it.
        if ((route.config as { idempotent?: boolean } | undefined)?.idempotent) common.push(409, 422);
        s.response = { ...errorResponses(...common), ...(s.response ?? {}) };
      }
      return { schema: s as never, url };
    },
  });

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true, tryItOutEnabled: false },
    theme: { title: 'LMS Integration API reference' },
    staticCSP: true,
  });

  app.get(
    '/v1/openapi.json',
    {
      config: { public: true },
      schema: {
        tags: ['Meta'],
        summary: 'This API description (JSON)',
        security: [],
        response: {
          200: {
            description: 'The OpenAPI 3.1 document.',
            content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
          },
        },
      },
    },
    async (_request, reply) => reply.type('application/json; charset=utf-8').send(app.swagger()),
  );
  app.get(
    '/v1/openapi.yaml',
    {
      config: { public: true },
      schema: {
        tags: ['Meta'],
        summary: 'This API description (YAML)',
        security: [],
        response: { 200: { description: 'The OpenAPI 3.1 document.', content: { 'application/yaml': { schema: { type: 'string' } } } } },
      },
    },
    async (_request, reply) => reply.type('application/yaml; charset=utf-8').send(app.swagger({ yaml: true })),
  );
}
