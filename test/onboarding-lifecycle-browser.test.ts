// Item 2 of issue 5, in a real browser: reject with a reason (the e-mail carries it); suspend → the token is
// refused within 5 s (also by a second app instance on the same database, standing in for another API
// process with its own cache); reinstate → a new token works; reset secret → the old secret is invalid_client,
// the new one works.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { createTestApp, type TestApp } from './helpers.js';
import { launchBrowser } from './browser.js';
import { systemClock } from '../src/clock.js';
import { createContext, type AppContext } from '../src/context.js';
import { buildApp } from '../src/app.js';
import { addOperator } from '../src/modules/accounts/service.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { credentialsOf, waitForMail } from './mail-helpers.js';
import { SHOTS, signIn, watchedPage } from './portal-browser-helpers.js';

let t: TestApp;
let base: string;
let browser: Browser;
let otherCtx: AppContext;
let other: FastifyInstance;

beforeAll(async () => {
  t = await createTestApp({ clock: systemClock });
  await t.loadCatalogue();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  // A second API instance on the same database: its own TokenService and its own application-state cache.
  otherCtx = await createContext(t.config, { schema: t.database.schema, clock: systemClock });
  other = await buildApp(otherCtx);
  await other.ready();
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await other?.close();
  await otherCtx?.db.close();
  await t?.close();
});

