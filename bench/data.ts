// The benchmark data set, written straight into the tables (not through the HTTP API) so that a million
// learners take seconds, not hours:
//   - the demo catalogue plus 200 generated published courses;
//   - "big":   an organization with 1,000,000 learners (and 100,000 enrolments);
//   - "small": an organization with 10,000 learners;
//   - "enrol": an organization with 20,000 learners and 10,000,000 seats, for the enrolment scenarios;
//   each with an approved application whose secret is known (kept in the data set's JSON file).
// SQLite: batched multi-row prepared INSERTs inside large transactions, cached under bench/.work/ (the run
// copies the pristine file, so every run starts from the same state). PostgreSQL: INSERT … SELECT FROM
// unnest($1::text[], …) in batches of 10,000 rows (one round trip per batch, COPY-like), into a fresh schema.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config.js';
import { createContext, type AppContext } from '../src/context.js';
import { ALL_SCOPES } from '../src/auth/scopes.js';
import { createOrganization } from '../src/modules/organization/service.js';
import { createApprovedApplication } from '../src/modules/applications/service.js';
import { importCatalogue } from '../src/modules/catalogue/service.js';
import { encodeCursor } from '../src/http/pagination.js';

/** Bump when the shape of the generated data changes: a cached file of another version is regenerated. */
export const DATASET_VERSION = 3; // (the PostgreSQL data set is generated fresh for each run)

export interface OrgInfo {
  key: 'big' | 'small' | 'enrol';
  orgId: string;
  clientId: string;
  clientSecret: string;
  learners: number;
  /** Cursors pointing into the middle of the learner list (ids between 45% and 55% of it). */
  midCursors: string[];
}

export interface Dataset {
  version: number;
  databaseUrl: string;
  generatedMs: number;
  orgs: Record<OrgInfo['key'], OrgInfo>;
  /** Published course ids. */
  courseIds: string[];
  /** Learner ids of the "enrol" organization (each (learner, course) pair is enrolled at most once by a run). */
  enrolLearnerIds: string[];
}

export const SIZES = { big: 1_000_000, small: 10_000, enrol: 20_000 } as const;
const BIG_ENROLMENTS = 100_000;
const EXTRA_COURSES = 200;

const FIRST = ['Ada', 'Alan', 'Grace', 'Linus', 'Margaret', 'Dennis', 'Barbara', 'Ken', 'Frances', 'Edsger', 'Radia', 'John'];
const LAST = ['Lovelace', 'Turing', 'Hopper', 'Torvalds', 'Hamilton', 'Ritchie', 'Liskov', 'Thompson', 'Allen', 'Dijkstra', 'Perlman', 'Backus'];
const DEPARTMENTS = ['Sales', 'Engineering', 'Finance', 'Operations', 'Legal', 'Support', 'Marketing', null];

const USER_COLUMNS = [
  'id', 'org_id', 'email', 'email_normalized', 'first_name', 'last_name', 'external_id', 'department', 'roles',
  'is_learner', 'status', 'created_at', 'updated_at',
] as const;
const ENROLMENT_COLUMNS = [
  'id', 'org_id', 'learner_id', 'course_id', 'status', 'progress', 'score', 'enrolled_at', 'started_at',
  'completed_at', 'withdrawn_at', 'due_at', 'certificate_id', 'created_at', 'updated_at',
] as const;
type Value = string | number | null;

/** Writes rows in batches: SQLite (prepared multi-row INSERT) or PostgreSQL (INSERT … SELECT FROM unnest). */
interface BulkWriter {
  insert(table: string, columns: readonly string[], rows: Value[][]): Promise<void>;
  /** Drops the table's secondary indexes (as the migrations defined them) and returns a function that rebuilds them:
   * one sort per index after the load is far cheaper than a million random B-tree inserts. */
  dropIndexes(table: string): Promise<() => Promise<void>>;
  /** PostgreSQL: runs one statement server-side (INSERT … SELECT FROM generate_series for the million rows). */
  query?(text: string, values: unknown[]): Promise<void>;
  close(): Promise<void>;
}

