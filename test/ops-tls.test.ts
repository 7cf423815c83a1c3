// Acceptance 1: the service terminates TLS itself. A self-signed certificate made with openssl; token → courses over
// HTTPS with Node's https client (HTTP/1.1) and with node:http2 (HTTP/2 by ALPN), both trusting only that certificate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import https from 'node:https';
import http2 from 'node:http2';
import { readFileSync as read } from 'node:fs';
import { freshDatabase, testConfig, type TestDatabase } from './helpers.js';
import { loadConfig } from '../src/config.js';
import { HSTS } from '../src/http/operations.js';
import { startServer, insecureBindingWarning, type RunningServer } from '../src/server.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createApprovedApplication, type IssuedCredentials } from '../src/modules/applications/service.js';
import { importCatalogue } from '../src/modules/catalogue/service.js';

let database: TestDatabase;
let server: RunningServer;
let ca: Buffer;
let creds: IssuedCredentials;

/** Makes a self-signed certificate for 127.0.0.1/localhost with openssl (which must be installed). */
function selfSigned(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ], { stdio: 'pipe' });
  return { cert, key };
}

beforeAll(async () => {
  database = await freshDatabase();
  const pem = selfSigned(database.dataDir);
  ca = readFileSync(pem.cert);
  server = await startServer(
    testConfig(database, { PORT: '0', HOST: '127.0.0.1', TLS_CERT: pem.cert, TLS_KEY: pem.key, PUBLIC_URL: 'https://api.lms.test' }),
  );
  const org = await createOrganization(server.ctx, { name: 'TLS Org', seats: 5 });
  creds = await createApprovedApplication(server.ctx, { orgId: org.id, name: 'tls app', scopes: ['courses:read'] });
  await importCatalogue(server.ctx, JSON.parse(read(new URL('../demo/catalogue.json', import.meta.url), 'utf8')));
}, 60_000);
afterAll(async () => {
  await server?.close();
  await database?.drop();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  version: string;
}

function h1(method: string, path: string, body?: object, token?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      new URL(path, server.url),
      {
        method,
        ca,
        agent: false,
        headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data, version: res.httpVersion }));
      },
    );
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

function h2(session: http2.ClientHttp2Session, method: string, path: string, body?: object, token?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': method,
      ':path': path,
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    });
    let headers: http2.IncomingHttpHeaders = {};
    let data = '';
    stream.setEncoding('utf8');
    stream.on('response', (h) => (headers = h));
    stream.on('data', (c) => (data += c));
    stream.on('end', () => resolve({ status: Number(headers[':status']), headers, body: data, version: '2.0' }));
    stream.on('error', reject);
    stream.end(body ? JSON.stringify(body) : undefined);
  });
}

describe('HTTPS served by the service (TLS_CERT, TLS_KEY)', () => {
  it('completes token → courses over HTTP/1.1 with the https client trusting the certificate', async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const token = await h1('POST', '/v1/oauth/token', { client_id: creds.client_id, client_secret: creds.client_secret });
    expect(token.version).toBe('1.1');
    expect(token.status).toBe(200);
    expect(token.headers['strict-transport-security']).toBe(HSTS);
    const courses = await h1('GET', '/v1/courses?limit=5', undefined, JSON.parse(token.body).access_token);
    expect(courses.status).toBe(200);
    expect(JSON.parse(courses.body).data).toHaveLength(5);
    expect(courses.headers['strict-transport-security']).toBe(HSTS);
    // PUBLIC_URL with https:// makes every generated link https.
    expect(courses.headers.link).toMatch(/^<https:\/\/api\.lms\.test\/v1\/courses\?limit=5&cursor=[^>]+>; rel="next"$/);
  });

  it('completes token → courses over HTTP/2 negotiated by ALPN', async () => {
    const session = http2.connect(server.url, { ca });
    try {
      await new Promise<void>((resolve, reject) => session.once('connect', () => resolve()).once('error', reject));
      expect(session.alpnProtocol).toBe('h2');
      const token = await h2(session, 'POST', '/v1/oauth/token', { client_id: creds.client_id, client_secret: creds.client_secret });
      expect(token.status).toBe(200);
      expect(token.headers['strict-transport-security']).toBe(HSTS);
      const courses = await h2(session, 'GET', '/v1/courses?limit=3', undefined, JSON.parse(token.body).access_token);
      expect(courses.status).toBe(200);
      expect(JSON.parse(courses.body).data).toHaveLength(3);
    } finally {
      session.close();
    }
  });

  it('refuses a client that does not trust the certificate', async () => {
    await expect(
      new Promise((resolve, reject) => {
        const req = https.request(new URL('/healthz', server.url), { agent: false }, resolve);
        req.on('error', reject);
        req.end();
      }),
    ).rejects.toThrow(/self[- ]signed/i);
  });
});

describe('transport configuration', () => {
  it('makes the default PUBLIC_URL https when TLS is on', () => {
    const cfg = loadConfig({ TLS_CERT: '/c.pem', TLS_KEY: '/k.pem', PORT: '8443', HOST: '127.0.0.1' });
    expect(cfg.publicUrl).toBe('https://127.0.0.1:8443');
    expect(() => loadConfig({ TLS_CERT: '/c.pem' })).toThrow(/TLS_KEY/);
  });

  it('warns when plain HTTP listens beyond loopback, and only then', () => {
    expect(insecureBindingWarning(loadConfig({ HOST: '0.0.0.0' }))).toMatch(/TLS-terminating proxy/);
    expect(insecureBindingWarning(loadConfig({ HOST: '127.0.0.1' }))).toBeNull();
    expect(insecureBindingWarning(loadConfig({ HOST: '::1' }))).toBeNull();
    expect(insecureBindingWarning(loadConfig({ HOST: '0.0.0.0', TLS_CERT: '/c', TLS_KEY: '/k' }))).toBeNull();
  });

  it('fails start-up with a message naming TLS_CERT when the file cannot be read', async () => {
    const db = await freshDatabase();
    try {
      await expect(startServer(testConfig(db, { PORT: '0', TLS_CERT: join(db.dataDir, 'missing.pem'), TLS_KEY: join(db.dataDir, 'missing.key') }))).rejects.toThrow(/TLS_CERT/);
    } finally {
      await db.drop();
    }
  });
});
