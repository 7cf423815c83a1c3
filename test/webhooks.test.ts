// Webhooks end to end over real HTTP: endpoints CRUD, the outbox, signed delivery verified by the
// `standardwebhooks` library, retries, 410, Retry-After, rotation, auto-disable, manual retry, and the event log.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';
import { startReceiver, waitFor, type Receiver } from './webhook-receiver.js';
import { systemClock, ManualClock } from '../src/clock.js';
import { setSeatTotal } from '../src/modules/organization/service.js';
import { recordEvent } from '../src/events/record.js';
import { importCatalogue } from '../src/modules/catalogue/service.js';
import { startWorker, type DeliveryWorker } from '../src/webhooks/worker.js';
import { webhookAttempts } from '../src/metrics.js';

let t: TestApp;
let worker: DeliveryWorker | null = null;
const receivers: Receiver[] = [];

beforeAll(async () => {
  t = await createTestApp({ clock: systemClock });
  // Tests talk only to loopback: the example.com endpoints of the CRUD tests resolve to 127.0.0.1 (port 443 is closed).
  t.ctx.resolveAll = async () => [{ address: '127.0.0.1', family: 4 }];
}, 120_000); // slow on a busy machine
afterEach(async () => {
  await worker?.stop();
  worker = null;
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await t.close();
});

async function receiver(respond?: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(respond);
  receivers.push(r);
  return r;
}

async function register(tenant: Tenant, url: string, events: string[]) {
  const res = await t.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url, events } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; secret: string; status: string };
}

function verify(secret: string, r: { headers: Record<string, unknown>; body: string }) {
  return new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { id: string; type: string; data: { object: any } };
}

async function deliveries(tenant: Tenant, endpointId: string) {
  const res = await t.request({ method: 'GET', url: `/v1/webhooks/${endpointId}/deliveries`, token: tenant.token });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as any[];
}

