// Acceptance 2: SIGTERM while a slow request is in flight — the request completes, new connections are refused,
// and the process exits 0 within SHUTDOWN_TIMEOUT. Past the bound the process cuts off what is
// left and exits 1; a second signal exits at once. The service runs as a real child process (lmsapi serve).
// The slow request is a slow client: a token request whose body arrives in two halves, SIGTERM in between.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { freshDatabase, testConfig, type TestDatabase } from './helpers.js';
import { killServices, startService, type ServiceProcess } from './ops-process.js';
import { startReceiver, waitFor, type Receiver } from './webhook-receiver.js';
import { parsePrometheus } from './ops-helpers.js';
import { createContext } from '../src/context.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createApprovedApplication, type IssuedCredentials } from '../src/modules/applications/service.js';

let database: TestDatabase;
let creds: IssuedCredentials;
let service: ServiceProcess | null = null;

beforeEach(async () => {
  database = await freshDatabase();
  const ctx = await createContext(testConfig(database), { schema: database.schema });
  const org = await createOrganization(ctx, { name: 'Shutdown Org', seats: 2 });
  creds = await createApprovedApplication(ctx, { orgId: org.id, name: 'shutdown app', scopes: ['courses:read', 'webhooks:read', 'webhooks:write'] });
  await ctx.db.close();
}, 120_000);
afterEach(async () => {
  await killServices();
  service = null;
  await database.drop();
}, 60_000);

function env(extra: Record<string, string>): Record<string, string> {
  return { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl, PUBLIC_URL: 'http://127.0.0.1:3000', ...extra };
}

/** A token request whose body is sent in two parts: the second part only when finish() is called. */
function slowTokenRequest(port: number) {
  const body = JSON.stringify({ client_id: creds.client_id, client_secret: creds.client_secret });
  const half = Math.floor(body.length / 2);
  let req!: http.ClientRequest;
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: '/v1/oauth/token', agent: false, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        let data = '';
        res.setEncoding('utf8').on('data', (c) => (data += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
  });
  req.write(body.slice(0, half));
  req.flushHeaders();
  return { response, finish: () => req.end(body.slice(half)) };
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function get(agent: http.Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent }, (res) => {
        res.resume().on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Child processes start slowly on a busy machine: generous test bounds (the shutdown bounds themselves stay exact).
describe('graceful shutdown of lmsapi serve', { timeout: 180_000 }, () => {
  it('finishes the in-flight request, refuses new connections and exits 0 within the bound', async () => {
    service = await startService(env({ SHUTDOWN_TIMEOUT: '8s' }));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(agent, service.port, '/readyz')).toBe(200);
    const slow = slowTokenRequest(service.port);
    await sleep(500); // the request's headers have reached the service: it is in flight

    const signalledAt = Date.now();
    service.child.kill('SIGTERM');
    // The listener closes at once: new connections are refused while the request is still being received.
    let refused = false;
    for (let i = 0; i < 40 && !refused; i++) {
      refused = !(await connects(service.port));
      if (!refused) await sleep(50);
    }
    expect(refused).toBe(true);

    slow.finish();
    const answer = await slow.response;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).access_token).toEqual(expect.any(String));

    const exit = await service.exited;
    expect(exit.code).toBe(0);
    expect(exit.at - signalledAt).toBeLessThan(8000);
    expect(service.output()).toMatch(/"msg":"closed"/);
    agent.destroy();
  });

  it('cuts off a request that does not finish within SHUTDOWN_TIMEOUT and exits 1 just after the bound', async () => {
    service = await startService(env({ SHUTDOWN_TIMEOUT: '2s' }));
    const slow = slowTokenRequest(service.port);
    slow.response.catch(() => {});
    await sleep(500);
    const signalledAt = Date.now();
    service.child.kill('SIGTERM');
    const exit = await service.exited;
    expect(exit.code).toBe(1);
    expect(exit.at - signalledAt).toBeGreaterThanOrEqual(1900);
    expect(exit.at - signalledAt).toBeLessThan(6000);
    expect(service.output()).toMatch(/shutdown bound reached/);
  });

  it('exits at once on a second signal', async () => {
    service = await startService(env({ SHUTDOWN_TIMEOUT: '30s' }));
    const slow = slowTokenRequest(service.port);
    slow.response.catch(() => {});
    await sleep(500);
    service.child.kill('SIGTERM');
    await sleep(500);
    const secondAt = Date.now();
    service.child.kill('SIGINT');
    const exit = await service.exited;
    expect(exit.code).toBe(1);
    expect(exit.at - secondAt).toBeLessThan(3000);
    expect(service.output()).toMatch(/second signal: exiting now/);
  });
});

