// Item 3 of issue 5: e-mail goes out over a real SMTP server (smtp-server on 127.0.0.1) when SMTP_URL is set,
// and into the .eml outbox (DATA_DIR/mail/) when it is not; both with a plain-text and an HTML part.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { createTestApp, type TestApp } from './helpers.js';
import { Mailer } from '../src/mail/index.js';
import { addOperator, requestSignInLink } from '../src/modules/accounts/service.js';
import { applyForCredentials, approveApplication } from '../src/modules/applications/service.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { credentialsOf, parseMail, readOutbox, signInLinkOf, type ParsedMail } from './mail-helpers.js';

async function developer(t: TestApp, email: string) {
  const id = `dev_${Math.random().toString(36).slice(2)}`;
  const now = new Date().toISOString();
  await t.ctx.db.kysely.insertInto('developers').values({ id, email, email_normalized: email, created_at: now, updated_at: now }).execute();
  return { id, email };
}

/** Applies and approves with two of three scopes; returns the application id. */
async function approvedApplication(t: TestApp, email: string): Promise<string> {
  const dev = await developer(t, email);
  const app = await applyForCredentials(t.ctx, dev, { name: 'Mail test app', description: 'Tests mail', requestedOrg: 'Mailers', scopes: ['courses:read', 'learners:read', 'seats:read'] });
  const org = await createOrganization(t.ctx, { name: `Mailers ${app.id}`, seats: 3 });
  const result = await approveApplication(t.ctx, { id: 'opr_x', email: 'op@example.com' }, app.id, { orgId: org.id, scopes: ['courses:read', 'seats:read'] });
  expect(result.mailed).toBe(true);
  return app.id;
}

async function tokenWith(t: TestApp, creds: { client_id: string; client_secret: string }) {
  return t.app.inject({ method: 'POST', url: '/v1/oauth/token', payload: { client_id: creds.client_id, client_secret: creds.client_secret } });
}

describe('with SMTP_URL: a real SMTP server on 127.0.0.1', () => {
  let smtp: SMTPServer;
  const received: (ParsedMail & { envelopeTo: string[] })[] = [];
  let t: TestApp;

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          received.push({ ...parseMail(Buffer.concat(chunks).toString('utf8')), envelopeTo: session.envelope.rcptTo.map((r) => r.address) });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const port = (smtp.server.address() as AddressInfo).port;
    t = await createTestApp({ env: { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'LMS API <no-reply@lms.test>' } });
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  it('delivers a sign-in link with plain-text and HTML parts', async () => {
    await addOperator(t.ctx, 'smtp-op@example.com');
    await requestSignInLink(t.ctx, 'console', 'smtp-op@example.com');
    const mail = received.at(-1)!;
    expect(mail.envelopeTo).toEqual(['smtp-op@example.com']);
    expect(mail.headers.from).toContain('no-reply@lms.test');
    expect(mail.subject).toBe('Your sign-in link for the operator console');
    expect(mail.headers['content-type']).toMatch(/^multipart\/alternative/);
    const link = signInLinkOf(mail);
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:3000\/console\/sign-in\/confirm\?token=/);
    expect(mail.html).toContain(`href="${link}"`);
    // Nothing is written to the outbox folder when SMTP is used.
    expect(existsSync(join(t.config.dataDir, 'mail'))).toBe(false);
  });

  it('delivers the credentials on approval, and they work', async () => {
    const appId = await approvedApplication(t, 'smtp-dev@example.com');
    const mail = received.filter((m) => m.envelopeTo.includes('smtp-dev@example.com')).at(-1)!;
    expect(mail.subject).toBe('Approved: your API credentials for "Mail test app"');
    const creds = credentialsOf(mail);
    expect(creds.client_id).toBe(appId);
    expect(creds.scopes).toEqual(['seats:read', 'courses:read']); // in the order of the scope table
    expect(mail.html).toContain(creds.client_secret);
    const res = await tokenWith(t, creds);
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('seats:read courses:read');
  });

  it('reports a failed send instead of pretending: the approval stands and the audit log says the mail failed', async () => {
    const dead = new Mailer({ smtpUrl: 'smtp://127.0.0.1:1', mailFrom: 'x@lms.test', dataDir: t.config.dataDir, logLevel: 'silent' });
    const ctx = { ...t.ctx, mailer: dead };
    const dev = await developer(t, 'unlucky@example.com');
    const app = await applyForCredentials(ctx, dev, { name: 'Unlucky', description: 'd', requestedOrg: 'o', scopes: ['courses:read'] });
    const org = await createOrganization(ctx, { name: 'Unlucky org', seats: 1 });
    const r = await approveApplication(ctx, { id: 'opr_x', email: 'op@example.com' }, app.id, { orgId: org.id, scopes: ['courses:read'] });
    expect(r.mailed).toBe(false);
    expect(r.application.status).toBe('approved');
    const actions = await t.ctx.db.kysely.selectFrom('audit_log').select('action').where('target', '=', app.id).orderBy('id').execute();
    expect(actions.map((a) => a.action)).toEqual(['application.submitted', 'application.approved', 'application.credentials_mail_failed']);
  });
});

describe('without SMTP_URL: the .eml outbox', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('writes each message as an .eml file with plain-text and HTML parts, and logs where', async () => {
    const lines: string[] = [];
    const mailer = new Mailer({ smtpUrl: null, mailFrom: 'no-reply@localhost', dataDir: t.config.dataDir, logLevel: 'info' }, { info: (_o, msg) => lines.push(msg) });
    const sent = await mailer.send({ to: 'someone@example.com', subject: 'Grüße <test>', text: 'Plain ünïcode body', html: '<p>HTML body</p>' });
    expect(sent.file).toMatch(/mail[/\\]mail_[0-9A-Z]{26}\.eml$/);
    expect(lines).toEqual([`mail written to ${sent.file}`]);
    const mail = parseMail((await import('node:fs')).readFileSync(sent.file!, 'utf8'));
    expect(mail.subject).toBe('Grüße <test>');
    expect(mail.to).toBe('someone@example.com');
    expect(mail.headers.from).toBe('no-reply@localhost');
    expect(mail.text.trim()).toBe('Plain ünïcode body');
    expect(mail.html.trim()).toBe('<p>HTML body</p>');
  });

  it('is what the app uses: the credentials arrive in the outbox and work', async () => {
    const appId = await approvedApplication(t, 'file-dev@example.com');
    const mail = readOutbox(t.config.dataDir).filter((m) => m.to === 'file-dev@example.com').at(-1)!;
    expect(mail.file).toBeDefined();
    expect(mail.headers['content-type']).toMatch(/^multipart\/alternative/);
    const creds = credentialsOf(mail);
    expect(creds.client_id).toBe(appId);
    expect(mail.html).toContain(creds.client_secret);
    // Only a hash of the secret is stored.
    const row = await t.ctx.db.kysely.selectFrom('applications').select('secret_hash').where('id', '=', appId).executeTakeFirstOrThrow();
    expect(row.secret_hash).not.toContain(creds.client_secret);
    expect((await tokenWith(t, creds)).statusCode).toBe(200);
  });
});
