// Applications and their credentials: created by the CLI (approved at once) or through the developer portal
// (pending → approved | rejected; approved ⇄ suspended). Client secrets are stored only as a hash.
import type { AppContext } from '../../context.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { hashSecret, newClientSecret, verifySecret } from '../../auth/secrets.js';
import { ALL_SCOPES, isScope, type Scope } from '../../auth/scopes.js';
import { jsonList } from '../../http/schemas.js';
import { AppError, notFound } from '../../http/errors.js';
import type { Row } from '../../db/types.js';
import { recordAudit } from '../audit/service.js';
import { credentialsMail, rejectedMail, statusMail } from '../../mail/templates.js';
import type { MailMessage } from '../../mail/index.js';
import * as repo from './repo.js';
import { findApplication, insertApplication } from './repo.js';

export interface IssuedCredentials {
  client_id: string;
  client_secret: string;
  org_id: string;
  scopes: Scope[];
}

export class UnknownOrganizationError extends Error {}

/** Creates an approved application with fresh credentials (used by `lmsapi apps create` and the demo). */
export async function createApprovedApplication(
  ctx: AppContext,
  input: { orgId: string; name: string; scopes: Scope[]; description?: string; clientSecret?: string },
): Promise<IssuedCredentials> {
  const org = await ctx.db.kysely.selectFrom('organizations').select('id').where('id', '=', input.orgId).executeTakeFirst();
  if (!org) throw new UnknownOrganizationError(`no organization ${input.orgId}`);
  const id = newId('application');
  const secret = input.clientSecret ?? newClientSecret();
  const now = iso(ctx.clock.now());
  const row = {
    id,
    org_id: input.orgId,
    developer_id: null,
    name: input.name,
    description: input.description ?? '',
    requested_org: null,
    requested_scopes: JSON.stringify(input.scopes),
    scopes: JSON.stringify(input.scopes),
    status: 'approved',
    rejection_reason: null,
    secret_hash: hashSecret(secret),
    credential_version: 0,
    reviewed_by: 'cli',
    reviewed_at: now,
    created_at: now,
    updated_at: now,
  } as const;
  await ctx.db.kysely.transaction().execute(async (trx) => {
    await insertApplication(trx, row);
    await recordAudit(trx, ctx.clock, { actor: 'cli', action: 'application.created', target: id, details: { org_id: input.orgId, scopes: input.scopes } });
  });
  return { client_id: id, client_secret: secret, org_id: input.orgId, scopes: input.scopes };
}

export interface AuthenticatedClient {
  id: string;
  orgId: string;
  scopes: Scope[];
  credentialVersion: number;
}

/**
 * Checks a client id and secret. Unknown client, wrong secret and an application that is not approved all
 * return null after the same work (one lookup, one hash comparison), so the answer leaks nothing.
 */
export async function authenticateClient(ctx: AppContext, clientId: string, secret: string): Promise<AuthenticatedClient | null> {
  const app = clientId.length <= 64 ? await findApplication(ctx.db.kysely, clientId) : undefined;
  const ok = verifySecret(secret, app?.secret_hash ?? null);
  if (!ok || !app || app.status !== 'approved' || !app.org_id) return null;
  return {
    id: app.id,
    orgId: app.org_id,
    scopes: jsonList(app.scopes).filter(isScope),
    credentialVersion: app.credential_version,
  };
}

// ---- The portal and console use cases (§5 of the contract) ----------------------------------------------

/** Who does something: "developer:<email>" or "operator:<email>", as written to the audit log. */
export interface Actor {
  id: string;
  email: string;
}
const developerActor = (d: Actor) => `developer:${d.email}`;
const operatorActor = (o: Actor) => `operator:${o.email}`;

function text(value: string, field: string, max: number): string {
  const t = value.trim();
  if (!t) throw new AppError('validation_failed', `Fill in ${field}.`);
  if (t.length > max) throw new AppError('validation_failed', `${field} is longer than ${max} characters.`);
  return t;
}