describe('webhook endpoints', () => {
  it('creates, lists, reads, changes and deletes endpoints; the secret is shown only on create and rotate', async () => {
    const tenant = await t.tenant();
    const created = await register(tenant, 'https://hooks.example.com/lms', ['enrolment.completed', 'certificate.issued']);
    expect(created).toMatchObject({ object: 'webhook_endpoint', status: 'enabled', disabled_reason: null, events: ['enrolment.completed', 'certificate.issued'] });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(created.secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);

    const got = await t.request({ method: 'GET', url: `/v1/webhooks/${created.id}`, token: tenant.token });
    expect(got.statusCode).toBe(200);
    expect(got.json().secret).toBeUndefined();
    const list = await t.request({ method: 'GET', url: '/v1/webhooks', token: tenant.token });
    expect(list.json().data.map((e: any) => e.id)).toEqual([created.id]);
    expect(list.json().data[0].secret).toBeUndefined();

    const patched = await t.request({
      method: 'PATCH',
      url: `/v1/webhooks/${created.id}`,
      token: tenant.token,
      payload: { events: ['*'], description: 'all of it', status: 'disabled' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ events: ['*'], description: 'all of it', status: 'disabled', disabled_reason: 'disabled through the API' });
    const enabled = await t.request({ method: 'PATCH', url: `/v1/webhooks/${created.id}`, token: tenant.token, payload: { status: 'enabled' } });
    expect(enabled.json()).toMatchObject({ status: 'enabled', disabled_reason: null });

    const rotated = await t.request({ method: 'POST', url: `/v1/webhooks/${created.id}/rotate-secret`, token: tenant.token });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).toMatch(/^whsec_/);
    expect(rotated.json().secret).not.toBe(created.secret);

    const bad = await t.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url: 'https://x.example.com', events: ['nope'] } });
    expect(problemOf(bad).code).toBe('validation_failed');
    const extra = await t.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url: 'https://x.example.com', events: ['*'], secret: 'mine' } });
    expect(extra.statusCode).toBe(400);

    const del = await t.request({ method: 'DELETE', url: `/v1/webhooks/${created.id}`, token: tenant.token });
    expect(del.statusCode).toBe(204);
    const gone = await t.request({ method: 'GET', url: `/v1/webhooks/${created.id}`, token: tenant.token });
    expect(problemOf(gone).code).toBe('not_found');
  });

  it('honours Idempotency-Key on create, If-None-Match on read and If-Match on change and delete', async () => {
    const tenant = await t.tenant();
    const send = () =>
      t.request({
        method: 'POST',
        url: '/v1/webhooks',
        token: tenant.token,
        headers: { 'idempotency-key': 'create-hook-1' },
        payload: { url: 'https://hooks.example.com/idem', events: ['*'] },
      });
    const first = await send();
    const again = await send();
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    const list = await t.request({ method: 'GET', url: '/v1/webhooks', token: tenant.token });
    expect(list.json().data).toHaveLength(1);

    const id = first.json().id;
    const got = await t.request({ method: 'GET', url: `/v1/webhooks/${id}`, token: tenant.token });
    const etag = got.headers.etag as string;
    expect(etag).toMatch(/^"/);
    const notModified = await t.request({ method: 'GET', url: `/v1/webhooks/${id}`, token: tenant.token, headers: { 'if-none-match': etag } });
    expect(notModified.statusCode).toBe(304);
    const changed = await t.request({ method: 'PATCH', url: `/v1/webhooks/${id}`, token: tenant.token, headers: { 'if-match': etag }, payload: { description: 'v2' } });
    expect(changed.statusCode).toBe(200);
    const stale = await t.request({ method: 'PATCH', url: `/v1/webhooks/${id}`, token: tenant.token, headers: { 'if-match': etag }, payload: { description: 'v3' } });
    expect(problemOf(stale).code).toBe('precondition_failed');
    const staleDelete = await t.request({ method: 'DELETE', url: `/v1/webhooks/${id}`, token: tenant.token, headers: { 'if-match': etag } });
    expect(problemOf(staleDelete).code).toBe('precondition_failed');
    const del = await t.request({ method: 'DELETE', url: `/v1/webhooks/${id}`, token: tenant.token, headers: { 'if-match': changed.headers.etag as string } });
    expect(del.statusCode).toBe(204);
  });

  it('keeps organizations apart and checks scopes', async () => {
    const a = await t.tenant();
    const b = await t.tenant();
    const endpoint = await register(a, 'https://hooks.example.com/a', ['*']);
    for (const [method, url] of [
      ['GET', `/v1/webhooks/${endpoint.id}`],
      ['PATCH', `/v1/webhooks/${endpoint.id}`],
      ['DELETE', `/v1/webhooks/${endpoint.id}`],
      ['POST', `/v1/webhooks/${endpoint.id}/rotate-secret`],
      ['POST', `/v1/webhooks/${endpoint.id}/test`],
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries`],
    ] as const) {
      const res = await t.request({ method, url, token: b.token, ...(method === 'PATCH' ? { payload: { description: 'x' } } : {}) });
      expect(problemOf(res).code, `${method} ${url}`).toBe('not_found');
    }
    expect((await t.request({ method: 'GET', url: '/v1/webhooks', token: b.token })).json().data).toEqual([]);

    const readOnly = await a.tokenWith(['webhooks:read']);
    expect((await t.request({ method: 'GET', url: '/v1/webhooks', token: readOnly })).statusCode).toBe(200);
    const denied = await t.request({ method: 'POST', url: '/v1/webhooks', token: readOnly, payload: { url: 'https://x.example.com', events: ['*'] } });
    expect(problemOf(denied).code).toBe('insufficient_scope');
    const noEvents = await t.request({ method: 'GET', url: '/v1/events', token: readOnly });
    expect(problemOf(noEvents).code).toBe('insufficient_scope');
    expect(problemOf(await t.request({ method: 'GET', url: '/v1/webhooks' })).code).toBe('invalid_token');
  });
});

describe('delivery', () => {
  it('delivers seats.updated and webhook.test, signed so that standardwebhooks verifies them; webhook.test goes to the tested endpoint only', async () => {
    const tenant = await t.tenant({ seats: 5 });
    const r1 = await receiver();
    const r2 = await receiver();
    const e1 = await register(tenant, r1.url, ['seats.updated']);
    const e2 = await register(tenant, r2.url, ['*']);
    worker = startWorker(t.ctx, { pollMs: 20 });

    const seats = await setSeatTotal(t.ctx, tenant.orgId, 7);
    const test = await t.request({ method: 'POST', url: `/v1/webhooks/${e1.id}/test`, token: tenant.token });
    expect(test.statusCode, test.body).toBe(202);
    expect(test.json()).toMatchObject({ object: 'webhook_delivery', endpoint_id: e1.id, event_type: 'webhook.test', status: 'pending' });

    await waitFor(() => r1.received.length >= 2 && r2.received.length >= 1, 10_000, 'deliveries');
    const [first, second] = r1.received.map((r) => verify(e1.secret, r));
    expect(first).toMatchObject({ type: 'seats.updated', object: 'event', data: { object: seats } });
    expect(second).toMatchObject({ type: 'webhook.test', data: { object: { id: e1.id, object: 'webhook_endpoint' } } });
    expect(r1.received[0].headers['webhook-id']).toBe(first.id);
    expect(r1.received[0].headers['content-type']).toBe('application/json');
    // The * endpoint got seats.updated but not the other endpoint's test event.
    await new Promise((r) => setTimeout(r, 200));
    expect(r2.received.map((r) => verify(e2.secret, r).type)).toEqual(['seats.updated']);
    // A signature made with another endpoint's secret does not verify.
    expect(() => verify(e2.secret, r1.received[0])).toThrow();

    // The event as delivered is the event the log shows.
    const logged = await t.request({ method: 'GET', url: `/v1/events/${first.id}`, token: tenant.token });
    expect(logged.json()).toEqual(first);
    const list = await deliveries(tenant, e1.id);
    await waitFor(async () => (await deliveries(tenant, e1.id)).every((d) => d.status === 'succeeded'), 5_000, 'succeeded status');
    expect(list).toHaveLength(2);
  });

  it('end to end: completing an enrolment delivers enrolment.completed and certificate.issued, both verified by standardwebhooks', async () => {
    const tenant = await t.tenant({ seats: 3 });
    const r = await receiver();
    const endpoint = await register(tenant, r.url, ['enrolment.completed', 'certificate.issued']);
    worker = startWorker(t.ctx, { pollMs: 20 });
    await importCatalogue(t.ctx, {
      categories: [{ key: 'e2e', name: 'Webhook end to end' }],
      courses: [{ title: 'Webhook end to end', category: 'e2e', language: 'en', duration_minutes: 30, certificate: { enabled: true, validity_months: 12 } }],
    });
    const courses = (await t.request({ method: 'GET', url: '/v1/courses?limit=100', token: tenant.token })).json().data as any[];
    const course = courses.find((c) => c.title === 'Webhook end to end');
    expect(course.certificate.enabled).toBe(true);
    const learner = await t.request({
      method: 'POST',
      url: '/v1/learners',
      token: tenant.token,
      payload: { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
    });
    expect(learner.statusCode, learner.body).toBe(201);
    const enrolment = await t.request({
      method: 'POST',
      url: '/v1/enrolments',
      token: tenant.token,
      payload: { learner_id: learner.json().id, course_id: course.id },
    });
    expect(enrolment.statusCode, enrolment.body).toBe(201);
    const completed = await t.request({
      method: 'POST',
      url: `/v1/enrolments/${enrolment.json().id}/complete`,
      token: tenant.token,
      payload: { score: 93 },
    });
    expect(completed.statusCode, completed.body).toBe(200);

    await waitFor(() => r.received.length >= 2, 10_000, 'both events');
    const events = r.received.map((got) => verify(endpoint.secret, got));
    expect(events.map((e) => e.type).sort()).toEqual(['certificate.issued', 'enrolment.completed']);
    const enrolmentEvent = events.find((e) => e.type === 'enrolment.completed')!;
    const certificateEvent = events.find((e) => e.type === 'certificate.issued')!;
    // data.object is the resource exactly as the API shows it.
    const current = await t.request({ method: 'GET', url: `/v1/enrolments/${enrolment.json().id}`, token: tenant.token });
    expect(enrolmentEvent.data.object).toEqual(current.json());
    expect(enrolmentEvent.data.object).toMatchObject({ status: 'completed', score: 93 });
    expect(certificateEvent.data.object).toMatchObject({ id: current.json().certificate_id, enrolment_id: enrolment.json().id, status: 'valid' });
    const certificate = await t.request({ method: 'GET', url: `/v1/certificates/${current.json().certificate_id}`, token: tenant.token });
    expect(certificateEvent.data.object).toEqual(certificate.json());
    // Nothing else was sent: the endpoint is not subscribed to learner.created or enrolment.created.
    await new Promise((res) => setTimeout(res, 200));
    expect(r.received).toHaveLength(2);
  });

  it('writes no event and no delivery when the change rolls back', async () => {
    const tenant = await t.tenant();
    const r = await receiver();
    await register(tenant, r.url, ['*']);
    await expect(
      t.ctx.db.kysely.transaction().execute(async (trx) => {
        await recordEvent(trx, t.ctx.clock, { orgId: tenant.orgId, type: 'seats.updated', object: { rolled: 'back' } });
        throw new Error('the change fails');
      }),
    ).rejects.toThrow('the change fails');
    const counts = await t.ctx.db.kysely
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', tenant.orgId)
      .executeTakeFirstOrThrow();
    expect(Number(counts.n)).toBe(0);
    const events = await t.request({ method: 'GET', url: '/v1/events?type=seats.updated', token: tenant.token });
    expect(events.json().data).toEqual([]);
  });

  it('sends catalogue events (organization null) to every organization', async () => {
    const a = await t.tenant();
    const b = await t.tenant();
    const ra = await receiver();
    const rb = await receiver();
    await register(a, ra.url, ['course.published']);
    await register(b, rb.url, ['*']);
    worker = startWorker(t.ctx, { pollMs: 20 });
    await t.loadCatalogue();
    await waitFor(() => ra.received.length === 24 && rb.received.length === 24, 15_000, 'catalogue events');
    expect(new Set(ra.ids())).toEqual(new Set(rb.ids()));
    const events = await t.request({ method: 'GET', url: '/v1/events?type=course.published&limit=100', token: b.token });
    expect(events.json().data.map((e: any) => e.id)).toEqual(expect.arrayContaining([...new Set(ra.ids())]));
  });

  it('retries 500, 500, then 200 with the same webhook-id; the deliveries list shows three attempts', async () => {
    const tenant = await t.tenant();
    const r = await receiver((n) => (n < 2 ? { status: 500, body: `boom ${n}` } : { status: 200, body: 'ok' }));
    const endpoint = await register(tenant, r.url, ['seats.updated']);
    const counted = async (outcome: string) => (await webhookAttempts.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
    const [successBefore, failureBefore] = [await counted('success'), await counted('failure')];
    worker = startWorker(t.ctx, { pollMs: 20 });
    await setSeatTotal(t.ctx, tenant.orgId, 3);
    await waitFor(() => r.received.length === 3, 10_000, 'three attempts');
    expect(new Set(r.ids()).size).toBe(1);
    for (const got of r.received) verify(endpoint.secret, got);
    // The schedule (100ms, 200ms) spaces the attempts.
    expect(r.received[1].at - r.received[0].at).toBeGreaterThanOrEqual(90);
    expect(r.received[2].at - r.received[1].at).toBeGreaterThanOrEqual(190);
    const [delivery] = await waitFor(async () => {
      const list = await deliveries(tenant, endpoint.id);
      return list[0]?.status === 'succeeded' ? list : null;
    });
    expect(delivery).toMatchObject({ event_id: r.ids()[0], attempt_count: 3, last_status_code: 200, next_attempt_at: null });
    expect(delivery.attempts.map((a: any) => [a.status_code, a.response_excerpt, a.error])).toEqual([
      [500, 'boom 0', null],
      [500, 'boom 1', null],
      [200, 'ok', null],
    ]);
    for (const a of delivery.attempts) expect(a.duration_ms).toBeGreaterThanOrEqual(0);
    // The attempts are counted for /metrics too.
    expect([(await counted('success')) - successBefore, (await counted('failure')) - failureBefore]).toEqual([1, 2]);
    await new Promise((res) => setTimeout(res, 300));
    expect(r.received).toHaveLength(3);
  });

  it('sends first attempts in event order, and a retried event does not hold back later ones', async () => {
    const tenant = await t.tenant();
    // The first request fails: its retry (100ms later) must not delay the events created after it.
    const r = await receiver((n) => (n === 0 ? { status: 500 } : { status: 204 }));
    await register(tenant, r.url, ['seats.updated']);
    for (let total = 1; total <= 10; total++) await setSeatTotal(t.ctx, tenant.orgId, total);
    const events = (await t.request({ method: 'GET', url: '/v1/events?type=seats.updated', token: tenant.token })).json().data as any[];
    worker = startWorker(t.ctx, { pollMs: 20, concurrency: 1 });
    await waitFor(() => r.received.length === 11, 10_000, 'ten events and one retry');
    const order = r.received.map((got) => JSON.parse(got.body).data.object.total);
    expect(order).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1]);
    expect(r.ids().slice(0, 10)).toEqual(events.map((e) => e.id));
  });

  it('marks a delivery failed after the schedule, and a manual retry sends it once more', async () => {
    const tenant = await t.tenant();
    let answer = 503;
    const r = await receiver(() => ({ status: answer }));
    const endpoint = await register(tenant, r.url, ['seats.updated']);
    worker = startWorker(t.ctx, { pollMs: 20 });
    await setSeatTotal(t.ctx, tenant.orgId, 4);
    // 1 + 3 retries (100ms, 200ms, 300ms), then failed.
    const [failed] = await waitFor(async () => {
      const list = await deliveries(tenant, endpoint.id);
      return list[0]?.status === 'failed' ? list : null;
    });
    expect(failed.attempt_count).toBe(4);
    expect(r.received).toHaveLength(4);
    answer = 200;
    const retry = await t.request({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/deliveries/${failed.id}/retry`, token: tenant.token });
    expect(retry.statusCode, retry.body).toBe(202);
    expect(retry.json().status).toBe('pending');
    await waitFor(async () => (await deliveries(tenant, endpoint.id))[0].status === 'succeeded', 5_000, 'retried delivery');
    expect(r.received).toHaveLength(5);
    const unknown = await t.request({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/deliveries/dlv_nope/retry`, token: tenant.token });
    expect(problemOf(unknown).code).toBe('not_found');
  });

  it('disables the endpoint at once on 410 Gone', async () => {
    const tenant = await t.tenant();
    const r = await receiver(() => ({ status: 410 }));
    const endpoint = await register(tenant, r.url, ['*']);
    worker = startWorker(t.ctx, { pollMs: 20 });
    await setSeatTotal(t.ctx, tenant.orgId, 5);
    const disabled = await waitFor(async () => {
      const res = await t.request({ method: 'GET', url: `/v1/webhooks/${endpoint.id}`, token: tenant.token });
      return res.json().status === 'disabled' ? res.json() : null;
    });
    expect(disabled.disabled_reason).toMatch(/410/);
    const [delivery] = await deliveries(tenant, endpoint.id);
    expect(delivery).toMatchObject({ status: 'failed', attempt_count: 1, last_status_code: 410 });
    // A disabled endpoint gets no new deliveries.
    await setSeatTotal(t.ctx, tenant.orgId, 6);
    await new Promise((res) => setTimeout(res, 200));
    expect(r.received).toHaveLength(1);
    expect(await deliveries(tenant, endpoint.id)).toHaveLength(1);
  });

  it("honours the receiver's Retry-After", async () => {
    const tenant = await t.tenant();
    const r = await receiver((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    await register(tenant, r.url, ['seats.updated']);
    worker = startWorker(t.ctx, { pollMs: 20 });
    await setSeatTotal(t.ctx, tenant.orgId, 2);
    await waitFor(() => r.received.length === 2, 10_000, 'second attempt');
    // The schedule says 100ms; the receiver asked for 1 s.
    expect(r.received[1].at - r.received[0].at).toBeGreaterThanOrEqual(950);
  });

  it('signs with the new and the old secret for 24 hours after a rotation', async () => {
    const tenant = await t.tenant();
    const r = await receiver();
    const endpoint = await register(tenant, r.url, ['seats.updated']);
    const rotated = await t.request({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/rotate-secret`, token: tenant.token });
    const newSecret = rotated.json().secret as string;
    worker = startWorker(t.ctx, { pollMs: 20 });
    await setSeatTotal(t.ctx, tenant.orgId, 8);
    await waitFor(() => r.received.length === 1);
    expect(String(r.received[0].headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(newSecret, r.received[0]).type).toBe('seats.updated');
    expect(verify(endpoint.secret, r.received[0]).type).toBe('seats.updated');
  });

  it('records a timeout as an attempt with an error, and reads only a capped excerpt of a large body', async () => {
    const tenant = await t.tenant();
    const big = 'x'.repeat(200_000);
    const r = await receiver((n) => (n === 0 ? { status: 200, delayMs: 2_500 } : { status: 500, body: big }));
    const endpoint = await register(tenant, r.url, ['seats.updated']);
    worker = startWorker(t.ctx, { pollMs: 20 });
    await setSeatTotal(t.ctx, tenant.orgId, 9);
    const [delivery] = await waitFor(async () => {
      const list = await deliveries(tenant, endpoint.id);
      return list[0]?.attempts.length >= 2 ? list : null;
    }, 15_000);
    expect(delivery.attempts[0]).toMatchObject({ status_code: null, error: expect.stringMatching(/timed out after 2000 ms/) });
    expect(delivery.attempts[1].status_code).toBe(500);
    expect(delivery.attempts[1].response_excerpt.length).toBeLessThanOrEqual(1024);
  });

  it('disables an endpoint whose deliveries have all failed for the configured time', async () => {
    const clock = new ManualClock(new Date());
    const app = await createTestApp({ clock, env: { WEBHOOK_RETRY_SCHEDULE: '1d,1d,1d,1d,1d,1d,1d', WEBHOOK_DISABLE_AFTER: '5d' } });
    try {
      const tenant = await app.tenant();
      const r = await startReceiver(() => ({ status: 500 }));
      receivers.push(r);
      const res = await app.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url: r.url, events: ['*'] } });
      const endpoint = res.json();
      worker = startWorker(app.ctx, { pollMs: 20 });
      await setSeatTotal(app.ctx, tenant.orgId, 3);
      // Tokens expire as the clock moves by days, so the endpoint is read from the database here.
      const endpointRow = () => app.ctx.db.kysely.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
      const attemptCount = async () =>
        (await app.ctx.db.kysely.selectFrom('webhook_deliveries').select('attempts').where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow()).attempts;
      for (let day = 0; day <= 5; day++) {
        // Wait until the worker has recorded this day's attempt before time moves on.
        await waitFor(async () => (await attemptCount()) === day + 1, 5_000, `attempt on day ${day}`);
        if (day < 5) expect((await endpointRow()).status).toBe('enabled');
        clock.advance(86_400_000);
      }
      const got = await waitFor(async () => {
        const e = await endpointRow();
        return e.status === 'disabled' ? e : null;
      });
      expect(r.received).toHaveLength(6);
      expect(got.disabled_reason).toMatch(/failed since/);
    } finally {
      await worker?.stop();
      worker = null;
      await app.close();
    }
  });
});

