// Opens the database named by DATABASE_URL: the embedded SQLite file by default, PostgreSQL for
// postgres:// URLs. SQL that only one dialect understands lives here, behind `Db.dialect`.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pg from 'pg';
import {
  CompiledQuery,
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Transaction,
} from 'kysely';
import type { Database } from './types.js';
import { migrationProvider } from './migrations/index.js';
import { openSqlite, type SqliteHandle, type SqliteStatement } from './sqlite-driver.js';

export type Dialect = 'sqlite' | 'postgres';
export type Trx = Transaction<Database>;
export type Executor = Kysely<Database> | Trx;

export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /** PostgreSQL schema the connections run in, when not the default (tests run one schema per app). */
  schema?: string;
  /** Pool statistics for /metrics (PostgreSQL); SQLite has one connection. */
  poolStats(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface OpenDbOptions {
  /** PostgreSQL only: run every connection in this schema (tests use one schema per app instance). */
  schema?: string;
  poolSize?: number;
}

// SQLite's default BEGIN is DEFERRED, which can fail with SQLITE_BUSY when a reader upgrades to a writer
// while another process writes. BEGIN IMMEDIATE takes the write lock up front and waits (busy_timeout).
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly cfg: ConstructorParameters<typeof SqliteDialect>[0]) {
    super(cfg);
  }
  override createDriver() {
    return new ImmediateSqliteDriver(this.cfg);
  }
}

// PostgreSQL returns bigint (count(*)) as text by default; our counts fit in a JS number.
pg.types.setTypeParser(20, (v: string) => Number(v));

/**
 * Kysely's SQLite driver prepares every query again (parse + plan) each time it runs. Our queries are built from a
 * small set of shapes with bound parameters, so prepared statements are kept by SQL text and reused: the profile
 * of GET /v1/courses showed `prepare` at ~3% of CPU and sqlite3_prepare inside `executeQuery` for more.
 * Statements are only ever run to completion (`all`/`run`), so sharing one is safe on the single connection.
 */
function withStatementCache(sqlite: SqliteHandle, max = 1000) {
  const cache = new Map<string, SqliteStatement>();
  return {
    prepare(sql: string): SqliteStatement {
      let statement = cache.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        if (cache.size >= max) cache.delete(cache.keys().next().value as string);
        cache.set(sql, statement);
      }
      return statement;
    },
    close(): void {
      cache.clear();
      sqlite.close();
    },
  };
}

export function sqlitePath(databaseUrl: string): string {
  return databaseUrl.slice('sqlite:'.length);
}

export function openDb(databaseUrl: string, options: OpenDbOptions = {}): Db {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = sqlitePath(databaseUrl);
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    const sqlite = openSqlite(file);
    sqlite.exec('pragma journal_mode = WAL; pragma busy_timeout = 10000; pragma synchronous = NORMAL; pragma foreign_keys = ON');
    const kysely = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) as never }) });
    return {
      kysely,
      dialect: 'sqlite',
      poolStats: () => ({ total: 1, idle: 1, waiting: 0 }),
      close: () => kysely.destroy(),
    };
  }
  // The schema comes from the option or from the URL's `options=-c search_path=…` parameter.
  const urlOptions = new URL(databaseUrl).searchParams.get('options') ?? '';
  const schema = options.schema ?? /search_path=([A-Za-z0-9_]+)/.exec(urlOptions)?.[1];
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    options: options.schema ? `-c search_path=${options.schema}` : undefined,
  });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    dialect: 'postgres',
    schema,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => kysely.destroy(),
  };
}

function migratorFor(db: Db): Migrator {
  // Kysely looks for its bookkeeping tables in every schema unless told which one: name ours.
  // Migration numbers are reserved per area (records 002, webhooks 003, ...) and land in any order, so a database
  // that already has 008 must still accept 003 when it arrives.
  return new Migrator({ db: db.kysely, provider: migrationProvider, migrationTableSchema: db.schema, allowUnorderedMigrations: true });
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = migratorFor(db);
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** True when the database has every migration applied (for /readyz). */
export async function migrationsApplied(db: Db): Promise<boolean> {
  const all = await migratorFor(db).getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}

// SQLite names the columns of a violated unique index, PostgreSQL names the index: map both to the index name.
const SQLITE_UNIQUE_COLUMNS: Record<string, string> = {
  'users.org_id, users.email_normalized': 'users_org_email',
  'users.org_id, users.external_id': 'users_org_external',
  'enrolments.org_id, enrolments.learner_id, enrolments.course_id': 'enrolments_one_active',
  'idempotency_keys.app_id, idempotency_keys.key': 'idempotency_keys_pk',
  'organizations.slug': 'organizations_slug_key',
  'developers.email_normalized': 'developers_email_normalized_key',
  'operators.email_normalized': 'operators_email_normalized_key',
};

/**
 * The name of the unique index an error violated (e.g. "users_org_email"), "unknown" for a unique violation
 * we cannot name, or null when the error is not a unique violation.
 */
export function uniqueViolation(err: unknown): string | null {
  const e = err as { code?: string; message?: string; constraint?: string; errcode?: number };
  if (e?.code === '23505') return e.constraint ?? 'unknown';
  // better-sqlite3 names the extended code; node:sqlite gives its number (2067 UNIQUE, 1555 PRIMARYKEY).
  if (e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || e?.errcode === 2067 || e?.errcode === 1555) {
    const cols = /constraint failed: (.*)$/.exec(e.message ?? '')?.[1] ?? '';
    return SQLITE_UNIQUE_COLUMNS[cols] ?? 'unknown';
  }
  return null;
}
