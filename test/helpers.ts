// Test helpers: a real app on a fresh database — a new SQLite file by default, or a fresh PostgreSQL schema
// when TEST_DATABASE_URL is a postgres:// URL (CI runs the whole suite both ways).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../src/config.js';
import { createContext, type AppContext } from '../src/context.js';
import { buildApp } from '../src/app.js';
import { ManualClock, type Clock } from '../src/clock.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createApprovedApplication, type IssuedCredentials } from '../src/modules/applications/service.js';
import { importCatalogue } from '../src/modules/catalogue/service.js';
import { ALL_SCOPES, type Scope } from '../src/auth/scopes.js';
import { enforceOpenApiConformance } from './setup/openapi-conformance.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';
export const onPostgres = TEST_DATABASE_URL.startsWith('postgres');

export interface TestDatabase {
  databaseUrl: string;
  schema?: string;
  dataDir: string;
  drop(): Promise<void>;
}

/** A fresh, empty database: a SQLite file in a temporary folder, or a new PostgreSQL schema. */
export async function freshDatabase(): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'lmsapi-test-'));
  if (!onPostgres) {
    return {
      databaseUrl: `sqlite:${join(dataDir, 'test.sqlite')}`,
      dataDir,
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  // Child processes (crash and shutdown tests) reach the same schema through the URL's options parameter.
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    databaseUrl: url.toString(),
    schema,
    dataDir,
    drop: async () => {
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function testConfig(database: TestDatabase, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: database.dataDir,
    DATABASE_URL: database.databaseUrl,
    PUBLIC_URL: 'http://127.0.0.1:3000',
    LOG_LEVEL: 'silent',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,300ms',
    WEBHOOK_TIMEOUT: '2s',
    ...env,
  });
}

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  clock: Clock;
  config: Config;
  database: TestDatabase;
  /** inject() with a bearer token and JSON body handled for you. */
  request(opts: InjectOptions & { token?: string }): Promise<LightMyRequestResponse>;
  /** A new organization (with seats) and an approved application on it; returns a ready token too. */
  tenant(opts?: { seats?: number; scopes?: Scope[]; name?: string }): Promise<Tenant>;
  /** Imports the demo catalogue (26 courses, 22 of them published). */
  loadCatalogue(): Promise<void>;
  close(): Promise<void>;
}

export interface Tenant {
  orgId: string;
  credentials: IssuedCredentials;
  token: string;
  /** A token of the same organization with other scopes (a second application). */
  tokenWith(scopes: Scope[]): Promise<string>;
}

export async function createTestApp(options: { clock?: Clock; env?: Record<string, string> } = {}): Promise<TestApp> {
  const database = await freshDatabase();
  const config = testConfig(database, options.env);
  const clock = options.clock ?? new ManualClock(new Date());
  const ctx = await createContext(config, { clock, schema: database.schema });
  const app = await buildApp(ctx);
  await app.ready();
  // Every inject() answer is checked against the OpenAPI document (status listed, body matching its schema).
  enforceOpenApiConformance(app);

  const tokenFor = async (credentials: IssuedCredentials) => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/oauth/token',
      payload: { client_id: credentials.client_id, client_secret: credentials.client_secret },
    });
    if (res.statusCode !== 200) throw new Error(`token request failed: ${res.statusCode} ${res.body}`);
    return res.json().access_token as string;
  };

  let orgCount = 0;
  const testApp: TestApp = {
    app,
    ctx,
    clock,
    config,
    database,
    request: ({ token, headers, ...rest }) =>
      app.inject({ ...rest, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } }),
    async tenant(opts = {}) {
      orgCount++;
      const org = await createOrganization(ctx, { name: opts.name ?? `Org ${orgCount} ${randomBytes(3).toString('hex')}`, seats: opts.seats ?? 10 });
      const credentials = await createApprovedApplication(ctx, { orgId: org.id, name: 'test app', scopes: opts.scopes ?? ALL_SCOPES });
      return {
        orgId: org.id,
        credentials,
        token: await tokenFor(credentials),
        tokenWith: async (scopes) => tokenFor(await createApprovedApplication(ctx, { orgId: org.id, name: 'scoped app', scopes })),
      };
    },
    async loadCatalogue() {
      const { readFileSync } = await import('node:fs');
      await importCatalogue(ctx, JSON.parse(readFileSync(new URL('../demo/catalogue.json', import.meta.url), 'utf8')));
    },
    async close() {
      await app.close();
      await ctx.db.close();
      await database.drop();
    },
  };
  return testApp;
}

/** Asserts the RFC 9457 shape and returns the parsed problem. */
export function problemOf(res: LightMyRequestResponse): { code: string; status: number; detail: string; errors?: { pointer: string }[] } {
  if (!String(res.headers['content-type']).startsWith('application/problem+json')) {
    throw new Error(`expected problem+json, got ${res.headers['content-type']}: ${res.body}`);
  }
  const body = res.json();
  if (body.status !== res.statusCode || typeof body.code !== 'string' || typeof body.request_id !== 'string') {
    throw new Error(`malformed problem: ${res.body}`);
  }
  return body;
}
