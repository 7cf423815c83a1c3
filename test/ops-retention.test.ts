// Retention: events past EVENT_RETENTION_DAYS with their deliveries and attempts, idempotency keys past expiry,
// expired sign-in links and sessions are purged in bounded batches; the runner runs on a schedule and stops.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type Tenant } from './helpers.js';
import { eventWithDelivery } from './ops-helpers.js';
import { ManualClock, iso } from '../src/clock.js';
import { purgeExpired, startRetention } from '../src/ops/retention.js';

const DAY = 86_400_000;
const clock = new ManualClock(new Date('2026-11-22T10:00:00.000Z'));
let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await createTestApp({ clock, env: { RETENTION_INTERVAL: '100ms' } });
  tenant = await t.tenant();
});
afterAll(() => t.close());

const ago = (ms: number) => new Date(clock.now().getTime() - ms);

async function expiring(table: 'idempotency_keys' | 'sign_in_links' | 'sessions', key: string, expiresAt: Date) {
  const db = t.ctx.db.kysely;
  const created = iso(ago(2 * DAY));
  if (table === 'idempotency_keys') {
    await db.insertInto('idempotency_keys').values({ app_id: 'app_x', key, request_hash: 'h', state: 'done', response_status: 201, response_headers: '{}', response_body: '{}', created_at: created, expires_at: iso(expiresAt) }).execute();
  } else if (table === 'sign_in_links') {
    await db.insertInto('sign_in_links').values({ token_hash: key, email_normalized: 'a@example.test', audience: 'portal', expires_at: iso(expiresAt), used_at: null, created_at: created }).execute();
  } else {
    await db.insertInto('sessions').values({ id_hash: key, audience: 'portal', subject_id: 'dev_x', csrf_token: 'c', expires_at: iso(expiresAt), created_at: created }).execute();
  }
}

async function count(table: 'events' | 'webhook_deliveries' | 'webhook_attempts' | 'idempotency_keys' | 'sign_in_links' | 'sessions') {
  const row = await t.ctx.db.kysely.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('purgeExpired', () => {
  it('removes what is past its retention, in bounded batches, and keeps the rest', async () => {
    const old = [];
    for (let i = 0; i < 5; i++) old.push(await eventWithDelivery(t.ctx, tenant.orgId, { at: ago(31 * DAY + i * 1000), status: 'failed', attempts: 2 }));
    const young = await eventWithDelivery(t.ctx, tenant.orgId, { at: ago(29 * DAY), status: 'succeeded', attempts: 1 });
    for (const table of ['idempotency_keys', 'sign_in_links', 'sessions'] as const) {
      for (let i = 0; i < 3; i++) await expiring(table, `${table}-old-${i}`, ago(1000 + i));
      await expiring(table, `${table}-live`, new Date(clock.now().getTime() + 60_000));
    }

    const counts = await purgeExpired(t.ctx, { batchSize: 2 });
    expect(counts).toEqual({ events: 5, webhook_deliveries: 5, webhook_attempts: 10, idempotency_keys: 3, sign_in_links: 3, sessions: 3 });
    expect(await count('events')).toBe(1);
    expect(await count('webhook_deliveries')).toBe(1);
    expect(await count('webhook_attempts')).toBe(1);
    const left = await t.ctx.db.kysely.selectFrom('events').select('id').execute();
    expect(left.map((r) => r.id)).toEqual([young.eventId]);
    for (const table of ['idempotency_keys', 'sign_in_links', 'sessions'] as const) expect(await count(table)).toBe(1);

    // Nothing more to do: a second pass removes nothing.
    expect(Object.values(await purgeExpired(t.ctx, { batchSize: 2 })).every((n) => n === 0)).toBe(true);
  });

  it('follows the clock: what was young is purged once it is older than the retention', async () => {
    clock.advance(2 * DAY);
    const counts = await purgeExpired(t.ctx);
    expect(counts.events).toBe(1);
    expect(counts.webhook_deliveries).toBe(1);
    expect(counts.webhook_attempts).toBe(1);
    expect(counts.idempotency_keys + counts.sign_in_links + counts.sessions).toBe(3);
    expect(await count('events')).toBe(0);
  });

  it('stops between batches when asked', async () => {
    for (let i = 0; i < 4; i++) await eventWithDelivery(t.ctx, tenant.orgId, { at: ago(40 * DAY + i) });
    let batches = 0;
    const counts = await purgeExpired(t.ctx, { batchSize: 1, shouldStop: () => batches++ >= 2 });
    expect(counts.events).toBe(2);
    expect(await count('events')).toBe(2);
    await purgeExpired(t.ctx);
  });
});

describe('the retention runner', () => {
  it('runs on its schedule until stopped', async () => {
    const log = { info: () => {}, error: (o: object) => console.error(o) };
    const runner = startRetention(t.ctx, log, { firstRunMs: 0 });
    await expiring('sessions', 'sched-1', ago(1000));
    const deadline = Date.now() + 5000;
    while ((await count('sessions')) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await count('sessions')).toBe(0);
    // A second run on the interval (100 ms) picks up what expired since.
    await expiring('sessions', 'sched-2', ago(1000));
    while ((await count('sessions')) > 0 && Date.now() < deadline + 3000) await new Promise((r) => setTimeout(r, 50));
    expect(await count('sessions')).toBe(0);

    await runner.stop();
    await expiring('sessions', 'after-stop', ago(1000));
    await new Promise((r) => setTimeout(r, 400));
    expect(await count('sessions')).toBe(1);
  });
});
