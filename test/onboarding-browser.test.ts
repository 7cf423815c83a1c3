// Item 1 of issue 5, in a real browser (Debian's Chromium via playwright-core) against a real listener:
// a developer signs in through the link from the e-mail and applies; an operator (added with the CLI) signs in
// and approves with fewer scopes than asked; the developer's e-mail holds the credentials; they get a token
// whose scope is exactly the granted set, and the token lists courses. Screenshots go to test-artifacts/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { createTestApp, type TestApp } from './helpers.js';
import { launchBrowser } from './browser.js';
import { systemClock } from '../src/clock.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { credentialsOf, waitForMail } from './mail-helpers.js';
import { SHOTS, signIn, watchedPage } from './portal-browser-helpers.js';

const run = promisify(execFile);

let t: TestApp;
let base: string;
let browser: Browser;

beforeAll(async () => {
  t = await createTestApp({ clock: systemClock });
  await t.loadCatalogue();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('onboarding in the browser', () => {
  it('apply → approve with fewer scopes → credentials by e-mail → a token with exactly those scopes lists courses', async () => {
    // The operator is added the way operators are: with the CLI, against the same database.
    const cli = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'operators', 'add', 'ops@example.com', '--json'], {
      env: { ...process.env, DATA_DIR: t.database.dataDir, DATABASE_URL: t.database.databaseUrl, LOG_LEVEL: 'silent' },
      timeout: 90_000,
    });
    expect(JSON.parse(cli.stdout.trim())).toMatchObject({ id: expect.stringMatching(/^opr_/), email: 'ops@example.com' });
    const org = await createOrganization(t.ctx, { name: 'Acme Training', seats: 25 });

    // Developer: sign in through the e-mailed link and apply.
    const devContext = await browser.newContext({ viewport: { width: 1000, height: 760 } });
    const csp: string[] = [];
    const dev = await watchedPage(devContext, csp);
    await signIn(dev, base, t.config.dataDir, 'portal', 'dev@example.com');
    await dev.getByRole('link', { name: 'Apply for credentials' }).first().click();
    await dev.getByLabel('Application name').fill('Acme HR sync');
    await dev.getByLabel('What are you building?').fill('Nightly sync of our HR system: new hires become learners and are enrolled in onboarding courses.');
    await dev.getByLabel('Organization it acts for').fill('Acme Training');
    for (const scope of ['courses:read', 'learners:read', 'seats:read']) await dev.getByRole('checkbox', { name: new RegExp(`^${scope} `) }).check();
    await dev.screenshot({ path: `${SHOTS}/portal-apply.png`, fullPage: true });
    await dev.getByRole('button', { name: 'Submit application' }).click();
    await dev.getByRole('status').filter({ hasText: 'your application is pending review' }).waitFor();
    const appId = /applications\/(app_[0-9A-Z]+)/.exec(dev.url())![1];

    // Operator: sign in, find the pending application, approve with two of the three scopes.
    const opContext = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const op = await watchedPage(opContext, csp);
    await signIn(op, base, t.config.dataDir, 'console', 'ops@example.com');
    await op.getByRole('heading', { name: 'Pending applications' }).waitFor();
    await op.screenshot({ path: `${SHOTS}/console-pending.png`, fullPage: true });
    await op.getByRole('link', { name: 'Acme HR sync' }).click();
    await op.getByLabel('Organization it acts for').selectOption(org.id);
    await op.getByRole('checkbox', { name: /^learners:read / }).uncheck();
    await op.screenshot({ path: `${SHOTS}/console.png` });
    await op.screenshot({ path: `${SHOTS}/console-review.png`, fullPage: true });
    await op.getByRole('button', { name: 'Approve and e-mail the credentials' }).click();
    await op.getByRole('status').filter({ hasText: 'Approved. The client ID and secret were e-mailed' }).waitFor();

    // The developer's e-mail holds the credentials; the token carries exactly the granted scopes.
    const mail = await waitForMail(t.config.dataDir, 'dev@example.com', /^Approved/);
    const creds = credentialsOf(mail);
    expect(creds.client_id).toBe(appId);
    expect([...creds.scopes].sort()).toEqual(['courses:read', 'seats:read']);
    const tokenRes = await fetch(`${base}/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: creds.client_id, client_secret: creds.client_secret }),
    });
    expect(tokenRes.status).toBe(200);
    const token = (await tokenRes.json()) as { access_token: string; scope: string };
    expect(token.scope.split(' ').sort()).toEqual(['courses:read', 'seats:read']);
    const courses = await fetch(`${base}/v1/courses?limit=5`, { headers: { authorization: `Bearer ${token.access_token}` } });
    expect(courses.status).toBe(200);
    expect(((await courses.json()) as { data: unknown[] }).data.length).toBe(5);
    const learners = await fetch(`${base}/v1/learners`, { headers: { authorization: `Bearer ${token.access_token}` } });
    expect(learners.status).not.toBe(200); // not granted (403), or not built yet (404)

    // The portal shows state, client ID and granted scopes — never the secret.
    await dev.goto(`${base}/portal`);
    await dev.getByRole('cell', { name: appId }).waitFor();
    expect(await dev.getByRole('cell', { name: 'approved' }).count()).toBe(1);
    expect(await dev.content()).not.toContain(creds.client_secret);
    await dev.screenshot({ path: `${SHOTS}/portal.png` });
    await dev.goto(`${base}/portal/applications/${appId}`);
    await dev.getByRole('button', { name: 'Reset secret' }).waitFor();
    expect(await dev.content()).not.toContain(creds.client_secret);
    await dev.screenshot({ path: `${SHOTS}/portal-application.png`, fullPage: true });

    // The audit log shows who decided what.
    await op.goto(`${base}/console/audit`);
    await op.getByRole('cell', { name: 'application.approved' }).waitFor();
    await op.getByRole('cell', { name: 'operator:ops@example.com' }).first().waitFor();
    await op.screenshot({ path: `${SHOTS}/console-audit.png`, fullPage: true });
    expect(csp).toEqual([]);
    await devContext.close();
    await opContext.close();
  }, 240_000);

  it('is usable at a phone’s width and keyboard focus is visible', async () => {
    const phone = await browser.newContext({ viewport: { width: 375, height: 740 }, deviceScaleFactor: 1 });
    const page = await phone.newPage();
    page.setDefaultTimeout(30_000);
    await signIn(page, base, t.config.dataDir, 'console', 'ops@example.com');
    for (const path of ['/console', '/console/applications', '/console/organizations', '/console/catalogue', '/console/audit']) {
      await page.goto(base + path);
      const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
      expect(overflow, `horizontal overflow on ${path}`).toBeLessThanOrEqual(0);
    }
    await page.screenshot({ path: `${SHOTS}/console-phone.png`, fullPage: false });
    await page.keyboard.press('Tab');
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).toBe('solid');
    await phone.close();
  }, 120_000);
});
