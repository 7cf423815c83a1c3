// The operator console: review applications (approve with an organization and some or all of the asked scopes,
// or reject with a reason), suspend and reinstate, organizations and seats, the course catalogue, the audit log.
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { IdParams, jsonList } from '../http/schemas.js';
import { SCOPES, isScope } from '../auth/scopes.js';
import {
  approveApplication,
  getApplicationForReview,
  listApplicationsForReview,
  reinstateApplication,
  rejectApplication,
  suspendApplication,
} from '../modules/applications/service.js';
import { createOrganization, listOrganizations, setSeatTotal } from '../modules/organization/service.js';
import { listAuditLog } from '../modules/audit/service.js';
import { html, type SafeHtml } from '../web/html.js';
import { csrfField, renderPage, statusBadge } from '../web/layout.js';
import { MultiField, asList, formBody, pageSchema, personOf, seeOther, sendHtml, setUpAudience, viewerOf } from '../web/plugin.js';
import { scopeList } from '../portal/routes.js';
import { catalogueRoutes } from './catalogue.js';

export const CONSOLE_NOTICES: Record<string, { text: string; kind?: 'ok' | 'warn' }> = {
  approved: { text: 'Approved. The client ID and secret were e-mailed to the developer.' },
  approved_unmailed: { text: 'Approved, but the e-mail to the developer could not be sent. They can reset the secret in the portal to get one.', kind: 'warn' },
  rejected: { text: 'Rejected. The developer was told the reason by e-mail.' },
  rejected_unmailed: { text: 'Rejected, but the e-mail to the developer could not be sent.', kind: 'warn' },
  suspended: { text: 'Suspended. Its tokens stop working within seconds; no new ones are issued.' },
  reinstated: { text: 'Reinstated. The application can request new tokens again.' },
  org_created: { text: 'Organization created.' },
  seats_changed: { text: 'Seat total changed.' },
  course_created: { text: 'Course created as a draft.' },
  course_saved: { text: 'Course saved.' },
  course_published: { text: 'Course published: integrators see it now.' },
  course_retired: { text: 'Course retired: it is no longer listed.' },
  category_saved: { text: 'Category saved.' },
};
export const NoticeQuery = Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) });
export const noticeOf = (q: unknown) => CONSOLE_NOTICES[(q as { notice?: string }).notice ?? ''] ?? null;
export const operatorActor = (request: Parameters<typeof personOf>[0]) => `operator:${personOf(request).email}`;

const WholeNumber = Type.String({ pattern: '^[0-9]{1,9}$', description: 'A whole number.' });

function applicationRows(apps: Awaited<ReturnType<typeof listApplicationsForReview>>, pending: boolean): SafeHtml {
  return html`<div class="table-wrap"><table class="cards">
<thead><tr><th scope="col">Application</th><th scope="col">Developer</th><th scope="col">${pending ? 'Organization asked for' : 'Organization'}</th><th scope="col">${pending ? 'Scopes asked for' : 'Granted scopes'}</th><th scope="col">State</th></tr></thead>
<tbody>${apps.map(
    (a) => html`<tr>
<td data-label="Application"><a href="/console/applications/${a.id}">${a.name}</a><br><span class="muted">${a.description.slice(0, 140)}</span></td>
<td data-label="Developer">${a.developer_email ?? html`<span class="muted">CLI</span>`}</td>
<td data-label="Organization">${pending ? (a.requested_org ?? '') : (a.org_name ?? '')}</td>
<td data-label="Scopes">${scopeList(jsonList(pending ? a.requested_scopes : a.scopes))}</td>
<td data-label="State">${statusBadge(a.status)}</td>
</tr>`,
  )}</tbody></table></div>`;
}

