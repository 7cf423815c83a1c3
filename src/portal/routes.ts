// The developer portal: sign in by e-mail, apply for credentials, follow each application's state, reset the
// client secret, sign out. The secret itself is never shown on a page: it goes out once, by e-mail.
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import type { Row } from '../db/types.js';
import { AppError } from '../http/errors.js';
import { IdParams, jsonList } from '../http/schemas.js';
import { SCOPES, ALL_SCOPES } from '../auth/scopes.js';
import {
  applyForCredentials,
  getDeveloperApplication,
  listDeveloperApplications,
  resetClientSecret,
  type ApplicationInput,
} from '../modules/applications/service.js';
import { html, type SafeHtml } from '../web/html.js';
import { csrfField, renderPage, statusBadge } from '../web/layout.js';
import { MultiField, asList, formBody, pageSchema, personOf, seeOther, sendHtml, setUpAudience, viewerOf } from '../web/plugin.js';

const NOTICES = {
  applied: { text: 'Thank you: your application is pending review. You will get an e-mail when it has been decided.' },
  secret_reset: { text: 'A new client secret is on its way to your e-mail address. The old secret no longer works.' },
  secret_reset_unmailed: { text: 'The secret was reset, but the e-mail could not be sent. Try the reset again in a moment.', kind: 'warn' as const },
};
const NoticeQuery = Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) });
const noticeOf = (q: unknown) => NOTICES[(q as { notice?: string }).notice as keyof typeof NOTICES] ?? null;

export function scopeList(scopes: string[]): SafeHtml {
  if (scopes.length === 0) return html`<span class="muted">none</span>`;
  return html`<ul class="scopes">${scopes.map((s) => html`<li><code>${s}</code></li>`)}</ul>`;
}

function applicationsTable(apps: Row<'applications'>[]): SafeHtml {
  if (apps.length === 0) return html`<p>You have no applications yet. <a href="/portal/applications/new">Apply for credentials</a> to get a client ID and secret.</p>`;
  return html`<div class="table-wrap"><table class="cards">
<caption class="muted">Your applications, newest first</caption>
<thead><tr><th scope="col">Application</th><th scope="col">State</th><th scope="col">Client ID</th><th scope="col">Granted scopes</th></tr></thead>
<tbody>${apps.map(
    (a) => html`<tr>
<td data-label="Application"><a href="/portal/applications/${a.id}">${a.name}</a></td>
<td data-label="State">${statusBadge(a.status)}</td>
<td data-label="Client ID">${a.status === 'approved' || a.status === 'suspended' ? html`<code>${a.id}</code>` : html`<span class="muted">after approval</span>`}</td>
<td data-label="Granted scopes">${scopeList(jsonList(a.scopes))}</td>
</tr>`,
  )}</tbody></table></div>`;
}

function applyForm(csrf: string, values: Partial<ApplicationInput> = {}, error?: string): SafeHtml {
  const chosen = new Set(values.scopes ?? []);
  return html`${error ? html`<div class="error" role="alert"><p>${error}</p></div>` : ''}
<p class="lead">Tell us what you are building. An operator reviews every application; on approval the client ID and secret are e-mailed to you once.</p>
<form class="stack" method="post" action="/portal/applications">
${csrfField(csrf)}
<div><label for="name">Application name</label>
<input id="name" name="name" type="text" required maxlength="100" value="${values.name ?? ''}"></div>
<div><label for="description">What are you building? <span class="hint">Who uses it, and what it does with the API.</span></label>
<textarea id="description" name="description" required maxlength="2000">${values.description ?? ''}</textarea></div>
<div><label for="requested_org">Organization it acts for <span class="hint">The customer organization whose learners and seats the application will manage.</span></label>
<input id="requested_org" name="requested_org" type="text" required maxlength="200" value="${values.requestedOrg ?? ''}"></div>
<fieldset><legend>Scopes you need</legend>
<p class="hint">Ask only for what the application uses; an operator may grant fewer.</p>
${ALL_SCOPES.map(
  (s) => html`<label class="choice"><input type="checkbox" name="scopes" value="${s}"${chosen.has(s) ? html` checked` : ''}><span><code>${s}</code> — ${SCOPES[s]}</span></label>`,
)}
</fieldset>
<div><button type="submit">Submit application</button></div>
</form>`;
}