function checkScopes(values: string[], field: string): Scope[] {
  const unknown = values.filter((v) => !isScope(v));
  if (unknown.length) throw new AppError('validation_failed', `Unknown scopes: ${unknown.join(', ')}.`);
  // Kept in the order of the scope table, so that lists read the same everywhere.
  const scopes = ALL_SCOPES.filter((s) => values.includes(s));
  if (scopes.length === 0) throw new AppError('validation_failed', `Choose at least one ${field}.`);
  return scopes;
}

export interface ApplicationInput {
  name: string;
  description: string;
  requestedOrg: string;
  scopes: string[];
}

/** A developer applies for credentials: the application starts `pending`, with nothing granted yet. */
export async function applyForCredentials(ctx: AppContext, developer: Actor, input: ApplicationInput): Promise<Row<'applications'>> {
  const now = iso(ctx.clock.now());
  const row: Row<'applications'> = {
    id: newId('application'),
    org_id: null,
    developer_id: developer.id,
    name: text(input.name, 'the application name', 100),
    description: text(input.description, 'what you are building', 2000),
    requested_org: text(input.requestedOrg, 'the organization it acts for', 200),
    requested_scopes: JSON.stringify(checkScopes(input.scopes, 'scope')),
    scopes: '[]',
    status: 'pending',
    rejection_reason: null,
    secret_hash: null,
    credential_version: 0,
    reviewed_by: null,
    reviewed_at: null,
    created_at: now,
    updated_at: now,
  };
  await ctx.db.kysely.transaction().execute(async (trx) => {
    await insertApplication(trx, row);
    await recordAudit(trx, ctx.clock, {
      actor: developerActor(developer),
      action: 'application.submitted',
      target: row.id,
      details: { name: row.name, requested_org: row.requested_org, requested_scopes: JSON.parse(row.requested_scopes) },
    });
  });
  return row;
}

/** One of the developer's own applications; another developer's is "not found", exactly like an unknown id. */
export async function getDeveloperApplication(ctx: AppContext, developerId: string, id: string): Promise<Row<'applications'>> {
  const app = await repo.findDeveloperApplication(ctx.db.kysely, developerId, id);
  if (!app) throw notFound('application');
  return app;
}

export function listDeveloperApplications(ctx: AppContext, developerId: string) {
  return repo.listDeveloperApplications(ctx.db.kysely, developerId);
}

export function listApplicationsForReview(ctx: AppContext, statuses: Row<'applications'>['status'][]) {
  return repo.listApplicationsForReview(ctx.db.kysely, statuses);
}

/** An application as the console shows it: with its developer's e-mail (null for CLI-made applications). */
export async function getApplicationForReview(ctx: AppContext, id: string): Promise<Row<'applications'> & { developer_email: string | null }> {
  const app = await loadForReview(ctx, id);
  return { ...app, developer_email: await developerEmail(ctx, app) };
}

async function loadForReview(ctx: AppContext, id: string) {
  const app = await findApplication(ctx.db.kysely, id);
  if (!app) throw notFound('application');
  return app;
}

function notIn(app: Row<'applications'>, wanted: string): AppError {
  return new AppError('invalid_state', `"${app.name}" is ${app.status}; this needs an application that is ${wanted}.`);
}

async function developerEmail(ctx: AppContext, app: Row<'applications'>): Promise<string | null> {
  if (!app.developer_id) return null;
  const dev = await ctx.db.kysely.selectFrom('developers').select('email').where('id', '=', app.developer_id).executeTakeFirst();
  return dev?.email ?? null;
}

/**
 * Sends a message that follows a committed decision. A failed send does not undo the decision; it is written
 * to the audit log and reported to the caller (for credentials, the developer can reset the secret).
 */
