// Migrations are listed here in order (not discovered from files), so they work from the TypeScript
// source and from the compiled output alike. Add a file and a line; never edit a migration that has shipped.
import type { Migration, MigrationProvider } from 'kysely';
import * as m001 from './001_initial.js';
import * as m003 from './003_webhooks.js';
import * as m008 from './008_certificates.js';

const migrations: Record<string, Migration> = {
  '001_initial': m001,
  '003_webhooks': m003,
  '008_certificates': m008,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
