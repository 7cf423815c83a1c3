// What operators see of every request: one access-log line (request id, application, organization, route,
// status, duration — no secrets), request metrics by route pattern, Strict-Transport-Security on HTTPS, and
// GET /metrics in the Prometheus text format. Registered directly on the root instance (not encapsulated), before
// any route, so the hooks see every request. Kept cheap: these hooks run on every request of every benchmark.
import { LogController, type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { collectDatabaseGauges, httpRequestDuration, httpRequests, registry, tokensRefused } from '../metrics.js';
import { redactUrlForLog } from '../logging.js';

export const HSTS = 'max-age=31536000; includeSubDomains';
const TOKEN_ROUTE = '/v1/oauth/token';

/** Adds the caller's application and organization to every later log line of this request. */
export function bindAuthToLog(request: FastifyRequest, appId: string, orgId: string | null): void {
  const log = request.log as { setBindings?: (b: Record<string, unknown>) => void };
  log.setBindings?.({ app_id: appId, org_id: orgId });
}

/**
 * Fastify's request logging, reshaped: no "incoming request" line, and one "request completed" line written after
 * the response — so it carries the application and organization bound by auth — with a redacted URL, the route
 * pattern, the status and the duration. Every line also carries reqId (Fastify's per-request child logger).
 */
export class AccessLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const log = request.log as FastifyRequest['log'] & { isLevelEnabled?: (level: string) => boolean };
    if (!error && log.isLevelEnabled && !log.isLevelEnabled('info')) return;
    const line = {
      method: request.method,
      url: redactUrlForLog(request.url),
      route: request.routeOptions.url ?? null,
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 10) / 10,
      remote_address: request.ip,
    };
    if (error) log.error({ ...line, err: error }, 'request errored');
    else log.info(line, 'request completed');
  }
}

export function registerOperations(app: FastifyInstance, ctx: AppContext): void {
  // HTTPS answers tell browsers to stay on HTTPS. With TLS in the service every request is HTTPS; behind a
  // proxy (TRUST_PROXY) X-Forwarded-Proto says so. Plain-HTTP answers must not carry the header (RFC 6797 §7.2).
  if (ctx.config.tlsCert || ctx.config.trustProxy) {
    app.addHook('onRequest', (request, reply, done) => {
      if (request.protocol === 'https') reply.header('Strict-Transport-Security', HSTS);
      done();
    });
  }

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    // The route pattern (/v1/courses/:id), never the raw URL, keeps the label set small and free of ids.
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    httpRequests.inc(labels);
    httpRequestDuration.observe(labels, reply.elapsedTime / 1000);
    // The brute-force guard answers 429 before the token route runs; count it as a refusal too.
    if (reply.statusCode === 429 && route === TOKEN_ROUTE) tokensRefused.inc({ reason: 'rate_limited' });
    done();
  });
}

/** GET /metrics (registered after the OpenAPI plugin, so it appears in the document under Meta). */
export const metricsRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['Meta'],
        summary: 'Metrics in the Prometheus text format',
        description:
          'Request counts and latency by route and status, tokens issued and refused, webhook attempts by outcome, ' +
          'deliveries waiting and the age of the oldest, database pool use, and Node.js process metrics. ' +
          'Not authenticated: expose it to your monitoring network only.',
        security: [],
        response: {
          200: {
            description: 'Prometheus text exposition format 0.0.4',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        },
      },
    },
    async (_request, reply) => {
      await collectDatabaseGauges(ctx);
      const body = await registry.metrics();
      return reply.header('Cache-Control', 'no-store').type(registry.contentType).send(body);
    },
  );
};
