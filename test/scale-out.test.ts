// Scale-out: `lmsapi serve --processes 2 --no-worker` (two API processes sharing one port through Node's cluster)
// plus two `lmsapi worker` processes, all on one database and one Redis. Concurrent enrolments spread over both API
// processes never take more seats than the total, the rate limit is one budget across both processes (Redis), and
// every event reaches a receiver on 127.0.0.1 exactly once.
//
// The deployment this proves is PostgreSQL (`npm run test:pg` runs it there). On the SQLite suite the very same
// assertions run against one SQLite file shared by the five processes (WAL, BEGIN IMMEDIATE, busy_timeout): a
// single-host deployment may run several API processes too, and the seat rule and the outbox must hold there as well.
import { afterEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../src/config.js';
import { createContext } from '../src/context.js';
import { ALL_SCOPES } from '../src/auth/scopes.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createApprovedApplication, type IssuedCredentials } from '../src/modules/applications/service.js';
import { importCatalogue } from '../src/modules/catalogue/service.js';
import { newId } from '../src/ids.js';
import { freshDatabase, onPostgres, type TestDatabase } from './helpers.js';
import { startLmsapi, type Child } from './webhook-procs.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';

const SEATS = 12;
const LEARNERS = 30;
const RATE_LIMIT = 40;

describe(`scale-out on ${onPostgres ? 'PostgreSQL' : 'one SQLite file'}: two API processes and two workers`, () => {
  const children: Child[] = [];
  let database: TestDatabase | null = null;
  let receiver: Receiver | null = null;
  afterEach(async () => {
    for (const c of children) c.process.kill('SIGTERM');
    await Promise.all(children.map((c) => Promise.race([c.exited, new Promise((r) => setTimeout(r, 20_000))])));
    for (const c of children) if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGKILL');
    children.length = 0;
    await receiver?.close();
    await database?.drop();
  });

  it('never over-allocates seats, shares one rate-limit budget, and delivers every event', async () => {
    database = await freshDatabase();
    receiver = await startReceiver();
    const env = {
      DATABASE_URL: database.databaseUrl,
      DATA_DIR: database.dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: `scale-out-${randomBytes(6).toString('hex')}:`,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_POLL_INTERVAL: '100ms',
    };

    // The organization, two applications, the catalogue and the learners, written before any process starts.
    const ctx = await createContext(loadConfig(env));
    let enrolApp: IssuedCredentials;
    let readApp: IssuedCredentials;
    let courseId: string;
    const learnerIds: string[] = [];
    try {
      await importCatalogue(ctx, JSON.parse(readFileSync(new URL('../demo/catalogue.json', import.meta.url), 'utf8')));
      const org = await createOrganization(ctx, { name: 'Scale-out Ltd', seats: SEATS });
      enrolApp = await createApprovedApplication(ctx, { orgId: org.id, name: 'enrolling app', scopes: ALL_SCOPES });
      readApp = await createApprovedApplication(ctx, { orgId: org.id, name: 'reading app', scopes: ALL_SCOPES });
      courseId = (await ctx.db.kysely.selectFrom('courses').select('id').where('status', '=', 'published').orderBy('id').executeTakeFirstOrThrow()).id;
      const now = new Date().toISOString();
      for (let i = 0; i < LEARNERS; i++) {
        const id = newId('user');
        learnerIds.push(id);
        const email = `learner${i}@scale-out.example`;
        await ctx.db.kysely
          .insertInto('users')
          .values({ id, org_id: org.id, email, email_normalized: email, first_name: 'L', last_name: String(i), external_id: null, department: null, roles: '["learner"]', is_learner: 1, status: 'active', created_at: now, updated_at: now })
          .execute();
      }
    } finally {
      await ctx.db.close();
    }

    const api = startLmsapi(['serve', '--processes', '2', '--no-worker'], env);
    children.push(api);
    const workers = [startLmsapi(['worker'], env), startLmsapi(['worker'], env)];
    children.push(...workers);
    const [, base] = await api.waitForLine(/listening on (http:\/\/\S+) \(2 API processes\)/, 120_000);
    await Promise.all(workers.map((w) => w.waitForLine(/webhook worker \S+ running/, 120_000)));

    const call = async (method: string, path: string, token?: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const tokenOf = async (app: IssuedCredentials) =>
      (await call('POST', '/v1/oauth/token', undefined, { client_id: app.client_id, client_secret: app.client_secret })).body.access_token as string;
    const enrolToken = await tokenOf(enrolApp!);
    const readToken = await tokenOf(readApp!);

    const hook = await call('POST', '/v1/webhooks', enrolToken, { url: `${receiver.url}/hooks`, events: ['enrolment.created'] });
    expect(hook.status).toBe(201);

    // 1. Seats: every learner asks for the course at once, through both API processes; exactly SEATS succeed.
    const enrolments = await Promise.all(learnerIds.map((id) => call('POST', '/v1/enrolments', enrolToken, { learner_id: id, course_id: courseId })));
    const created = enrolments.filter((r) => r.status === 201);
    expect(created).toHaveLength(SEATS);
    expect(enrolments.filter((r) => r.status === 409).map((r) => r.body.code)).toEqual(Array(LEARNERS - SEATS).fill('seat_limit_reached'));
    const seats = await call('GET', '/v1/seats', enrolToken);
    expect(seats.body).toMatchObject({ total: SEATS, in_use: SEATS, available: 0 });

    // 2. Rate limit: 60 requests of one application at once, through both processes; one budget of RATE_LIMIT.
    const reads = await Promise.all(Array.from({ length: 60 }, () => call('GET', '/v1/courses?limit=1', readToken)));
    expect(reads.filter((r) => r.status === 200)).toHaveLength(RATE_LIMIT);
    expect(reads.filter((r) => r.status === 429)).toHaveLength(60 - RATE_LIMIT);

    // Both API processes answered enrolments and reads (the access log names the process).
    const served = (route: string) =>
      new Set(
        api.lines
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { pid: number; route?: string; msg: string })
          .filter((l) => l.msg === 'request completed' && l.route === route)
          .map((l) => l.pid),
      );
    expect(served('/v1/enrolments').size).toBe(2);
    expect(served('/v1/courses').size).toBe(2);

    // 3. Every enrolment.created event reaches the receiver, once.
    const expected = new Set(created.map((r) => r.body.id as string));
    const deadline = Date.now() + 60_000;
    while (receiver.received.length < SEATS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const events = receiver.received.map((r) => JSON.parse(r.body) as { id: string; type: string; data: { object: { id: string } } });
    expect(events.map((e) => e.type)).toEqual(Array(SEATS).fill('enrolment.created'));
    expect(new Set(events.map((e) => e.data.object.id))).toEqual(expected);
    expect(new Set(receiver.ids()).size).toBe(SEATS);
  }, 240_000);
});