async function mailAfterCommit(ctx: AppContext, appId: string, message: MailMessage | null, credentials: boolean): Promise<boolean> {
  if (!message) return false;
  try {
    await ctx.mailer.send(message);
    if (credentials) {
      await recordAudit(ctx.db.kysely, ctx.clock, { actor: 'system', action: 'application.credentials_mailed', target: appId, details: { to: message.to } });
    }
    return true;
  } catch (err) {
    await recordAudit(ctx.db.kysely, ctx.clock, {
      actor: 'system',
      action: 'application.credentials_mail_failed',
      target: appId,
      details: { to: message.to, subject: message.subject, error: String((err as Error).message ?? err).slice(0, 200) },
    });
    return false;
  }
}

export interface Decision {
  application: Row<'applications'>;
  /** Whether the developer's e-mail went out. */
  mailed: boolean;
}

/**
 * Approves a pending application: binds it to an organization, grants all or some of the scopes asked for,
 * and issues a client secret, which is e-mailed to the developer once; only its hash is stored.
 */
export async function approveApplication(ctx: AppContext, operator: Actor, id: string, input: { orgId: string; scopes: string[] }): Promise<Decision> {
  const app = await loadForReview(ctx, id);
  if (app.status !== 'pending') throw notIn(app, 'pending');
  const asked = jsonList(app.requested_scopes);
  const scopes = checkScopes(input.scopes, 'scope to grant');
  const extra = scopes.filter((s) => !asked.includes(s));
  if (extra.length) throw new AppError('validation_failed', `Only scopes that were asked for can be granted; not asked: ${extra.join(', ')}.`);
  const org = await ctx.db.kysely.selectFrom('organizations').select(['id', 'name']).where('id', '=', input.orgId).executeTakeFirst();
  if (!org) throw new AppError('validation_failed', 'Choose an existing organization.');
  const secret = newClientSecret();
  const now = iso(ctx.clock.now());
  const changes = {
    status: 'approved' as const,
    org_id: org.id,
    scopes: JSON.stringify(scopes),
    secret_hash: hashSecret(secret),
    rejection_reason: null,
    reviewed_by: operatorActor(operator),
    reviewed_at: now,
    updated_at: now,
  };
  await ctx.db.kysely.transaction().execute(async (trx) => {
    if (!(await repo.updateApplicationIf(trx, id, ['pending'], changes))) throw notIn((await findApplication(trx, id))!, 'pending');
    await recordAudit(trx, ctx.clock, {
      actor: operatorActor(operator),
      action: 'application.approved',
      target: id,
      details: { org_id: org.id, granted_scopes: scopes, requested_scopes: asked },
    });
  });
  ctx.tokens.forgetApplication(id);
  const to = await developerEmail(ctx, app);
  const facts = { appName: app.name, clientId: id, clientSecret: secret, scopes, orgName: org.name, tokenUrl: `${ctx.config.publicUrl}/v1/oauth/token` };
  const mailed = await mailAfterCommit(ctx, id, to ? credentialsMail(to, facts, 'approved') : null, true);
  return { application: { ...app, ...changes }, mailed };
}

export async function rejectApplication(ctx: AppContext, operator: Actor, id: string, reason: string): Promise<Decision> {
  const app = await loadForReview(ctx, id);
  if (app.status !== 'pending') throw notIn(app, 'pending');
  const why = text(reason, 'the reason', 2000);
  const now = iso(ctx.clock.now());
  const changes = { status: 'rejected' as const, rejection_reason: why, reviewed_by: operatorActor(operator), reviewed_at: now, updated_at: now };
  await ctx.db.kysely.transaction().execute(async (trx) => {
    if (!(await repo.updateApplicationIf(trx, id, ['pending'], changes))) throw notIn((await findApplication(trx, id))!, 'pending');
    await recordAudit(trx, ctx.clock, { actor: operatorActor(operator), action: 'application.rejected', target: id, details: { reason: why } });
  });
  const to = await developerEmail(ctx, app);
  const mailed = await mailAfterCommit(ctx, id, to ? rejectedMail(to, app.name, why) : null, false);
  return { application: { ...app, ...changes }, mailed };
}

/**
 * Suspends an approved application. Bumping credential_version kills every token issued so far (this process
 * at once; other processes within the TokenService cache time, ≤ 2 s); no new token is issued while suspended.
 */
