// Webhook endpoints, deliveries and attempts of one organization. Every function takes the organization id first.
import type { Executor } from '../../db/index.js';
import type { NewRow, Row, RowUpdate } from '../../db/types.js';
import { applyPage, type PageParams } from '../../http/pagination.js';

export function insertEndpoint(db: Executor, row: NewRow<'webhook_endpoints'>) {
  return db.insertInto('webhook_endpoints').values(row).execute();
}

export function findEndpoint(db: Executor, orgId: string, id: string): Promise<Row<'webhook_endpoints'> | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
}

export function listEndpoints(db: Executor, orgId: string, params: PageParams): Promise<Row<'webhook_endpoints'>[]> {
  let q = db.selectFrom('webhook_endpoints').selectAll().where('org_id', '=', orgId);
  if (params.updated_since) q = q.where('updated_at', '>=', params.updated_since);
  return applyPage(q, params).execute();
}

export async function updateEndpoint(db: Executor, orgId: string, id: string, changes: RowUpdate<'webhook_endpoints'>): Promise<boolean> {
  const r = await db.updateTable('webhook_endpoints').set(changes).where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Deletes an endpoint with its deliveries and their attempts (the events themselves stay in the log). */
export async function deleteEndpoint(db: Executor, orgId: string, id: string): Promise<boolean> {
  await db.deleteFrom('webhook_attempts').where('org_id', '=', orgId).where('endpoint_id', '=', id).execute();
  await db.deleteFrom('webhook_deliveries').where('org_id', '=', orgId).where('endpoint_id', '=', id).execute();
  const r = await db.deleteFrom('webhook_endpoints').where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

type DeliveryRow = Row<'webhook_deliveries'> & { event_type: string };

function deliveries(db: Executor, orgId: string) {
  return db
    .selectFrom('webhook_deliveries')
    .innerJoin('events', 'events.id', 'webhook_deliveries.event_id')
    .selectAll('webhook_deliveries')
    .select('events.type as event_type')
    .where('webhook_deliveries.org_id', '=', orgId);
}

export function listDeliveries(
  db: Executor,
  orgId: string,
  endpointId: string,
  params: PageParams & { status?: string },
): Promise<DeliveryRow[]> {
  let q = deliveries(db, orgId).where('webhook_deliveries.endpoint_id', '=', endpointId);
  if (params.status) q = q.where('webhook_deliveries.status', '=', params.status as never);
  if (params.updated_since) q = q.where('webhook_deliveries.updated_at', '>=', params.updated_since);
  return applyPage(q, params, 'webhook_deliveries.id').execute();
}

export function findDelivery(db: Executor, orgId: string, endpointId: string, id: string): Promise<DeliveryRow | undefined> {
  return deliveries(db, orgId)
    .where('webhook_deliveries.endpoint_id', '=', endpointId)
    .where('webhook_deliveries.id', '=', id)
    .executeTakeFirst();
}

export async function attemptsOf(db: Executor, orgId: string, deliveryIds: string[]): Promise<Map<string, Row<'webhook_attempts'>[]>> {
  const out = new Map<string, Row<'webhook_attempts'>[]>();
  if (deliveryIds.length === 0) return out;
  const rows = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('id')
    .execute();
  for (const r of rows) out.set(r.delivery_id, [...(out.get(r.delivery_id) ?? []), r]);
  return out;
}

/** Makes a delivery due now again (a manual retry); a finished one gets one more attempt. */
export async function scheduleRetryNow(db: Executor, orgId: string, id: string, now: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: now, lease_owner: null, lease_expires_at: null, updated_at: now })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .execute();
}
