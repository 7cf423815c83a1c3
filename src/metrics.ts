// The one Prometheus registry of the process, and every metric in it. Import what you need and record:
//   import { webhookAttempts } from '../metrics.js';  webhookAttempts.inc({ outcome: 'success' });
// Counters are process-wide (one registry per process is what Prometheus scrapes). Gauges that describe the
// database (deliveries waiting, pool use) are read from the scraping app's own context at scrape time, in
// collectDatabaseGauges, so nothing polls the database between scrapes.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { sql } from 'kysely';
import type { AppContext } from './context.js';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'lmsapi_' });

export const httpRequests = new Counter({
  name: 'lmsapi_http_requests_total',
  help: 'HTTP requests answered, by method, route pattern and status code.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpRequestDuration = new Histogram({
  name: 'lmsapi_http_request_duration_seconds',
  help: 'Time from receiving a request to sending its response, by method, route pattern and status code.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const tokensIssued = new Counter({
  name: 'lmsapi_tokens_issued_total',
  help: 'Access tokens issued by POST /v1/oauth/token.',
  registers: [registry],
});

export const tokensRefused = new Counter({
  name: 'lmsapi_tokens_refused_total',
  help: 'Token requests refused, by OAuth error (invalid_client, invalid_request, invalid_scope, unsupported_grant_type, rate_limited).',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/** outcome: success (2xx), failure (non-2xx answer), timeout, error (no answer: DNS, connect, TLS, refused target). */
export const webhookAttempts = new Counter({
  name: 'lmsapi_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome (success, failure, timeout, error).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const retentionPurged = new Counter({
  name: 'lmsapi_retention_purged_rows_total',
  help: 'Rows removed by the retention jobs, by table.',
  labelNames: ['table'] as const,
  registers: [registry],
});

const deliveriesWaiting = new Gauge({
  name: 'lmsapi_webhook_deliveries_waiting',
  help: 'Webhook deliveries not yet delivered and not given up on (pending or being retried).',
  registers: [registry],
});

const oldestWaiting = new Gauge({
  name: 'lmsapi_webhook_oldest_waiting_seconds',
  help: 'Age of the oldest webhook delivery still waiting to be delivered (0 when none waits).',
  registers: [registry],
});

const dueLag = new Gauge({
  name: 'lmsapi_webhook_due_lag_seconds',
  help: 'How late the most overdue webhook delivery is (due but not yet claimed by a worker; 0 when none). Worker lag.',
  registers: [registry],
});

const dbPool = new Gauge({
  name: 'lmsapi_db_pool_connections',
  help: 'Database connections by state: total, idle, and requests waiting for a connection.',
  labelNames: ['state'] as const,
  registers: [registry],
});

/** Reads the gauges that describe the database; called by GET /metrics just before rendering. */
export async function collectDatabaseGauges(ctx: AppContext): Promise<void> {
  const pool = ctx.db.poolStats();
  dbPool.set({ state: 'total' }, pool.total);
  dbPool.set({ state: 'idle' }, pool.idle);
  dbPool.set({ state: 'waiting' }, pool.waiting);
  const row = await ctx.db.kysely
    .selectFrom('webhook_deliveries')
    .select([sql<number>`count(*)`.as('waiting'), sql<string | null>`min(created_at)`.as('oldest')])
    .where('status', '=', 'pending')
    .executeTakeFirst();
  deliveriesWaiting.set(Number(row?.waiting ?? 0));
  const now = ctx.clock.now();
  const oldest = row?.oldest ? Date.parse(row.oldest) : NaN;
  oldestWaiting.set(Number.isNaN(oldest) ? 0 : Math.max(0, (now.getTime() - oldest) / 1000));
  // A claimed delivery's next_attempt_at is its lease end (in the future), so only unclaimed due ones count here.
  const due = await ctx.db.kysely
    .selectFrom('webhook_deliveries')
    .select(sql<string | null>`min(next_attempt_at)`.as('due'))
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now.toISOString())
    .executeTakeFirst();
  const dueAt = due?.due ? Date.parse(due.due) : NaN;
  dueLag.set(Number.isNaN(dueAt) ? 0 : Math.max(0, (now.getTime() - dueAt) / 1000));
}