function sqliteWriter(file: string): BulkWriter {
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -262144'); // 256 MiB while loading
  const statements = new Map<string, SQLite.Statement>();
  const PER_STATEMENT = 500;
  return {
    async insert(table, columns, rows) {
      const prepare = (n: number) => {
        const k = `${table}:${n}`;
        let st = statements.get(k);
        if (!st) {
          const tuple = `(${columns.map(() => '?').join(',')})`;
          st = db.prepare(`insert into ${table} (${columns.join(',')}) values ${Array(n).fill(tuple).join(',')}`);
          statements.set(k, st);
        }
        return st;
      };
      db.transaction(() => {
        for (let i = 0; i < rows.length; i += PER_STATEMENT) {
          const chunk = rows.slice(i, i + PER_STATEMENT);
          prepare(chunk.length).run(chunk.flat());
        }
      })();
    },
    async dropIndexes(table) {
      const defs = db
        .prepare("select name, sql from sqlite_master where type = 'index' and tbl_name = ? and sql is not null")
        .all(table) as { name: string; sql: string }[];
      for (const d of defs) db.exec(`drop index ${d.name}`);
      return async () => {
        for (const d of defs) db.exec(d.sql);
      };
    },
    async close() {
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.exec('analyze');
      db.close();
    },
  };
}

async function postgresWriter(url: string): Promise<BulkWriter> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const types = new Map<string, Map<string, string>>();
  const typeOf = async (table: string) => {
    let t = types.get(table);
    if (!t) {
      const res = await client.query<{ column_name: string; data_type: string }>(
        'select column_name, data_type from information_schema.columns where table_name = $1 and table_schema = current_schema()',
        [table],
      );
      t = new Map(res.rows.map((r) => [r.column_name, r.data_type === 'integer' ? 'int4' : r.data_type === 'bigint' ? 'int8' : 'text']));
      types.set(table, t);
    }
    return t;
  };
  return {
    async insert(table, columns, rows) {
      const t = await typeOf(table);
      const casts = columns.map((c, i) => `$${i + 1}::${t.get(c) ?? 'text'}[]`);
      const columnArrays = columns.map((_, i) => rows.map((r) => r[i]));
      await client.query(`insert into ${table} (${columns.join(',')}) select * from unnest(${casts.join(',')})`, columnArrays);
    },
    async query(text, values) {
      await client.query(text, values);
    },
    async dropIndexes(table) {
      // Primary keys and unique constraints stay (they back constraints); plain and unique indexes are rebuilt.
      const res = await client.query<{ indexname: string; indexdef: string }>(
        `select indexname, indexdef from pg_indexes where tablename = $1 and schemaname = current_schema()
           and indexname not in (select conname from pg_constraint where conrelid = $1::regclass)`,
        [table],
      );
      for (const d of res.rows) await client.query(`drop index ${d.indexname}`);
      return async () => {
        await client.query(`set maintenance_work_mem = '256MB'`);
        for (const d of res.rows) await client.query(d.indexdef);
      };
    },
    async close() {
      await client.query('analyze');
      await client.end();
    },
  };
}

// The ulid package takes ~135 µs per id when the timestamp changes (it re-seeds its random part through
// crypto for every character), two minutes for a million. This makes the same shape of id (10 characters of
// Crockford base32 time, 16 of randomness) from one random buffer; ids still sort by their timestamp, and
// callers pass strictly increasing timestamps so that ids sort in generation order.
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
function idFactory(prefix: string): (time: number) => string {
  let pool = randomBytes(0);
  let at = 0;
  return (time) => {
    if (at + 16 > pool.length) {
      pool = randomBytes(16 * 65536);
      at = 0;
    }
    let t = time;
    let timePart = '';
    for (let i = 0; i < 10; i++) {
      timePart = CROCKFORD[t % 32] + timePart;
      t = Math.floor(t / 32);
    }
    let rand = '';
    for (let i = 0; i < 16; i++) rand += CROCKFORD[pool[at++] & 31];
    return `${prefix}_${timePart}${rand}`;
  };
}