async function tokenFor(creds: { client_id: string; client_secret: string }) {
  const res = await fetch(`${base}/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: creds.client_id, client_secret: creds.client_secret }),
  });
  return { status: res.status, body: (await res.json()) as { access_token?: string; error?: string; scope?: string } };
}

const coursesHere = async (token: string) => (await fetch(`${base}/v1/courses?limit=1`, { headers: { authorization: `Bearer ${token}` } })).status;
const coursesThere = async (token: string) => (await other.inject({ method: 'GET', url: '/v1/courses?limit=1', headers: { authorization: `Bearer ${token}` } })).statusCode;

/** Polls until check() holds; returns how long it took. Fails after `limitMs` (the bound under test). */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > limitMs) throw new Error(`not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function apply(dev: Page, name: string, scopes: string[]): Promise<string> {
  await dev.goto(`${base}/portal/applications/new`);
  await dev.getByLabel('Application name').fill(name);
  await dev.getByLabel('What are you building?').fill(`${name}: a test integration.`);
  await dev.getByLabel('Organization it acts for').fill('Globex');
  for (const scope of scopes) await dev.getByRole('checkbox', { name: new RegExp(`^${scope} `) }).check();
  await dev.getByRole('button', { name: 'Submit application' }).click();
  await dev.getByRole('status').filter({ hasText: 'your application is pending review' }).waitFor();
  return /applications\/(app_[0-9A-Z]+)/.exec(dev.url())![1];
}

describe('application lifecycle in the browser', () => {
  it('reject with a reason; suspend, reinstate; reset the secret', async () => {
    await addOperator(t.ctx, 'ops@example.com');
    const org = await createOrganization(t.ctx, { name: 'Globex', seats: 10 });
    const csp: string[] = [];
    const devContext = await browser.newContext({ viewport: { width: 1000, height: 800 } });
    const dev = await watchedPage(devContext, csp);
    await signIn(dev, base, t.config.dataDir, 'portal', 'dev2@example.com');
    const opContext = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const op = await watchedPage(opContext, csp);
    await signIn(op, base, t.config.dataDir, 'console', 'ops@example.com');

    // Reject with a reason: the developer's e-mail and the portal both carry it.
    const rejectedId = await apply(dev, 'Catalogue scraper', ['courses:read']);
    const reason = 'Please say which learner data you store & for how long.';
    await op.goto(`${base}/console/applications/${rejectedId}`);
    await op.getByLabel(/^Reason/).fill(reason);
    await op.getByRole('button', { name: 'Reject' }).click();
    await op.getByRole('status').filter({ hasText: 'Rejected. The developer was told the reason' }).waitFor();
    const rejection = await waitForMail(t.config.dataDir, 'dev2@example.com', /^Not approved/);
    expect(rejection.text).toContain(`Reason: ${reason}`);
    expect(rejection.html).toContain('Please say which learner data you store &amp; for how long.');
    await dev.goto(`${base}/portal/applications/${rejectedId}`);
    await dev.getByText(reason).waitFor();
    await dev.screenshot({ path: `${SHOTS}/portal-rejected.png`, fullPage: true });

    // Approve a second application; its token works here and in the other instance (whose cache now holds it).
    const appId = await apply(dev, 'Globex HR sync', ['courses:read', 'seats:read']);
    await op.goto(`${base}/console/applications/${appId}`);
    await op.getByLabel('Organization it acts for').selectOption(org.id);
    await op.getByRole('button', { name: 'Approve and e-mail the credentials' }).click();
    await op.getByRole('status').filter({ hasText: 'Approved.' }).waitFor();
    const creds = credentialsOf(await waitForMail(t.config.dataDir, 'dev2@example.com', /^Approved/));
    const first = await tokenFor(creds);
    expect(first.status).toBe(200);
    const token1 = first.body.access_token!;
    expect(await coursesHere(token1)).toBe(200);
    expect(await coursesThere(token1)).toBe(200);

    // Suspend: the token is refused within 5 s, by both instances; no new token is issued.
    await op.getByRole('button', { name: 'Suspend' }).click();
    await op.getByRole('status').filter({ hasText: 'Suspended.' }).waitFor();
    const suspendedAt = Date.now();
    await within(5000, async () => (await coursesHere(token1)) === 401);
    await within(5000 - (Date.now() - suspendedAt), async () => (await coursesThere(token1)) === 401);
    const lag = Date.now() - suspendedAt;
    console.info(`suspension: token refused by both instances ${lag} ms after the console confirmed it`);
    expect(lag).toBeLessThan(5000);
    const whileSuspended = await tokenFor(creds);
    expect(whileSuspended).toEqual({ status: 401, body: { error: 'invalid_client', error_description: expect.any(String) } });
    await op.screenshot({ path: `${SHOTS}/console-suspended.png`, fullPage: true });

    // Reinstate: a new token works (in both instances within 5 s); the token from before the suspension stays dead.
    await op.getByRole('button', { name: 'Reinstate' }).click();
    await op.getByRole('status').filter({ hasText: 'Reinstated.' }).waitFor();
    const second = await tokenFor(creds);
    expect(second.status).toBe(200);
    const token2 = second.body.access_token!;
    expect(await coursesHere(token2)).toBe(200);
    await within(5000, async () => (await coursesThere(token2)) === 200);
    expect(await coursesHere(token1)).toBe(401);

    // Reset the secret in the portal: the new one arrives by e-mail once; the old one is invalid_client.
    await dev.goto(`${base}/portal/applications/${appId}`);
    await dev.getByRole('button', { name: 'Reset secret' }).click();
    await dev.getByRole('status').filter({ hasText: 'A new client secret is on its way' }).waitFor();
    const resetMail = await waitForMail(t.config.dataDir, 'dev2@example.com', /^New client secret/);
    const newCreds = credentialsOf(resetMail);
    expect(newCreds.client_id).toBe(appId);
    expect(newCreds.client_secret).not.toBe(creds.client_secret);
    expect(await dev.content()).not.toContain(newCreds.client_secret);
    const old = await tokenFor(creds);
    expect(old.status).toBe(401);
    expect(old.body.error).toBe('invalid_client');
    const fresh = await tokenFor(newCreds);
    expect(fresh.status).toBe(200);
    expect(await coursesHere(fresh.body.access_token!)).toBe(200);
    expect(await coursesHere(token2)).toBe(401); // tokens issued with the old secret stop too

    // Every decision and credential event is in the audit log, with who did it.
    const log = await t.ctx.db.kysely.selectFrom('audit_log').select(['actor', 'action']).where('target', '=', appId).orderBy('id').execute();
    expect(log).toEqual([
      { actor: 'developer:dev2@example.com', action: 'application.submitted' },
      { actor: 'operator:ops@example.com', action: 'application.approved' },
      { actor: 'system', action: 'application.credentials_mailed' },
      { actor: 'operator:ops@example.com', action: 'application.suspended' },
      { actor: 'operator:ops@example.com', action: 'application.reinstated' },
      { actor: 'developer:dev2@example.com', action: 'application.secret_reset' },
      { actor: 'system', action: 'application.credentials_mailed' },
    ]);
    expect(csp).toEqual([]);
    await devContext.close();
    await opContext.close();
  }, 240_000);
});
