// The periodic expiry job: valid → expired once expires_at has passed, with `certificate.expired` recorded in
// the same transaction as each change. Work is done in bounded batches (one short transaction each), so a
// backlog never holds a long lock. Several processes may run the job at once: the conditional UPDATE lets
// exactly one of them expire a given certificate and record its event.
import type { AppContext } from '../../context.js';
import { iso } from '../../clock.js';
import { recordEvent } from '../../events/record.js';
import * as repo from './repo.js';
import { toCertificate } from './schemas.js';

export interface ExpiryOptions {
  /** Certificates per transaction (default 100). */
  batchSize?: number;
  /** Upper bound on batches per run (default 50); the next run continues with the rest. */
  maxBatches?: number;
}

/** Expires every valid certificate whose expires_at is at or before `now`; returns how many it expired. */
export async function expireCertificates(ctx: AppContext, now: Date = ctx.clock.now(), options: ExpiryOptions = {}): Promise<number> {
  const batchSize = options.batchSize ?? 100;
  const maxBatches = options.maxBatches ?? 50;
  const at = iso(now);
  let expired = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const { found, changed } = await ctx.db.kysely.transaction().execute(async (trx) => {
      const due = await repo.findExpiredValid(trx, at, batchSize);
      let changed = 0;
      for (const row of due) {
        if (!(await repo.markExpired(trx, row.org_id, row.id, at))) continue;
        const certificate = toCertificate({ ...row, status: 'expired', updated_at: at }, ctx.config.publicUrl);
        await recordEvent(trx, ctx.clock, { orgId: row.org_id, type: 'certificate.expired', object: certificate });
        changed++;
      }
      return { found: due.length, changed };
    });
    expired += changed;
    if (found < batchSize) break;
  }
  return expired;
}

export interface ExpiryJobOptions extends ExpiryOptions {
  /** Time between runs (default 60 s). */
  intervalMs?: number;
  onError?: (err: unknown) => void;
  onRun?: (expired: number) => void;
}

/**
 * Runs expireCertificates now and then every intervalMs (never two runs at once: the next run is scheduled
 * when the previous one ends). Returns a stop function that cancels the timer and waits for a run in progress.
 */
export function startCertificateExpiryJob(ctx: AppContext, options: ExpiryJobOptions = {}): () => Promise<void> {
  const intervalMs = options.intervalMs ?? 60_000;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;

  const run = () => {
    timer = null;
    running = expireCertificates(ctx, ctx.clock.now(), options)
      .then((n) => options.onRun?.(n), (err) => options.onError?.(err))
      .finally(() => {
        running = null;
        if (!stopped) schedule(intervalMs);
      });
  };
  const schedule = (ms: number) => {
    timer = setTimeout(run, ms);
    timer.unref();
  };
  schedule(0);

  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    timer = null;
    await running;
  };
}
