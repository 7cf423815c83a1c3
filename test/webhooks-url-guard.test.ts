// The webhook URL guard: every forbidden address form is refused at registration with 422 invalid_webhook_url,
// and a name that resolves to loopback only at delivery time (DNS rebinding) is refused at connect time, so no
// request reaches the loopback listener. Name resolution is injected (ctx.resolveAll): tests never use real DNS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LookupAddress } from 'node:dns';
import { createTestApp, problemOf, type TestApp, type Tenant } from './helpers.js';
import { startReceiver, waitFor, type Receiver } from './webhook-receiver.js';
import { systemClock } from '../src/clock.js';
import { setSeatTotal } from '../src/modules/organization/service.js';
import { startWorker } from '../src/webhooks/worker.js';
import { forbiddenAddressReason } from '../src/webhooks/url-guard.js';
import { newWebhookSecret } from '../src/webhooks/signing.js';
import { newId } from '../src/ids.js';

const PUBLIC_V4 = '93.184.215.14';
const DNS: Record<string, LookupAddress[]> = {
  'hooks.example.com': [{ address: PUBLIC_V4, family: 4 }],
  'internal.example.com': [{ address: '10.0.0.5', family: 4 }],
  'metadata.example.com': [{ address: '169.254.169.254', family: 4 }],
  'mixed.example.com': [
    { address: PUBLIC_V4, family: 4 },
    { address: '127.0.0.1', family: 4 },
  ],
  'v6loop.example.com': [{ address: '::1', family: 6 }],
  'mapped.example.com': [{ address: '::ffff:127.0.0.1', family: 6 }],
};
let rebound = false;
async function resolveAll(host: string): Promise<LookupAddress[]> {
  if (host === 'rebind.example.com') return [{ address: rebound ? '127.0.0.1' : PUBLIC_V4, family: 4 }];
  const found = DNS[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
}

const REFUSED = [
  // scheme, credentials, names
  'http://hooks.example.com/hook',
  'ftp://hooks.example.com/hook',
  'https://user:pass@hooks.example.com/hook',
  'https://localhost/hook',
  'https://LOCALHOST./hook',
  'https://api.localhost/hook',
  'https://intranet/hook',
  'not a url',
  // IPv4 loopback in every spelling the URL parser accepts
  'https://127.0.0.1/hook',
  'https://127.0.0.2:8443/hook',
  'https://2130706433/hook',
  'https://127.1/hook',
  'https://0x7f.1/hook',
  'https://0x7f000001/hook',
  'https://0177.0.0.1/hook',
  'https://017700000001/hook',
  'https://127.000.000.001/hook',
  // unspecified, private, link-local, CGNAT, multicast, reserved, documentation, benchmarking
  'https://0.0.0.0/hook',
  'https://0/hook',
  'https://10.1.2.3/hook',
  'https://172.16.5.4/hook',
  'https://172.31.255.255/hook',
  'https://192.168.1.1/hook',
  'https://169.254.169.254/latest/meta-data',
  'https://100.64.0.1/hook',
  'https://224.0.0.1/hook',
  'https://239.255.255.250/hook',
  'https://240.0.0.1/hook',
  'https://255.255.255.255/hook',
  'https://192.0.0.8/hook',
  'https://192.0.2.1/hook',
  'https://198.51.100.7/hook',
  'https://203.0.113.9/hook',
  'https://198.18.0.1/hook',
  // IPv6: loopback, unspecified, IPv4-mapped (both spellings), IPv4-compatible, NAT64, 6to4, Teredo, ULA, link-local,
  // site-local, multicast, documentation
  'https://[::1]/hook',
  'https://[0:0:0:0:0:0:0:1]/hook',
  'https://[::]/hook',
  'https://[::ffff:127.0.0.1]/hook',
  'https://[::ffff:7f00:1]/hook',
  'https://[0:0:0:0:0:ffff:a00:1]/hook',
  'https://[::127.0.0.1]/hook',
  'https://[64:ff9b::7f00:1]/hook',
  'https://[64:ff9b:1::a00:1]/hook',
  'https://[2002:7f00:1::1]/hook',
  'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook',
  'https://[fc00::1]/hook',
  'https://[fd12:3456:789a::1]/hook',
  'https://[fe80::1]/hook',
  'https://[fec0::1]/hook',
  'https://[ff02::1]/hook',
  'https://[2001:db8::1]/hook',
  // names that resolve to forbidden addresses (or not at all)
  'https://internal.example.com/hook',
  'https://metadata.example.com/hook',
  'https://mixed.example.com/hook',
  'https://v6loop.example.com/hook',
  'https://mapped.example.com/hook',
  'https://nowhere.example.com/hook',
];

let strict: TestApp;
let httpAllowed: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  const env = { WEBHOOK_ALLOW_HTTP: 'false', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' };
  strict = await createTestApp({ clock: systemClock, env });
  strict.ctx.resolveAll = resolveAll;
  tenant = await strict.tenant();
  httpAllowed = await createTestApp({ clock: systemClock, env: { ...env, WEBHOOK_ALLOW_HTTP: 'true' } });
  httpAllowed.ctx.resolveAll = resolveAll;
}, 120_000); // two apps: slow on a busy machine
afterAll(async () => {
  await strict.close();
  await httpAllowed.close();
});

