// Acceptance 4: GET /metrics is Prometheus text (checked by a strict parser) and its counters and gauges move with
// traffic: requests by route pattern and status, latency histogram, tokens issued/refused, deliveries waiting and
// the oldest one's age, database pool use.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type Tenant } from './helpers.js';
import { eventWithDelivery, parsePrometheus, type Exposition } from './ops-helpers.js';
import { ManualClock } from '../src/clock.js';
import { webhookAttempts } from '../src/metrics.js';

let t: TestApp;
let tenant: Tenant;
const clock = new ManualClock(new Date('2026-11-22T10:00:00.000Z'));

beforeAll(async () => {
  t = await createTestApp({ clock });
  await t.loadCatalogue();
  tenant = await t.tenant({ scopes: ['courses:read'] });
});
afterAll(() => t.close());

async function scrape(): Promise<Exposition> {
  const res = await t.request({ method: 'GET', url: '/metrics' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(res.body);
}

describe('GET /metrics', () => {
  it('parses strictly as Prometheus text and declares every metric of §6', async () => {
    const m = await scrape();
    expect(m.types.get('lmsapi_http_requests_total')).toBe('counter');
    expect(m.types.get('lmsapi_http_request_duration_seconds')).toBe('histogram');
    expect(m.types.get('lmsapi_tokens_issued_total')).toBe('counter');
    expect(m.types.get('lmsapi_tokens_refused_total')).toBe('counter');
    expect(m.types.get('lmsapi_webhook_attempts_total')).toBe('counter');
    expect(m.types.get('lmsapi_webhook_deliveries_waiting')).toBe('gauge');
    expect(m.types.get('lmsapi_webhook_oldest_waiting_seconds')).toBe('gauge');
    expect(m.types.get('lmsapi_db_pool_connections')).toBe('gauge');
    expect(m.value('lmsapi_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1);
    expect(m.value('lmsapi_process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('rejects malformed exposition text (the parser is strict)', () => {
    expect(() => parsePrometheus('a_total 1\n')).toThrow(/before its TYPE/);
    expect(() => parsePrometheus('# TYPE a counter\na{x="1} 1\n')).toThrow(/malformed/);
    expect(() => parsePrometheus('# TYPE a counter\na one\n')).toThrow(/bad value/);
    expect(() => parsePrometheus('# TYPE a counter\na 1\na 2\n')).toThrow(/repeated/);
    expect(() => parsePrometheus('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n')).toThrow(/cumulative/);
  });

  it('counts requests by route pattern and status, with latency, and tokens issued and refused', async () => {
    const before = await scrape();
    const courses = { method: 'GET', route: '/v1/courses', status: '200' };
    const course = { method: 'GET', route: '/v1/courses/:id', status: '404' };
    const refusedBefore = before.value('lmsapi_tokens_refused_total', { reason: 'invalid_client' }) ?? 0;

    const ok = await t.request({ method: 'POST', url: '/v1/oauth/token', payload: { client_id: tenant.credentials.client_id, client_secret: tenant.credentials.client_secret } });
    expect(ok.statusCode).toBe(200);
    const bad = await t.request({ method: 'POST', url: '/v1/oauth/token', payload: { client_id: tenant.credentials.client_id, client_secret: 'wrong' } });
    expect(bad.statusCode).toBe(401);
    for (let i = 0; i < 3; i++) expect((await t.request({ method: 'GET', url: '/v1/courses?limit=2', token: tenant.token })).statusCode).toBe(200);
    expect((await t.request({ method: 'GET', url: '/v1/courses/crs_01NOPE0000000000000000000', token: tenant.token })).statusCode).toBe(404);
    expect((await t.request({ method: 'GET', url: '/no/such/path' })).statusCode).toBe(404);

    const after = await scrape();
    expect((after.value('lmsapi_http_requests_total', courses) ?? 0) - (before.value('lmsapi_http_requests_total', courses) ?? 0)).toBe(3);
    expect((after.value('lmsapi_http_request_duration_seconds_count', courses) ?? 0) - (before.value('lmsapi_http_request_duration_seconds_count', courses) ?? 0)).toBe(3);
    expect(after.value('lmsapi_http_request_duration_seconds_sum', courses)).toBeGreaterThan(0);
    expect(after.value('lmsapi_http_requests_total', course)).toBe(1);
    // The raw URL never becomes a label: ids and unknown paths would make the label set unbounded.
    expect(after.samples.some((s) => Object.values(s.labels).some((v) => v.includes('crs_01NOPE') || v.includes('/no/such')))).toBe(false);
    expect(after.value('lmsapi_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect((after.value('lmsapi_tokens_issued_total') ?? 0) - (before.value('lmsapi_tokens_issued_total') ?? 0)).toBe(1);
    expect((after.value('lmsapi_tokens_refused_total', { reason: 'invalid_client' }) ?? 0) - refusedBefore).toBe(1);
  });

  it('reports deliveries waiting and the age of the oldest, read from the database at scrape time', async () => {
    const empty = await scrape();
    expect(empty.value('lmsapi_webhook_deliveries_waiting')).toBe(0);
    expect(empty.value('lmsapi_webhook_oldest_waiting_seconds')).toBe(0);
    expect(empty.value('lmsapi_webhook_due_lag_seconds')).toBe(0);
    await eventWithDelivery(t.ctx, tenant.orgId, { at: new Date(clock.now().getTime() - 90_000) });
    await eventWithDelivery(t.ctx, tenant.orgId, { at: new Date(clock.now().getTime() - 30_000) });
    await eventWithDelivery(t.ctx, tenant.orgId, { at: new Date(clock.now().getTime() - 900_000), status: 'succeeded' });
    const m = await scrape();
    expect(m.value('lmsapi_webhook_deliveries_waiting')).toBe(2);
    expect(m.value('lmsapi_webhook_oldest_waiting_seconds')).toBe(90);
    // Both are due since they were created (no worker runs here): the most overdue one is 90 s late.
    expect(m.value('lmsapi_webhook_due_lag_seconds')).toBe(90);
    clock.advance(10_000);
    const later = await scrape();
    expect(later.value('lmsapi_webhook_oldest_waiting_seconds')).toBe(100);
    expect(later.value('lmsapi_webhook_due_lag_seconds')).toBe(100);
  });

  it('exposes webhook attempts by outcome from the shared registry', async () => {
    const before = (await scrape()).value('lmsapi_webhook_attempts_total', { outcome: 'success' }) ?? 0;
    webhookAttempts.inc({ outcome: 'success' });
    expect((await scrape()).value('lmsapi_webhook_attempts_total', { outcome: 'success' })).toBe(before + 1);
  });

  it('is described in the OpenAPI document under Meta', async () => {
    const doc = (await t.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    expect(doc.paths['/metrics'].get.tags).toEqual(['Meta']);
    expect(Object.keys(doc.paths['/metrics'].get.responses['200'].content)).toEqual(['text/plain']);
  });
});
