// Property-based fuzzing of every operation in the OpenAPI document (fast-check, seeded and reproducible).
// Two organizations: B is seeded with recognisable data through the API itself (every collection POST, bodies
// generated from the schemas); A's token then sends generated valid and invalid requests — path parameters from A's
// ids, B's ids and junk; query parameters and bodies from the schemas, mutated, or junk; sometimes no token, a bad
// one, a narrow one, or another media type — and every answer must hold:
//   - no 5xx;
//   - every error is problem+json with a known `code` and a matching status (the token endpoint: the OAuth format);
//   - nothing of organization B (its ids, e-mail addresses, names) appears in an answer unless the request itself
//     carried it (an echo of the caller's own input is not a leak);
//   - (through test/helpers.ts) the answer conforms to the OpenAPI document.
// Reproduce a failure with FUZZ_SEED=<seed printed in the failure> npx vitest run test/fuzz.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, type TestApp, type Tenant } from './helpers.js';
import { ERROR_CODES } from '../src/http/errors.js';
import { ALL_SCOPES } from '../src/auth/scopes.js';
import { arbitrary, fillPath, junk, operationsOf, sample, type Hint, type Operation } from './support/openapi-requests.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const TOTAL_REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2400);
const ID = /\b(?:usr|enr|crt|whk|evt|dlv|app|org)_[0-9A-HJKMNP-TV-Z]{26}\b/g;
const IS_ID = /^(?:usr|enr|crt|whk|evt|dlv|app|org)_[0-9A-HJKMNP-TV-Z]{26}$/;
const OAUTH_ERRORS = ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_scope'];

let t: TestApp;
let doc: any;
let ops: Operation[];
let a: Tenant;
let b: Tenant;
let narrowToken: string;
const aIds = new Set<string>();
const bMarkers = new Set<string>();
let sent = 0;

/** Every id-shaped string in a JSON text. */
function idsIn(text: string): string[] {
  return text.match(ID) ?? [];
}

function hintFor(ids: Set<string>, marker: string): Hint {
  const pick = (prefix: string) => [...ids].filter((id) => id.startsWith(prefix)).pop();
  const catalogue = { course_id: 'crs_', category_id: 'cat_' } as Record<string, string>;
  return (name, schema) => {
    if (name === 'learner_id' || name === 'user_id') return pick('usr_');
    if (name === 'enrolment_id') return pick('enr_');
    if (name in catalogue) return catalogueIds.find((id) => id.startsWith(catalogue[name]));
    if (name === 'events' && schema.type === 'array') return ['*'];
    if (name === 'email') return `${marker}-${randomBytes(3).toString('hex')}@${marker}.example`;
    if (name === 'external_id') return `${marker}-ext-${randomBytes(3).toString('hex')}`;
    if ((name === 'first_name' || name === 'last_name' || name === 'description' || name === 'department') && schema.type === 'string') {
      return `${marker}${randomBytes(2).toString('hex')}`;
    }
    return undefined;
  };
}
let catalogueIds: string[] = [];