/** Learners of one organization, in id order, with ids and timestamps spread over the past year. */
async function writeLearners(writer: BulkWriter, orgId: string, key: string, count: number, start: number, onId?: (id: string, i: number) => void) {
  const newUserId = idFactory('usr');
  const BATCH = 10_000;
  const year = 365 * 24 * 3600 * 1000;
  for (let from = 0; from < count; from += BATCH) {
    const rows: Value[][] = [];
    for (let i = from; i < Math.min(count, from + BATCH); i++) {
      // Strictly increasing milliseconds (a year holds 31.5 billion of them), so ids sort in generation order.
      const t = start - year + Math.floor((i / count) * (year - count)) + i;
      const id = newUserId(t);
      onId?.(id, i);
      const n = String(i).padStart(7, '0');
      const first = FIRST[i % FIRST.length];
      const last = LAST[(i * 7) % LAST.length];
      const email = `learner.${n}.${first.toLowerCase()}.${last.toLowerCase()}@${key}.bench.example`;
      const at = new Date(t).toISOString();
      rows.push([id, orgId, email, email, first, last, `ext-${n}`, DEPARTMENTS[i % DEPARTMENTS.length], '["learner"]', 1, 'active', at, at]);
    }
    await writer.insert('users', USER_COLUMNS, rows);
  }
}

async function writeEnrolments(writer: BulkWriter, orgId: string, learnerIds: string[], courseIds: string[], count: number, start: number) {
  const newEnrolmentId = idFactory('enr');
  const BATCH = 10_000;
  let active = 0;
  for (let from = 0; from < count; from += BATCH) {
    const rows: Value[][] = [];
    for (let i = from; i < Math.min(count, from + BATCH); i++) {
      const t = start - 180 * 24 * 3600 * 1000 + i * 60_000;
      const at = new Date(t).toISOString();
      const completed = i % 3 === 0;
      if (!completed) active++;
      rows.push([
        newEnrolmentId(t), orgId, learnerIds[(i * 9973) % learnerIds.length], courseIds[i % courseIds.length],
        completed ? 'completed' : 'enrolled', completed ? 100 : 0, completed ? 80 : null, at, completed ? at : null,
        completed ? at : null, null, null, null, at, at,
      ]);
    }
    await writer.insert('enrolments', ENROLMENT_COLUMNS, rows);
  }
  return active;
}

/**
 * PostgreSQL: the million learners and their 100,000 enrolments generated by the server itself (INSERT … SELECT
 * FROM generate_series), instead of shipping a million rows of parameters. The ids are fixed-width and sort in
 * generation order ("usr_01BENCH" + 19 digits: 26 characters of the Crockford alphabet, like a ULID), so the ids
 * the run needs (cursors into the middle) are known without reading them back. Same shape of data as writeLearners.
 */
async function pgBigOrganization(writer: BulkWriter, orgId: string, courseIds: string[], start: number, ids: string[]) {
  const count = SIZES.big;
  const year = 365 * 24 * 3600 * 1000;
  for (let i = 0; i < count; i++) ids[i] = `usr_01BENCH${String(i).padStart(19, '0')}`;
  const iso = (ms: string) => `to_char(to_timestamp((${ms})::double precision / 1000) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  await writer.query!(
    `insert into users (${USER_COLUMNS.join(',')})
     select 'usr_01BENCH' || lpad(g::text, 19, '0'), $1,
            'learner.' || lpad(g::text, 7, '0') || '.' || lower(($2::text[])[1 + g % 12]) || '.' || lower(($3::text[])[1 + (g * 7) % 12]) || '@big.bench.example',
            'learner.' || lpad(g::text, 7, '0') || '.' || lower(($2::text[])[1 + g % 12]) || '.' || lower(($3::text[])[1 + (g * 7) % 12]) || '@big.bench.example',
            ($2::text[])[1 + g % 12], ($3::text[])[1 + (g * 7) % 12], 'ext-' || lpad(g::text, 7, '0'), ($4::text[])[1 + g % 8],
            '["learner"]', 1, 'active', ${iso('$5::bigint + g')}, ${iso('$5::bigint + g')}
     from generate_series(0, ${count - 1}) g`,
    [orgId, FIRST, LAST, DEPARTMENTS, String(start - year)],
  );
  await writer.query!(
    `insert into enrolments (${ENROLMENT_COLUMNS.join(',')})
     select 'enr_01BENCH' || lpad(g::text, 19, '0'), $1, 'usr_01BENCH' || lpad(((g::bigint * 9973) % ${count})::text, 19, '0'),
            ($2::text[])[1 + g % $3::int], case when g % 3 = 0 then 'completed' else 'enrolled' end,
            case when g % 3 = 0 then 100 else 0 end, case when g % 3 = 0 then 80 end,
            ${iso('$4::bigint + g::bigint * 60000')}, case when g % 3 = 0 then ${iso('$4::bigint + g::bigint * 60000')} end,
            case when g % 3 = 0 then ${iso('$4::bigint + g::bigint * 60000')} end, null, null, null,
            ${iso('$4::bigint + g::bigint * 60000')}, ${iso('$4::bigint + g::bigint * 60000')}
     from generate_series(0, ${BIG_ENROLMENTS - 1}) g`,
    [orgId, courseIds, courseIds.length, String(start - 180 * 24 * 3600 * 1000)],
  );
}

async function setUp(ctx: AppContext, key: OrgInfo['key'], seats: number): Promise<Omit<OrgInfo, 'learners' | 'midCursors'>> {
  const org = await createOrganization(ctx, { name: `Bench ${key}`, seats, slug: `bench-${key}` });
  const secret = `lms_secret_bench_${key}_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  const creds = await createApprovedApplication(ctx, { orgId: org.id, name: `bench ${key}`, scopes: ALL_SCOPES, clientSecret: secret });
  return { key, orgId: org.id, clientId: creds.client_id, clientSecret: secret };
}

