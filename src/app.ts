// buildApp(ctx): the Fastify instance with every plugin and module. It never listens (see server.ts), so
// tests drive the real app through inject() or a listener of their own.
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import formbody from '@fastify/formbody';
import { randomUUID } from 'node:crypto';
import type { AppContext } from './context.js';
import { registerConventions, requestIdFrom } from './http/conventions.js';
import { ProblemSchema } from './http/errors.js';
import { buildValidator } from './http/validation.js';
import { assertRouteDeclaresAccess, registerBearerAuth } from './auth/bearer.js';
import { authRoutes } from './auth/routes.js';
import { registerOpenApi } from './openapi.js';
import { healthRoutes } from './http/health.js';
import { registerRateLimit } from './http/rate-limit.js';
import { AccessLogController, metricsRoutes, registerOperations } from './http/operations.js';
import { registerRequestLimits } from './http/limits.js';
import { registerSecurityHeaders } from './http/security-headers.js';
import { catalogueRoutes } from './modules/catalogue/routes.js';
import { organizationRoutes } from './modules/organization/routes.js';
import { webPages } from './web/index.js';
import { registerIdempotency } from './http/idempotency.js';
import { peopleRoutes } from './modules/people/routes.js';
import { enrolmentRoutes } from './modules/enrolments/routes.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { eventRoutes } from './modules/events/routes.js';
import { certificateRoutes } from './modules/certificates/routes.js';

export interface BuildAppOptions {
  /** A pino logger (server.ts builds one with redaction); tests run without one. */
  loggerInstance?: FastifyServerOptions['loggerInstance'];
  /** Passed through to Fastify, e.g. an https/http2 server factory (see server.ts). */
  fastify?: Partial<FastifyServerOptions>;
}

export const LOG_REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.client_secret',
  '*.access_token',
  '*.secret',
  '*.token',
  '*.password',
  '*.cookie',
  'headers.authorization',
  'headers.cookie',
  'client_secret',
  'access_token',
  'secret',
  'token',
  'password',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["set-cookie"]',
];

export async function buildApp(ctx: AppContext, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.loggerInstance ? { loggerInstance: options.loggerInstance } : { logger: false }),
    bodyLimit: 1024 * 1024,
    requestIdHeader: false,
    // One access-log line per request, written after the response (with app and org): src/http/operations.ts.
    logController: new AccessLogController(),
    genReqId: (req) => requestIdFrom(req.headers['x-request-id'], randomUUID),
    trustProxy: ctx.config.trustProxy,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    schemaController: { compilersFactory: { buildValidator: ((schemas: Record<string, object>) => buildValidator(schemas)) as never } },
    ...options.fastify,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addSchema(ProblemSchema);
  app.decorate('ctx', ctx);

  // Order matters: these onRoute hooks must see every route, so they come before any route is added.
  const routes: RegisteredRoute[] = [];
  app.decorate('registeredRoutes', routes);
  app.addHook('onRoute', (route) => {
    assertRouteDeclaresAccess(route);
    for (const method of [route.method].flat()) {
      routes.push({ method: String(method), url: route.url, hidden: Boolean((route.schema as { hide?: boolean } | undefined)?.hide) });
    }
  });
  registerConventions(app);
  registerOperations(app, ctx);
  await registerSecurityHeaders(app); // before any plugin with routes, so that /docs gets them too
  registerRequestLimits(app);
  await registerOpenApi(app);
  registerRateLimit(app); // before bearer auth: its hooks straddle it (see rate-limit.ts)
  registerBearerAuth(app, ctx.tokens);
  registerIdempotency(app, ctx);
  await app.register(formbody);

  await app.register(healthRoutes, { ctx });
  await app.register(metricsRoutes, { ctx });
  await app.register(authRoutes, { ctx });
  await app.register(catalogueRoutes, { ctx });
  await app.register(organizationRoutes, { ctx });
  await app.register(webPages, { ctx });
  await app.register(peopleRoutes, { ctx });
  await app.register(enrolmentRoutes, { ctx });
  await app.register(webhookRoutes, { ctx });
  await app.register(eventRoutes, { ctx });
  await app.register(certificateRoutes, { ctx });

  return app;
}

/** Every route the app serves (the inventory that the OpenAPI document must cover). */
export interface RegisteredRoute {
  method: string;
  url: string;
  hidden: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
    registeredRoutes: RegisteredRoute[];
  }
}