export async function portalRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  setUpAudience(app, ctx, 'portal');

  app.get(
    '/portal',
    { schema: pageSchema('portal', 'Your applications: state, client ID, granted scopes', { statuses: [200, 303], querystring: NoticeQuery }) },
    async (request, reply) => {
      const me = personOf(request);
      const apps = await listDeveloperApplications(ctx, me.id);
      const body = html`${applicationsTable(apps)}
<p><a class="button" href="/portal/applications/new">Apply for credentials</a></p>
<h2>Using your credentials</h2>
<p>Exchange the client ID and secret for an access token (valid 1 hour) at <code>POST ${ctx.config.publicUrl}/v1/oauth/token</code>,
then send it as <code>Authorization: Bearer &lt;token&gt;</code>. See the <a href="/docs">API reference</a>.</p>`;
      return sendHtml(reply, renderPage({ audience: 'portal', title: 'My applications', viewer: viewerOf(request), current: '/portal', body, notice: noticeOf(request.query) }));
    },
  );

  app.get(
    '/portal/applications/new',
    { schema: pageSchema('portal', 'The form to apply for credentials', { statuses: [200, 303] }) },
    async (request, reply) => {
      const body = applyForm(request.web!.csrfToken);
      return sendHtml(reply, renderPage({ audience: 'portal', title: 'Apply for credentials', viewer: viewerOf(request), current: '/portal/applications/new', body }));
    },
  );

  app.post(
    '/portal/applications',
    {
      schema: pageSchema('portal', 'Apply for credentials (the application starts pending)', {
        statuses: [303, 400, 403],
        body: formBody({
          name: Type.String({ maxLength: 1000 }),
          description: Type.String({ maxLength: 10000 }),
          requested_org: Type.String({ maxLength: 1000 }),
          scopes: Type.Optional(MultiField),
        }),
      }),
    },
    async (request, reply) => {
      const b = request.body as { name: string; description: string; requested_org: string; scopes?: string | string[] };
      const input = { name: b.name, description: b.description, requestedOrg: b.requested_org, scopes: asList(b.scopes) };
      try {
        const created = await applyForCredentials(ctx, personOf(request), input);
        return seeOther(reply, `/portal/applications/${created.id}?notice=applied`);
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== 'validation_failed') throw err;
        const body = applyForm(request.web!.csrfToken, input, `${err.message} Nothing was saved yet.`);
        return sendHtml(reply, renderPage({ audience: 'portal', title: 'Apply for credentials', viewer: viewerOf(request), current: '/portal/applications/new', body }), 400);
      }
    },
  );

  app.get(
    '/portal/applications/:id',
    { schema: pageSchema('portal', 'One of your applications', { statuses: [200, 303, 404], params: IdParams(), querystring: NoticeQuery }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const a = await getDeveloperApplication(ctx, personOf(request).id, id);
      const hasCredentials = a.status === 'approved' || a.status === 'suspended';
      const body = html`<dl class="facts">
<dt>State</dt><dd>${statusBadge(a.status)}</dd>
<dt>Client ID</dt><dd>${hasCredentials ? html`<code>${a.id}</code>` : html`<span class="muted">${a.status === 'rejected' ? 'none' : 'issued on approval'}</span>`}</dd>
<dt>Client secret</dt><dd>${hasCredentials ? 'Sent to you once by e-mail; we keep only a hash of it.' : html`<span class="muted">${a.status === 'rejected' ? 'none' : 'e-mailed on approval'}</span>`}</dd>
<dt>Organization asked for</dt><dd>${a.requested_org ?? ''}</dd>
<dt>What it does</dt><dd>${a.description}</dd>
<dt>Scopes asked for</dt><dd>${scopeList(jsonList(a.requested_scopes))}</dd>
<dt>Scopes granted</dt><dd>${scopeList(jsonList(a.scopes))}</dd>
${a.status === 'rejected' ? html`<dt>Reason for rejection</dt><dd>${a.rejection_reason ?? ''}</dd>` : ''}
${a.status === 'suspended' ? html`<dt>Note</dt><dd>Suspended by an operator: no access tokens are issued and existing ones do not work.</dd>` : ''}
</dl>
${hasCredentials
  ? html`<h2>Reset the client secret</h2>
<p>Do this if the secret is lost or may have been seen by someone else. A new secret is e-mailed to you once; the old one, and every token issued with it, stops working at once.</p>
<form method="post" action="/portal/applications/${a.id}/reset-secret">${csrfField(request.web!.csrfToken)}<button type="submit" class="danger">Reset secret</button></form>`
  : ''}
<p><a href="/portal">Back to my applications</a></p>`;
      return sendHtml(reply, renderPage({ audience: 'portal', title: a.name, viewer: viewerOf(request), body, notice: noticeOf(request.query) }));
    },
  );

  app.post(
    '/portal/applications/:id/reset-secret',
    { schema: pageSchema('portal', 'Reset the client secret (the new one is e-mailed once)', { statuses: [303, 403, 404, 409], params: IdParams(), body: formBody() }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const result = await resetClientSecret(ctx, personOf(request), id);
      return seeOther(reply, `/portal/applications/${id}?notice=${result.mailed ? 'secret_reset' : 'secret_reset_unmailed'}`);
    },
  );
}
