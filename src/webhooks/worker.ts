// The delivery worker. It claims due deliveries with a row lease (one atomic UPDATE … RETURNING; on PostgreSQL
// the rows are picked with FOR UPDATE SKIP LOCKED, so several workers never claim the same row), POSTs each
// signed event with undici over keep-alive connections, and records the attempt. A worker that dies leaves its
// claims to expire (WEBHOOK_LEASE) and another worker picks them up: deliveries are at least once.
//
// Ordering: due deliveries are claimed by (next_attempt_at, id). A first attempt is due at its event's creation
// time, so first attempts go out in event order; a retry is due later and never holds back newer events.
//
// The worker is a system component that serves every organization, so its queries are not scoped by org_id.
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { Agent, request, type Dispatcher } from 'undici';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { AppContext } from '../context.js';
import type { Trx } from '../db/index.js';
import type { Row } from '../db/types.js';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { newId } from '../ids.js';
import { webhookAttempts } from '../metrics.js';
import { signedHeaders } from './signing.js';
import { checkUrlShape, guardedLookup, systemResolveAll, WebhookUrlError, type ResolveAll, type UrlPolicy } from './url-guard.js';

/** Bytes of a response body kept in the attempt log. */
export const EXCERPT_BYTES = 1024;
/** Bytes of a response body read at most (the rest is dropped with the connection). */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** A Retry-After longer than this is capped: a receiver cannot park a delivery for ever. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

export interface WorkerOptions {
  clock?: Clock;
  pollMs?: number;
  concurrency?: number;
  /** Deliveries claimed per query (default: the free slots of the pool, at most 100). */
  batchSize?: number;
  resolveAll?: ResolveAll;
  logger?: Pick<Logger, 'info' | 'warn' | 'error' | 'debug'>;
}

export interface WorkerStats {
  claimed: number;
  succeeded: number;
  failedAttempts: number;
}

export interface DeliveryWorker {
  readonly name: 'webhook-worker';
  readonly id: string;
  readonly stats: WorkerStats;
  /**
   * Stops claiming, finishes the deliveries it holds, closes its connections. When `handBack` aborts (the shutdown
   * bound is near), sends still under way are cut off and their deliveries released at once (no attempt recorded),
   * so that the next worker — or this service after a restart — delivers them without waiting for the lease.
   */
  stop(handBack?: AbortSignal): Promise<void>;
}

interface Claimed {
  id: string;
  org_id: string;
  endpoint_id: string;
  event_id: string;
  attempts: number;
}

type EventRow = { id: string; payload: string };
type EndpointRow = Row<'webhook_endpoints'>;

interface Outcome {
  statusCode: number | null;
  durationMs: number;
  excerpt: string | null;
  error: string | null;
  retryAfterMs: number | null;
}

const silent = { info() {}, warn() {}, error() {}, debug() {} };

