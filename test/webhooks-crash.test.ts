// Crash safety (issue 4, acceptance 3): the service runs as a child process (`lmsapi serve`, API and worker in one
// process), 200 changes are made through the API, the process is killed with SIGKILL while deliveries are under
// way, a new process is started on the same database, and the receiver ends with every one of the 200 events at
// least once. Runs on SQLite and, with TEST_DATABASE_URL=postgres://…, on PostgreSQL.
import { afterEach, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { freshDatabase, onPostgres, testConfig, type TestDatabase } from './helpers.js';
import { startReceiver, waitFor, type Receiver } from './webhook-receiver.js';
import { startLmsapi, type Child } from './webhook-procs.js';
import { createContext, type AppContext } from '../src/context.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createApprovedApplication } from '../src/modules/applications/service.js';

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

it(`loses no event when the service is killed with SIGKILL mid-delivery (${onPostgres ? 'PostgreSQL' : 'SQLite'})`, async () => {
  database = await freshDatabase();
  const env = {
    DATABASE_URL: database.databaseUrl,
    DATA_DIR: database.dataDir,
    PUBLIC_URL: 'http://127.0.0.1:3000',
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    PORT: '0',
    RATE_LIMIT_PER_MINUTE: '100000',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,500ms,1s,1s,1s,1s',
    WEBHOOK_TIMEOUT: '2s',
    WEBHOOK_LEASE: '3s',
    WEBHOOK_POLL_INTERVAL: '50ms',
    // Few deliveries at a time and a slow receiver, so that the kill lands while many are still to go.
    WEBHOOK_CONCURRENCY: '2',
  };
  ctx = await createContext(testConfig(database, env), { schema: database.schema });
  const org = await createOrganization(ctx, { name: 'Crash test', seats: 5 });
  const creds = await createApprovedApplication(ctx, { orgId: org.id, name: 'crash', scopes: ['webhooks:read', 'webhooks:write', 'events:read', 'learners:write'] });

  // While the changes are being made the receiver is very slow, so most deliveries are still to go when the kill comes.
  let changesMade = false;
  receiver = await startReceiver(() => ({ status: 200, delayMs: changesMade ? 40 : 1_500 }));
  let serve = startLmsapi(['serve'], env);
  children.push(serve);
  let base = (await serve.waitForLine(/listening on (http:\/\/\S+)/))[1];
  const tokenRes = await fetch(`${base}/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: creds.client_id, client_secret: creds.client_secret }),
  });
  const { access_token } = (await tokenRes.json()) as { access_token: string };
  const auth = { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' };
  const created = await fetch(`${base}/v1/webhooks`, { method: 'POST', headers: auth, body: JSON.stringify({ url: receiver.url, events: ['learner.created'] }) });
  expect(created.status).toBe(201);
  const endpoint = (await created.json()) as { id: string; secret: string };

  // 200 changes, each recording its learner.created event (and the delivery) in its own transaction.
  for (let i = 0; i < 200; i++) {
    const body = JSON.stringify({ email: `learner${i}@example.com`, first_name: 'Crash', last_name: `Test ${i}` });
    const res = await fetch(`${base}/v1/learners`, { method: 'POST', headers: auth, body });
    expect(res.status).toBe(201);
  }
  const events = await ctx.db.kysely.selectFrom('events').select('id').where('org_id', '=', org.id).where('type', '=', 'learner.created').execute();
  expect(events).toHaveLength(200);

  changesMade = true;
  const receivedBefore = receiver.received.length;
  await waitFor(() => receiver!.received.length >= receivedBefore + 10, 30_000, 'deliveries to be under way');
  serve.process.kill('SIGKILL');
  await serve.exited;
  const beforeCrash = new Set(receiver.ids()).size;
  expect(beforeCrash).toBeLessThan(200); // the kill really happened mid-way

  serve = startLmsapi(['serve'], env);
  children.push(serve);
  base = (await serve.waitForLine(/listening on (http:\/\/\S+)/))[1];
  const all = new Set(events.map((e) => e.id));
  await waitFor(() => [...all].every((id) => receiver!.ids().includes(id)), 60_000, 'every event after the restart');
  expect(new Set(receiver.ids())).toEqual(all);
  // Every copy, duplicates included, is genuine.
  for (const r of receiver.received) new Webhook(endpoint.secret).verify(r.body, r.headers as Record<string, string>);
  serve.process.kill('SIGTERM');
  expect((await serve.exited).code).toBe(0);
}, 240_000);
