// Backups of the embedded SQLite database. `lmsapi backup FILE` takes an online, consistent copy while the service
// runs: VACUUM INTO reads the database inside one read transaction (WAL mode lets writers go on meanwhile), so the
// copy holds exactly what was committed when it started — no torn pages, no half transactions — and it comes out
// compacted. The copy is written next to FILE, checked (integrity_check) and only then renamed into place.
// `lmsapi restore FILE` puts such a copy back (service stopped), keeping a copy of what it replaces.
// PostgreSQL has its own tools: see README "Running in production" (pg_dump / pg_restore).
import { copyFileSync, existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { openSqlite, queryAll, type SqliteHandle } from '../db/sqlite-driver.js';
import { sqlitePath } from '../db/index.js';

export class BackupError extends Error {}

export const POSTGRES_RECIPE =
  'PostgreSQL: back up with `pg_dump --format=custom --file=lmsapi.dump "$DATABASE_URL"` and restore with ' +
  '`pg_restore --clean --if-exists --no-owner --dbname="$DATABASE_URL" lmsapi.dump` (see README, Running in production).';

function sqliteFileOf(databaseUrl: string): string {
  if (!databaseUrl.startsWith('sqlite:')) throw new BackupError(`lmsapi backup and restore handle the SQLite database. ${POSTGRES_RECIPE}`);
  const file = sqlitePath(databaseUrl);
  if (file === ':memory:') throw new BackupError('an in-memory database cannot be backed up');
  return resolve(file);
}

export interface CheckedCopy {
  file: string;
  bytes: number;
  integrity: 'ok';
  migrations: string[];
}

/** Opens a copy read-only and checks it: integrity_check ok, foreign keys hold, and it is one of our databases. */
export function checkCopy(file: string): CheckedCopy {
  let db: SqliteHandle;
  try {
    db = openSqlite(file, { readonly: true, mustExist: true });
  } catch (err) {
    throw new BackupError(`cannot open ${file}: ${(err as Error).message}`);
  }
  try {
    const integrity = queryAll<{ integrity_check: string }>(db, 'pragma integrity_check')[0]?.integrity_check;
    if (integrity !== 'ok') throw new BackupError(`${file} failed integrity_check: ${String(integrity)}`);
    const fk = queryAll(db, 'pragma foreign_key_check');
    if (fk.length > 0) throw new BackupError(`${file} has ${fk.length} rows whose foreign keys do not hold`);
    const hasMigrations = queryAll(db, `select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'`).length > 0;
    if (!hasMigrations) throw new BackupError(`${file} is not an lmsapi database (no migration table)`);
    const migrations = queryAll<{ name: string }>(db, 'select name from kysely_migration order by name').map((r) => r.name);
    return { file, bytes: statSync(file).size, integrity: 'ok', migrations };
  } catch (err) {
    if (err instanceof BackupError) throw err;
    throw new BackupError(`${file} is not a readable SQLite database: ${(err as Error).message}`);
  } finally {
    db.close();
  }
}

/** An online, consistent copy of the SQLite database at `target` (refuses to overwrite unless force). */
export function backupSqlite(databaseUrl: string, target: string, options: { force?: boolean } = {}): CheckedCopy {
  const source = sqliteFileOf(databaseUrl);
  if (!existsSync(source)) throw new BackupError(`there is no database at ${source}`);
  const out = resolve(target);
  if (out === source) throw new BackupError('the backup file must not be the database itself');
  if (existsSync(out) && !options.force) throw new BackupError(`${out} exists; choose another name or pass --force`);
  if (!existsSync(dirname(out))) throw new BackupError(`the folder ${dirname(out)} does not exist`);
  const partial = `${out}.partial-${process.pid}`;
  rmSync(partial, { force: true });
  const db = openSqlite(source, { mustExist: true });
  try {
    db.exec('pragma busy_timeout = 10000');
    db.prepare('VACUUM INTO ?').run([partial]);
  } catch (err) {
    rmSync(partial, { force: true });
    throw new BackupError(`backup failed: ${(err as Error).message}`);
  } finally {
    db.close();
  }
  try {
    checkCopy(partial);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
  renameSync(partial, out);
  return checkCopy(out);
}

export interface Restored extends CheckedCopy {
  database: string;
  /** A copy of the database as it was before the restore (null when there was none). */
  previous: string | null;
}

/**
 * Replaces the SQLite database with a backup. Run it with the service stopped. The current database is first copied
 * (consistently, WAL included) to `<database>.before-restore-<time>`; the backup is then written in through SQLite's
 * backup API, which replaces the file's content transactionally and takes care of its WAL.
 */
export async function restoreSqlite(databaseUrl: string, backupFile: string, now = new Date()): Promise<Restored> {
  const target = sqliteFileOf(databaseUrl);
  const from = resolve(backupFile);
  if (from === target) throw new BackupError('the backup file is the database itself');
  checkCopy(from);
  let previous: string | null = null;
  if (existsSync(target)) {
    previous = `${target}.before-restore-${now.toISOString().replace(/[:.]/g, '-')}`;
    const current = openSqlite(target, { mustExist: true });
    try {
      current.exec('pragma busy_timeout = 10000');
      current.prepare('VACUUM INTO ?').run([previous]);
    } finally {
      current.close();
    }
  }
  const incoming = `${target}.restore-${process.pid}`;
  copyFileSync(from, incoming);
  for (const suffix of ['-wal', '-shm']) rmSync(target + suffix, { force: true });
  renameSync(incoming, target);
  return { ...checkCopy(target), database: target, previous };
}