/** Claims up to `limit` due deliveries for `owner` until `leaseUntil`. */
export async function claimDueDeliveries(ctx: AppContext, owner: string, now: string, leaseUntil: string, limit: number): Promise<Claimed[]> {
  // 'pending' is a literal (not a parameter) so that the partial index webhook_deliveries_pending serves the scan.
  const query =
    ctx.db.dialect === 'postgres'
      ? sql<Claimed>`
          with due as (
            select id from webhook_deliveries
            where status = 'pending' and next_attempt_at <= ${now}
            order by next_attempt_at, id
            limit ${limit}
            for update skip locked
          )
          update webhook_deliveries d
          set lease_owner = ${owner}, lease_expires_at = ${leaseUntil}, next_attempt_at = ${leaseUntil}
          from due where d.id = due.id
          returning d.id, d.org_id, d.endpoint_id, d.event_id, d.attempts`
      : // SQLite runs one writer at a time, so this single conditional UPDATE is the whole claim.
        sql<Claimed>`
          update webhook_deliveries
          set lease_owner = ${owner}, lease_expires_at = ${leaseUntil}, next_attempt_at = ${leaseUntil}
          where id in (
            select id from webhook_deliveries
            where status = 'pending' and next_attempt_at <= ${now}
            order by next_attempt_at, id
            limit ${limit}
          )
          returning id, org_id, endpoint_id, event_id, attempts`;
  const { rows } = await query.execute(ctx.db.kysely);
  // RETURNING gives no order; delivery ids are time-ordered, so this restores the order of creation.
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

async function readCapped(body: Dispatcher.ResponseData['body']): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (keptBytes < EXCERPT_BYTES) {
      const part = chunk.subarray(0, EXCERPT_BYTES - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (total >= MAX_RESPONSE_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(kept).toString('utf8');
}

function describeError(err: unknown, timeoutMs: number): string {
  const e = err as Error & { code?: string; cause?: Error & { code?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  const inner = e?.cause && e.cause.message !== e.message ? `: ${e.cause.message}` : '';
  const code = e?.code ?? e?.cause?.code;
  return `${e?.message ?? String(err)}${inner}${code ? ` (${code})` : ''}`.slice(0, 500);
}

export function startWorker(ctx: AppContext, options: WorkerOptions = {}): DeliveryWorker {
  const config = ctx.config;
  const clock = options.clock ?? ctx.clock;
  const log = options.logger ?? silent;
  const pollMs = options.pollMs ?? config.webhookPollMs;
  const concurrency = options.concurrency ?? config.webhookConcurrency;
  const batchSize = options.batchSize ?? 100;
  const timeoutMs = config.webhookTimeoutMs;
  const policy: UrlPolicy = { allowHttp: config.webhookAllowHttp, allowPrivateNetworks: config.webhookAllowPrivateNetworks };
  const id = `wkr_${randomBytes(8).toString('hex')}`;
  const stats: WorkerStats = { claimed: 0, succeeded: 0, failedAttempts: 0 };
  const agent = new Agent({
    // Every connection's address passes the URL guard: DNS rebinding between registration and delivery fails here.
    connect: { lookup: guardedLookup(policy, options.resolveAll ?? ctx.resolveAll ?? systemResolveAll) as never, timeout: timeoutMs },
    connections: concurrency,
    keepAliveTimeout: 30_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  let stopping = false;
  // Aborted when shutdown must hand back what is still being sent (see stop()).
  const handingBack = new AbortController();
  const inflight = new Set<Promise<void>>();
  let wake: (() => void) | null = null;
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = null;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
    });

  /** The events and endpoints of a claimed batch, read with one query each. */
  async function loadBatch(batch: Claimed[]) {
    const db = ctx.db.kysely;
    const eventIds = [...new Set(batch.map((c) => c.event_id))];
    const endpointIds = [...new Set(batch.map((c) => c.endpoint_id))];
    const [events, endpoints] = await Promise.all([
      db.selectFrom('events').select(['id', 'payload']).where('id', 'in', eventIds).execute(),
      db.selectFrom('webhook_endpoints').selectAll().where('id', 'in', endpointIds).execute(),
    ]);
    return { events: new Map(events.map((e) => [e.id, e])), endpoints: new Map(endpoints.map((e) => [e.id, e])) };
  }

  async function send(claimed: Claimed, event: EventRow | undefined, endpoint: EndpointRow | undefined): Promise<void> {
    if (!event || !endpoint || endpoint.status !== 'enabled') {
      // Nothing to send to (disabled or deleted endpoint) or nothing to send (event pruned): the delivery ends here.
      await endWithoutAttempt(claimed);
      return;
    }
    const started = performance.now();
    let outcome: Outcome;
    try {
      // Literal IP hosts never reach the lookup hook, so the address rules are applied to the URL itself too.
      const url = checkUrlShape(endpoint.url, policy);
      const now = clock.now();
      const secrets = [endpoint.secret];
      if (endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > iso(now)) {
        secrets.push(endpoint.previous_secret);
      }
      const res = await request(url, {
        method: 'POST',
        dispatcher: agent,
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), handingBack.signal]),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'lmsapi-webhooks/1.0',
          ...signedHeaders(secrets, event.id, Math.floor(now.getTime() / 1000), event.payload),
        },
        body: event.payload,
      });
      const excerpt = await readCapped(res.body);
      outcome = {
        statusCode: res.statusCode,
        durationMs: Math.round(performance.now() - started),
        excerpt,
        error: null,
        retryAfterMs: parseRetryAfter(res.headers['retry-after'], now.getTime()),
      };
    } catch (err) {
      if (handingBack.signal.aborted) {
        await release(claimed);
        return;
      }
      const name = (err as Error)?.name;
      webhookAttempts.inc({ outcome: name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'error' });
      const error = err instanceof WebhookUrlError ? `refused target: ${err.message}` : describeError(err, timeoutMs);
      outcome = { statusCode: null, durationMs: Math.round(performance.now() - started), excerpt: null, error, retryAfterMs: null };
    }
    const ok = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
    if (outcome.statusCode !== null) webhookAttempts.inc({ outcome: ok ? 'success' : 'failure' });
    if (ok) {
      stats.succeeded++;
      queueSuccess({ claimed, endpointId: endpoint.id, outcome, at: iso(clock.now()) });
    } else {
      stats.failedAttempts++;
      await recordFailure(claimed, endpoint.id, outcome);
    }
  }

  // Successes are recorded in batches (one transaction for many deliveries): the common case costs a fraction of a
  // transaction each. Until its batch is written a delivery stays leased, so no other worker sends it again; if the
  // process dies first, the lease expires and the event is sent again (at least once).
  interface Success {
    claimed: Claimed;
    endpointId: string;
    outcome: Outcome;
    at: string;
  }
  let successes: Success[] = [];
  let flushTimer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> = Promise.resolve();
  const FLUSH_SIZE = 50;
  const FLUSH_DELAY_MS = 5;

  function queueSuccess(s: Success): void {
    successes.push(s);
    if (successes.length >= FLUSH_SIZE) flushNow();
    else flushTimer ??= setTimeout(flushNow, FLUSH_DELAY_MS);
  }

  function flushNow(): Promise<void> {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = null;
    const batch = successes;
    successes = [];
    if (batch.length === 0) return flushing;
    flushing = flushing
      .then(() => recordSuccesses(batch))
      .catch((err) => log.error({ err, deliveries: batch.length }, 'recording delivered webhooks failed; their leases will expire'));
    return flushing;
  }

  async function recordSuccesses(batch: Success[]): Promise<void> {
    const byStatus = new Map<number, Success[]>();
    for (const s of batch) byStatus.set(s.outcome.statusCode!, [...(byStatus.get(s.outcome.statusCode!) ?? []), s]);
    await ctx.db.kysely.transaction().execute(async (trx) => {
      const held = new Set<string>();
      for (const [code, items] of byStatus) {
        const at = items.reduce((max, s) => (s.at > max ? s.at : max), items[0].at);
        const rows = await trx
          .updateTable('webhook_deliveries')
          .set((eb) => ({
            status: 'succeeded' as const,
            attempts: eb('attempts', '+', 1),
            next_attempt_at: null,
            lease_owner: null,
            lease_expires_at: null,
            last_attempt_at: at,
            last_status_code: code,
            updated_at: at,
          }))
          .where('id', 'in', items.map((s) => s.claimed.id))
          .where('lease_owner', '=', id)
          .returning('id')
          .execute();
        for (const r of rows) held.add(r.id);
      }
      // Only deliveries this worker still held get their attempt recorded (see record()).
      const attempts = batch
        .filter((s) => held.has(s.claimed.id))
        .map((s) => ({
          id: newId('attempt'),
          org_id: s.claimed.org_id,
          delivery_id: s.claimed.id,
          endpoint_id: s.endpointId,
          attempted_at: s.at,
          status_code: s.outcome.statusCode,
          duration_ms: s.outcome.durationMs,
          response_excerpt: s.outcome.excerpt,
          error: null,
        }));
      if (attempts.length > 0) await trx.insertInto('webhook_attempts').values(attempts).execute();
      const endpointIds = [...new Set(batch.map((s) => s.endpointId))];
      await trx.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', 'in', endpointIds).where('failing_since', 'is not', null).execute();
    });
  }

  /** Hands a claimed delivery back (shutdown): due now, unleased, attempts unchanged. */
  async function release(claimed: Claimed): Promise<void> {
    const now = iso(clock.now());
    await ctx.db.kysely
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: now, lease_owner: null, lease_expires_at: null, updated_at: now })
      .where('id', '=', claimed.id)
      .where('lease_owner', '=', id)
      .execute();
    log.info({ deliveryId: claimed.id }, 'webhook delivery handed back at shutdown');
  }

  /** Ends a delivery without an attempt (nothing could be sent). */
  async function endWithoutAttempt(claimed: Claimed): Promise<void> {
    const now = iso(clock.now());
    await ctx.db.kysely
      .updateTable('webhook_deliveries')
      .set({ status: 'failed', next_attempt_at: null, lease_owner: null, lease_expires_at: null, updated_at: now })
      .where('id', '=', claimed.id)
      .where('lease_owner', '=', id)
      .execute();
  }

  /** Records a failed attempt and decides what happens next: a retry at a time, failed, the endpoint disabled. */
  async function recordFailure(claimed: Claimed, endpointId: string, outcome: Outcome): Promise<void> {
    const nowDate = clock.now();
    const now = iso(nowDate);
    const attempts = claimed.attempts + 1;
    const schedule = config.webhookRetryScheduleMs;
    let status: 'pending' | 'failed' = 'failed';
    let next: string | null = null;
    if (outcome.statusCode !== 410 && attempts <= schedule.length) {
      const delay = Math.max(schedule[attempts - 1], Math.min(outcome.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
      status = 'pending';
      next = iso(new Date(nowDate.getTime() + delay));
    }
    await ctx.db.kysely.transaction().execute(async (trx) => {
      // Only the lease holder may write: if the lease expired and another worker took over (or the endpoint was
      // deleted), this worker's result is dropped; the receiver may see the event twice, which at-least-once allows.
      const updated = await trx
        .updateTable('webhook_deliveries')
        .set({
          status,
          attempts,
          next_attempt_at: next,
          lease_owner: null,
          lease_expires_at: null,
          last_attempt_at: now,
          last_status_code: outcome.statusCode,
          updated_at: now,
        })
        .where('id', '=', claimed.id)
        .where('lease_owner', '=', id)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) !== 1) return;
      await trx
        .insertInto('webhook_attempts')
        .values({
          id: newId('attempt'),
          org_id: claimed.org_id,
          delivery_id: claimed.id,
          endpoint_id: endpointId,
          attempted_at: now,
          status_code: outcome.statusCode,
          duration_ms: outcome.durationMs,
          response_excerpt: outcome.excerpt,
          error: outcome.error,
        })
        .execute();
      if (outcome.statusCode === 410) {
        await disable(trx, endpointId, now, 'The endpoint answered 410 Gone.');
        return;
      }
      const endpoint = await trx.selectFrom('webhook_endpoints').select(['failing_since', 'status']).where('id', '=', endpointId).executeTakeFirst();
      if (!endpoint || endpoint.status !== 'enabled') return;
      const since = endpoint.failing_since ?? now;
      if (!endpoint.failing_since) {
        await trx.updateTable('webhook_endpoints').set({ failing_since: now }).where('id', '=', endpointId).where('failing_since', 'is', null).execute();
      }
      if (nowDate.getTime() - Date.parse(since) >= config.webhookDisableAfterMs) {
        await disable(trx, endpointId, now, `Every delivery has failed since ${since}.`);
      }
    });
  }

  async function disable(trx: Trx, endpointId: string, now: string, reason: string) {
    await trx
      .updateTable('webhook_endpoints')
      .set({ status: 'disabled', disabled_reason: reason, updated_at: now })
      .where('id', '=', endpointId)
      .where('status', '=', 'enabled')
      .execute();
    log.warn({ endpointId, reason }, 'webhook endpoint disabled');
  }

  function launch(claimed: Claimed, batch: Awaited<ReturnType<typeof loadBatch>>): void {
    const p: Promise<void> = send(claimed, batch.events.get(claimed.event_id), batch.endpoints.get(claimed.endpoint_id))
      .catch((err) => log.error({ err, deliveryId: claimed.id }, 'webhook delivery failed to complete; its lease will expire'))
      .finally(() => {
        inflight.delete(p);
        if (inflight.size <= concurrency / 2) wake?.();
      });
    inflight.add(p);
  }

  const loop = (async () => {
    while (!stopping) {
      const free = concurrency - inflight.size;
      // Claim when at least half the pool is free (or nothing is in flight): fewer, larger claim queries.
      if (free < Math.max(1, Math.floor(concurrency / 2)) && inflight.size > 0) {
        await nap(pollMs);
        continue;
      }
      let claimed: Claimed[] = [];
      try {
        const now = clock.now();
        claimed = await claimDueDeliveries(ctx, id, iso(now), iso(new Date(now.getTime() + config.webhookLeaseMs)), Math.min(free, batchSize));
        if (claimed.length > 0) {
          const batch = await loadBatch(claimed);
          for (const c of claimed) launch(c, batch);
        }
      } catch (err) {
        // What was claimed but not launched stays leased and is picked up again when the lease expires.
        log.error({ err }, 'claiming webhook deliveries failed');
        if (stopping) break;
      }
      stats.claimed += claimed.length;
      if (claimed.length < Math.min(free, batchSize)) await nap(pollMs);
    }
  })();

  let stopped: Promise<void> | null = null;
  return {
    name: 'webhook-worker',
    id,
    stats,
    stop(handBack?: AbortSignal) {
      if (handBack) {
        if (handBack.aborted) handingBack.abort();
        else handBack.addEventListener('abort', () => handingBack.abort(), { once: true });
      }
      stopped ??= (async () => {
        stopping = true;
        wake?.();
        await loop;
        await Promise.allSettled([...inflight]);
        await flushNow();
        await agent.close();
      })();
      return stopped;
    },
  };
}
