// The event log: what the webhooks delivered (or tried to), kept ≥ 30 days so that a receiver that was down can
// catch up with `created_since`. An organization sees its own events and the catalogue events (org_id null).
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import { notFound } from '../../http/errors.js';
import { applyPage, normaliseInstant, toPage, type Page } from '../../http/pagination.js';
import type { RecordedEvent } from '../../events/record.js';
import type { EventListParams } from './routes.js';

function visibleEvents(db: Executor, orgId: string) {
  return db
    .selectFrom('events')
    .select(['id', 'payload'])
    .where((eb) => eb.or([eb('org_id', '=', orgId), eb('org_id', 'is', null)]));
}

export async function listEvents(ctx: AppContext, orgId: string, query: EventListParams): Promise<Page<RecordedEvent>> {
  // Events never change, so updated_since means the same as created_since.
  const since = query.created_since ?? query.updated_since;
  let q = visibleEvents(ctx.db.kysely, orgId);
  if (query.type) q = q.where('type', '=', query.type);
  if (since) q = q.where('created_at', '>=', normaliseInstant(since, query.created_since ? '/created_since' : '/updated_since'));
  const rows = await applyPage(q, query).execute();
  return toPage(rows, query, (r) => JSON.parse(r.payload) as RecordedEvent);
}

export async function getEvent(ctx: AppContext, orgId: string, id: string): Promise<RecordedEvent> {
  const row = await visibleEvents(ctx.db.kysely, orgId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('event');
  return JSON.parse(row.payload) as RecordedEvent;
}
