// Every response of the test suite is checked against the published OpenAPI document, so that the description
// and the behaviour cannot drift apart: test/helpers.ts wraps each test app's inject() with conformanceCheck().
// For a documented operation, the status code must be listed, the content type must be one the status lists, and
// a JSON body must match its schema (Ajv over the generated document, $refs resolved in place). Any other /v1 answer
// (an unknown path: 404, a known path with another method: 405) must be a valid Problem.
// A mismatch throws from inject(), so the test that caused it fails at the line that made the request, with the
// operation, the status and Ajv's complaint in the message.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import FindMyWay from 'find-my-way';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

interface Operation {
  method: string;
  path: string;
  responses: Record<string, { content?: Record<string, { schema?: object }> }>;
}

export class OpenApiConformance {
  private readonly ajv: Ajv;
  private readonly router = FindMyWay();
  private readonly validators = new Map<string, ValidateFunction>();
  checked = 0;

  constructor(readonly doc: any) {
    this.ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
    (addFormats as unknown as (a: Ajv) => void)(this.ajv);
    this.ajv.addSchema(doc, 'openapi.json');
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths ?? {})) {
      for (const method of METHODS) {
        const op = item[method] as { responses?: Operation['responses'] } | undefined;
        if (!op) continue;
        const operation: Operation = { method: method.toUpperCase(), path, responses: op.responses ?? {} };
        this.router.on(operation.method as never, path.replace(/\{([^}]+)\}/g, ':$1'), () => {}, { operation });
      }
    }
  }

  private validator(pointer: string): ValidateFunction {
    let v = this.validators.get(pointer);
    if (!v) {
      v = this.ajv.compile({ $ref: `openapi.json#${pointer}` });
      this.validators.set(pointer, v);
    }
    return v;
  }

  /** The documented operation of a method and path, if any. */
  operation(method: string, path: string): Operation | null {
    const found = this.router.find(method as never, path);
    return found ? (found.store as { operation: Operation }).operation : null;
  }

  /** Returns a description of what is wrong with the response, or null when it conforms. */
  problems(method: string, url: string, res: LightMyRequestResponse): string | null {
    const path = url.split('?')[0];
    if (method === 'HEAD' || method === 'OPTIONS') return null;
    const contentType = String(res.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    const op = this.operation(method, path);
    if (!op) {
      if (!path.startsWith('/v1/') || path.startsWith('/v1/openapi.')) return null;
      // Not an operation: the answer must be a problem (404 not_found, 405 method_not_allowed, 429, ...).
      if (contentType !== 'application/problem+json') return `an undocumented request answered ${res.statusCode} ${contentType}, not a problem`;
      return this.check('/components/schemas/Problem', res.body, `${method} ${path} (no such operation) → ${res.statusCode}`);
    }
    this.checked++;
    const where = `${op.method} ${op.path} → ${res.statusCode}`;
    const status = String(res.statusCode);
    const key = op.responses[status] ? status : op.responses[`${status[0]}XX`] ? `${status[0]}XX` : op.responses.default ? 'default' : null;
    if (!key) return `${where}: status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`;
    const content = op.responses[key].content;
    if (!content || res.statusCode === 204 || res.statusCode === 304) return null;
    const mediaKey = Object.keys(content).find((k) => k.toLowerCase() === contentType);
    if (!mediaKey) return `${where}: content type "${contentType}" is not documented (documented: ${Object.keys(content).join(', ')})`;
    if (!content[mediaKey].schema || !/json$/.test(contentType)) return null;
    const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
    const pointer = `/paths/${esc(op.path)}/${op.method.toLowerCase()}/responses/${key}/content/${esc(mediaKey)}/schema`;
    return this.check(pointer, res.body, where);
  }

  private check(pointer: string, body: string, where: string): string | null {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return `${where}: the body is not JSON: ${body.slice(0, 200)}`;
    }
    const validate = this.validator(pointer);
    if (validate(value)) return null;
    const errors = (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
    return `${where}: the body does not match its schema: ${errors.join('; ')}\n  body: ${body.slice(0, 500)}`;
  }
}

export class ConformanceError extends Error {
  override name = 'OpenApiConformanceError';
}

/** Wraps app.inject so that every promise-style inject() response is checked against the app's own document. */
export function enforceOpenApiConformance(app: FastifyInstance): OpenApiConformance {
  const conformance = new OpenApiConformance(app.swagger());
  const inject = app.inject.bind(app) as (opts: InjectOptions | string) => Promise<LightMyRequestResponse>;
  (app as { inject: unknown }).inject = (opts?: InjectOptions | string, callback?: unknown) => {
    if (opts === undefined || callback !== undefined) return (inject as (...a: unknown[]) => unknown)(opts, callback);
    const o = typeof opts === 'string' ? { url: opts } : opts;
    return inject(opts).then((res) => {
      const url = typeof o.url === 'string' ? o.url : String((o as { path?: string }).path ?? '');
      const problem = conformance.problems(String(o.method ?? 'GET').toUpperCase(), url, res);
      if (problem) throw new ConformanceError(`Response does not conform to the OpenAPI document: ${problem}`);
      return res;
    });
  };
  return conformance;
}
