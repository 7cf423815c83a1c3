// The OWASP API Security Top 10 (2023), one test per item, written as an attacker would, against the real app
// (real database, real HTTP where concurrency or a webhook receiver matters). Operations are taken from the OpenAPI
// document, so routes added later are attacked too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { Agent, request as undiciRequest } from 'undici';
import { SignJWT, generateKeyPair, decodeProtectedHeader } from 'jose';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';
import { ALL_SCOPES, type Scope } from '../src/auth/scopes.js';
import { ManualClock } from '../src/clock.js';
import { startWorker } from '../src/webhooks/worker.js';
import { fillPath, operationsOf, resolve, sample, type Hint, type Operation } from './support/openapi-requests.js';

const ID = /\b(?:usr|enr|crt|whk|evt|dlv|app|org)_[0-9A-HJKMNP-TV-Z]{26}\b/g;

let t: TestApp;
let doc: any;
let ops: Operation[];
let a: Tenant;
let b: Tenant;
let courseIds: string[] = [];
const clock = new ManualClock(new Date());

/** Creates one of everything for a tenant through the API: every collection POST, then every action on its ids. */
async function seedThroughApi(tenant: Tenant, marker: string): Promise<Set<string>> {
  const ids = new Set<string>();
  const hint: Hint = (name, schema) => {
    if (name === 'learner_id' || name === 'user_id') return [...ids].filter((id) => id.startsWith('usr_')).pop();
    if (name === 'course_id') return courseIds[ids.size % courseIds.length];
    if (name === 'events' && schema.type === 'array') return ['*'];
    if (name === 'email') return `${marker}-${ids.size}-${Math.random().toString(36).slice(2, 8)}@example.com`;
    if (name === 'external_id') return `${marker}-${ids.size}-${Math.random().toString(36).slice(2, 8)}`;
    return undefined;
  };
  const collect = (text: string) => (text.match(ID) ?? []).forEach((id) => ids.add(id));
  const creators = ops.filter((op) => op.method === 'POST' && op.pathParams.length === 0 && op.body && op.path !== '/v1/oauth/token');
  for (let round = 0; round < 3; round++) {
    for (const op of creators) {
      const res = await t.request({ method: 'POST', url: op.path, payload: sample(doc, op.body, hint) as object, token: tenant.token });
      collect(res.body);
    }
  }
  // Actions on the objects (complete an enrolment → a certificate; test a webhook → a delivery and an event).
  for (const op of ops.filter((o) => o.method === 'POST' && o.pathParams.length === 1 && !/revoke|withdraw|rotate/.test(o.path))) {
    for (const id of [...ids]) {
      const res = await t.request({ method: 'POST', url: fillPath(op.path, { [op.pathParams[0]]: id }), token: tenant.token, payload: op.body ? (sample(doc, op.body, hint) as object) : undefined });
      if (res.statusCode < 300) collect(res.body);
    }
  }
  for (const op of ops.filter((o) => o.method === 'GET' && o.pathParams.length === 0 && o.scope)) {
    collect((await t.request({ method: 'GET', url: op.query.some((q) => q.name === 'limit') ? `${op.path}?limit=100` : op.path, token: tenant.token })).body);
  }
  return ids;
}

/** The path of the resource an operation acts on: /v1/webhooks/{id}/deliveries/{delivery_id}/retry → /v1/webhooks/{id}. */
const resourcePath = (path: string) => path.replace(/(\{[^}]+\}).*$/, '$1');

