// Applications and their credentials: created by the CLI (approved at once) or through the developer portal
// (pending → approved | rejected; approved ⇄ suspended). Client secrets are stored only as a hash.
import type { AppContext } from '../../context.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { hashSecret, newClientSecret, verifySecret } from '../../auth/secrets.js';
import { isScope, type Scope } from '../../auth/scopes.js';
import { jsonList } from '../../http/schemas.js';
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
  await insertApplication(ctx.db.kysely, {
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
