// Webhooks: when an endpoint started failing (for auto-disable after days of failure), and a partial index
// that serves the worker's claim query (due pending deliveries in creation order) as one index range scan.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('failing_since', 'text').execute();
  await db.schema
    .createIndex('webhook_deliveries_pending')
    .on('webhook_deliveries')
    .columns(['next_attempt_at', 'id'])
    .where(sql.ref('status'), '=', sql.lit('pending'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_pending').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('failing_since').execute();
}
