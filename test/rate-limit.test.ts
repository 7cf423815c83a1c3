// Rate limits (§1) and the token endpoint's brute-force guard (§2), on the real app: in memory, in Redis shared by
// two app instances, and across two real API processes (`lmsapi serve`) sharing one Redis.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { createTestApp, freshDatabase, problemOf, testConfig, type TestApp } from './helpers.js';
import { ManualClock } from '../src/clock.js';
import { createContext } from '../src/context.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createApprovedApplication } from '../src/modules/applications/service.js';

const REDIS_URL = 'redis://127.0.0.1:6379';

function rateLimitOf(res: { headers: Record<string, unknown> }): { r: number; t: number } {
  const m = /^"default";r=(\d+);t=(\d+)$/.exec(String(res.headers['ratelimit']));
  if (!m) throw new Error(`no application RateLimit header: ${String(res.headers['ratelimit'])}`);
  return { r: Number(m[1]), t: Number(m[2]) };
}

describe('per-application rate limit (in memory)', () => {
  let t: TestApp;
  const clock = new ManualClock(new Date('2026-11-22T10:00:00.000Z'));
  beforeAll(async () => {
    t = await createTestApp({ clock, env: { RATE_LIMIT_PER_MINUTE: '30' } });
  });
  afterAll(() => t.close());

  it('counts down 29..0, answers the 31st request 429 with Retry-After, and opens again after the window', async () => {
    const tenant = await t.tenant();
    const seen: { r: number; t: number }[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await t.request({ method: 'GET', url: '/v1/seats', token: tenant.token });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"default";q=30;w=60');
      seen.push(rateLimitOf(res));
      if (i % 3 === 2) clock.advance(1000);
    }
    expect(seen.map((s) => s.r)).toEqual(Array.from({ length: 30 }, (_, i) => 29 - i));
    // t is the time left in the window: it starts at 60 and goes down as the (manual) clock moves on.
    expect(seen[0].t).toBe(60);
    expect(seen[29].t).toBe(51);
    for (let i = 1; i < 30; i++) expect(seen[i].t).toBeLessThanOrEqual(seen[i - 1].t);

    const over = await t.request({ method: 'GET', url: '/v1/seats', token: tenant.token });
    expect(over.statusCode).toBe(429);
    expect(problemOf(over).code).toBe('rate_limited');
    expect(over.headers['retry-after']).toBe('50');
    expect(rateLimitOf(over)).toEqual({ r: 0, t: 50 });

    clock.advance(50_000);
    const again = await t.request({ method: 'GET', url: '/v1/seats', token: tenant.token });
    expect(again.statusCode).toBe(200);
    expect(rateLimitOf(again)).toEqual({ r: 29, t: 60 });
  });

  it('is per application, not per address: two applications from one address each get their own budget', async () => {
    clock.advance(61_000);
    const tenant = await t.tenant();
    const other = await tenant.tokenWith(['seats:read']);
    for (let i = 0; i < 30; i++) expect((await t.request({ method: 'GET', url: '/v1/seats', token: tenant.token })).statusCode).toBe(200);
    expect((await t.request({ method: 'GET', url: '/v1/seats', token: tenant.token })).statusCode).toBe(429);
    const res = await t.request({ method: 'GET', url: '/v1/seats', token: other });
    expect(res.statusCode).toBe(200);
    expect(rateLimitOf(res).r).toBe(29);
  });

  it('puts the headers on every /v1 answer: errors, 401s, unknown paths and the token endpoint (address budget)', async () => {
    clock.advance(61_000);
    const tenant = await t.tenant();
    const notFound = await t.request({ method: 'GET', url: '/v1/courses/crs_nope', token: tenant.token });
    expect(notFound.statusCode).toBe(404);
    expect(notFound.headers['ratelimit-policy']).toBe('"default";q=30;w=60');
    // A valid token without the scope is refused during authentication, and still counts for its application.
    const narrow = await tenant.tokenWith(['seats:read']);
    const forbidden = await t.request({ method: 'GET', url: '/v1/organization', token: narrow });
    expect(forbidden.statusCode).toBe(403);
    expect(rateLimitOf(forbidden).r).toBe(29);
    expect(rateLimitOf(await t.request({ method: 'GET', url: '/v1/seats', token: narrow })).r).toBe(28);
    const unauthenticated = [
      await t.request({ method: 'GET', url: '/v1/seats' }),
      await t.request({ method: 'GET', url: '/v1/seats', token: 'not-a-token' }),
      await t.request({ method: 'GET', url: '/v1/no-such-thing', remoteAddress: '203.0.113.9' }),
      await t.request({ method: 'POST', url: '/v1/oauth/token', payload: { client_id: 'x', client_secret: 'y' } }),
    ];
    for (const res of unauthenticated) {
      expect(res.headers['ratelimit-policy']).toBe('"unauthenticated";q=600;w=60');
      expect(String(res.headers['ratelimit'])).toMatch(/^"unauthenticated";r=\d+;t=\d+$/);
    }
    expect((await t.request({ method: 'GET', url: '/healthz' })).headers['ratelimit']).toBeUndefined();
  });
});

