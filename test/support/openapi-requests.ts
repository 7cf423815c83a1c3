// Requests derived from the OpenAPI document, for the generic security tests and the fuzz test: every operation
// with its path parameters, query parameters and body schema, a minimal valid sample of a schema, and fast-check
// arbitraries of valid values (and of junk) for it. Nothing here is hand-maintained per route: when an engineer
// adds a route, these tests cover it.
import fc from 'fast-check';

export interface Operation {
  method: string;
  /** OpenAPI path, e.g. /v1/learners/{id} */
  path: string;
  scope: string | null;
  pathParams: string[];
  query: Array<{ name: string; schema: any; required: boolean }>;
  body: any | null;
  bodyTypes: string[];
  responses: Record<string, unknown>;
}

export function operationsOf(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const params: any[] = op.parameters ?? [];
      const content = op.requestBody?.content ?? {};
      ops.push({
        method: method.toUpperCase(),
        path,
        scope: op.security?.[0]?.oauth2?.[0] ?? null,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {}, required: Boolean(p.required) })),
        body: content['application/json']?.schema ? resolve(doc, content['application/json'].schema) : null,
        bodyTypes: Object.keys(content),
        responses: op.responses ?? {},
      });
    }
  }
  return ops;
}

/** Follows a local $ref (#/components/schemas/X) to the schema it names. */
export function resolve(doc: any, schema: any): any {
  let s = schema;
  for (let i = 0; i < 10 && s && typeof s.$ref === 'string'; i++) {
    s = s.$ref.split('/').slice(1).reduce((node: any, part: string) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return s ?? {};
}

/** Picks a value for a named field (e.g. an existing learner id for `learner_id`), or undefined to generate one. */
export type Hint = (name: string, schema: any) => unknown;

function alternatives(s: any): any[] | null {
  return s.anyOf ?? s.oneOf ?? null;
}

/** A minimal value that the schema accepts: required properties only, the first enum value, the smallest number. */
export function sample(doc: any, schema: any, hint: Hint = () => undefined, name = '', all = false): unknown {
  const s = resolve(doc, schema);
  const hinted = name ? hint(name, s) : undefined;
  if (hinted !== undefined) return hinted;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if (s.default !== undefined) return s.default;
  const alts = alternatives(s);
  if (alts) return sample(doc, alts.find((a: any) => resolve(doc, a).type !== 'null') ?? alts[0], hint, name, all);
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      // `all`: the optional properties too (a PATCH whose properties are all optional still changes something).
      for (const key of all ? Object.keys(s.properties ?? {}) : s.required ?? []) out[key] = sample(doc, s.properties?.[key] ?? {}, hint, key, all);
      return out;
    }
    case 'array':
      return Array.from({ length: s.minItems ?? 0 }, () => sample(doc, s.items ?? {}, hint, name, all));
    case 'integer':
    case 'number':
      return Math.max(s.minimum ?? 1, s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -Infinity);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'string':
      return sampleString(s, name);
    default:
      return {};
  }
}

// Webhook URLs are IP literals on loopback only (port 9, discard): generated requests never make a DNS query or
// reach another machine, even if a delivery were attempted (the test apps run no delivery worker).
export const SAFE_URL = 'http://127.0.0.1:9/hook';

let counter = 0;
function sampleString(s: any, name: string): string {
  counter++;
  switch (s.format) {
    case 'date-time':
      return new Date(Date.UTC(2026, 0, 1)).toISOString();
    case 'date':
      return '2026-01-01';
    case 'email':
      return `sample-${counter}@example.com`;
    case 'uri':
    case 'url':
      return SAFE_URL;
  }
  if (/email/.test(name)) return `sample-${counter}@example.com`;
  if (/url/.test(name)) return SAFE_URL;
  const base = `${name || 'x'}-${counter}`;
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? 200;
  return base.padEnd(min, 'x').slice(0, max);
}

/** Valid values of a schema (approximately: formats and patterns are honoured for the common cases). */
export function arbitrary(doc: any, schema: any, hint: Hint = () => undefined, name = '', depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(doc, schema);
  const hinted = name ? hint(name, s) : undefined;
  if (hinted !== undefined) return fc.constant(hinted);
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  const alts = alternatives(s);
  if (alts) return fc.oneof(...alts.map((a: any) => arbitrary(doc, a, hint, name, depth + 1)));
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const props = s.properties ?? {};
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, sub] of Object.entries(props)) model[key] = depth > 4 ? fc.constant(sample(doc, sub, hint, key)) : arbitrary(doc, sub, hint, key, depth + 1);
      return fc.record(model, { requiredKeys: (s.required ?? []).filter((k: string) => k in model) });
    }
    case 'array': {
      const maxLength = Math.min(s.maxItems ?? 4, 4);
      return fc.array(arbitrary(doc, s.items ?? {}, hint, name, depth + 1), { minLength: Math.min(s.minItems ?? 0, maxLength), maxLength });
    }
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1000, max: s.maximum ?? 100_000 });
    case 'number':
      return fc.double({ min: s.minimum ?? -1000, max: s.maximum ?? 100_000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'string':
      return stringArbitrary(s, name);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringArbitrary(s: any, name: string): fc.Arbitrary<string> {
  if (s.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (s.format === 'email' || /email/.test(name)) {
    return fc.tuple(fc.stringMatching(/^[a-z0-9]{1,12}$/), fc.constantFrom('example.com', 'example.org')).map(([l, d]) => `${l}@${d}`);
  }
  if (s.format === 'uri' || /url/.test(name)) {
    return fc.constantFrom(SAFE_URL, 'https://127.0.0.1:9/hook', 'https://[::1]:9/x', 'ftp://127.0.0.1/', 'javascript:alert(1)', 'http://user:pw@127.0.0.1:9/');
  }
  const minLength = s.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(s.maxLength ?? 40, 40));
  return fc.string({ minLength, maxLength, unit: 'grapheme' });
}

/** Junk for any slot: wrong types, huge and odd strings, injection classics, nested structures. */
export const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    "' OR 1=1 --",
    '"; drop table users; --',
    '<script>alert(1)</script>',
    '../../etc/passwd',
    '%00',
    '${7*7}',
    '{{7*7}}',
    '\ud800',
    'NaN',
    '-1',
    '1e309',
    '9'.repeat(40),
    'null',
    'true',
    '__proto__',
    'x'.repeat(5000),
  ),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
);

/** Fills an OpenAPI path template with values for its parameters. */
export function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? 'x'));
}
