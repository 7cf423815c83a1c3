// Rate limiting for /v1 (§1): a budget per application (the token's client id, never the IP address, so an
// integration behind a shared NAT is not punished for its neighbours), RATE_LIMIT_PER_MINUTE requests in a
// fixed one-minute window. Requests that carry no valid token (the token endpoint, the OpenAPI document, 401s,
// unknown paths) spend a separate, smaller budget per client address instead.
//
// Every /v1 response carries the IETF draft headers in structured-field form:
//   RateLimit-Policy: "default";q=1200;w=60      RateLimit: "default";r=1187;t=42
// and over the limit the answer is 429 problem+json `rate_limited` with Retry-After.
//
// Hooks: one onRequest hook runs *before* bearer authentication (address budget for calls that will not be
// authenticated), one preParsing hook runs after it (the application's budget, before the body is parsed), and an
// onSend hook charges the address budget for requests whose token was refused, so no /v1 answer lacks headers.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { AppError } from './errors.js';
import { requiresToken } from '../auth/bearer.js';
import { MemoryCounterStore, RedisCounterStore, type Count, type CounterStore } from './counters.js';
import { TokenGuard } from '../auth/token-guard.js';

const WINDOW_MS = 60_000;

interface Budget {
  name: string;
  limit: number;
  policyHeader: string;
  keyPrefix: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    tokenGuard: TokenGuard;
  }
  interface FastifyRequest {
    rateLimitCharged: boolean;
  }
}

function budget(name: string, limit: number, keyPrefix: string): Budget {
  return { name, limit, policyHeader: `"${name}";q=${limit};w=${WINDOW_MS / 1000}`, keyPrefix };
}

export function registerRateLimit(app: FastifyInstance): void {
  const { config } = app.ctx;
  let lastStoreError = 0;
  const onStoreError = (err: Error) => {
    // Logged at most every 10 s: a Redis outage must not flood the log with one line per request.
    if (Date.now() - lastStoreError > 10_000) {
      lastStoreError = Date.now();
      app.log.warn({ err }, 'rate-limit counter store unavailable: requests are let through uncounted');
    }
  };
  const store: CounterStore = config.redisUrl
    ? new RedisCounterStore(config.redisUrl, onStoreError)
    : new MemoryCounterStore(app.ctx.clock);
  app.addHook('onClose', async () => store.close());
  app.decorate('tokenGuard', new TokenGuard(store, config, onStoreError));
  app.decorateRequest('rateLimitCharged', false);

  const perApplication = budget('default', config.rateLimitPerMinute, `${config.redisKeyPrefix}rl:app:`);
  const perAddress = budget('unauthenticated', config.rateLimitUnauthenticatedPerMinute, `${config.redisKeyPrefix}rl:addr:`);

  /** Counts the request against a budget, sets the headers, and refuses it (429) once the budget is spent. */
  function charge(b: Budget, id: string, reply: FastifyReply, refuse: boolean, done: (err?: Error) => void): void {
    reply.header('RateLimit-Policy', b.policyHeader);
    const finish = (c: Count) => {
      const seconds = Math.max(1, Math.ceil(c.resetMs / 1000));
      reply.header('RateLimit', `"${b.name}";r=${Math.max(0, b.limit - c.count)};t=${seconds}`);
      if (refuse && c.count > b.limit) {
        done(
          new AppError('rate_limited', `More than ${b.limit} requests in a minute; retry after ${seconds} s.`, {
            headers: { 'Retry-After': String(seconds) },
          }),
        );
      } else done();
    };
    let result: Count | Promise<Count>;
    try {
      result = store.hit(b.keyPrefix + id, WINDOW_MS);
    } catch (err) {
      onStoreError(err as Error);
      return done();
    }
    if (result instanceof Promise) {
      result.then(finish, (err: Error) => {
        onStoreError(err);
        done();
      });
    } else finish(result);
  }

  const isV1 = (request: FastifyRequest) => request.url.startsWith('/v1/') || request.url === '/v1';

  // Before authentication: calls that will not be authenticated spend the address budget.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    if (!isV1(request)) return done();
    const url = request.routeOptions.url;
    const willAuthenticate = url !== undefined && requiresToken({ url, config: request.routeOptions.config }) && request.headers.authorization;
    if (willAuthenticate) return done();
    request.rateLimitCharged = true;
    charge(perAddress, request.ip, reply, true, done);
  });

  // After authentication, before the body is parsed: the application's budget.
  app.addHook('preParsing', (request: FastifyRequest, reply: FastifyReply, payload, done) => {
    if (request.rateLimitCharged || !request.auth) return done(null, payload);
    request.rateLimitCharged = true;
    charge(perApplication, request.auth.appId, reply, true, (err) => (err ? done(err) : done(null, payload)));
  });

  // A request stopped during authentication still spends a budget, and its answer still carries the headers:
  // a refused token (401) the address budget, a valid token without the scope (403) its application's.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.rateLimitCharged || !isV1(request)) return done(null, payload);
    request.rateLimitCharged = true;
    if (request.auth) charge(perApplication, request.auth.appId, reply, false, () => done(null, payload));
    else charge(perAddress, request.ip, reply, false, () => done(null, payload));
  });
}
