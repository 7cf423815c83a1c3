// What every module needs, built once per process (or per test) and handed to buildApp.
import type { Config } from './config.js';
import type { Db } from './db/index.js';
import type { Clock } from './clock.js';
import type { ResolveAll } from './webhooks/url-guard.js';
import { TokenService } from './auth/tokens.js';
import { openDb, migrateToLatest } from './db/index.js';
import { systemClock } from './clock.js';
import { Mailer } from './mail/index.js';

export interface AppContext {
  config: Config;
  db: Db;
  clock: Clock;
  tokens: TokenService;
  /** Outgoing e-mail: SMTP when SMTP_URL is set, else .eml files in DATA_DIR/mail/. */
  mailer: Mailer;
  /** Name resolution for webhook targets (registration check and connect time); tests inject one. Default: DNS. */
  resolveAll?: ResolveAll;
}

export interface CreateContextOptions {
  clock?: Clock;
  /** PostgreSQL schema to run in (tests). */
  schema?: string;
  migrate?: boolean;
  /** A mailer of the caller's own (e.g. with a logger); by default one is made from the config. */
  mailer?: Mailer;
}

/** Opens the database, applies migrations (unless told not to) and loads the signing keys. */
export async function createContext(config: Config, options: CreateContextOptions = {}): Promise<AppContext> {
  const db = openDb(config.databaseUrl, { schema: options.schema });
  try {
    if (options.migrate !== false) await migrateToLatest(db);
    const clock = options.clock ?? systemClock;
    const tokens = new TokenService(db, config, clock);
    await tokens.init();
    const mailer = options.mailer ?? new Mailer(config);
    return { config, db, clock, tokens, mailer };
  } catch (err) {
    await db.close();
    throw err;
  }
}