/** Creates objects for a tenant through every collection POST (twice over, so later ones can name earlier ones). */
async function seed(tenant: Tenant, ids: Set<string>, marker: string, markers?: Set<string>) {
  const creators = ops.filter((op) => op.method === 'POST' && op.pathParams.length === 0 && op.body && op.path !== '/v1/oauth/token');
  const hint = hintFor(ids, marker);
  for (let round = 0; round < 2; round++) {
    for (const op of creators) {
      for (let i = 0; i < 2; i++) {
        const payload = sample(doc, op.body, hint);
        const res = await t.request({ method: 'POST', url: op.path, payload: payload as object, token: tenant.token });
        for (const id of idsIn(res.body)) ids.add(id);
        if (markers && res.statusCode < 300) {
          for (const id of idsIn(res.body)) markers.add(id);
          for (const m of res.body.match(new RegExp(`${marker}[A-Za-z0-9.@-]*`, 'g')) ?? []) markers.add(m);
        }
      }
    }
  }
  // Sub-resources created by actions (a test delivery of each webhook, for instance).
  for (const op of ops.filter((o) => o.method === 'POST' && o.pathParams.length === 1 && !o.body)) {
    const prefix = { '/v1/webhooks/': 'whk_', '/v1/enrolments/': 'enr_' }[op.path.replace(/\{.*$/, '')];
    const id = prefix && [...ids].find((x) => x.startsWith(prefix));
    if (!id) continue;
    const res = await t.request({ method: 'POST', url: fillPath(op.path, { [op.pathParams[0]]: id }), token: tenant.token });
    for (const found of idsIn(res.body)) {
      ids.add(found);
      if (markers) markers.add(found);
    }
  }
  // Everything the tenant can list (events recorded by the writes above, deliveries...).
  for (const op of ops.filter((o) => o.method === 'GET' && o.pathParams.length === 0 && o.scope && o.query.some((q) => q.name === 'limit'))) {
    const res = await t.request({ method: 'GET', url: `${op.path}?limit=100`, token: tenant.token });
    for (const id of idsIn(res.body)) {
      ids.add(id);
      if (markers) markers.add(id);
    }
  }
}

interface FuzzRequest {
  token: 'a' | 'none' | 'garbage' | 'narrow' | 'b-shaped';
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  contentType: string;
}

function requestArbitrary(op: Operation): fc.Arbitrary<FuzzRequest> {
  const aPool = () => [...aIds];
  const bPool = () => [...bMarkers].filter((m) => IS_ID.test(m));
  const idArb = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...(aPool().length ? aPool() : ['usr_none'])) },
    { weight: 3, arbitrary: fc.constantFrom(...(bPool().length ? bPool() : ['usr_none'])) },
    { weight: 1, arbitrary: fc.constantFrom(...catalogueIds.slice(0, 5)) },
    { weight: 2, arbitrary: fc.oneof(fc.string({ maxLength: 80 }), fc.constantFrom('..', '%2e%2e', 'usr_', 'x'.repeat(65), '0', '-1')) },
  );
  const params = fc.record(Object.fromEntries(op.pathParams.map((p) => [p, idArb]))) as fc.Arbitrary<Record<string, string>>;
  const queryModel: Record<string, fc.Arbitrary<unknown>> = {};
  for (const q of op.query) {
    queryModel[q.name] = fc.oneof({ weight: 3, arbitrary: arbitrary(doc, q.schema, hintFor(new Set(aPool()), 'alpha'), q.name) }, { weight: 1, arbitrary: junk });
  }
  queryModel.unknown_param = junk;
  const query = fc.record(queryModel, { requiredKeys: [] });
  const validBody = op.body ? arbitrary(doc, op.body, hintFor(new Set(aPool()), 'alpha')) : fc.constant(undefined);
  const body = op.body
    ? fc.oneof(
        { weight: 4, arbitrary: validBody },
        { weight: 2, arbitrary: fc.tuple(validBody, fc.string({ maxLength: 12 }), junk).map(([v, k, j]) => (v && typeof v === 'object' && !Array.isArray(v) ? { ...v, [k || 'extra']: j } : v)) },
        { weight: 1, arbitrary: fc.tuple(validBody, fc.string({ maxLength: 12 }), junk).map(([v, k, j]) => {
            if (!v || typeof v !== 'object' || Array.isArray(v)) return j;
            const keys = Object.keys(v);
            return keys.length ? { ...v, [keys[k.length % keys.length]]: j } : j;
          }) },
        { weight: 1, arbitrary: junk },
      )
    : fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: junk });
  return fc.record({
    token: fc.constantFrom<FuzzRequest['token']>('a', 'a', 'a', 'a', 'a', 'a', 'narrow', 'none', 'garbage', 'b-shaped'),
    params,
    query,
    body,
    contentType: fc.constantFrom('application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'),
  });
}

function queryString(query: Record<string, unknown>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    sp.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  const s = sp.toString();
  return s ? `?${s}` : '';
}

function assertSafeAnswer(op: Operation, requestText: string, res: LightMyRequestResponse): void {
  const where = `${op.method} ${op.path} → ${res.statusCode}`;
  expect(res.statusCode, `${where}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
  const type = String(res.headers['content-type'] ?? '');
  if (res.statusCode >= 400) {
    if (op.path === '/v1/oauth/token' && type.startsWith('application/json')) {
      expect(OAUTH_ERRORS, where).toContain(res.json().error);
    } else {
      expect(type, `${where}: ${res.body.slice(0, 200)}`).toMatch(/^application\/problem\+json/);
      const problem = res.json();
      expect(Object.keys(ERROR_CODES), where).toContain(problem.code);
      expect(problem.status, where).toBe(res.statusCode);
      expect(ERROR_CODES[problem.code as keyof typeof ERROR_CODES].status, where).toBe(res.statusCode);
    }
  }
  // Organization B's data never reaches A, in the body or in a header (Location, Link, ETag...).
  const answer = res.body + JSON.stringify(res.headers);
  for (const marker of bMarkers) {
    if (answer.includes(marker) && !requestText.includes(marker)) {
      throw new Error(`${where}: organization B's "${marker}" appears in an answer to organization A: ${res.body.slice(0, 500)}`);
    }
  }
}