function midCursors(ids: string[], n = 100): string[] {
  const out: string[] = [];
  for (let k = 0; k < n; k++) out.push(encodeCursor(ids[Math.floor(ids.length * (0.45 + (0.1 * k) / n))]));
  return out;
}

/** Generates the data set into an empty database (migrations are applied first). */
export async function generate(databaseUrl: string, dataDir: string, log: (s: string) => void = () => {}): Promise<Dataset> {
  const t0 = Date.now();
  const config = loadConfig({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const ctx = await createContext(config);
  let orgs: Record<OrgInfo['key'], Omit<OrgInfo, 'learners' | 'midCursors'>>;
  let courseIds: string[];
  try {
    await importCatalogue(ctx, JSON.parse(readFileSync(new URL('../demo/catalogue.json', import.meta.url), 'utf8')));
    orgs = { big: await setUp(ctx, 'big', 200_000), small: await setUp(ctx, 'small', 1000), enrol: await setUp(ctx, 'enrol', 10_000_000) };
    const category = await ctx.db.kysely.selectFrom('course_categories').select('id').orderBy('id').executeTakeFirstOrThrow();
    const now = new Date().toISOString();
    const newCourseId = idFactory('crs');
    for (let i = 0; i < EXTRA_COURSES; i++) {
      await ctx.db.kysely
        .insertInto('courses')
        .values({
          id: newCourseId(Date.now() - EXTRA_COURSES + i), title: `Generated course ${i + 1}`, summary: 'A course generated for the benchmark.', category_id: category.id,
          language: i % 4 === 0 ? 'de' : 'en', duration_minutes: 30 + (i % 90), tags: '["bench"]', status: 'published', published_at: now,
          certificate_enabled: i % 2, certificate_validity_months: i % 2 ? 24 : null, created_at: now, updated_at: now,
        })
        .execute();
    }
    courseIds = (await ctx.db.kysely.selectFrom('courses').select('id').where('status', '=', 'published').orderBy('id').execute()).map((r) => r.id);
  } finally {
    await ctx.db.close();
  }

  const writer = databaseUrl.startsWith('sqlite:') ? sqliteWriter(databaseUrl.slice('sqlite:'.length)) : await postgresWriter(databaseUrl);
  const now = Date.now();
  const ids: Record<OrgInfo['key'], string[]> = { big: [], small: [], enrol: [] };
  let activeBig = 0;
  try {
    const rebuildUsers = await writer.dropIndexes('users');
    const rebuildEnrolments = await writer.dropIndexes('enrolments');
    for (const key of ['small', 'enrol', 'big'] as const) {
      const t = Date.now();
      const list: string[] = (ids[key] = new Array(SIZES[key]));
      if (key === 'big' && writer.query) await pgBigOrganization(writer, orgs.big.orgId, courseIds, now, list);
      else await writeLearners(writer, orgs[key].orgId, key, SIZES[key], now, (id, i) => (list[i] = id));
      log(`  ${SIZES[key].toLocaleString('en')} learners (${key}) in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    const t = Date.now();
    activeBig = writer.query
      ? BIG_ENROLMENTS - Math.ceil(BIG_ENROLMENTS / 3) // written by pgBigOrganization: every third one completed
      : await writeEnrolments(writer, orgs.big.orgId, ids.big, courseIds, BIG_ENROLMENTS, now);
    log(`  ${BIG_ENROLMENTS.toLocaleString('en')} enrolments (big) in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const ti = Date.now();
    await rebuildUsers();
    await rebuildEnrolments();
    log(`  indexes rebuilt in ${((Date.now() - ti) / 1000).toFixed(1)} s`);
  } finally {
    await writer.close();
  }
  // Seats in use of the big organization match its active enrolments.
  const ctx2 = await createContext(config, { migrate: false });
  try {
    await ctx2.db.kysely.updateTable('seat_allowances').set({ in_use: activeBig }).where('org_id', '=', orgs.big.orgId).execute();
  } finally {
    await ctx2.db.close();
  }
  return {
    version: DATASET_VERSION,
    databaseUrl,
    generatedMs: Date.now() - t0,
    orgs: {
      big: { ...orgs.big, learners: SIZES.big, midCursors: midCursors(ids.big) },
      small: { ...orgs.small, learners: SIZES.small, midCursors: midCursors(ids.small) },
      enrol: { ...orgs.enrol, learners: SIZES.enrol, midCursors: midCursors(ids.enrol) },
    },
    courseIds,
    enrolLearnerIds: ids.enrol,
  };
}

/**
 * The SQLite data set for a run: generated once into bench/.work/dataset-v<N>.sqlite (with its JSON beside it),
 * then copied to a fresh run file so that the scenarios that write (enrolments, webhooks) start from the same state.
 */
export async function sqliteDataset(workDir: string, log: (s: string) => void): Promise<Dataset> {
  mkdirSync(workDir, { recursive: true });
  const pristine = join(workDir, `dataset-v${DATASET_VERSION}.sqlite`);
  const meta = `${pristine}.json`;
  if (!existsSync(pristine) || !existsSync(meta)) {
    for (const f of [pristine, meta, `${pristine}-wal`, `${pristine}-shm`]) rmSync(f, { force: true });
    log(`generating the SQLite data set (cached as ${pristine})`);
    const ds = await generate(`sqlite:${pristine}.tmp`, workDir, log);
    copyFileSync(`${pristine}.tmp`, pristine);
    rmSync(`${pristine}.tmp`, { force: true });
    writeFileSync(meta, JSON.stringify({ ...ds, databaseUrl: `sqlite:${pristine}` }));
    log(`  generated in ${(ds.generatedMs / 1000).toFixed(1)} s`);
  } else {
    log(`using the cached SQLite data set ${pristine}`);
  }
  const ds = JSON.parse(readFileSync(meta, 'utf8')) as Dataset;
  const run = join(workDir, 'run.sqlite');
  for (const f of [run, `${run}-wal`, `${run}-shm`]) rmSync(f, { force: true });
  copyFileSync(pristine, run);
  return { ...ds, databaseUrl: `sqlite:${run}` };
}

/** The PostgreSQL data set: a fresh schema in the given database (dropped by the returned function). */
export async function postgresDataset(baseUrl: string, workDir: string, log: (s: string) => void): Promise<{ dataset: Dataset; drop(): Promise<void> }> {
  const schema = `bench_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  log(`generating the PostgreSQL data set in schema ${schema}`);
  const dataset = await generate(url.toString(), workDir, log);
  log(`  generated in ${(dataset.generatedMs / 1000).toFixed(1)} s`);
  return {
    dataset,
    async drop() {
      const c = new pg.Client({ connectionString: baseUrl });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    },
  };
}

// `tsx bench/data.ts [sqlite|postgres-url]`: generate (or refresh the cache) without running the benchmark.
if (process.argv[1]?.endsWith('data.ts')) {
  const target = process.argv[2] ?? 'sqlite';
  const workDir = new URL('./.work/', import.meta.url).pathname;
  if (target === 'sqlite') await sqliteDataset(workDir, console.log);
  else await postgresDataset(target, workDir, console.log);
}
