// Bearer verification for every /v1 route. A route declares what it needs next to its schema:
//   config: { scope: 'courses:read' }   — a token with that scope
//   config: { public: true }            — no token (the token endpoint only)
// A /v1 route that declares neither is refused at start-up, so no route can forget its check.
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { AppError } from '../http/errors.js';
import type { AuthContext, TokenService } from './tokens.js';
import type { Scope } from './scopes.js';
import { bindAuthToLog } from '../http/operations.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    scope?: Scope;
    public?: boolean;
    /** The route answers errors in the OAuth 2.0 format (RFC 6749 §5.2) instead of problem+json. */
    oauthErrors?: boolean;
  }
  interface FastifyRequest {
    auth: AuthContext | null;
  }
}

export function requiresToken(route: Pick<RouteOptions, 'url' | 'config'>): boolean {
  return route.url.startsWith('/v1/') && !(route.config as { public?: boolean } | undefined)?.public;
}

/** Checks at registration that every /v1 route declares a scope or is explicitly public. */
export function assertRouteDeclaresAccess(route: RouteOptions): void {
  const config = route.config as { scope?: string; public?: boolean } | undefined;
  if (requiresToken(route) && !config?.scope) {
    throw new Error(`route ${route.method} ${route.url} declares neither config.scope nor config.public`);
  }
}

const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/;

export function registerBearerAuth(app: FastifyInstance, tokens: TokenService): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const config = request.routeOptions.config;
    if (!request.routeOptions.url || !requiresToken({ url: request.routeOptions.url, config })) return;
    const header = request.headers.authorization;
    const match = header ? BEARER.exec(header) : null;
    if (!match) {
      throw new AppError('invalid_token', 'Send an access token from POST /v1/oauth/token as "Authorization: Bearer <token>".', {
        headers: { 'WWW-Authenticate': 'Bearer realm="lms", error="invalid_token"' },
      });
    }
    const auth = await tokens.verify(match[1]);
    if (!auth) {
      throw new AppError('invalid_token', 'The access token is invalid, expired or revoked. Request a new one.', {
        headers: { 'WWW-Authenticate': 'Bearer realm="lms", error="invalid_token"' },
      });
    }
    request.auth = auth;
    bindAuthToLog(request, auth.appId, auth.orgId);
    const scope = config.scope;
    if (scope && !auth.scopes.includes(scope)) {
      throw new AppError('insufficient_scope', `This endpoint needs the "${scope}" scope.`, {
        headers: { 'WWW-Authenticate': `Bearer realm="lms", error="insufficient_scope", scope="${scope}"` },
      });
    }
  });
}

/** The caller's auth context on a route that requires a token (always set there). */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new AppError('invalid_token');
  return request.auth;
}
