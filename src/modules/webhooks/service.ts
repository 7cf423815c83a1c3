// Webhook endpoints: registration (URL guard), changes, secret rotation, test events, the delivery log and
// manual retries. Deliveries themselves are written by the outbox (recordEvent) and sent by src/webhooks/worker.ts.
import type { AppContext } from '../../context.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { AppError, notFound } from '../../http/errors.js';
import { normaliseInstant, toPage, type Page, type PageParams } from '../../http/pagination.js';
import { recordEvent } from '../../events/record.js';
import { newWebhookSecret } from '../../webhooks/signing.js';
import { assertIfMatch } from '../../http/etag.js';
import { checkWebhookUrl, systemResolveAll, WebhookUrlError } from '../../webhooks/url-guard.js';
import * as repo from './repo.js';
import {
  toDelivery,
  toEndpoint,
  type CreateWebhookInput,
  type UpdateWebhookInput,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
} from './schemas.js';

/** After a rotation the old secret keeps signing (a second signature) for this long. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3_600_000;

async function checkedUrl(ctx: AppContext, raw: string): Promise<string> {
  try {
    const url = await checkWebhookUrl(
      raw,
      { allowHttp: ctx.config.webhookAllowHttp, allowPrivateNetworks: ctx.config.webhookAllowPrivateNetworks },
      ctx.resolveAll ?? systemResolveAll,
    );
    return url.toString();
  } catch (err) {
    if (err instanceof WebhookUrlError) {
      throw new AppError('invalid_webhook_url', err.message, { errors: [{ pointer: '/url', message: err.message }] });
    }
    throw err;
  }
}

export async function createEndpoint(ctx: AppContext, orgId: string, input: CreateWebhookInput): Promise<WebhookEndpointWithSecret> {
  const url = await checkedUrl(ctx, input.url);
  const now = iso(ctx.clock.now());
  const row = {
    id: newId('webhook'),
    org_id: orgId,
    url,
    events: JSON.stringify(input.events.includes('*') ? ['*'] : input.events),
    description: input.description ?? null,
    status: 'enabled' as const,
    disabled_reason: null,
    secret: newWebhookSecret(),
    previous_secret: null,
    previous_secret_expires_at: null,
    failing_since: null,
    created_at: now,
    updated_at: now,
  };
  await repo.insertEndpoint(ctx.db.kysely, row);
  return { ...toEndpoint(row), secret: row.secret };
}

export async function listEndpoints(ctx: AppContext, orgId: string, params: PageParams): Promise<Page<WebhookEndpoint>> {
  const p = { ...params, updated_since: params.updated_since && normaliseInstant(params.updated_since, '/updated_since') };
  return toPage(await repo.listEndpoints(ctx.db.kysely, orgId, p), p, toEndpoint);
}

export async function getEndpoint(ctx: AppContext, orgId: string, id: string): Promise<WebhookEndpoint> {
  const row = await repo.findEndpoint(ctx.db.kysely, orgId, id);
  if (!row) throw notFound('webhook endpoint');
  return toEndpoint(row);
}

export async function updateEndpoint(
  ctx: AppContext,
  orgId: string,
  id: string,
  input: UpdateWebhookInput,
  ifMatch?: string,
): Promise<WebhookEndpoint> {
  const url = input.url === undefined ? undefined : await checkedUrl(ctx, input.url);
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const row = await repo.findEndpoint(trx, orgId, id);
    if (!row) throw notFound('webhook endpoint');
    assertIfMatch(ifMatch, toEndpoint(row));
    const now = iso(ctx.clock.now());
    const changes: Parameters<typeof repo.updateEndpoint>[3] = { updated_at: now };
    if (url !== undefined) changes.url = url;
    if (input.events !== undefined) changes.events = JSON.stringify(input.events.includes('*') ? ['*'] : input.events);
    if (input.description !== undefined) changes.description = input.description;
    if (input.status === 'enabled' && row.status !== 'enabled') {
      Object.assign(changes, { status: 'enabled', disabled_reason: null, failing_since: null });
    } else if (input.status === 'disabled' && row.status !== 'disabled') {
      Object.assign(changes, { status: 'disabled', disabled_reason: 'disabled through the API' });
    }
    await repo.updateEndpoint(trx, orgId, id, changes);
    return toEndpoint((await repo.findEndpoint(trx, orgId, id))!);
  });
}

export async function deleteEndpoint(ctx: AppContext, orgId: string, id: string, ifMatch?: string): Promise<void> {
  await ctx.db.kysely.transaction().execute(async (trx) => {
    const row = await repo.findEndpoint(trx, orgId, id);
    if (!row) throw notFound('webhook endpoint');
    assertIfMatch(ifMatch, toEndpoint(row));
    await repo.deleteEndpoint(trx, orgId, id);
  });
}

/** A new secret; the old one keeps signing as a second signature for 24 hours. */
export async function rotateSecret(ctx: AppContext, orgId: string, id: string): Promise<WebhookEndpointWithSecret> {
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const row = await repo.findEndpoint(trx, orgId, id);
    if (!row) throw notFound('webhook endpoint');
    const now = ctx.clock.now();
    const secret = newWebhookSecret();
    await repo.updateEndpoint(trx, orgId, id, {
      secret,
      previous_secret: row.secret,
      previous_secret_expires_at: iso(new Date(now.getTime() + PREVIOUS_SECRET_GRACE_MS)),
      updated_at: iso(now),
    });
    return { ...toEndpoint((await repo.findEndpoint(trx, orgId, id))!), secret };
  });
}