export async function consoleRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  setUpAudience(app, ctx, 'console');
  const page = (request: Parameters<typeof viewerOf>[0], title: string, current: string | undefined, body: SafeHtml) =>
    renderPage({ audience: 'console', title, viewer: viewerOf(request), current, body, notice: noticeOf(request.query) });

  app.get(
    '/console',
    { schema: pageSchema('console', 'Applications waiting for review', { statuses: [200, 303], querystring: NoticeQuery }) },
    async (request, reply) => {
      const pending = await listApplicationsForReview(ctx, ['pending']);
      const body = pending.length
        ? html`<p class="lead">${pending.length} application${pending.length === 1 ? '' : 's'} waiting. Open one to approve or reject it.</p>${applicationRows(pending, true)}`
        : html`<p>Nothing to review. <a href="/console/applications">See all applications</a>.</p>`;
      return sendHtml(reply, page(request, 'Pending applications', '/console', body));
    },
  );

  app.get(
    '/console/applications',
    { schema: pageSchema('console', 'All applications with their state', { statuses: [200, 303], querystring: NoticeQuery }) },
    async (request, reply) => {
      const apps = await listApplicationsForReview(ctx, ['approved', 'suspended', 'rejected', 'pending']);
      return sendHtml(reply, page(request, 'Applications', '/console/applications', apps.length ? applicationRows(apps, false) : html`<p>No applications yet.</p>`));
    },
  );

  app.get(
    '/console/applications/:id',
    { schema: pageSchema('console', 'One application: review, suspend or reinstate', { statuses: [200, 303, 404], params: IdParams(), querystring: NoticeQuery }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const a = await getApplicationForReview(ctx, id);
      const csrf = request.web!.csrfToken;
      const orgs = await listOrganizations(ctx);
      const boundOrg = orgs.find((o) => o.id === a.org_id);
      const asked = jsonList(a.requested_scopes).filter(isScope);
      const guess = orgs.find((o) => o.name.toLowerCase() === (a.requested_org ?? '').trim().toLowerCase());
      const history = await listAuditLog(ctx, { target: a.id, limit: 50 });
      let actions: SafeHtml = html``;
      if (a.status === 'pending') {
        actions = html`<h2>Approve</h2>
${orgs.length === 0 ? html`<div class="notice warn">There is no organization yet: <a href="/console/organizations">create one</a> first.</div>` : ''}
<form class="stack" method="post" action="/console/applications/${a.id}/approve">
${csrfField(csrf)}
<div><label for="org_id">Organization it acts for <span class="hint">The developer asked for “${a.requested_org ?? ''}”.</span></label>
<select id="org_id" name="org_id" required>
<option value="">Choose an organization…</option>
${orgs.map((o) => html`<option value="${o.id}"${guess?.id === o.id ? html` selected` : ''}>${o.name} (${o.id})</option>`)}
</select></div>
<fieldset><legend>Scopes to grant</legend><p class="hint">All that were asked for are ticked; untick any you do not grant.</p>
${asked.map((s) => html`<label class="choice"><input type="checkbox" name="scopes" value="${s}" checked><span><code>${s}</code> — ${SCOPES[s]}</span></label>`)}
</fieldset>
<div><button type="submit">Approve and e-mail the credentials</button></div>
</form>
<h2>Reject</h2>
<form class="stack" method="post" action="/console/applications/${a.id}/reject">
${csrfField(csrf)}
<div><label for="reason">Reason <span class="hint">Sent to the developer by e-mail.</span></label>
<textarea id="reason" name="reason" required maxlength="2000"></textarea></div>
<div><button type="submit" class="danger">Reject</button></div>
</form>`;
      } else if (a.status === 'approved') {
        actions = html`<h2>Suspend</h2><p>Its tokens stop working within seconds and no new ones are issued until it is reinstated.</p>
<form method="post" action="/console/applications/${a.id}/suspend">${csrfField(csrf)}<button type="submit" class="danger">Suspend</button></form>`;
      } else if (a.status === 'suspended') {
        actions = html`<h2>Reinstate</h2><p>The application may request new tokens again (tokens from before the suspension stay invalid).</p>
<form method="post" action="/console/applications/${a.id}/reinstate">${csrfField(csrf)}<button type="submit">Reinstate</button></form>`;
      }
      const body = html`<dl class="facts">
<dt>State</dt><dd>${statusBadge(a.status)}</dd>
<dt>Client ID</dt><dd><code>${a.id}</code></dd>
<dt>Developer</dt><dd>${a.developer_email ?? 'created with the CLI'}</dd>
<dt>What it does</dt><dd>${a.description}</dd>
<dt>Organization asked for</dt><dd>${a.requested_org ?? '—'}</dd>
<dt>Organization</dt><dd>${boundOrg ? html`${boundOrg.name} <code>${boundOrg.id}</code>` : '—'}</dd>
<dt>Scopes asked for</dt><dd>${scopeList(asked)}</dd>
<dt>Scopes granted</dt><dd>${scopeList(jsonList(a.scopes))}</dd>
${a.rejection_reason ? html`<dt>Reason for rejection</dt><dd>${a.rejection_reason}</dd>` : ''}
<dt>Reviewed</dt><dd>${a.reviewed_by ? html`${a.reviewed_by}, ${a.reviewed_at}` : '—'}</dd>
</dl>
${actions}
<h2>History</h2>
<div class="table-wrap"><table class="cards"><thead><tr><th scope="col">When (UTC)</th><th scope="col">Who</th><th scope="col">What</th></tr></thead>
<tbody>${history.entries.map((e) => html`<tr><td data-label="When">${e.created_at}</td><td data-label="Who">${e.actor}</td><td data-label="What">${e.action}</td></tr>`)}</tbody></table></div>`;
      return sendHtml(reply, page(request, a.name, undefined, body));
    },
  );

  const decision = (summary: string, fields: Parameters<typeof formBody>[0] = {}) =>
    pageSchema('console', summary, { statuses: [303, 400, 403, 404, 409], params: IdParams(), body: formBody(fields) });

  app.post(
    '/console/applications/:id/approve',
    { schema: decision('Approve: bind to an organization, grant some or all asked scopes, e-mail the credentials', { org_id: Type.String({ maxLength: 64 }), scopes: Type.Optional(MultiField) }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const b = request.body as { org_id: string; scopes?: string | string[] };
      const r = await approveApplication(ctx, personOf(request), id, { orgId: b.org_id, scopes: asList(b.scopes) });
      return seeOther(reply, `/console/applications/${id}?notice=${r.mailed ? 'approved' : 'approved_unmailed'}`);
    },
  );

  app.post(
    '/console/applications/:id/reject',
    { schema: decision('Reject with a reason (e-mailed to the developer)', { reason: Type.String({ maxLength: 5000 }) }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const r = await rejectApplication(ctx, personOf(request), id, (request.body as { reason: string }).reason);
      return seeOther(reply, `/console/applications/${id}?notice=${r.mailed ? 'rejected' : 'rejected_unmailed'}`);
    },
  );

  app.post('/console/applications/:id/suspend', { schema: decision('Suspend (its tokens stop working)') }, async (request, reply) => {
    const { id } = request.params as { id: string };
    await suspendApplication(ctx, personOf(request), id);
    return seeOther(reply, `/console/applications/${id}?notice=suspended`);
  });

  app.post('/console/applications/:id/reinstate', { schema: decision('Reinstate a suspended application') }, async (request, reply) => {
    const { id } = request.params as { id: string };
    await reinstateApplication(ctx, personOf(request), id);
    return seeOther(reply, `/console/applications/${id}?notice=reinstated`);
  });

  app.get(
    '/console/organizations',
    { schema: pageSchema('console', 'Organizations with their seat totals and usage', { statuses: [200, 303], querystring: NoticeQuery }) },
    async (request, reply) => {
      const orgs = await listOrganizations(ctx);
      const csrf = request.web!.csrfToken;
      const body = html`<div class="table-wrap"><table class="cards">
<thead><tr><th scope="col">Organization</th><th scope="col">Seats in use</th><th scope="col">Seat total</th></tr></thead>
<tbody>${orgs.map(
        (o) => html`<tr><td data-label="Organization">${o.name}<br><code>${o.id}</code></td>
<td data-label="In use">${o.in_use} of ${o.total} (${Math.max(0, o.total - o.in_use)} free)</td>
<td data-label="Seat total"><form class="actions" method="post" action="/console/organizations/${o.id}/seats">${csrfField(csrf)}
<label for="seats-${o.id}" class="hint">New total for ${o.name}</label>
<input id="seats-${o.id}" name="seats" type="number" min="0" step="1" required value="${o.total}" class="narrow">
<button type="submit" class="secondary">Change seats</button></form></td></tr>`,
      )}</tbody></table></div>
<h2>Create an organization</h2>
<form class="stack" method="post" action="/console/organizations">${csrfField(csrf)}
<div><label for="org-name">Name</label><input id="org-name" name="name" type="text" required maxlength="200"></div>
<div><label for="org-seats">Seats</label><input id="org-seats" name="seats" type="number" min="0" step="1" required value="10"></div>
<div><button type="submit">Create organization</button></div></form>`;
      return sendHtml(reply, page(request, 'Organizations', '/console/organizations', body));
    },
  );

  app.post(
    '/console/organizations',
    { schema: pageSchema('console', 'Create an organization with a seat total', { statuses: [303, 400, 403, 409], body: formBody({ name: Type.String({ maxLength: 200 }), seats: WholeNumber }) }) },
    async (request, reply) => {
      const b = request.body as { name: string; seats: string };
      await createOrganization(ctx, { name: b.name, seats: Number(b.seats) }, operatorActor(request));
      return seeOther(reply, '/console/organizations?notice=org_created');
    },
  );

  app.post(
    '/console/organizations/:id/seats',
    { schema: pageSchema('console', "Change an organization's seat total", { statuses: [303, 400, 403, 404], params: IdParams(), body: formBody({ seats: WholeNumber }) }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      await setSeatTotal(ctx, id, Number((request.body as { seats: string }).seats), operatorActor(request));
      return seeOther(reply, '/console/organizations?notice=seats_changed');
    },
  );

  app.get(
    '/console/audit',
    { schema: pageSchema('console', 'The audit log: every decision and credential event', { statuses: [200, 303], querystring: Type.Object({ before: Type.Optional(Type.String({ maxLength: 64 })) }) }) },
    async (request, reply) => {
      const { before } = request.query as { before?: string };
      const log = await listAuditLog(ctx, { before, limit: 50 });
      const body = html`<p class="lead">Newest first. Times are UTC.</p>
<div class="table-wrap"><table class="cards"><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Target</th><th scope="col">Details</th></tr></thead>
<tbody>${log.entries.map(
        (e) => html`<tr><td data-label="When">${e.created_at}</td><td data-label="Who">${e.actor}</td><td data-label="What"><code>${e.action}</code></td>
<td data-label="Target">${e.target?.startsWith('app_') ? html`<a href="/console/applications/${e.target}"><code>${e.target}</code></a>` : html`<code>${e.target ?? ''}</code>`}</td>
<td data-label="Details"><code>${e.details === '{}' ? '' : e.details}</code></td></tr>`,
      )}</tbody></table></div>
${log.nextBefore ? html`<p><a href="/console/audit?before=${log.nextBefore}">Older entries</a></p>` : ''}`;
      return sendHtml(reply, page(request, 'Audit log', '/console/audit', body));
    },
  );

  catalogueRoutes(app, ctx, page);
}
