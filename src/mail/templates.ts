// The messages the service sends. Each has a plain-text and an HTML part built from the same facts; every
// value is escaped in the HTML part (html`` helper). Client secrets appear only here, never on a page.
import { html, type SafeHtml } from '../web/html.js';
import type { MailMessage } from './index.js';

function page(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>
<body style="font-family: system-ui, sans-serif; line-height: 1.5; color: #1b1f24; max-width: 40rem; margin: 0 auto; padding: 1rem;">
<h1 style="font-size: 1.3rem;">${title}</h1>
${body}
<p style="color: #57606a; font-size: 0.9rem;">LMS Integration API</p>
</body></html>`.value;
}

const code = (s: string) => html`<code style="font-family: ui-monospace, monospace; background: #f3f4f6; padding: 0.1rem 0.3rem; word-break: break-all;">${s}</code>`;

export function signInMail(to: string, audience: 'portal' | 'console', link: string): MailMessage {
  const where = audience === 'portal' ? 'the developer portal' : 'the operator console';
  const subject = `Your sign-in link for ${where}`;
  return {
    to,
    subject,
    text: [
      `Someone (hopefully you) asked to sign in to ${where} of the LMS Integration API.`,
      '',
      `Sign in: ${link}`,
      '',
      'The link works once and expires in 15 minutes. If you did not ask for it, ignore this message.',
    ].join('\n'),
    html: page(
      subject,
      html`<p>Someone (hopefully you) asked to sign in to ${where} of the LMS Integration API.</p>
<p><a href="${link}">Sign in to ${where}</a></p>
<p>The link works once and expires in 15 minutes. If you did not ask for it, ignore this message.</p>`,
    ),
  };
}

export interface CredentialFacts {
  appName: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  orgName: string;
  tokenUrl: string;
}

export function credentialsMail(to: string, f: CredentialFacts, reason: 'approved' | 'reset'): MailMessage {
  const subject =
    reason === 'approved' ? `Approved: your API credentials for "${f.appName}"` : `New client secret for "${f.appName}"`;
  const intro =
    reason === 'approved'
      ? `Your application "${f.appName}" has been approved. It acts for ${f.orgName}.`
      : `The client secret of "${f.appName}" was reset. The previous secret no longer works, and tokens issued with it have stopped working.`;
  const example = `curl -s ${f.tokenUrl} -H 'content-type: application/json' -d '{"client_id":"${f.clientId}","client_secret":"<secret>"}'`;
  return {
    to,
    subject,
    text: [
      intro,
      '',
      `client_id:     ${f.clientId}`,
      `client_secret: ${f.clientSecret}`,
      `scopes:        ${f.scopes.join(' ')}`,
      '',
      'This is the only time the secret is sent. Store it in a secret manager; we keep only a hash of it.',
      'If it is lost or exposed, reset it in the developer portal.',
      '',
      `Get an access token (valid 1 hour): ${example}`,
    ].join('\n'),
    html: page(
      subject,
      html`<p>${intro}</p>
<table style="border-collapse: collapse;">
<tr><th scope="row" style="text-align: left; padding-right: 1rem;">client_id</th><td>${code(f.clientId)}</td></tr>
<tr><th scope="row" style="text-align: left; padding-right: 1rem;">client_secret</th><td>${code(f.clientSecret)}</td></tr>
<tr><th scope="row" style="text-align: left; padding-right: 1rem;">scopes</th><td>${code(f.scopes.join(' '))}</td></tr>
</table>
<p><strong>This is the only time the secret is sent.</strong> Store it in a secret manager; we keep only a hash of it.
If it is lost or exposed, reset it in the developer portal.</p>
<p>Get an access token (valid 1 hour):</p>
<pre style="white-space: pre-wrap; background: #f3f4f6; padding: 0.5rem;">${example}</pre>`,
    ),
  };
}

export function rejectedMail(to: string, appName: string, reason: string): MailMessage {
  const subject = `Not approved: "${appName}"`;
  return {
    to,
    subject,
    text: [`Your application "${appName}" was not approved.`, '', `Reason: ${reason}`, '', 'You may apply again in the developer portal.'].join('\n'),
    html: page(
      subject,
      html`<p>Your application "${appName}" was not approved.</p>
<p><strong>Reason:</strong> ${reason}</p>
<p>You may apply again in the developer portal.</p>`,
    ),
  };
}

export function statusMail(to: string, appName: string, change: 'suspended' | 'reinstated'): MailMessage {
  const subject = change === 'suspended' ? `Suspended: "${appName}"` : `Reinstated: "${appName}"`;
  const text =
    change === 'suspended'
      ? `Your application "${appName}" has been suspended by an operator. Its access tokens no longer work and no new ones are issued.`
      : `Your application "${appName}" has been reinstated. Request a new access token with your client credentials; tokens issued before the suspension stay invalid.`;
  return { to, subject, text, html: page(subject, html`<p>${text}</p>`) };
}
