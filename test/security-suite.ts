// The shared security suite (Unkey's common-tests idea): any route table can run it.
//   securitySuite('records', ROUTES, async () => ({ t, tenant, foreign: { learner: idOfAnotherOrg, ... } }))
// For each route:
//   - no token → 401 invalid_token (with WWW-Authenticate)
//   - a token of the same organization with every scope except the route's → 403 insufficient_scope
//   - another organization's id (in the path or the body) → 404, identical (status, code, detail) to an unknown id
//   - an unknown body field → 400
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES, type Scope } from '../src/auth/scopes.js';
import { problemOf, type TestApp, type Tenant } from './helpers.js';

export interface SecurityRoute {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** The path; ":id" is replaced by the foreign or unknown id of kind `idKind`. */
  url: string;
  scope: Scope;
  /** A valid body. For idIn "body" it receives the (foreign or unknown) id to put in it. */
  body?: (id: string) => Record<string, unknown>;
  /** Which fixture id the route refers to (a key of `foreign`). */
  idKind?: string;
  /** Where that id goes: the path (default) or the body. */
  idIn?: 'path' | 'body';
}

export interface SecurityFixtures {
  t: TestApp;
  /** The caller. */
  tenant: Tenant;
  /** Ids of resources that belong to ANOTHER organization, by kind. */
  foreign: Record<string, string>;
  /** Closes the app after the suite (default: t.close()). */
  close?: () => Promise<void>;
}

/** An id of the same shape as `like` that names nothing. */
export function unknownIdLike(like: string): string {
  const prefix = like.includes('_') ? like.slice(0, like.indexOf('_')) : 'x';
  return `${prefix}_01ARZ3NDEKTSV4RRFFQ69G5FAV`;
}

export function securitySuite(name: string, routes: SecurityRoute[], setup: () => Promise<SecurityFixtures>): void {
  describe(`security suite: ${name}`, () => {
    let f: SecurityFixtures;
    const tokensWithout = new Map<Scope, string>();

    beforeAll(async () => {
      f = await setup();
    });
    afterAll(async () => {
      await (f?.close ? f.close() : f?.t.close());
    });

    const urlFor = (route: SecurityRoute, id?: string) => (id && (route.idIn ?? 'path') === 'path' ? route.url.replace(':id', id) : route.url);
    const fixtureId = (route: SecurityRoute) => (route.idKind ? f.foreign[route.idKind] : undefined) ?? unknownIdLike('x_');
    const validBody = (route: SecurityRoute, id: string) => (route.body ? route.body(id) : undefined);

    for (const route of routes) {
      const label = `${route.method} ${route.url}`;

      it(`${label}: no token → 401 invalid_token`, async () => {
        const id = fixtureId(route);
        const res = await f.t.request({ method: route.method, url: urlFor(route, id), payload: validBody(route, id) });
        expect(res.statusCode).toBe(401);
        expect(problemOf(res).code).toBe('invalid_token');
        expect(res.headers['www-authenticate']).toContain('invalid_token');
      });

      it(`${label}: token without ${route.scope} → 403 insufficient_scope`, async () => {
        let token = tokensWithout.get(route.scope);
        if (!token) {
          token = await f.tenant.tokenWith(ALL_SCOPES.filter((s) => s !== route.scope));
          tokensWithout.set(route.scope, token);
        }
        const id = fixtureId(route);
        const res = await f.t.request({ method: route.method, url: urlFor(route, id), payload: validBody(route, id), token });
        expect(res.statusCode).toBe(403);
        expect(problemOf(res).code).toBe('insufficient_scope');
        expect(res.headers['www-authenticate']).toContain(`scope="${route.scope}"`);
      });

      if (route.idKind) {
        it(`${label}: another organization's ${route.idKind} → 404 identical to an unknown id`, async () => {
          const foreignId = f.foreign[route.idKind!];
          expect(foreignId, `fixture id for ${route.idKind}`).toBeTruthy();
          const unknownId = unknownIdLike(foreignId);
          const send = (id: string) =>
            f.t.request({ method: route.method, url: urlFor(route, id), payload: validBody(route, id), token: f.tenant.token });
          const [foreign, unknown] = [await send(foreignId), await send(unknownId)];
          expect(foreign.statusCode).toBe(404);
          const a = problemOf(foreign);
          const b = problemOf(unknown);
          expect({ status: a.status, code: a.code, detail: a.detail }).toEqual({ status: b.status, code: b.code, detail: b.detail });
          expect(a.code).toBe('not_found');
          expect(foreign.body).not.toContain(foreignId);
        });
      }

      if (route.body) {
        it(`${label}: an unknown body field → 400`, async () => {
          const id = fixtureId(route);
          const res = await f.t.request({
            method: route.method,
            url: urlFor(route, id),
            payload: { ...route.body!(id), is_admin: true },
            token: f.tenant.token,
          });
          expect(res.statusCode).toBe(400);
          const p = problemOf(res);
          expect(p.code).toBe('validation_failed');
          expect(p.errors?.map((e) => e.pointer)).toContain('/is_admin');
        });
      }
    }
  });
}
