// Retention: what the service keeps only for a while is purged on a schedule, in bounded batches, so that one
// run never holds a long lock or a long transaction (SQLite has one writer; PostgreSQL has vacuum to think of).
//   - events older than EVENT_RETENTION_DAYS, with their webhook deliveries and attempts
//   - idempotency keys past their expiry (24 h after first use)
//   - sign-in links and sessions past their expiry
// Every process that runs it (each `lmsapi serve` and `lmsapi worker`) may run it at the same time: the deletes
// are idempotent, so two runners only share the work.
import { sql } from 'kysely';
import type { AppContext } from '../context.js';
import { iso } from '../clock.js';
import { retentionPurged } from '../metrics.js';

const DAY_MS = 86_400_000;

/** Batches one run may take per table before it yields to the next scheduled run. */
const MAX_BATCHES_PER_RUN = 200;

export interface PurgeCounts {
  events: number;
  webhook_deliveries: number;
  webhook_attempts: number;
  idempotency_keys: number;
  sign_in_links: number;
  sessions: number;
}

/** Deletes up to batchSize expired events (oldest first) with their deliveries and attempts, in one transaction. */
async function purgeEventBatch(ctx: AppContext, cutoff: string, batchSize: number): Promise<Pick<PurgeCounts, 'events' | 'webhook_deliveries' | 'webhook_attempts'>> {
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const ids = (
      await trx.selectFrom('events').select('id').where('created_at', '<', cutoff).orderBy('created_at').limit(batchSize).execute()
    ).map((r) => r.id);
    if (ids.length === 0) return { events: 0, webhook_deliveries: 0, webhook_attempts: 0 };
    const deliveries = trx.selectFrom('webhook_deliveries').select('id').where('event_id', 'in', ids);
    const attempts = await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', deliveries).executeTakeFirst();
    const dels = await trx.deleteFrom('webhook_deliveries').where('event_id', 'in', ids).executeTakeFirst();
    const events = await trx.deleteFrom('events').where('id', 'in', ids).executeTakeFirst();
    return {
      events: Number(events.numDeletedRows),
      webhook_deliveries: Number(dels.numDeletedRows),
      webhook_attempts: Number(attempts.numDeletedRows),
    };
  });
}

/** Deletes up to batchSize rows of a table whose expires_at has passed. */
async function purgeExpiredBatch(
  ctx: AppContext,
  table: 'idempotency_keys' | 'sign_in_links' | 'sessions',
  now: string,
  batchSize: number,
): Promise<number> {
  // Row values select the batch by primary key on both dialects (SQLite ≥ 3.15 and PostgreSQL).
  const [key, columns] = {
    idempotency_keys: [sql`(app_id, key)`, sql`app_id, key`],
    sign_in_links: [sql`token_hash`, sql`token_hash`],
    sessions: [sql`id_hash`, sql`id_hash`],
  }[table];
  const result = await sql`delete from ${sql.table(table)} where ${key} in (
      select ${columns} from ${sql.table(table)} where expires_at < ${now} order by expires_at limit ${batchSize})`.execute(ctx.db.kysely);
  return Number(result.numAffectedRows ?? 0);
}

/** One retention pass. Returns how many rows went from each table. */
export async function purgeExpired(ctx: AppContext, options: { batchSize?: number; shouldStop?: () => boolean } = {}): Promise<PurgeCounts> {
  const batchSize = options.batchSize ?? ctx.config.retentionBatchSize;
  const stop = options.shouldStop ?? (() => false);
  const now = ctx.clock.now();
  const counts: PurgeCounts = { events: 0, webhook_deliveries: 0, webhook_attempts: 0, idempotency_keys: 0, sign_in_links: 0, sessions: 0 };

  const cutoff = iso(new Date(now.getTime() - ctx.config.eventRetentionDays * DAY_MS));
  for (let i = 0; i < MAX_BATCHES_PER_RUN && !stop(); i++) {
    const batch = await purgeEventBatch(ctx, cutoff, batchSize);
    counts.events += batch.events;
    counts.webhook_deliveries += batch.webhook_deliveries;
    counts.webhook_attempts += batch.webhook_attempts;
    if (batch.events < batchSize) break;
  }
  for (const table of ['idempotency_keys', 'sign_in_links', 'sessions'] as const) {
    for (let i = 0; i < MAX_BATCHES_PER_RUN && !stop(); i++) {
      const n = await purgeExpiredBatch(ctx, table, iso(now), batchSize);
      counts[table] += n;
      if (n < batchSize) break;
    }
  }
  for (const [table, n] of Object.entries(counts)) if (n > 0) retentionPurged.inc({ table }, n);
  return counts;
}

export interface RetentionRunner {
  name: string;
  /** Runs one pass now (also what the timer does); resolves when it is done. */
  runOnce(): Promise<PurgeCounts | null>;
  /** Stops the schedule and waits for a pass in progress (it stops between batches). */
  stop(): Promise<void>;
}

interface Log {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Runs purgeExpired every RETENTION_INTERVAL (first run shortly after start), until stop(). */
export function startRetention(ctx: AppContext, log: Log, options: { firstRunMs?: number } = {}): RetentionRunner {
  let stopped = false;
  let running: Promise<PurgeCounts | null> | null = null;
  let timer: NodeJS.Timeout | null = null;

  const runOnce = (): Promise<PurgeCounts | null> => {
    running ??= purgeExpired(ctx, { shouldStop: () => stopped })
      .then((counts) => {
        if (Object.values(counts).some((n) => n > 0)) log.info({ purged: counts }, 'retention: expired rows purged');
        return counts;
      })
      .catch((err) => {
        if (!stopped) log.error({ err }, 'retention: pass failed (will retry at the next interval)');
        return null;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };

  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => void runOnce().finally(() => schedule(ctx.config.retentionIntervalMs)), ms);
    timer.unref();
  };
  schedule(options.firstRunMs ?? Math.min(60_000, ctx.config.retentionIntervalMs));

  return {
    name: 'retention',
    runOnce,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
