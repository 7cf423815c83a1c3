// The published description covers every route the app serves, documents scopes and errors, and the reference
// page at /docs renders it with every request staying on this machine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { createTestApp, type TestApp } from './helpers.js';
import { launchBrowser } from './browser.js';
import { ERROR_CODES } from '../src/http/errors.js';
import { parse as parseYaml } from 'yaml';

let t: TestApp;
let doc: any;

beforeAll(async () => {
  t = await createTestApp();
  doc = (await t.request({ method: 'GET', url: '/v1/openapi.json' })).json();
});
afterAll(() => t.close());

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1 with version 1.0 and an OAuth2 client-credentials scheme listing the scopes', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0');
    const flow = doc.components.securitySchemes.oauth2.flows.clientCredentials;
    expect(flow.tokenUrl).toBe('http://127.0.0.1:3000/v1/oauth/token');
    expect(Object.keys(flow.scopes)).toContain('courses:read');
  });

  it('lists every route the app serves (all but the reference page assets under /docs)', () => {
    const served = t.app.registeredRoutes.filter((r) => r.method !== 'HEAD' && !r.url.startsWith('/docs'));
    expect(served.length).toBeGreaterThan(8);
    const missing = served.filter((r) => !doc.paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()]);
    expect(missing).toEqual([]);
    // …and documents nothing that is not served.
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${path}`));
    const servedKeys = new Set(served.map((r) => `${r.method} ${toOpenApiPath(r.url)}`));
    expect(documented.filter((k) => !servedKeys.has(k))).toEqual([]);
  });

  it('declares each protected operation’s scope and its error responses', () => {
    const op = doc.paths['/v1/courses'].get;
    expect(op.security).toEqual([{ oauth2: ['courses:read'] }]);
    for (const status of ['400', '401', '403', '429', '500']) {
      expect(op.responses[status].content['application/problem+json'].schema.$ref).toBe('#/components/schemas/Problem');
    }
    expect(doc.paths['/v1/courses/{id}'].get.responses['404']).toBeDefined();
    expect([...doc.components.schemas.Problem.properties.code.enum].sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(doc.paths['/v1/oauth/token'].post.security).toEqual([]);
  });

  it('is served as YAML too, with the same content', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/openapi.yaml' });
    expect(res.headers['content-type']).toMatch(/^application\/yaml/);
    expect(parseYaml(res.body)).toEqual(doc);
  });
});

describe('/docs', () => {
  it('renders the reference with no request leaving the machine', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      const foreign: string[] = [];
      page.on('request', (req) => {
        const url = new URL(req.url());
        if (url.protocol !== 'data:' && url.host !== new URL(base).host) foreign.push(req.url());
      });
      await page.goto(`${base}/docs`, { waitUntil: 'networkidle' });
      await page.getByText('Learning-Management Integration API').first().waitFor({ timeout: 15_000 });
      await page.getByText('/v1/courses', { exact: true }).first().waitFor({ timeout: 15_000 });
      expect(foreign).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
