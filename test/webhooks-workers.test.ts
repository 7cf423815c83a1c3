// Scale-out (issue 4, acceptance 4): worker processes (`lmsapi worker`) on one database deliver 1,000 events
// with none delivered twice in the absence of failures. On PostgreSQL two workers compete for the same rows
// (FOR UPDATE SKIP LOCKED leases); on SQLite, whose deployments run one worker, a single worker process is checked.
import { afterEach, expect, it } from 'vitest';
import { freshDatabase, onPostgres, testConfig, type TestDatabase } from './helpers.js';
import { startReceiver, waitFor, type Receiver } from './webhook-receiver.js';
import { startLmsapi, type Child } from './webhook-procs.js';
import { createContext, type AppContext } from '../src/context.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createEndpoint } from '../src/modules/webhooks/service.js';
import { recordEvent } from '../src/events/record.js';

const children: Child[] = [];
let receiver: Receiver | null = null;
let ctx: AppContext | null = null;
let database: TestDatabase | null = null;

afterEach(async () => {
  for (const c of children.splice(0)) if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGKILL');
  await receiver?.close();
  await ctx?.db.close();
  await database?.drop();
  receiver = null;
  ctx = null;
  database = null;
});

const WORKERS = onPostgres ? 2 : 1;

it(`${WORKERS} worker process(es) on ${onPostgres ? 'one PostgreSQL' : 'SQLite'} deliver 1,000 events, none twice`, async () => {
  database = await freshDatabase();
  const env = {
    DATABASE_URL: database.databaseUrl,
    DATA_DIR: database.dataDir,
    PUBLIC_URL: 'http://127.0.0.1:3000',
    LOG_LEVEL: 'silent',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '1s,2s',
    WEBHOOK_TIMEOUT: '10s',
    WEBHOOK_LEASE: '30s',
    WEBHOOK_POLL_INTERVAL: '20ms',
    WEBHOOK_CONCURRENCY: '8',
  };
  ctx = await createContext(testConfig(database, env), { schema: database.schema });
  const org = await createOrganization(ctx, { name: 'Scale out', seats: 5 });
  receiver = await startReceiver(() => ({ status: 200, delayMs: 2 }));
  const endpoint = await createEndpoint(ctx, org.id, { url: receiver.url, events: ['seats.updated'] });

  const workers = Array.from({ length: WORKERS }, () => startLmsapi(['worker', '--json'], env));
  children.push(...workers);
  await Promise.all(workers.map((w) => w.waitForLine(/"status":"started"/)));

  // 1,000 events, written in transactions of 50 while the workers are already polling.
  for (let batch = 0; batch < 20; batch++) {
    await ctx.db.kysely.transaction().execute(async (trx) => {
      for (let i = 0; i < 50; i++) {
        await recordEvent(trx, ctx!.clock, { orgId: org.id, type: 'seats.updated', object: { object: 'seat_allowance', n: batch * 50 + i } });
      }
    });
  }
  const db = ctx.db.kysely;
  const succeeded = async () =>
    Number(
      (await db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'succeeded').executeTakeFirstOrThrow()).n,
    );
  await waitFor(async () => (await succeeded()) === 1000, 90_000, '1,000 succeeded deliveries');
  await new Promise((r) => setTimeout(r, 300));

  const ids = receiver.ids();
  expect(ids).toHaveLength(1000);
  expect(new Set(ids).size).toBe(1000);
  const attempts = await db.selectFrom('webhook_attempts').select(['delivery_id', 'status_code']).where('endpoint_id', '=', endpoint.id).execute();
  expect(attempts).toHaveLength(1000);
  expect(attempts.every((a) => a.status_code === 200)).toBe(true);

  // SIGTERM: each worker finishes what it holds and reports what it delivered.
  for (const w of workers) w.process.kill('SIGTERM');
  const reports = await Promise.all(
    workers.map(async (w) => {
      const line = (await w.waitForLine(/^\{.*"status":"stopped".*\}$/))[0];
      expect((await w.exited).code).toBe(0);
      return JSON.parse(line) as { worker: string; succeeded: number };
    }),
  );
  expect(reports.reduce((sum, r) => sum + r.succeeded, 0)).toBe(1000);
  if (onPostgres) {
    // Both workers took part: the no-duplicates result above is a result of competing for the same rows.
    for (const r of reports) expect(r.succeeded).toBeGreaterThan(0);
  }
}, 240_000);
