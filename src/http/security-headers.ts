// Security headers on every response (HTML pages and the API), through @fastify/helmet:
// - X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer, X-Frame-Options and frame-ancestors 'none'
//   (no page of ours may be framed: clickjacking), Cross-Origin-Opener/Resource-Policy same-origin (HSTS is sent
//   by src/http/operations.ts on HTTPS);
// - a strict Content-Security-Policy for the server-rendered pages (/portal, /console, /verify): only our own
//   scripts, styles and images, forms post only to us. /docs sets its own CSP (swagger-ui's static CSP, with the
//   hashes of its inline code) which takes precedence there;
// - /v1 answers (and every problem) are `Cache-Control: no-store` unless a route chose otherwise: they carry
//   organization data and tokens, which no shared cache should keep;
// - no X-Powered-By (Fastify sends none) and no CORS headers: the API is for servers, not for other sites' scripts.
import type { FastifyInstance } from 'fastify';
import helmet from '@fastify/helmet';

export const PAGE_CSP = {
  'default-src': ["'self'"],
  'base-uri': ["'none'"],
  'object-src': ["'none'"],
  'frame-ancestors': ["'none'"],
  'form-action': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'script-src': ["'self'"],
  'script-src-attr': ["'none'"],
  'style-src': ["'self'", "'unsafe-inline'"],
};

export async function registerSecurityHeaders(app: FastifyInstance): Promise<void> {
  await app.register(helmet, {
    global: true,
    contentSecurityPolicy: { useDefaults: false, directives: PAGE_CSP },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    crossOriginEmbedderPolicy: false,
    hsts: false,
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.hasHeader('cache-control')) return payload;
    const problem = String(reply.getHeader('content-type') ?? '').startsWith('application/problem+json');
    if (problem || request.url.startsWith('/v1/')) reply.header('Cache-Control', 'no-store');
    return payload;
  });
}