beforeAll(async () => {
  // Budgets out of the way (API4 tests them on an app of its own): this suite sends thousands of requests.
  t = await createTestApp({ clock, env: { RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1000000' } });
  await t.loadCatalogue();
  doc = t.app.swagger();
  ops = operationsOf(doc).filter((op) => op.path.startsWith('/v1/'));
  a = await t.tenant({ name: 'Alpha', seats: 100 });
  b = await t.tenant({ name: 'Bravo', seats: 100 });
  const certified = await t.ctx.db.kysely.selectFrom('courses').select(['id', 'certificate_enabled' as never]).where('status', '=', 'published').execute().catch(() => []);
  courseIds = (certified as any[]).sort((x, y) => Number(y.certificate_enabled ?? 0) - Number(x.certificate_enabled ?? 0)).map((r) => r.id);
  if (courseIds.length === 0) {
    courseIds = (await t.ctx.db.kysely.selectFrom('courses').select('id').where('status', '=', 'published').execute()).map((r) => r.id);
  }
}, 120_000);
afterAll(() => t?.close());

// Generous: the suite attacks every operation of the document, on a machine that may be busy.
describe('OWASP API Security Top 10 (2023)', { timeout: 300_000 }, () => {
  it('API1:2023 Broken Object Level Authorization — no operation reaches another organization\'s object', async () => {
    // What every organization sees (catalogue events): listed before B writes anything, and not B's.
    const shared = new Set<string>();
    for (const op of ops.filter((o) => o.method === 'GET' && o.pathParams.length === 0 && o.scope && o.query.some((q) => q.name === 'limit'))) {
      for (const id of (await t.request({ method: 'GET', url: `${op.path}?limit=100`, token: a.token })).body.match(ID) ?? []) shared.add(id);
    }
    const bIds = [...(await seedThroughApi(b, 'bravo'))].filter((id) => !id.startsWith('org_') && !id.startsWith('app_') && !shared.has(id));
    // Which of B's ids is an object at which resource path (as B itself sees it).
    const objectsAt = new Map<string, string[]>();
    const byResource = ops.filter((op) => op.method === 'GET' && op.pathParams.length === 1 && op.path === resourcePath(op.path));
    for (const op of byResource) {
      for (const id of bIds) {
        const res = await t.request({ method: 'GET', url: fillPath(op.path, { [op.pathParams[0]]: id }), token: b.token });
        if (res.statusCode === 200) objectsAt.set(op.path, [...(objectsAt.get(op.path) ?? []), id]);
      }
    }
    expect([...objectsAt.keys()].length, 'B owns objects of several kinds').toBeGreaterThanOrEqual(5);

    const before = new Map<string, string>();
    for (const [path, ids] of objectsAt) for (const id of ids) before.set(`${path} ${id}`, (await t.request({ method: 'GET', url: fillPath(path, { id }), token: b.token })).body);

    const attackHint: Hint = (name, schema) =>
      name === 'events' && schema.type === 'array' ? ['*'] : name === 'email' ? `attacker-${Math.random().toString(36).slice(2)}@example.com` : name === 'status' && schema.enum ? undefined : undefined;
    let attacks = 0;
    for (const op of ops.filter((o) => o.pathParams.length > 0 && o.scope)) {
      const targets = objectsAt.get(resourcePath(op.path)) ?? [];
      for (const id of targets.slice(0, 3)) {
        const params: Record<string, string> = { [op.pathParams[0]]: id };
        if (op.pathParams[1]) {
          // A second parameter names a sub-object of B's object (a delivery of B's webhook).
          const parent = op.path.slice(0, op.path.indexOf(`/{${op.pathParams[1]}}`));
          const sub = ((await t.request({ method: 'GET', url: fillPath(parent, params), token: b.token })).body.match(ID) ?? []).find((x) => x !== id);
          if (!sub) continue;
          params[op.pathParams[1]] = sub;
        }
        // A valid body (every property filled), so that only the ownership check can stop the request.
        const payload = op.body ? (sample(doc, op.body, attackHint, '', op.method === 'PATCH') as object) : undefined;
        const res = await t.request({ method: op.method as 'GET', url: fillPath(op.path, params), token: a.token, payload });
        attacks++;
        expect(res.statusCode, `${op.method} ${op.path} with B's ${id}`).toBe(404);
        expect(problemOf(res).code).toBe('not_found');
        // The same answer as for an id that does not exist: nothing tells A that B's object is there.
        const unknown = await t.request({ method: op.method as 'GET', url: fillPath(op.path, { ...params, [op.pathParams[0]]: id.replace(/.{4}$/, 'ZZZZ') }), token: a.token, payload });
        expect(unknown.statusCode).toBe(404);
        expect(problemOf(unknown).detail).toBe(problemOf(res).detail);
      }
    }
    expect(attacks).toBeGreaterThanOrEqual(15);
    // B's objects are unchanged by the attempts, and A's lists show none of B's ids, even when filtered by them.
    for (const [key, body] of before) {
      const [path, id] = key.split(' ');
      expect((await t.request({ method: 'GET', url: fillPath(path, { id }), token: b.token })).body, key).toBe(body);
    }
    for (const op of ops.filter((o) => o.method === 'GET' && o.pathParams.length === 0 && o.scope && o.query.some((q) => q.name === 'limit'))) {
      const list = await t.request({ method: 'GET', url: `${op.path}?limit=100`, token: a.token });
      for (const id of bIds) expect(list.body.includes(id), `${op.path} shows B's ${id}`).toBe(false);
      for (const filter of op.query.filter((q) => /_id$/.test(q.name))) {
        for (const id of bIds.slice(0, 5)) {
          const res = await t.request({ method: 'GET', url: `${op.path}?${filter.name}=${id}`, token: a.token });
          if (res.statusCode === 200) expect(res.json().data, `${op.path}?${filter.name}=B's id`).toEqual([]);
        }
      }
    }
  });

  it('API2:2023 Broken Authentication — forged, expired, alg:none, foreign-key and re-targeted tokens are refused everywhere', async () => {
    const [h, p] = a.token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const header = decodeProtectedHeader(a.token);
    const foreign = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const sign = (payload: object, key = foreign.privateKey, hdr: object = header) =>
      new SignJWT(payload as never).setProtectedHeader(hdr as never).sign(key);
    const none = (payload: object) =>
      `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.`;
    // An expired token: issued by us, then the clock moves past its lifetime.
    const expiring = await a.tokenWith(ALL_SCOPES);
    const forged: Record<string, string> = {
      'alg:none': none(claims),
      'alg:none without signature part': none(claims).slice(0, -1),
      'foreign key under our kid': await sign(claims),
      'our header, payload re-targeted at B': `${h}.${Buffer.from(JSON.stringify({ ...claims, org_id: b.orgId })).toString('base64url')}.${a.token.split('.')[2]}`,
      'HS256 with the public key as secret': await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: header.kid }).sign(new TextEncoder().encode(JSON.stringify(t.ctx.tokens.publicJwks().keys[0]))),
      'scope widened': `${h}.${Buffer.from(JSON.stringify({ ...claims, scope: ALL_SCOPES.join(' ') + ' admin' })).toString('base64url')}.${a.token.split('.')[2]}`,
      'empty': '',
      'garbage': 'abc.def.ghi',
    };
    clock.advance(3601_000);
    forged.expired = expiring;
    try {
      const protectedOps = ops.filter((o) => o.scope);
      expect(protectedOps.length).toBeGreaterThan(20);
      for (const op of protectedOps) {
        for (const [name, token] of Object.entries(forged)) {
          const res = await t.request({
            method: op.method as 'GET',
            url: fillPath(op.path, Object.fromEntries(op.pathParams.map((n) => [n, 'usr_01JAAAAAAAAAAAAAAAAAAAAAAA']))),
            headers: { authorization: `Bearer ${token}` },
            payload: op.body ? (sample(doc, op.body) as object) : undefined,
          });
          expect(res.statusCode, `${op.method} ${op.path} with ${name}`).toBe(401);
          expect(problemOf(res).code).toBe('invalid_token');
          expect(res.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
        }
      }
      // Other ways of presenting credentials are not accepted as a bearer token.
      for (const authorization of [`bearer  ${a.token}`, `Basic ${Buffer.from(`${a.credentials.client_id}:${a.credentials.client_secret}`).toString('base64')}`, a.token]) {
        expect((await t.request({ method: 'GET', url: '/v1/organization', headers: { authorization } })).statusCode).toBe(401);
      }
      expect((await t.request({ method: 'GET', url: `/v1/organization?access_token=${a.token}` })).statusCode).toBe(401);
    } finally {
      clock.advance(-3601_000);
    }
    expect((await t.request({ method: 'GET', url: '/v1/organization', token: a.token })).statusCode).toBe(200);
  });

  it('API3:2023 Broken Object Property Level Authorization — unknown and read-only fields are refused, secrets never shown', async () => {
    const aIds = [...(await seedThroughApi(a, 'alpha'))];
    let refused = 0;
    for (const op of ops.filter((o) => o.body && o.path !== '/v1/oauth/token')) {
      const success = Object.entries(op.responses).find(([s]) => /^2/.test(s))?.[1] as any;
      const shown = resolve(doc, success?.content?.['application/json']?.schema ?? {});
      const writable = new Set(Object.keys(resolve(doc, op.body).properties ?? {}));
      const readOnly = Object.keys(shown.properties ?? {}).filter((f) => !writable.has(f));
      const attempts = [...new Set([...readOnly, 'id', 'org_id', 'organization_id', 'created_at', 'is_admin', 'role'])].filter((f) => !writable.has(f));
      // Path parameters: one of A's own objects at this path, so that only the body can be the problem.
      let url = op.path;
      if (op.pathParams.length) {
        const own = await (async () => {
          for (const id of aIds) {
            const res = await t.request({ method: 'GET', url: fillPath(resourcePath(op.path), { [op.pathParams[0]]: id }), token: a.token });
            if (res.statusCode === 200) return id;
          }
          return null;
        })();
        if (!own) continue;
        url = fillPath(op.path, { [op.pathParams[0]]: own });
      }
      const body = sample(doc, op.body, (name) => (name === 'email' ? `mass-${Math.random().toString(36).slice(2)}@example.com` : undefined)) as Record<string, unknown>;
      for (const field of attempts) {
        const res = await t.request({ method: op.method as 'POST', url, token: a.token, payload: { ...body, [field]: field.endsWith('_at') ? new Date().toISOString() : 'org_01JAAAAAAAAAAAAAAAAAAAAAAA' } });
        expect(res.statusCode, `${op.method} ${op.path} with ${field}`).toBe(400);
        expect(problemOf(res).errors?.map((e) => e.pointer), `${op.method} ${op.path} with ${field}`).toContain(`/${field}`);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(30);
    // Nothing secret is ever part of a read: no webhook secret, no client secret or hash, anywhere in A's lists.
    for (const op of ops.filter((o) => o.method === 'GET' && o.scope && o.pathParams.length === 0)) {
      const res = await t.request({ method: 'GET', url: op.path, token: a.token });
      expect(res.body, op.path).not.toMatch(/whsec_|lms_secret_|secret_hash|"secret"|private_jwk|token_hash/);
    }
  });

  it('API4:2023 Unrestricted Resource Consumption — body, depth, bulk, page and rate limits hold', async () => {
    const withBody = ops.filter((o) => o.body && o.path !== '/v1/oauth/token' && o.pathParams.length === 0);
    for (const op of withBody) {
      const big = await t.request({ method: 'POST', url: op.path, token: a.token, payload: JSON.stringify({ padding: 'x'.repeat(1024 * 1024) }), headers: { 'content-type': 'application/json' } });
      expect(problemOf(big).code, op.path).toBe('payload_too_large');
      const deep = await t.request({ method: 'POST', url: op.path, token: a.token, payload: '{"a":'.repeat(64) + '1' + '}'.repeat(64), headers: { 'content-type': 'application/json' } });
      expect(deep.statusCode, op.path).toBe(400);
    }
    // Bulk routes: at most 500 items, declared in the schema and enforced.
    const bulk = ops.filter((o) => o.path.endsWith('/bulk'));
    expect(bulk.length).toBeGreaterThanOrEqual(2);
    for (const op of bulk) {
      const body = resolve(doc, op.body);
      const [field, arraySchema] = Object.entries<any>(body.properties).find(([, s]) => resolve(doc, s).type === 'array')!;
      expect(resolve(doc, arraySchema).maxItems, op.path).toBeLessThanOrEqual(500);
      const item = sample(doc, resolve(doc, arraySchema).items);
      const res = await t.request({ method: 'POST', url: op.path, token: a.token, payload: { ...(sample(doc, body) as object), [field]: Array(501).fill(item) } });
      expect(res.statusCode, op.path).toBe(400);
      expect(problemOf(res).errors?.some((e) => e.pointer === `/${field}`)).toBe(true);
    }
    // Pages: limit above 100 is refused on every list.
    for (const op of ops.filter((o) => o.method === 'GET' && o.pathParams.length === 0 && o.query.some((q) => q.name === 'limit'))) {
      expect((await t.request({ method: 'GET', url: `${op.path}?limit=1000`, token: a.token })).statusCode, op.path).toBe(400);
    }
    // Rate: an application is held to its budget.
    const limited = await createTestApp({ env: { RATE_LIMIT_PER_MINUTE: '5' } });
    try {
      const tenant = await limited.tenant();
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await limited.request({ method: 'GET', url: '/v1/seats', token: tenant.token })).statusCode);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    } finally {
      await limited.close();
    }
  });

  it('API5:2023 Broken Function Level Authorization — every operation demands its own scope', async () => {
    const protectedOps = ops.filter((o) => o.scope);
    const tokenCache = new Map<string, string>();
    for (const op of protectedOps) {
      const needed = op.scope as Scope;
      // Every other scope, including the read scope of a write operation.
      const others = ALL_SCOPES.filter((s) => s !== needed);
      const key = others.join(' ');
      if (!tokenCache.has(key)) tokenCache.set(key, await a.tokenWith(others));
      const res = await t.request({
        method: op.method as 'GET',
        url: fillPath(op.path, Object.fromEntries(op.pathParams.map((n) => [n, 'usr_01JAAAAAAAAAAAAAAAAAAAAAAA']))),
        token: tokenCache.get(key),
        payload: op.body ? (sample(doc, op.body) as object) : undefined,
      });
      expect(res.statusCode, `${op.method} ${op.path} without ${needed}`).toBe(403);
      expect(problemOf(res).code).toBe('insufficient_scope');
      expect(res.headers['www-authenticate']).toBe(`Bearer realm="lms", error="insufficient_scope", scope="${needed}"`);
    }
    // Writes are never covered by the read scope alone.
    const writes = protectedOps.filter((o) => o.method !== 'GET');
    expect(writes.every((o) => o.scope!.endsWith(':write'))).toBe(true);
    // No token: 401 on every protected operation.
    for (const op of protectedOps) {
      const res = await t.request({ method: op.method as 'GET', url: fillPath(op.path, Object.fromEntries(op.pathParams.map((n) => [n, 'x']))) });
      expect(res.statusCode, `${op.method} ${op.path}`).toBe(401);
    }
  });

  it('API6:2023 Unrestricted Access to Sensitive Business Flows — 40 concurrent enrolments for 4 seats never over-allocate', async () => {
    const org = await t.tenant({ seats: 4 });
    const bulk = await t.request({
      method: 'POST',
      url: '/v1/learners/bulk',
      token: org.token,
      payload: { learners: Array.from({ length: 40 }, (_, i) => ({ email: `race${i}@example.com`, first_name: 'R', last_name: String(i) })) },
    });
    expect(bulk.statusCode).toBe(200);
    const learnerIds: string[] = bulk.json().data.map((d: { learner: { id: string } }) => d.learner.id);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const agent = new Agent({ connections: 40, pipelining: 0 });
    try {
      const statuses = await Promise.all(
        learnerIds.map(async (learner_id) => {
          const res = await undiciRequest(`${base}/v1/enrolments`, {
            method: 'POST',
            dispatcher: agent,
            headers: { authorization: `Bearer ${org.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ learner_id, course_id: courseIds[0] }),
          });
          const body = (await res.body.json()) as { code?: string };
          return res.statusCode === 201 ? 201 : `${res.statusCode} ${body.code}`;
        }),
      );
      expect(statuses.filter((s) => s === 201)).toHaveLength(4);
      expect(statuses.filter((s) => s === '409 seat_limit_reached')).toHaveLength(36);
      // The bulk flow cannot get around it either.
      const more = await t.request({ method: 'POST', url: '/v1/enrolments/bulk', token: org.token, payload: { enrolments: learnerIds.map((learner_id) => ({ learner_id, course_id: courseIds[1] })) } });
      expect(more.statusCode).toBe(200);
      expect(more.json().data.filter((r: { status: string }) => r.status === 'created')).toHaveLength(0);
      const seats = (await t.request({ method: 'GET', url: '/v1/seats', token: org.token })).json();
      expect(seats).toMatchObject({ total: 4, in_use: 4, available: 0 });
    } finally {
      await agent.close();
    }
  });

  it('API7:2023 Server Side Request Forgery — webhook URLs aimed at internal addresses are refused', async () => {
    const strict = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_ALLOW_HTTP: 'false' } });
    try {
      const tenant = await strict.tenant();
      const targets = [
        'https://127.0.0.1/hook',
        'https://127.1/hook',
        'https://2130706433/hook',
        'https://0x7f000001/hook',
        'https://0.0.0.0/hook',
        'https://localhost/hook',
        'https://[::1]/hook',
        'https://[::ffff:127.0.0.1]/hook',
        'https://10.0.0.1/hook',
        'https://172.16.0.1/hook',
        'https://192.168.1.1/hook',
        'https://169.254.169.254/latest/meta-data/',
        'https://[fd00::1]/hook',
        'https://[fe80::1]/hook',
        'https://224.0.0.1/hook',
        'http://93.184.215.14/hook',
        'file:///etc/passwd',
        'gopher://127.0.0.1:6379/_INFO',
        'https://user:pass@127.0.0.1/hook',
      ];
      for (const url of targets) {
        const res = await strict.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url, events: ['*'] } });
        expect([400, 422], url).toContain(res.statusCode);
        if (res.statusCode === 422) expect(problemOf(res).code).toBe('invalid_webhook_url');
      }
      // Nor can an existing endpoint be pointed at one later.
      const list = await strict.request({ method: 'GET', url: '/v1/webhooks', token: tenant.token });
      expect(list.json().data).toEqual([]);
    } finally {
      await strict.close();
    }
  });

  it('API8:2023 Security Misconfiguration — hardened headers, no stack traces, no X-Powered-By, no open CORS, no TRACE', async () => {
    const answers = [
      await t.request({ method: 'GET', url: '/v1/organization', token: a.token, headers: { origin: 'https://attacker.example' } }),
      await t.request({ method: 'GET', url: '/v1/organization' }),
      await t.request({ method: 'POST', url: '/v1/learners', token: a.token, payload: '{"email":', headers: { 'content-type': 'application/json' } }),
      await t.request({ method: 'GET', url: '/v1/../../etc/passwd', token: a.token }),
    ];
    for (const res of answers) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control'], `${res.statusCode} ${res.body}`).toBe('no-store');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-powered-by']).toBeUndefined();
      expect(res.headers.server).toBeUndefined();
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      expect(res.body).not.toMatch(/\bat \S+ \(|node_modules|\/src\/|\.ts:\d+|SyntaxError|Unexpected token/);
    }
    for (const method of ['TRACE', 'CONNECT'] as const) {
      const res = await t.request({ method: method as 'GET', url: '/v1/organization', token: a.token });
      expect(res.statusCode, method).toBeGreaterThanOrEqual(400);
      expect(res.body).not.toContain(a.token);
    }
    expect(t.config.trustProxy).toBe(false);
    const docs = await t.request({ method: 'GET', url: '/docs/' });
    expect(docs.headers['content-security-policy']).toMatch(/object-src 'none'/);
  });

  it('API9:2023 Improper Inventory Management — no route is served outside the OpenAPI document', async () => {
    const documented = new Set(ops.map((o) => `${o.method} ${o.path}`));
    const allDocumented = new Set(operationsOf(doc).map((o) => `${o.method} ${o.path}`));
    const served = t.app.registeredRoutes.filter((r) => r.method !== 'HEAD');
    const undocumented = served.filter((r) => !allDocumented.has(`${r.method} ${r.url.replace(/:([A-Za-z_]+)/g, '{$1}')}`));
    // Every /v1 route is documented; the rest are the reference page's assets and the server-rendered pages.
    expect(undocumented.filter((r) => r.url.startsWith('/v1'))).toEqual([]);
    expect(undocumented.map((r) => r.url).filter((u) => !/^\/(docs|portal|console|verify)(\/|$)/.test(u))).toEqual([]);
    expect(served.filter((r) => r.url.startsWith('/v1')).length).toBe(documented.size);
    // No other version, debug or admin surface answers.
    for (const url of ['/v0/courses', '/v2/courses', '/api/v1/courses', '/v1/admin', '/v1/internal', '/v1/debug', '/debug/pprof', '/admin', '/.env', '/.git/config', '/v1/openapi.json.bak']) {
      const res = await t.request({ method: 'GET', url, token: a.token });
      expect(res.statusCode, url).toBe(404);
    }
    // The document itself: one version, every operation secured or explicitly public.
    expect(doc.info.version).toBe('1.0');
    for (const op of ops) expect(op.scope !== null || op.path === '/v1/oauth/token' || op.path.startsWith('/v1/openapi.'), `${op.method} ${op.path}`).toBe(true);
  });

  it('API10:2023 Unsafe Consumption of APIs — webhook receivers\' answers are capped, not followed, not trusted', async () => {
    let redirectFollowed = 0;
    const receiver: Server = createServer((req, res) => {
      if (req.url === '/huge') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = 'A'.repeat(64 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent < 5 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
          if (sent < 5 * 1024 * 1024) res.once('drain', () => ((sent += chunk.length), pump()));
          else res.end();
        };
        res.on('error', () => {});
        pump();
      } else if (req.url === '/slow') {
        setTimeout(() => res.writeHead(204).end(), 30_000).unref();
      } else if (req.url === '/redirect') {
        res.writeHead(307, { location: '/followed' }).end();
      } else if (req.url === '/followed') {
        redirectFollowed++;
        res.writeHead(204).end();
      } else if (req.url === '/lying') {
        res.writeHead(500, { 'content-type': 'application/json', 'retry-after': '999999999' }).end('{"status":"succeeded","ok":true}');
      } else res.writeHead(404).end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const port = (receiver.address() as AddressInfo).port;
    const app = await createTestApp({ env: { WEBHOOK_TIMEOUT: '4s' } });
    const tenant = await app.tenant();
    const worker = startWorker(app.ctx, { pollMs: 50 });
    try {
      const endpoints: Record<string, string> = {};
      for (const name of ['huge', 'slow', 'redirect', 'lying']) {
        const res = await app.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url: `http://127.0.0.1:${port}/${name}`, events: ['*'] } });
        expect(res.statusCode, `${name}: ${res.body}`).toBe(201);
        endpoints[name] = res.json().id;
        expect((await app.request({ method: 'POST', url: `/v1/webhooks/${endpoints[name]}/test`, token: tenant.token })).statusCode).toBeLessThan(300);
      }
      const firstAttempt = async (name: string) => {
        for (let i = 0; i < 600; i++) {
          const res = await app.request({ method: 'GET', url: `/v1/webhooks/${endpoints[name]}/deliveries`, token: tenant.token });
          const delivery = res.json().data[0];
          if (delivery?.attempts?.length) return delivery;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`no attempt for ${name}`);
      };
      const huge = await firstAttempt('huge');
      expect(huge.attempts[0].status_code, JSON.stringify(huge.attempts[0])).toBe(200);
      expect(Buffer.byteLength(huge.attempts[0].response_excerpt ?? '')).toBeLessThanOrEqual(1024);
      const slow = await firstAttempt('slow');
      expect(slow.status).not.toBe('succeeded');
      expect(slow.attempts[0].status_code).toBeNull();
      expect(slow.attempts[0].error).toMatch(/timed out/);
      const redirect = await firstAttempt('redirect');
      expect(redirect.attempts[0].status_code, JSON.stringify(redirect.attempts[0])).toBe(307);
      expect(redirect.status).not.toBe('succeeded');
      expect(redirectFollowed).toBe(0);
      const lying = await firstAttempt('lying');
      expect(lying.status).not.toBe('succeeded');
      expect(lying.attempts[0].status_code, JSON.stringify(lying.attempts[0])).toBe(500);
      // A receiver's Retry-After is honoured only up to a cap: it cannot park a delivery for years.
      if (lying.next_attempt_at) expect(Date.parse(lying.next_attempt_at) - Date.now()).toBeLessThanOrEqual(24 * 3_600_000 + 60_000);
    } finally {
      await worker.stop();
      await app.close();
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
    }
  });
});
