// Acceptance 5: `lmsapi backup` taken under write load opens as a consistent SQLite database holding every row
// committed before it started; `lmsapi restore` puts it back. The PostgreSQL recipe of the README is run for real.
// The backup commands are about the SQLite file, so this suite uses SQLite whatever TEST_DATABASE_URL says.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openSqlite, queryAll } from '../src/db/sqlite-driver.js';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { createContext, type AppContext } from '../src/context.js';
import { openDb, migrateToLatest } from '../src/db/index.js';
import { createOrganization } from '../src/modules/organization/service.js';

const run = promisify(execFile);
const ROOT = new URL('..', import.meta.url).pathname;

let dir: string;
let databaseUrl: string;
let ctx: AppContext;

async function lmsapi(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dir, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lmsapi-backup-'));
  databaseUrl = `sqlite:${join(dir, 'lmsapi.sqlite')}`;
  ctx = await createContext(loadConfig({ DATA_DIR: dir, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' }));
}, 60_000);
afterAll(async () => {
  await ctx?.db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('lmsapi backup (SQLite)', { timeout: 180_000 }, () => {
  it('copies a database under write load consistently, with every row committed before it started', async () => {
    const org = await createOrganization(ctx, { name: 'Backup Org', seats: 3 });
    // The writer: transactions of 3 audit rows each, numbered, committed one after another as fast as they go.
    const PER_TX = 3;
    let committed = 0;
    let writing = true;
    const writer = (async () => {
      while (writing) {
        const tx = committed;
        await ctx.db.kysely.transaction().execute(async (trx) => {
          for (let part = 0; part < PER_TX; part++) {
            const seq = tx * PER_TX + part;
            await trx
              .insertInto('audit_log')
              .values({ id: `aud_${String(seq).padStart(10, '0')}`, actor: 'load', action: 'write', target: org.id, details: JSON.stringify({ tx, part }), created_at: new Date().toISOString() })
              .execute();
          }
        });
        committed = tx + 1;
        await new Promise((r) => setImmediate(r));
      }
    })();
    while (committed < 200) await new Promise((r) => setTimeout(r, 5));

    const committedBefore = committed;
    const file = join(dir, 'copy.sqlite');
    const res = await lmsapi(['backup', file, '--json']);
    const committedAfter = committed;
    writing = false;
    await writer;

    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out).toMatchObject({ file, integrity: 'ok' });
    expect(out.migrations).toContain('001_initial');
    // The load really ran during the backup.
    expect(committedAfter).toBeGreaterThan(committedBefore);

    const copy = openSqlite(file, { readonly: true, mustExist: true });
    try {
      expect(queryAll(copy, 'pragma integrity_check')).toEqual([{ integrity_check: 'ok' }]);
      expect(queryAll(copy, 'pragma foreign_key_check')).toEqual([]);
      const ids = queryAll<{ id: string }>(copy, `select id from audit_log where actor = 'load' order by id`).map((r) => Number(r.id.slice(4)));
      // Whole transactions only, with no gap: exactly the first k transactions of the sequence.
      expect(ids.length % PER_TX).toBe(0);
      expect(ids).toEqual(ids.map((_, i) => i));
      expect(ids.length).toBeGreaterThanOrEqual(committedBefore * PER_TX);
      expect(ids.length).toBeLessThanOrEqual(committedAfter * PER_TX);
      expect(queryAll(copy, 'select name from organizations where id = ?', [org.id])).toEqual([{ name: 'Backup Org' }]);
    } finally {
      copy.close();
    }
  });

  it('refuses to overwrite an existing file without --force, and to back up PostgreSQL itself', async () => {
    const file = join(dir, 'exists.sqlite');
    writeFileSync(file, 'not empty');
    const refused = await lmsapi(['backup', file]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/exists; choose another name or pass --force/);
    const forced = await lmsapi(['backup', file, '--force', '--json']);
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout).integrity).toBe('ok');
    const onPg = await lmsapi(['backup', join(dir, 'pg.dump')], { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' });
    expect(onPg.code).not.toBe(0);
    expect(onPg.stderr).toMatch(/pg_dump --format=custom/);
  });
});

describe('lmsapi restore (SQLite)', { timeout: 180_000 }, () => {
  it('puts a backup back and keeps the database it replaced', async () => {
    const file = join(dir, 'before-change.sqlite');
    const org = await createOrganization(ctx, { name: 'Kept Org', seats: 1 });
    expect((await lmsapi(['backup', file])).code).toBe(0);
    const later = await createOrganization(ctx, { name: 'Later Org', seats: 1 });
    await ctx.db.close();

    const res = await lmsapi(['restore', file, '--json']);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out.integrity).toBe('ok');
    expect(out.previous).toMatch(/before-restore-/);
    expect(existsSync(out.previous)).toBe(true);

    ctx = await createContext(loadConfig({ DATA_DIR: dir, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' }));
    const names = (await ctx.db.kysely.selectFrom('organizations').select(['id', 'name']).execute()).map((r) => r.id);
    expect(names).toContain(org.id);
    expect(names).not.toContain(later.id);
    const previous = openSqlite(out.previous, { readonly: true, mustExist: true });
    expect(queryAll(previous, 'select name from organizations where id = ?', [later.id])).toEqual([{ name: 'Later Org' }]);
    previous.close();
  });

  it('refuses a file that is not an lmsapi backup', async () => {
    const junk = join(dir, 'junk.sqlite');
    writeFileSync(junk, 'this is not a database at all, just some text to fill a page');
    const res = await lmsapi(['restore', junk]);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/not a readable SQLite database|cannot open/);
  });
});

describe('the PostgreSQL recipe (README: pg_dump / pg_restore)', { timeout: 180_000 }, () => {
  it('dumps and restores a database with every row', async () => {
    const name = `lmsapi_recipe_${process.pid}`;
    const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
    await admin.connect();
    const url = `postgres://postgres@127.0.0.1:5432/${name}`;
    try {
      await admin.query(`drop database if exists ${name}`);
      await admin.query(`create database ${name}`);
      const db = openDb(url);
      await migrateToLatest(db);
      const pgCtx = await createContext(loadConfig({ DATA_DIR: dir, DATABASE_URL: url, LOG_LEVEL: 'silent' }));
      const org = await createOrganization(pgCtx, { name: 'PG Org', seats: 7 });
      await pgCtx.db.close();
      await db.close();

      const dump = join(dir, 'lmsapi.dump');
      await run('pg_dump', ['--format=custom', `--file=${dump}`, url]);
      await admin.query(`drop database ${name}`);
      await admin.query(`create database ${name}`);
      await run('pg_restore', ['--clean', '--if-exists', '--no-owner', `--dbname=${url}`, dump]);

      const back = openDb(url);
      const row = await back.kysely.selectFrom('seat_allowances').select(['total']).where('org_id', '=', org.id).executeTakeFirst();
      expect(row).toEqual({ total: 7 });
      await back.close();
    } finally {
      await admin.query(`drop database if exists ${name}`);
      await admin.end();
    }
  });
});
