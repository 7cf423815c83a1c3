// Acceptance 3: after a token request, a webhook creation and a sign-in, the captured log output contains none of
// the secrets, tokens, links or cookies involved. Every request line carries the request id, and the application
// and organization once the caller is known. TRUST_PROXY makes X-Forwarded-For/-Proto count (address, HSTS).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { freshDatabase, testConfig, type TestApp, type TestDatabase } from './helpers.js';
import { WebClient, csrfOf, pathOf } from './web-helpers.js';
import { latestMailTo, signInLinkOf } from './mail-helpers.js';
import { HSTS } from '../src/http/operations.js';
import { startServer, type RunningServer } from '../src/server.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createApprovedApplication, type IssuedCredentials } from '../src/modules/applications/service.js';
import { scrubSecrets, scrubString } from '../src/logging.js';

let database: TestDatabase;
let server: RunningServer;
let creds: IssuedCredentials;
let orgId: string;
const lines: string[] = [];
/** Every secret, token, link and cookie the tests handle; none may appear in the log. */
const secrets = new Map<string, string>();

beforeAll(async () => {
  database = await freshDatabase();
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  server = await startServer(testConfig(database, { PORT: '0', LOG_LEVEL: 'debug', TRUST_PROXY: 'true' }), { logDestination: sink, background: false });
  const org = await createOrganization(server.ctx, { name: 'Log Org', seats: 3 });
  orgId = org.id;
  creds = await createApprovedApplication(server.ctx, { orgId, name: 'log app', scopes: ['courses:read', 'webhooks:write', 'webhooks:read'] as never });
  secrets.set('client secret', creds.client_secret);
}, 60_000);
afterAll(async () => {
  await server?.close();
  await database?.drop();
});