async function deliveryWithAttempts(ctx: AppContext, orgId: string, endpointId: string, id: string): Promise<WebhookDelivery> {
  const row = await repo.findDelivery(ctx.db.kysely, orgId, endpointId, id);
  if (!row) throw notFound('webhook delivery');
  const attempts = await repo.attemptsOf(ctx.db.kysely, orgId, [row.id]);
  return toDelivery(row, attempts.get(row.id) ?? []);
}

/** Records a `webhook.test` event that goes to this endpoint only; answers with its delivery. */
export async function sendTestEvent(ctx: AppContext, orgId: string, id: string): Promise<WebhookDelivery> {
  const deliveryId = await ctx.db.kysely.transaction().execute(async (trx) => {
    const row = await repo.findEndpoint(trx, orgId, id);
    if (!row) throw notFound('webhook endpoint');
    if (row.status !== 'enabled') throw new AppError('invalid_state', 'The endpoint is disabled: enable it (PATCH status) first.');
    const event = await recordEvent(trx, ctx.clock, { orgId, type: 'webhook.test', object: toEndpoint(row), onlyEndpointId: id });
    const delivery = await trx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('org_id', '=', orgId)
      .where('event_id', '=', event.id)
      .executeTakeFirstOrThrow();
    return delivery.id;
  });
  return deliveryWithAttempts(ctx, orgId, id, deliveryId);
}

export async function listDeliveries(
  ctx: AppContext,
  orgId: string,
  endpointId: string,
  params: PageParams & { status?: string },
): Promise<Page<WebhookDelivery>> {
  if (!(await repo.findEndpoint(ctx.db.kysely, orgId, endpointId))) throw notFound('webhook endpoint');
  const p = { ...params, updated_since: params.updated_since && normaliseInstant(params.updated_since, '/updated_since') };
  const rows = await repo.listDeliveries(ctx.db.kysely, orgId, endpointId, p);
  const attempts = await repo.attemptsOf(ctx.db.kysely, orgId, rows.map((r) => r.id));
  return toPage(rows, p, (r) => toDelivery(r, attempts.get(r.id) ?? []));
}

/** Makes a delivery due at once (one more attempt for a failed one). Refused while an attempt is under way. */
export async function retryDelivery(ctx: AppContext, orgId: string, endpointId: string, id: string): Promise<WebhookDelivery> {
  await ctx.db.kysely.transaction().execute(async (trx) => {
    const endpoint = await repo.findEndpoint(trx, orgId, endpointId);
    const delivery = endpoint && (await repo.findDelivery(trx, orgId, endpointId, id));
    if (!endpoint || !delivery) throw notFound('webhook delivery');
    if (endpoint.status !== 'enabled') throw new AppError('invalid_state', 'The endpoint is disabled: enable it (PATCH status) first.');
    const now = iso(ctx.clock.now());
    if (delivery.lease_owner && delivery.lease_expires_at && delivery.lease_expires_at > now) {
      throw new AppError('invalid_state', 'An attempt of this delivery is under way; try again when it has finished.');
    }
    await repo.scheduleRetryNow(trx, orgId, id, now);
  });
  return deliveryWithAttempts(ctx, orgId, endpointId, id);
}