export async function suspendApplication(ctx: AppContext, operator: Actor, id: string): Promise<Decision> {
  const app = await loadForReview(ctx, id);
  if (app.status !== 'approved') throw notIn(app, 'approved');
  const now = iso(ctx.clock.now());
  const changes = { status: 'suspended' as const, credential_version: app.credential_version + 1, updated_at: now };
  await ctx.db.kysely.transaction().execute(async (trx) => {
    if (!(await repo.updateApplicationIf(trx, id, ['approved'], changes))) throw notIn((await findApplication(trx, id))!, 'approved');
    await recordAudit(trx, ctx.clock, { actor: operatorActor(operator), action: 'application.suspended', target: id });
  });
  ctx.tokens.forgetApplication(id);
  const to = await developerEmail(ctx, app);
  const mailed = await mailAfterCommit(ctx, id, to ? statusMail(to, app.name, 'suspended') : null, false);
  return { application: { ...app, ...changes }, mailed };
}

/** Reinstates a suspended application; its client secret works again, tokens from before the suspension do not. */
export async function reinstateApplication(ctx: AppContext, operator: Actor, id: string): Promise<Decision> {
  const app = await loadForReview(ctx, id);
  if (app.status !== 'suspended') throw notIn(app, 'suspended');
  const now = iso(ctx.clock.now());
  const changes = { status: 'approved' as const, updated_at: now };
  await ctx.db.kysely.transaction().execute(async (trx) => {
    if (!(await repo.updateApplicationIf(trx, id, ['suspended'], changes))) throw notIn((await findApplication(trx, id))!, 'suspended');
    await recordAudit(trx, ctx.clock, { actor: operatorActor(operator), action: 'application.reinstated', target: id });
  });
  ctx.tokens.forgetApplication(id);
  const to = await developerEmail(ctx, app);
  const mailed = await mailAfterCommit(ctx, id, to ? statusMail(to, app.name, 'reinstated') : null, false);
  return { application: { ...app, ...changes }, mailed };
}

/**
 * The developer resets the client secret of an approved (or suspended) application: a new secret is e-mailed
 * once, the old one stops working at once, and so do tokens issued with it (credential_version is bumped).
 */
export async function resetClientSecret(ctx: AppContext, developer: Actor, id: string): Promise<Decision> {
  const app = await getDeveloperApplication(ctx, developer.id, id);
  if (app.status !== 'approved' && app.status !== 'suspended') throw notIn(app, 'approved');
  const secret = newClientSecret();
  const now = iso(ctx.clock.now());
  const changes = { secret_hash: hashSecret(secret), credential_version: app.credential_version + 1, updated_at: now };
  await ctx.db.kysely.transaction().execute(async (trx) => {
    // Conditional on the version read above: two resets at once cannot both think they issued the live secret.
    const result = await trx
      .updateTable('applications')
      .set(changes)
      .where('id', '=', id)
      .where('developer_id', '=', developer.id)
      .where('credential_version', '=', app.credential_version)
      .where('status', 'in', ['approved', 'suspended'])
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw new AppError('conflict', 'The application changed meanwhile; try again.');
    await recordAudit(trx, ctx.clock, { actor: developerActor(developer), action: 'application.secret_reset', target: id });
  });
  ctx.tokens.forgetApplication(id);
  const org = app.org_id
    ? await ctx.db.kysely.selectFrom('organizations').select('name').where('id', '=', app.org_id).executeTakeFirst()
    : undefined;
  const facts = {
    appName: app.name,
    clientId: id,
    clientSecret: secret,
    scopes: jsonList(app.scopes),
    orgName: org?.name ?? '',
    tokenUrl: `${ctx.config.publicUrl}/v1/oauth/token`,
  };
  const mailed = await mailAfterCommit(ctx, id, credentialsMail(developer.email, facts, 'reset'), true);
  return { application: { ...app, ...changes }, mailed };
}
