// The SQLite connection under Kysely. On Node 20 and 22 it is better-sqlite3; on Node 24 and later it is Node's
// built-in node:sqlite, because better-sqlite3 12 (the last line that runs on Node 20) aborts the process on Node 24
// (its Statement destructor calls RemoveEnvironmentCleanupHook without an Environment), and better-sqlite3 13, which
// fixes that, does not run on Node 20. Both are adapted to the small interface Kysely's SqliteDialect uses.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export interface SqliteStatement {
  readonly reader: boolean;
  all(parameters: readonly unknown[]): unknown[];
  run(parameters: readonly unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  iterate(parameters: readonly unknown[]): IterableIterator<unknown>;
}

export interface SqliteHandle {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
  close(): void;
  readonly driver: 'better-sqlite3' | 'node:sqlite';
}

export function preferredSqliteDriver(): SqliteHandle['driver'] {
  const forced = process.env.LMSAPI_SQLITE_DRIVER;
  if (forced === 'better-sqlite3' || forced === 'node:sqlite') return forced;
  return Number(process.versions.node.split('.')[0]) >= 24 ? 'node:sqlite' : 'better-sqlite3';
}

export interface OpenSqliteOptions {
  readonly?: boolean;
  /** Fail instead of creating a new, empty database file. */
  mustExist?: boolean;
}

export function openSqlite(file: string, options: OpenSqliteOptions = {}): SqliteHandle {
  if (options.mustExist && !existsSync(file)) throw new Error(`no database file at ${file}`);
  return preferredSqliteDriver() === 'node:sqlite' ? openNodeSqlite(file, options) : openBetterSqlite(file, options);
}

/** Runs a statement and returns its rows (pragmas, checks). */
export function queryAll<T>(db: SqliteHandle, sql: string, parameters: unknown[] = []): T[] {
  return db.prepare(sql).all(parameters) as T[];
}

function openBetterSqlite(file: string, options: OpenSqliteOptions): SqliteHandle {
  const Database = require('better-sqlite3') as typeof import('better-sqlite3');
  const db = new Database(file, { readonly: Boolean(options.readonly), fileMustExist: Boolean(options.mustExist) });
  return {
    driver: 'better-sqlite3',
    prepare: (sql) => db.prepare(sql) as unknown as SqliteStatement,
    exec: (sql) => void db.exec(sql),
    close: () => db.close(),
  };
}

interface NodeStatementSync {
  columns(): unknown[];
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

function openNodeSqlite(file: string, options: OpenSqliteOptions): SqliteHandle {
  const { DatabaseSync } = require('node:sqlite') as {
    DatabaseSync: new (path: string, o: { readOnly: boolean }) => { prepare(sql: string): NodeStatementSync; exec(sql: string): void; close(): void };
  };
  const db = new DatabaseSync(file, { readOnly: Boolean(options.readonly) });
  return {
    driver: 'node:sqlite',
    prepare(sql) {
      const statement = db.prepare(sql);
      // better-sqlite3's `reader`: the statement returns rows (SELECT, or a write with RETURNING).
      const reader = statement.columns().length > 0;
      return {
        reader,
        all: (parameters) => statement.all(...parameters),
        run: (parameters) => statement.run(...parameters),
        iterate: (parameters) => statement.iterate(...parameters),
      };
    },
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
  };
}
