// Browser helpers for the portal and console tests: sign in through the e-mailed link, watch for CSP
// violations, and where screenshots go (test-artifacts/ is gitignored).
import type { BrowserContext, Page } from 'playwright-core';
import { readOutbox, signInLinkOf, waitForMail } from './mail-helpers.js';
import { pathOf } from './web-helpers.js';

export const SHOTS = 'test-artifacts/screenshots';

/** Signs in through the page and the e-mailed link, as a person would. */
export async function signIn(page: Page, baseUrl: string, dataDir: string, audience: 'portal' | 'console', email: string): Promise<void> {
  const before = readOutbox(dataDir).filter((m) => m.to === email && /sign-in link/.test(m.subject)).length;
  await page.goto(`${baseUrl}/${audience}`);
  await page.getByLabel('Your e-mail address').fill(email);
  await page.getByRole('button', { name: 'E-mail me a sign-in link' }).click();
  await page.getByRole('heading', { name: 'Check your e-mail' }).waitFor();
  const mail = await waitForMail(dataDir, email, /sign-in link/, before);
  await page.goto(baseUrl + pathOf(signInLinkOf(mail)));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText(`Signed in as ${email}`).waitFor();
}

/** A page whose console messages about the Content Security Policy are collected (there should be none). */
export async function watchedPage(context: BrowserContext, cspViolations: string[]): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
  });
  return page;
}
