// Item 4 of issue 5: a used or expired sign-in link, a form without its CSRF token, and a developer opening
// another developer's application are refused with a clear page, and nothing changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers.js';
import { ManualClock } from '../src/clock.js';
import { addOperator } from '../src/modules/accounts/service.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { latestMailTo, credentialsOf, readOutbox } from './mail-helpers.js';
import { WebClient, csrfOf, pathOf, signInByMail } from './web-helpers.js';
import { signInLinkOf } from './mail-helpers.js';

let t: TestApp;
let clock: ManualClock;

beforeAll(async () => {
  clock = new ManualClock(new Date('2026-11-22T10:00:00.000Z'));
  t = await createTestApp({ clock });
});
afterAll(() => t.close());

const count = async (table: 'sessions' | 'applications' | 'audit_log' | 'developers') =>
  Number((await t.ctx.db.kysely.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

async function askForLink(client: WebClient, email: string): Promise<string> {
  const csrf = await client.csrf('/portal/sign-in');
  const res = await client.post('/portal/sign-in', { _csrf: csrf, email });
  expect(res.statusCode).toBe(200);
  expect(res.body).toContain('Check your e-mail');
  return pathOf(signInLinkOf(latestMailTo(t.config.dataDir, email, /sign-in link/)!));
}

const tokenOf = (path: string) => new URL(path, 'http://x').searchParams.get('token')!;

describe('sign-in links', () => {
  it('work once: a used link shows a clear page and opens no second session', async () => {
    const client = new WebClient(t.app);
    const link = await askForLink(client, 'once@example.com');
    const page = await client.get(link);
    expect(page.statusCode).toBe(200);
    const first = await client.post('/portal/sign-in/confirm', { _csrf: csrfOf(page.body), token: tokenOf(link) });
    expect(first.statusCode).toBe(303);
    expect(first.headers.location).toBe('/portal');
    const cookie = first.cookies.find((c: { name: string }) => c.name === 'lms_portal') as Record<string, unknown>;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/portal' });
    expect(cookie.secure).toBeFalsy(); // PUBLIC_URL is http:// in tests
    const sessions = await count('sessions');
    const developers = await count('developers');

    const other = new WebClient(t.app);
    const again = await other.get(link);
    expect(again.statusCode).toBe(410);
    expect(again.headers['content-type']).toMatch(/^text\/html/);
    expect(again.body).toContain('has been used already');
    const csrf = await other.csrf('/portal/sign-in');
    const reuse = await other.post('/portal/sign-in/confirm', { _csrf: csrf, token: tokenOf(link) });
    expect(reuse.statusCode).toBe(410);
    expect(reuse.body).toContain('has been used already');
    expect(reuse.body).toContain('Nothing was changed');
    expect(other.cookies.has('lms_portal')).toBe(false);
    expect(await count('sessions')).toBe(sessions);
    expect(await count('developers')).toBe(developers);
  });

  it('expire after 15 minutes: a clear page, the link stays unused, no session', async () => {
    const client = new WebClient(t.app);
    const link = await askForLink(client, 'late@example.com');
    clock.advance(15 * 60_000 + 1000);
    const page = await client.get(link);
    expect(page.statusCode).toBe(410);
    expect(page.body).toContain('has expired');
    const sessions = await count('sessions');
    const csrf = await client.csrf('/portal/sign-in');
    const res = await client.post('/portal/sign-in/confirm', { _csrf: csrf, token: tokenOf(link) });
    expect(res.statusCode).toBe(410);
    expect(res.body).toContain('has expired');
    expect(await count('sessions')).toBe(sessions);
    expect(await t.ctx.db.kysely.selectFrom('developers').select('id').where('email_normalized', '=', 'late@example.com').executeTakeFirst()).toBeUndefined();
  });

  it('store only a hash of the token, and sessions only a hash of their id', async () => {
    const client = new WebClient(t.app);
    const link = await askForLink(client, 'hash@example.com');
    const token = tokenOf(link);
    const rows = await t.ctx.db.kysely.selectFrom('sign_in_links').select('token_hash').execute();
    expect(rows.some((r) => r.token_hash === token)).toBe(false);
    await signInByMail(t, client, 'portal', 'hash@example.com');
    const sid = client.cookies.get('lms_portal')!;
    const sessions = await t.ctx.db.kysely.selectFrom('sessions').select('id_hash').execute();
    expect(sessions.some((s) => s.id_hash === sid)).toBe(false);
  });

  it('the console sends links to operators only, and answers the same for anyone else', async () => {
    await addOperator(t.ctx, 'ops@example.com');
    const client = new WebClient(t.app);
    const before = readOutbox(t.config.dataDir).length;
    const csrf = await client.csrf('/console/sign-in');
    const res = await client.post('/console/sign-in', { _csrf: csrf, email: 'stranger@example.com' });
    expect(res.statusCode).toBe(200);
    expect(readOutbox(t.config.dataDir).length).toBe(before);
    await signInByMail(t, client, 'console', 'ops@example.com');
    expect((await client.get('/console')).statusCode).toBe(200);
  });

  it('are not sent more than 5 times in 15 minutes to one address (nobody can flood an inbox)', async () => {
    const client = new WebClient(t.app);
    const mailsTo = () => readOutbox(t.config.dataDir).filter((m) => m.to === 'flood@example.com').length;
    for (let i = 0; i < 7; i++) {
      const csrf = await client.csrf('/portal/sign-in');
      const res = await client.post('/portal/sign-in', { _csrf: csrf, email: 'flood@example.com' });
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('Check your e-mail');
    }
    expect(mailsTo()).toBe(5);
    clock.advance(15 * 60_000 + 1000);
    const csrf = await client.csrf('/portal/sign-in');
    await client.post('/portal/sign-in', { _csrf: csrf, email: 'flood@example.com' });
    expect(mailsTo()).toBe(6);
  });
});

describe('CSRF', () => {
  it('a form without its token, or with a wrong one, is refused with a clear 403 page and changes nothing', async () => {
    const dev = new WebClient(t.app);
    await signInByMail(t, dev, 'portal', 'csrf@example.com');
    const apps = await count('applications');
    const audit = await count('audit_log');
    const form = { name: 'Sneaky', description: 'x', requested_org: 'Acme', scopes: ['courses:read'] };
    for (const res of [await dev.post('/portal/applications', form), await dev.post('/portal/applications', { ...form, _csrf: 'wrong-token-wrong-token' })]) {
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain('security token');
      expect(res.body).toContain('Nothing was changed');
    }
    // Sign-out without the token does not sign out either.
    expect((await dev.post('/portal/sign-out', {})).statusCode).toBe(403);
    expect((await dev.get('/portal')).statusCode).toBe(200);
    // The sign-in form (before any session) is protected too, by its own cookie.
    const stranger = new WebClient(t.app);
    const mails = readOutbox(t.config.dataDir).length;
    expect((await stranger.post('/portal/sign-in', { email: 'victim@example.com' })).statusCode).toBe(403);
    expect(readOutbox(t.config.dataDir).length).toBe(mails);
    expect(await count('applications')).toBe(apps);
    expect(await count('audit_log')).toBe(audit);
  });

  it('an operator decision without the token changes nothing', async () => {
    const dev = new WebClient(t.app);
    await signInByMail(t, dev, 'portal', 'csrf2@example.com');
    const csrf = await dev.csrf('/portal/applications/new');
    const applied = await dev.post('/portal/applications', { _csrf: csrf, name: 'Pending one', description: 'A sync', requested_org: 'Acme', scopes: ['courses:read'] });
    expect(applied.statusCode).toBe(303);
    const appId = /applications\/(app_[A-Z0-9]+)/.exec(applied.headers.location as string)![1];
    const org = await createOrganization(t.ctx, { name: 'Acme CSRF', seats: 5 });
    const op = new WebClient(t.app);
    await signInByMail(t, op, 'console', 'ops@example.com');
    const res = await op.post(`/console/applications/${appId}/approve`, { org_id: org.id, scopes: 'courses:read' });
    expect(res.statusCode).toBe(403);
    const row = await t.ctx.db.kysely.selectFrom('applications').selectAll().where('id', '=', appId).executeTakeFirstOrThrow();
    expect(row.status).toBe('pending');
    expect(row.secret_hash).toBeNull();
  });
});

describe("another developer's application", () => {
  it('is not found (a 404 page) on viewing and on reset, and nothing changes', async () => {
    const alice = new WebClient(t.app);
    await signInByMail(t, alice, 'portal', 'alice@example.com');
    const csrf = await alice.csrf('/portal/applications/new');
    const applied = await alice.post('/portal/applications', {
      _csrf: csrf,
      name: 'Alice HR sync',
      description: 'Syncs learners',
      requested_org: 'Alice Org',
      scopes: ['courses:read', 'learners:read'],
    });
    const appId = /applications\/(app_[A-Z0-9]+)/.exec(applied.headers.location as string)![1];
    // Approve it so that it has a secret worth stealing.
    const org = await createOrganization(t.ctx, { name: 'Alice Org', seats: 5 });
    const op = new WebClient(t.app);
    await signInByMail(t, op, 'console', 'ops@example.com');
    const opCsrf = await op.csrf(`/console/applications/${appId}`);
    expect((await op.post(`/console/applications/${appId}/approve`, { _csrf: opCsrf, org_id: org.id, scopes: ['courses:read'] })).statusCode).toBe(303);
    const creds = credentialsOf(latestMailTo(t.config.dataDir, 'alice@example.com', /Approved/)!);
    const before = await t.ctx.db.kysely.selectFrom('applications').selectAll().where('id', '=', appId).executeTakeFirstOrThrow();

    const mallory = new WebClient(t.app);
    await signInByMail(t, mallory, 'portal', 'mallory@example.com');
    const view = await mallory.get(`/portal/applications/${appId}`);
    expect(view.statusCode).toBe(404);
    expect(view.headers['content-type']).toMatch(/^text\/html/);
    expect(view.body).toContain('No such application');
    expect(view.body).not.toContain('Alice HR sync');
    const mCsrf = await mallory.csrf('/portal');
    const reset = await mallory.post(`/portal/applications/${appId}/reset-secret`, { _csrf: mCsrf });
    expect(reset.statusCode).toBe(404);
    const unknown = await mallory.get('/portal/applications/app_01NOTEXISTING0000000000000');
    expect(unknown.statusCode).toBe(404);
    const after = await t.ctx.db.kysely.selectFrom('applications').selectAll().where('id', '=', appId).executeTakeFirstOrThrow();
    expect(after).toEqual(before);
    const token = await t.app.inject({ method: 'POST', url: '/v1/oauth/token', payload: { client_id: creds.client_id, client_secret: creds.client_secret } });
    expect(token.statusCode).toBe(200);
    // Alice's own portal page shows the client ID but never the secret.
    const own = await alice.get(`/portal/applications/${appId}`);
    expect(own.statusCode).toBe(200);
    expect(own.body).toContain(appId);
    expect(own.body).not.toContain(creds.client_secret);
  });
});

describe('pages', () => {
  it('escape what people type', async () => {
    const dev = new WebClient(t.app);
    await signInByMail(t, dev, 'portal', 'xss@example.com');
    const csrf = await dev.csrf('/portal/applications/new');
    const res = await dev.post('/portal/applications', {
      _csrf: csrf,
      name: '<script>alert(1)</script>',
      description: '"><img src=x onerror=alert(1)>',
      requested_org: 'Org',
      scopes: 'courses:read',
    });
    const page = await dev.get(res.headers.location as string);
    expect(page.body).not.toContain('<script>alert(1)</script>');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).not.toContain('<img src=x');
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('send a person who is not signed in to the sign-in page', async () => {
    const res = await new WebClient(t.app).get('/console/audit');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in');
  });
});

describe('with an https PUBLIC_URL', () => {
  it('marks the session cookie Secure (and still HttpOnly, SameSite=Lax)', async () => {
    const secure = await createTestApp({ env: { PUBLIC_URL: 'https://lms.example.com' } });
    try {
      const client = new WebClient(secure.app);
      const csrf = await client.csrf('/portal/sign-in');
      await client.post('/portal/sign-in', { _csrf: csrf, email: 'tls@example.com' });
      const link = signInLinkOf(latestMailTo(secure.config.dataDir, 'tls@example.com', /sign-in link/)!);
      expect(link.startsWith('https://lms.example.com/portal/sign-in/confirm?token=')).toBe(true);
      const page = await client.get(pathOf(link));
      const res = await client.post('/portal/sign-in/confirm', { _csrf: csrfOf(page.body), token: tokenOf(pathOf(link)) });
      expect(res.statusCode).toBe(303);
      const cookie = res.cookies.find((c: { name: string }) => c.name === 'lms_portal') as Record<string, unknown>;
      expect(cookie).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax', path: '/portal' });
    } finally {
      await secure.close();
    }
  });
});