beforeAll(async () => {
  t = await createTestApp({
    env: {
      RATE_LIMIT_PER_MINUTE: '1000000',
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1000000',
      TOKEN_GUARD_FAILURES_PER_CLIENT: '1000000',
      TOKEN_GUARD_FAILURES_PER_ADDRESS: '1000000',
    },
  });
  await t.loadCatalogue();
  catalogueIds = (await t.ctx.db.kysely.selectFrom('courses').select('id').where('status', '=', 'published').execute()).map((r) => r.id);
  catalogueIds.push(...(await t.ctx.db.kysely.selectFrom('course_categories').select('id').execute()).map((r) => r.id));
  doc = t.app.swagger();
  ops = operationsOf(doc).filter((op) => !op.path.startsWith('/v1/openapi.') && op.path.startsWith('/v1/'));
  const bName = `Bravo Secret Org ${randomBytes(3).toString('hex')}`;
  b = await t.tenant({ name: bName, seats: 50 });
  bMarkers.add(bName);
  a = await t.tenant({ name: 'Alpha Org', seats: 50 });
  narrowToken = await a.tokenWith(['courses:read']);
  bMarkers.add(b.orgId);
  bMarkers.add(b.credentials.client_id);
  await seed(b, new Set(), 'bravo', bMarkers);
  await seed(a, aIds, 'alpha');
  for (const id of aIds) bMarkers.delete(id);
  for (const id of catalogueIds) bMarkers.delete(id);
}, 120_000);
afterAll(() => t?.close());

describe('fuzzing every operation of the OpenAPI document', () => {
  it('seeded organization B with recognisable data through the API', () => {
    // At least its organization id and client id; more as the document gains collections to create in.
    expect(bMarkers.size).toBeGreaterThan(2);
    expect(ops.length).toBeGreaterThan(10);
  });

  it(`sends ≥ 2,000 generated requests (seed ${SEED}): no 5xx, only known problems, nothing of organization B`, async () => {
    const runsPerOperation = Math.max(20, Math.ceil(TOTAL_REQUESTS / ops.length));
    const tokens: Record<FuzzRequest['token'], string | undefined> = {
      a: a.token,
      none: undefined,
      garbage: 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
      narrow: narrowToken,
      // A token-shaped string naming B's org: unsigned by us, so it must be refused like any forgery.
      'b-shaped': a.token.split('.').slice(0, 2).join('.') + '.' + Buffer.from(b.orgId).toString('base64url'),
    };
    for (const [index, op] of ops.entries()) {
      await fc.assert(
        fc.asyncProperty(requestArbitrary(op), async (req) => {
          const url = fillPath(op.path, req.params) + queryString(req.query);
          const hasBody = req.body !== undefined && op.method !== 'GET' && op.method !== 'DELETE';
          const payload = hasBody
            ? req.contentType === 'application/x-www-form-urlencoded' && req.body && typeof req.body === 'object'
              ? new URLSearchParams(Object.entries(req.body).map(([k, v]): [string, string] => [k, String(JSON.stringify(v))])).toString()
              : typeof req.body === 'string' && !req.contentType.startsWith('application/json')
                ? req.body
                : JSON.stringify(req.body)
            : undefined;
          const token = op.path === '/v1/oauth/token' ? undefined : tokens[req.token];
          const res = await t.request({
            method: op.method as 'GET',
            url,
            token,
            payload,
            headers: hasBody ? { 'content-type': req.contentType } : {},
          });
          sent++;
          assertSafeAnswer(op, url + (payload ?? ''), res);
        }),
        { seed: SEED + index, numRuns: runsPerOperation, endOnFailure: true },
      );
    }
    expect(sent).toBeGreaterThanOrEqual(Math.min(2000, TOTAL_REQUESTS));
  }, 600_000);
});