describe('graceful shutdown with a webhook delivery under way', { timeout: 240_000 }, () => {
  let receiver: Receiver | null = null;
  afterEach(async () => {
    await receiver?.close();
    receiver = null;
  });

  it('hands the claimed delivery back within the bound, exits 0, and the restarted service delivers it', async () => {
    // The receiver holds its first request (the service is stopped meanwhile) and answers later ones at once.
    receiver = await startReceiver((n) => (n === 0 ? { status: 200, delayMs: 60_000 } : { status: 200 }));
    const webhookEnv = env({
      SHUTDOWN_TIMEOUT: '4s',
      WEBHOOK_TIMEOUT: '30s',
      WEBHOOK_LEASE: '10m', // far beyond the test: the delivery comes back because it was released, not because a lease ran out
      WEBHOOK_POLL_INTERVAL: '50ms',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    service = await startService(webhookEnv);
    const token = ((await (await fetch(`${service.url}/v1/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_id: creds.client_id, client_secret: creds.client_secret }) })).json()) as { access_token: string }).access_token;
    const auth = { authorization: `Bearer ${token}` };
    const created = await fetch(`${service.url}/v1/webhooks`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url: receiver.url, events: ['*'] }) });
    expect(created.status).toBe(201);
    const endpoint = (await created.json()) as { id: string };
    expect((await fetch(`${service.url}/v1/webhooks/${endpoint.id}/test`, { method: 'POST', headers: auth })).status).toBeLessThan(300);
    // The worker has claimed the delivery and its request is at the receiver, unanswered.
    await waitFor(() => receiver!.received.length === 1, 15_000, 'the first delivery attempt');
    const eventId = receiver.ids()[0];

    // A slow client request is in flight too.
    const slow = slowTokenRequest(service.port);
    await sleep(300);
    const signalledAt = Date.now();
    service.child.kill('SIGTERM');
    await sleep(300);
    slow.finish();
    expect((await slow.response).status).toBe(200);
    const exit = await service.exited;
    expect(exit.code).toBe(0);
    expect(exit.at - signalledAt).toBeLessThan(4000);
    expect(service.output()).toMatch(/webhook delivery handed back at shutdown/);

    const restartedAt = Date.now();
    service = await startService(webhookEnv);
    await waitFor(() => receiver!.received.length >= 2, 15_000, 'the delivery after restart');
    expect(receiver.ids()[1]).toBe(eventId);
    expect(Date.now() - restartedAt).toBeLessThan(30_000);
    // The restarted service has a fresh token cache, but tokens stay valid across restarts (same signing keys).
    const deliveries = await waitFor(async () => {
      const res = await fetch(`${service!.url}/v1/webhooks/${endpoint.id}/deliveries`, { headers: auth });
      const body = (await res.json()) as { data: { status: string; attempt_count: number }[] };
      return body.data[0]?.status === 'succeeded' ? body : null;
    }, 10_000, 'the delivery to be recorded as succeeded');
    expect(deliveries.data).toHaveLength(1);
    // The handed-back attempt was not counted: the one recorded attempt is the successful one.
    expect(deliveries.data[0].attempt_count).toBe(1);
    // The worker's attempts are counted in /metrics.
    const metrics = parsePrometheus(await (await fetch(`${service.url}/metrics`)).text());
    expect(metrics.value('lmsapi_webhook_attempts_total', { outcome: 'success' })).toBe(1);
    service.child.kill('SIGTERM');
    expect((await service.exited).code).toBe(0);
  });
});

describe('/readyz while shutting down', { timeout: 120_000 }, () => {
  it('answers 503 "shutting down" once close() has begun, while /healthz stays up', async () => {
    const { startServer } = await import('../src/server.js');
    const { Writable } = await import('node:stream');
    const server = await startServer(testConfig(database, { PORT: '0' }), { logDestination: new Writable({ write: (_c, _e, cb) => cb() }) });
    expect((await server.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const { markShuttingDown } = await import('../src/http/health.js');
    markShuttingDown(server.ctx);
    const res = await server.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ status: 'not ready', checks: { process: 'shutting down', database: 'ok' } });
    expect((await server.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect(await server.close()).toBe(true);
    expect(server.runners.map((r) => r.name)).toContain('retention');
  });
});
