// The outbox: one webhook_deliveries row per enabled endpoint subscribed to an event, written by recordEvent in the
// transaction that made the change. A rolled-back change therefore emits nothing, and a committed one is never
// lost: the worker finds its deliveries in the table whatever happens to the process afterwards.
import type { Executor } from '../db/index.js';
import { newId } from '../ids.js';
import { jsonList } from '../http/schemas.js';

export interface OutboxEvent {
  id: string;
  type: string;
  created_at: string;
  /** null for catalogue events: every organization's endpoints get them. */
  orgId: string | null;
  /** `webhook.test` goes to the tested endpoint only. */
  onlyEndpointId?: string;
}

export function subscribes(events: string[], type: string): boolean {
  return events.includes('*') || events.includes(type);
}

/** Writes the deliveries of one event; returns how many. First attempts are due at once, in event order. */
export async function enqueueDeliveries(db: Executor, event: OutboxEvent): Promise<number> {
  let q = db.selectFrom('webhook_endpoints').select(['id', 'org_id', 'events']).where('status', '=', 'enabled');
  if (event.onlyEndpointId) q = q.where('id', '=', event.onlyEndpointId);
  if (event.orgId !== null) q = q.where('org_id', '=', event.orgId);
  const endpoints = await q.orderBy('id').execute();
  const targets = event.onlyEndpointId ? endpoints : endpoints.filter((e) => subscribes(jsonList(e.events), event.type));
  if (targets.length === 0) return 0;
  await db
    .insertInto('webhook_deliveries')
    .values(
      targets.map((e) => ({
        id: newId('delivery'),
        org_id: e.org_id,
        endpoint_id: e.id,
        event_id: event.id,
        status: 'pending' as const,
        attempts: 0,
        next_attempt_at: event.created_at,
        created_at: event.created_at,
        updated_at: event.created_at,
      })),
    )
    .execute();
  return targets.length;
}