describe('registration', () => {
  it.each(REFUSED)('refuses %s with 422 invalid_webhook_url', async (url) => {
    const res = await strict.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url, events: ['*'] } });
    const problem = problemOf(res);
    expect(problem.code).toBe('invalid_webhook_url');
    expect(res.statusCode).toBe(422);
    expect(problem.errors?.[0].pointer).toBe('/url');
  });

  it('accepts public https targets, and refuses a forbidden URL on PATCH too', async () => {
    for (const url of ['https://hooks.example.com/hook', `https://${PUBLIC_V4}/hook`, 'https://[2606:4700:4700::1111]/hook']) {
      const res = await strict.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url, events: ['*'] } });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
    }
    const created = (await strict.request({ method: 'POST', url: '/v1/webhooks', token: tenant.token, payload: { url: 'https://hooks.example.com/x', events: ['*'] } })).json();
    const patched = await strict.request({ method: 'PATCH', url: `/v1/webhooks/${created.id}`, token: tenant.token, payload: { url: 'https://127.1/' } });
    expect(problemOf(patched).code).toBe('invalid_webhook_url');
    // Only when the operator allows it is http:// accepted (still not to private addresses).
    const other = await httpAllowed.tenant();
    const http = await httpAllowed.request({ method: 'POST', url: '/v1/webhooks', token: other.token, payload: { url: 'http://hooks.example.com/h', events: ['*'] } });
    expect(http.statusCode).toBe(201);
    const httpLoop = await httpAllowed.request({ method: 'POST', url: '/v1/webhooks', token: other.token, payload: { url: 'http://127.0.0.1:8080/h', events: ['*'] } });
    expect(problemOf(httpLoop).code).toBe('invalid_webhook_url');
  });

  it('classifies addresses by range', () => {
    expect(forbiddenAddressReason('8.8.8.8')).toBeNull();
    expect(forbiddenAddressReason('2606:4700:4700::1111')).toBeNull();
    expect(forbiddenAddressReason('127.0.0.1')).toMatch(/loopback/);
    expect(forbiddenAddressReason('100.100.1.1')).toMatch(/carrier-grade NAT/);
    expect(forbiddenAddressReason('::ffff:8.8.8.8')).toMatch(/IPv4-mapped/);
    expect(forbiddenAddressReason('64:ff9b::808:808')).toMatch(/NAT64/);
  });
});

describe('connect time', () => {
  let listener: Receiver;
  beforeAll(async () => {
    listener = await startReceiver();
  });
  afterAll(async () => {
    await listener.close();
  });

  it('refuses a name that resolves to loopback only at delivery time (DNS rebinding): no request reaches the listener', async () => {
    const org = await httpAllowed.tenant();
    rebound = false;
    const url = `http://rebind.example.com:${listener.port}/hook`;
    const res = await httpAllowed.request({ method: 'POST', url: '/v1/webhooks', token: org.token, payload: { url, events: ['seats.updated'] } });
    expect(res.statusCode, res.body).toBe(201);
    const endpoint = res.json();
    rebound = true; // the name now points at 127.0.0.1, where the listener is
    const worker = startWorker(httpAllowed.ctx, { pollMs: 20 });
    try {
      await setSeatTotal(httpAllowed.ctx, org.orgId, 4);
      const delivery = await waitFor(async () => {
        const list = await httpAllowed.request({ method: 'GET', url: `/v1/webhooks/${endpoint.id}/deliveries`, token: org.token });
        const d = list.json().data[0];
        return d?.status === 'failed' ? d : null;
      }, 10_000, 'the delivery to fail');
      expect(delivery.attempts).toHaveLength(4); // first attempt + the 3 retries of the test schedule
      for (const attempt of delivery.attempts) {
        expect(attempt.status_code).toBeNull();
        expect(attempt.error).toMatch(/refused to connect: "rebind\.example\.com" resolves to 127\.0\.0\.1 is a loopback address/);
      }
      expect(listener.received).toHaveLength(0);
    } finally {
      await worker.stop();
    }
  });

  it('refuses a literal private address at delivery time too (literals never reach the lookup hook)', async () => {
    // An endpoint stored before the operator turned WEBHOOK_ALLOW_PRIVATE_NETWORKS off.
    const org = await httpAllowed.tenant();
    const now = new Date().toISOString();
    const id = newId('webhook');
    await httpAllowed.ctx.db.kysely
      .insertInto('webhook_endpoints')
      .values({
        id,
        org_id: org.orgId,
        url: listener.url,
        events: '["*"]',
        description: null,
        status: 'enabled',
        disabled_reason: null,
        secret: newWebhookSecret(),
        previous_secret: null,
        previous_secret_expires_at: null,
        failing_since: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const worker = startWorker(httpAllowed.ctx, { pollMs: 20 });
    try {
      await setSeatTotal(httpAllowed.ctx, org.orgId, 5);
      const delivery = await waitFor(async () => {
        const d = (await httpAllowed.request({ method: 'GET', url: `/v1/webhooks/${id}/deliveries`, token: org.token })).json().data[0];
        return d?.attempts.length ? d : null;
      });
      expect(delivery.attempts[0].error).toMatch(/refused target: .*127\.0\.0\.1 is a loopback address/);
      expect(listener.received).toHaveLength(0);
    } finally {
      await worker.stop();
    }
  });
});
