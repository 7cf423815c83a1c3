// The conventions of §1 that apply to every response: X-Request-Id, API-Version, problem+json for every
// failure (validation, malformed JSON, 404, 405, 413, 415, 500), and the OAuth error format on the token endpoint.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { AppError, ERROR_CODES, PROBLEM_CONTENT_TYPE, problemBody, type ErrorCode, type FieldError } from './errors.js';
import { fieldErrors } from './validation.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Media types a route accepts for its body (default: application/json only). */
    bodyTypes?: string[];
  }
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFrom(header: string | string[] | undefined, fallback: () => string): string {
  return typeof header === 'string' && SANE_REQUEST_ID.test(header) ? header : fallback();
}

interface Classified {
  code: ErrorCode;
  detail: string;
  errors?: FieldError[];
  headers?: Record<string, string>;
}

/** Maps anything thrown to one of our error codes. Unknown errors become internal_error with no details. */
export function classifyError(err: FastifyError | AppError | Error): Classified {
  if (err instanceof AppError) {
    return { code: err.code, detail: err.message, errors: err.extra.errors, headers: err.extra.headers };
  }
  const fe = err as FastifyError;
  if (fe.validation) {
    const where = fe.validationContext === 'body' ? 'request body' : fe.validationContext ?? 'request';
    const errors = fieldErrors(fe.validation as never);
    const code: ErrorCode = fe.validationContext === 'body' ? 'validation_failed' : 'invalid_request';
    return { code, detail: `The ${where} is not valid: ${errors.map((e) => `${e.pointer} ${e.message}`).join('; ')}.`, errors };
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'payload_too_large', detail: 'The request body is larger than 1 MiB.' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      if (fe.statusCode === 415 || fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
        return { code: 'unsupported_media_type', detail: 'Send the request body as application/json.' };
      }
      return { code: 'invalid_request', detail: 'The Content-Length does not match the body.' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'invalid_request', detail: 'The request body is empty; send a JSON object.' };
  }
  if (fe instanceof SyntaxError || fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { code: 'invalid_request', detail: 'The request body is not valid JSON.' };
  }
  const status = fe.statusCode ?? 500;
  if (status === 413) return { code: 'payload_too_large', detail: 'The request is too large.' };
  if (status === 415) return { code: 'unsupported_media_type', detail: 'Send the request body as application/json.' };
  if (status >= 400 && status < 500) return { code: 'invalid_request', detail: 'The request could not be understood.' };
  return { code: 'internal_error', detail: 'Something went wrong on our side. Quote the request id if you contact us.' };
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  errors?: FieldError[],
) {
  const body = problemBody(code, detail, String(request.id), errors);
  return reply
    .code(ERROR_CODES[code].status)
    .type(PROBLEM_CONTENT_TYPE)
    .serializer((p: unknown) => JSON.stringify(p))
    .send(body);
}

const OAUTH_ERROR_FOR: Partial<Record<ErrorCode, string>> = {
  invalid_request: 'invalid_request',
  validation_failed: 'invalid_request',
  unsupported_media_type: 'invalid_request',
  payload_too_large: 'invalid_request',
};

export function registerConventions(app: FastifyInstance): void {
  // A shadow router of every registered route, to tell 405 (path exists, method does not) from 404.
  const shadow = FindMyWay();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) {
      try {
        shadow.on(m as never, route.url, () => {});
      } catch {
        /* duplicate registration (e.g. HEAD): ignore */
      }
    }
  });

  // The /v1 API speaks JSON only. Fastify would also parse text/plain, and formbody parses form-encoded bodies
  // (for the token endpoint and the HTML forms of the portal and console), so any other body type on a /v1 route
  // that did not opt in is refused with 415.
  app.removeContentTypeParser('text/plain');
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined || request.routeOptions.config?.oauthErrors) return;
    if (!request.routeOptions.url?.startsWith('/v1/')) return;
    const type = String(request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    const accepted = request.routeOptions.config?.bodyTypes ?? ['application/json'];
    if (!accepted.includes(type)) {
      throw new AppError('unsupported_media_type', `Send the request body as ${accepted.join(' or ')}.`);
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('X-Request-Id', String(request.id));
    reply.header('API-Version', '1.0');
    return payload;
  });

  app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
    const c = classifyError(err);
    if (c.code === 'internal_error') {
      request.log.error({ err }, 'unhandled error');
    } else if ((err as FastifyError).statusCode === undefined && !(err instanceof AppError)) {
      request.log.warn({ err }, 'request error');
    }
    if (c.headers) reply.headers(c.headers);
    if (request.routeOptions.config?.oauthErrors && c.code !== 'internal_error' && c.code !== 'rate_limited') {
      const error = OAUTH_ERROR_FOR[c.code] ?? 'invalid_request';
      return reply
        .code(400)
        .type('application/json; charset=utf-8')
        .header('Cache-Control', 'no-store')
        .serializer((p: unknown) => JSON.stringify(p))
        .send({ error, error_description: c.detail });
    }
    return sendProblem(request, reply, c.code, c.detail, c.errors);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => shadow.find(m as never, path));
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      return sendProblem(request, reply, 'method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(', ')}.`);
    }
    return sendProblem(request, reply, 'not_found', `There is nothing at ${request.method} ${path}.`);
  });
}