const call = (path: string, init: RequestInit = {}) => fetch(new URL(path, server.url), init);
const log = () => lines.join('\n');
const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('logs without secrets', () => {
  it('token requests (JSON, Basic, wrong secret) and bearer calls leave no secret or token in the log', async () => {
    const json = await call('/v1/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_id: creds.client_id, client_secret: creds.client_secret }) });
    expect(json.status).toBe(200);
    const token = ((await json.json()) as { access_token: string }).access_token;
    secrets.set('access token', token);

    const basic = Buffer.from(`${creds.client_id}:${creds.client_secret}`).toString('base64');
    secrets.set('basic credentials', basic);
    const viaBasic = await call('/v1/oauth/token', { method: 'POST', headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' });
    expect(viaBasic.status).toBe(200);
    secrets.set('second access token', ((await viaBasic.json()) as { access_token: string }).access_token);

    const wrong = `lms_secret_${randomBytes(32).toString('base64url')}`;
    secrets.set('wrong secret', wrong);
    expect((await call('/v1/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_id: creds.client_id, client_secret: wrong }) })).status).toBe(401);

    expect((await call('/v1/courses?limit=1', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const forged = token.slice(0, -4) + 'AAAA';
    secrets.set('forged token', forged);
    expect((await call('/v1/courses', { headers: { authorization: `Bearer ${forged}` } })).status).toBe(401);
    // A credential in a query string (a mistaken client) is not written either.
    const queryToken = randomBytes(32).toString('base64url');
    secrets.set('query token', queryToken);
    await call(`/v1/courses?access_token=${queryToken}`);
  });

  it('a webhook creation and a secret rotation leave no webhook secret in the log', async () => {
    const token = secrets.get('access token')!;
    const created = await call('/v1/webhooks', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['*'] }),
    });
    expect(created.status).toBe(201);
    const endpoint = (await created.json()) as { id: string; secret: string };
    expect(endpoint.secret).toMatch(/^whsec_/);
    secrets.set('webhook secret (create)', endpoint.secret);
    const rotated = await call(`/v1/webhooks/${endpoint.id}/rotate-secret`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(rotated.status).toBe(200);
    secrets.set('webhook secret (rotate)', ((await rotated.json()) as { secret: string }).secret);
  });

  it('a portal sign-in leaves no sign-in link, token, session cookie or CSRF token in the log', async () => {
    const client = new WebClient(server.app);
    const email = 'dev@example.test';
    const csrf = await client.csrf('/portal/sign-in');
    const asked = await client.post('/portal/sign-in', { _csrf: csrf, email });
    expect(asked.statusCode).toBe(200);
    const link = signInLinkOf(latestMailTo(server.ctx.config.dataDir, email, /sign-in link/)!);
    const linkToken = new URL(link).searchParams.get('token')!;
    secrets.set('sign-in link', link);
    secrets.set('sign-in token', linkToken);
    const confirmPage = await client.get(pathOf(link));
    expect(confirmPage.statusCode).toBe(200);
    // Following the link over the network too, as a browser would.
    expect((await call(pathOf(link))).status).toBe(200);
    const done = await client.post('/portal/sign-in/confirm', { _csrf: csrfOf(confirmPage.body), token: linkToken });
    expect(done.statusCode).toBe(303);
    expect((await client.get('/portal')).statusCode).toBe(200);
    for (const [name, value] of client.cookies) secrets.set(`cookie ${name}`, value);
    expect(client.cookies.size).toBeGreaterThan(0);
  });

  it('error logs are scrubbed too: messages, error messages and stacks, named fields', () => {
    const token = secrets.get('access token')!;
    const link = secrets.get('sign-in link')!;
    const webhookSecret = `whsec_${randomBytes(24).toString('base64')}`;
    secrets.set('webhook secret', webhookSecret);
    const err = new Error(`upstream refused Bearer ${token} for ${link} (signing with ${webhookSecret})`);
    server.app.log.error(
      { err, client_secret: creds.client_secret, headers: { authorization: `Bearer ${token}`, cookie: 'lms_session=abc' }, nested: { secret: webhookSecret } },
      `could not deliver with ${webhookSecret} after ${link}`,
    );
    const last = JSON.parse(lines[lines.length - 1]);
    expect(last.level).toBe(50);
    expect(last.err.message).toMatch(/upstream refused Bearer \[redacted\]/);
    expect(last.client_secret).toBe('[redacted]');
    expect(last.headers.authorization).toBe('[redacted]');
  });

  it('the captured log contains none of them', () => {
    expect(lines.length).toBeGreaterThan(10);
    const text = log();
    for (const [name, value] of secrets) {
      expect(value.length, name).toBeGreaterThan(8);
      expect(text.includes(value), `${name} appears in the log`).toBe(false);
    }
  });
});

describe('request log lines', () => {
  it('are JSON with the request id on every request line, and the application and organization once known', () => {
    const requestLines = parsed().filter((l) => l.msg === 'request completed');
    expect(requestLines.length).toBeGreaterThan(8);
    for (const l of requestLines) {
      expect(l.reqId).toEqual(expect.any(String));
      expect(l).toMatchObject({ method: expect.any(String), status: expect.any(Number), duration_ms: expect.any(Number) });
    }
    const courses = requestLines.find((l) => l.route === '/v1/courses' && l.status === 200)!;
    expect(courses).toMatchObject({ app_id: expect.stringMatching(/^app_/), org_id: orgId });
    const token = requestLines.find((l) => l.route === '/v1/oauth/token' && l.status === 200)!;
    expect(token).toMatchObject({ app_id: expect.stringMatching(/^app_/), org_id: orgId });
    // Query values that carry credentials are hidden, the rest stays readable.
    expect(requestLines.some((l) => l.url === '/v1/courses?access_token=[redacted]')).toBe(true);
    expect(requestLines.some((l) => l.url === '/v1/courses?limit=1')).toBe(true);
  });

  it('takes the client address and scheme from X-Forwarded-* when TRUST_PROXY is set', async () => {
    const viaProxy = await call('/healthz', { headers: { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https', 'x-request-id': 'proxy-check-1' } });
    expect(viaProxy.headers.get('strict-transport-security')).toBe(HSTS);
    const plain = await call('/healthz', { headers: { 'x-forwarded-proto': 'http' } });
    expect(plain.headers.get('strict-transport-security')).toBeNull();
    const line = parsed().find((l) => l.reqId === 'proxy-check-1')!;
    expect(line.remote_address).toBe('203.0.113.7');
  });
});

describe('scrubString', () => {
  it('hides credential shapes and leaves ordinary text alone', () => {
    expect(scrubString('GET /v1/courses?limit=5&cursor=abc')).toBe('GET /v1/courses?limit=5&cursor=abc');
    expect(scrubString('/portal/sign-in/confirm?token=abc123&x=1')).toBe('/portal/sign-in/confirm?token=[redacted]&x=1');
    expect(scrubString(`/portal/s/${'A'.repeat(43)}`)).toBe('/portal/s/[redacted]');
    expect(scrubString('learner usr_01JDX8Y3W2Q9R0ABCDEFGHJKMN updated')).toBe('learner usr_01JDX8Y3W2Q9R0ABCDEFGHJKMN updated');
    expect(scrubSecrets({ a: ['Basic dXNlcjpwYXNz'] })).toEqual({ a: ['Basic [redacted]'] });
  });
});