describe('event log', () => {
  it('lists the organization’s events and catalogue events, filters by type, and lets a receiver that was down catch up with created_since', async () => {
    const clock = new ManualClock(new Date('2026-11-01T10:00:00.000Z'));
    const app = await createTestApp({ clock });
    try {
      const a = await app.tenant();
      const b = await app.tenant();
      await setSeatTotal(app.ctx, a.orgId, 1);
      clock.advance(60_000);
      // The receiver was down from here on: these are the events it missed.
      const downSince = clock.now().toISOString();
      await setSeatTotal(app.ctx, a.orgId, 2);
      await setSeatTotal(app.ctx, b.orgId, 20);
      clock.advance(1_000);
      await setSeatTotal(app.ctx, a.orgId, 3);

      const all = await app.request({ method: 'GET', url: '/v1/events', token: a.token });
      expect(all.statusCode).toBe(200);
      expect(all.json().data.map((e: any) => e.data.object.total)).toEqual([1, 2, 3]);

      const missed: any[] = [];
      let url = `/v1/events?created_since=${encodeURIComponent(downSince)}&limit=1`;
      for (;;) {
        const page = await app.request({ method: 'GET', url, token: a.token });
        expect(page.statusCode, page.body).toBe(200);
        missed.push(...page.json().data);
        if (!page.json().next_cursor) break;
        expect(page.headers.link).toMatch(/rel="next"/);
        url = `/v1/events?created_since=${encodeURIComponent(downSince)}&limit=1&cursor=${page.json().next_cursor}`;
      }
      expect(missed.map((e) => [e.type, e.data.object.total])).toEqual([
        ['seats.updated', 2],
        ['seats.updated', 3],
      ]);
      expect(missed.every((e) => e.created_at >= downSince)).toBe(true);

      await app.loadCatalogue();
      const courses = await app.request({ method: 'GET', url: '/v1/events?type=course.published&limit=100', token: b.token });
      expect(courses.json().data).toHaveLength(24); // the demo catalogue publishes 24 of its 26 courses
      const catalogueEvent = courses.json().data[0];
      expect((await app.request({ method: 'GET', url: `/v1/events/${catalogueEvent.id}`, token: a.token })).statusCode).toBe(200);
      // Another organization's event is not found.
      const bEvent = (await app.request({ method: 'GET', url: '/v1/events?type=seats.updated', token: b.token })).json().data[0];
      expect(problemOf(await app.request({ method: 'GET', url: `/v1/events/${bEvent.id}`, token: a.token })).code).toBe('not_found');
      expect(problemOf(await app.request({ method: 'GET', url: '/v1/events?created_since=yesterday', token: a.token })).status).toBe(400);
    } finally {
      await app.close();
    }
  });
});
