// The lmsapi command, run as a real child process against a fresh database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freshDatabase, testConfig, type TestDatabase } from './helpers.js';
import { createContext } from '../src/context.js';
import { buildApp } from '../src/app.js';

const run = promisify(execFile);
let db: TestDatabase;

beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(() => db.drop());

async function lmsapi(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      env: { ...process.env, DATA_DIR: db.dataDir, DATABASE_URL: db.databaseUrl, LOG_LEVEL: 'silent', ...env },
      timeout: 150_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function oneJsonObject(stdout: string) {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]);
}

// Each case starts the CLI as a new Node process (tsx compiles the sources on first use): allow for a busy machine.
describe('lmsapi', { timeout: 180_000 }, () => {
  let orgId: string;

  it('migrate applies the migrations once', async () => {
    const first = oneJsonObject((await lmsapi(['migrate', '--json'])).stdout);
    expect(first.applied).toContain('001_initial');
    const second = oneJsonObject((await lmsapi(['migrate', '--json'])).stdout);
    expect(second.applied).toEqual([]);
  });

  it('orgs create and orgs set-seats print one JSON object', async () => {
    const org = oneJsonObject((await lmsapi(['orgs', 'create', '--name', 'Acme Training', '--seats', '40', '--json'])).stdout);
    expect(org).toMatchObject({ id: expect.stringMatching(/^org_/), name: 'Acme Training', slug: 'acme-training', seats: { total: 40, in_use: 0 } });
    orgId = org.id;
    const seats = oneJsonObject((await lmsapi(['orgs', 'set-seats', orgId, '55', '--json'])).stdout);
    expect(seats).toMatchObject({ org_id: orgId, total: 55, available: 55 });
  });

  it('apps create prints credentials that get a token with exactly those scopes', async () => {
    const creds = oneJsonObject((await lmsapi(['apps', 'create', '--org', orgId, '--name', 'HR sync', '--scopes', 'courses:read seats:read', '--json'])).stdout);
    expect(creds).toMatchObject({ client_id: expect.stringMatching(/^app_/), client_secret: expect.stringMatching(/^lms_secret_/), org_id: orgId });
    const ctx = await createContext(testConfig(db), { schema: db.schema });
    const app = await buildApp(ctx);
    try {
      const res = await app.inject({ method: 'POST', url: '/v1/oauth/token', payload: { client_id: creds.client_id, client_secret: creds.client_secret } });
      expect(res.statusCode).toBe(200);
      expect(res.json().scope).toBe('courses:read seats:read');
      const stored = await ctx.db.kysely.selectFrom('applications').select('secret_hash').where('id', '=', creds.client_id).executeTakeFirstOrThrow();
      expect(stored.secret_hash).not.toContain(creds.client_secret);
    } finally {
      await app.close();
      await ctx.db.close();
    }
  });

  it('refuses unknown scopes and unknown organizations on stderr with a non-zero exit', async () => {
    const bad = await lmsapi(['apps', 'create', '--org', orgId, '--name', 'x', '--scopes', 'root:all', '--json']);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain('unknown scopes: root:all');
    const noOrg = await lmsapi(['apps', 'create', '--org', 'org_nope', '--name', 'x', '--scopes', 'courses:read']);
    expect(noOrg.code).not.toBe(0);
    expect(noOrg.stderr).toContain('org_nope');
  });

  it('courses import loads a catalogue file and does not duplicate it on a second import', async () => {
    const file = join(db.dataDir, 'catalogue.json');
    writeFileSync(
      file,
      JSON.stringify({
        categories: [{ key: 'ops', name: 'Operations' }],
        courses: [
          { title: 'Forklift Basics', summary: 'Safe driving.', category: 'ops', language: 'en', duration_minutes: 30, certificate: { enabled: true, validity_months: 12 } },
          { title: 'Stock Counting', summary: 'Cycle counts.', category: 'ops', language: 'en', duration_minutes: 20 },
        ],
      }),
    );
    expect(oneJsonObject((await lmsapi(['courses', 'import', file, '--json'])).stdout)).toEqual({ categories: 1, courses: 2, created: 2 });
    expect(oneJsonObject((await lmsapi(['courses', 'import', file, '--json'])).stdout)).toEqual({ categories: 1, courses: 2, created: 0 });
    writeFileSync(file, JSON.stringify({ categories: [], courses: [{ title: 'x', category: 'nope' }] }));
    const bad = await lmsapi(['courses', 'import', file]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('courses[0]');
  });

  it('demo seeds once and reprints the same credentials', async () => {
    const first = oneJsonObject((await lmsapi(['demo', '--json'])).stdout);
    expect(first).toMatchObject({ created: true, client_id: expect.stringMatching(/^app_/), client_secret: expect.any(String) });
    const second = oneJsonObject((await lmsapi(['demo', '--json'])).stdout);
    expect(second).toEqual({ ...first, created: false });
  });

  it('stops with a message naming the variable when the configuration is bad', async () => {
    const bad = [['PORT', 'eighty'], ['WEBHOOK_RETRY_SCHEDULE', '5s,soon'], ['DATABASE_URL', 'mysql://x'], ['LOG_LEVEL', 'loud']];
    const results = await Promise.all(bad.map(([name, value]) => lmsapi(['migrate'], { [name]: value })));
    results.forEach((res, i) => {
      expect(res.code).toBe(2);
      expect(res.stderr).toContain(`configuration error: ${bad[i][0]}`);
    });
  });
});