describe('unauthenticated budget per address', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '5' } });
  });
  afterAll(() => t.close());

  it('limits calls without a valid token by client address', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await t.request({ method: 'GET', url: '/v1/openapi.json', remoteAddress: '198.51.100.1' })).statusCode).toBe(200);
    }
    const over = await t.request({ method: 'GET', url: '/v1/openapi.json', remoteAddress: '198.51.100.1' });
    expect(over.statusCode).toBe(429);
    expect(problemOf(over).code).toBe('rate_limited');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    const token = await t.request({ method: 'POST', url: '/v1/oauth/token', remoteAddress: '198.51.100.1', payload: {} });
    expect(token.statusCode).toBe(429);
    expect((await t.request({ method: 'GET', url: '/v1/openapi.json', remoteAddress: '198.51.100.2' })).statusCode).toBe(200);
  });
});

describe('token endpoint brute-force guard', () => {
  let t: TestApp;
  const clock = new ManualClock(new Date('2026-11-22T10:00:00.000Z'));
  beforeAll(async () => {
    t = await createTestApp({ clock });
  });
  afterAll(() => t.close());

  const tokenRequest = (client_id: string, client_secret: string, remoteAddress = '192.0.2.1') =>
    t.request({ method: 'POST', url: '/v1/oauth/token', remoteAddress, payload: { client_id, client_secret } });

  it('slows down a client id after 10 failures (even the right secret gets 429), and successes do not count', async () => {
    const tenant = await t.tenant();
    const { client_id, client_secret } = tenant.credentials;
    for (let i = 0; i < 20; i++) expect((await tokenRequest(client_id, client_secret)).statusCode).toBe(200);
    for (let i = 0; i < 10; i++) {
      const res = await tokenRequest(client_id, `wrong-${i}`, `192.0.2.${10 + i}`);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    }
    const blocked = await tokenRequest(client_id, client_secret, '192.0.2.99');
    expect(blocked.statusCode).toBe(429);
    expect(problemOf(blocked).code).toBe('rate_limited');
    expect(blocked.headers['retry-after']).toBe('600');
    clock.advance(300_000);
    expect((await tokenRequest(client_id, client_secret)).headers['retry-after']).toBe('300');
    clock.advance(300_001);
    expect((await tokenRequest(client_id, client_secret)).statusCode).toBe(200);
  });

  it('treats an unknown client id exactly like a known one with a wrong secret', async () => {
    const tenant = await t.tenant();
    const answers: { known: string[]; unknown: string[] } = { known: [], unknown: [] };
    for (let i = 0; i < 11; i++) {
      const known = await tokenRequest(tenant.credentials.client_id, 'wrong', `192.0.2.${100 + i}`);
      const unknown = await tokenRequest('app_01JUNKNOWNCLIENT0000000000', 'wrong', `192.0.2.${100 + i}`);
      answers.known.push(`${known.statusCode} ${known.headers['content-type']} ${known.body.replace(/req-\S+/, '')}`);
      answers.unknown.push(`${unknown.statusCode} ${unknown.headers['content-type']} ${unknown.body.replace(/req-\S+/, '')}`);
    }
    expect(answers.known.map((a) => a.split(' ')[0])).toEqual([...Array(10).fill('401'), '429']);
    expect(answers.unknown.map((a) => a.replace(/"request_id":"[^"]+"/, ''))).toEqual(
      answers.known.map((a) => a.replace(/"request_id":"[^"]+"/, '')),
    );
  });

  it('slows down one address that guesses many client ids, but not other addresses', async () => {
    clock.advance(601_000);
    for (let i = 0; i < 100; i++) expect((await tokenRequest(`app_guess_${i}`, 'x', '192.0.2.200')).statusCode).toBe(401);
    expect((await tokenRequest('app_guess_fresh', 'x', '192.0.2.200')).statusCode).toBe(429);
    const tenant = await t.tenant();
    expect((await tokenRequest(tenant.credentials.client_id, tenant.credentials.client_secret, '192.0.2.201')).statusCode).toBe(200);
  });
});

describe('counters in Redis', () => {
  const prefix = `lmsapi-test:${randomBytes(6).toString('hex')}:`;
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it('two app instances on one Redis share one budget per application', async () => {
    const env = { RATE_LIMIT_PER_MINUTE: '30', REDIS_URL, REDIS_KEY_PREFIX: prefix };
    const a = await createTestApp({ env });
    // The second instance serves the same database, like a second API process.
    const ctx = await createContext(testConfig(a.database, env), { schema: a.database.schema });
    const { buildApp } = await import('../src/app.js');
    const b = await buildApp(ctx);
    try {
      const tenant = await a.tenant();
      const rs: number[] = [];
      for (let i = 0; i < 30; i++) {
        const app = i % 2 === 0 ? a.app : b;
        const res = await app.inject({ method: 'GET', url: '/v1/seats', headers: { authorization: `Bearer ${tenant.token}` } });
        expect(res.statusCode).toBe(200);
        rs.push(rateLimitOf(res).r);
      }
      expect(rs).toEqual(Array.from({ length: 30 }, (_, i) => 29 - i));
      const over = await b.inject({ method: 'GET', url: '/v1/seats', headers: { authorization: `Bearer ${tenant.token}` } });
      expect(over.statusCode).toBe(429);
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(over.headers['retry-after'])).toBeLessThanOrEqual(60);
      const ttl = await redis.pttl(`${prefix}rl:app:${tenant.credentials.client_id}`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    } finally {
      await b.close();
      await ctx.db.close();
      await a.close();
    }
  }, 120_000);
});

describe('two API processes sharing Redis', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGTERM');
  });

  function serve(env: Record<string, string>): Promise<string> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
      env: { ...process.env, ...env, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), 90_000);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const m = /listening on (http:\/\/\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
    });
  }

  it('the 31st request of a minute is refused, whichever process gets it', async () => {
    const database = await freshDatabase();
    const prefix = `lmsapi-test:${randomBytes(6).toString('hex')}:`;
    const env = {
      DATABASE_URL: database.databaseUrl,
      DATA_DIR: database.dataDir,
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      RATE_LIMIT_PER_MINUTE: '30',
      LOG_LEVEL: 'silent',
      PUBLIC_URL: 'http://127.0.0.1:3000',
    };
    const ctx = await createContext(testConfig(database, env), { schema: database.schema });
    const redis = new Redis(REDIS_URL);
    try {
      const org = await createOrganization(ctx, { name: 'Two processes', seats: 5 });
      const creds = await createApprovedApplication(ctx, { orgId: org.id, name: 'p', scopes: ['seats:read'] });
      const [one, two] = await Promise.all([serve(env), serve(env)]);
      expect(one).not.toBe(two);
      const tokenRes = await fetch(`${one}/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: creds.client_id, client_secret: creds.client_secret }),
      });
      expect(tokenRes.status).toBe(200);
      const { access_token } = (await tokenRes.json()) as { access_token: string };
      const remaining: number[] = [];
      for (let i = 0; i < 30; i++) {
        const res = await fetch(`${i % 2 ? two : one}/v1/seats`, { headers: { authorization: `Bearer ${access_token}` } });
        expect(res.status).toBe(200);
        remaining.push(rateLimitOf({ headers: { ratelimit: res.headers.get('ratelimit') } }).r);
      }
      expect(remaining).toEqual(Array.from({ length: 30 }, (_, i) => 29 - i));
      for (const base of [one, two]) {
        const res = await fetch(`${base}/v1/seats`, { headers: { authorization: `Bearer ${access_token}` } });
        expect(res.status).toBe(429);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(((await res.json()) as { code: string }).code).toBe('rate_limited');
      }
    } finally {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      await redis.quit();
      await ctx.db.close();
      for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
      await database.drop();
    }
  }, 180_000);
});
