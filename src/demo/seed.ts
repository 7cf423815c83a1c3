// `lmsapi demo` and `npm start`: a demo organization, the demo catalogue and an approved application.
// Runs once: a second run finds the demo organization and only reprints the credentials, which are kept in
// DATA_DIR/demo-credentials.json (0600) because the database holds only the secret's hash.
import { readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AppContext } from '../context.js';
import { ALL_SCOPES } from '../auth/scopes.js';
import { createOrganization } from '../modules/organization/service.js';
import { createApprovedApplication, type IssuedCredentials } from '../modules/applications/service.js';
import { importCatalogue } from '../modules/catalogue/service.js';

export const DEMO_ORG_SLUG = 'demo-academy';
export const DEMO_CATALOGUE = new URL('../../demo/catalogue.json', import.meta.url);

export interface DemoResult {
  created: boolean;
  org_id: string;
  credentials: IssuedCredentials | null;
}

export async function seedDemo(ctx: AppContext): Promise<DemoResult> {
  const credentialsFile = join(ctx.config.dataDir, 'demo-credentials.json');
  const existing = await ctx.db.kysely.selectFrom('organizations').select('id').where('slug', '=', DEMO_ORG_SLUG).executeTakeFirst();
  if (existing) {
    const credentials = existsSync(credentialsFile) ? (JSON.parse(readFileSync(credentialsFile, 'utf8')) as IssuedCredentials) : null;
    return { created: false, org_id: existing.id, credentials };
  }
  await importCatalogue(ctx, JSON.parse(readFileSync(DEMO_CATALOGUE, 'utf8')));
  const org = await createOrganization(ctx, { name: 'Demo Academy', seats: 25, slug: DEMO_ORG_SLUG });
  const credentials = await createApprovedApplication(ctx, { orgId: org.id, name: 'Demo integration', scopes: ALL_SCOPES });
  mkdirSync(ctx.config.dataDir, { recursive: true });
  writeFileSync(credentialsFile, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  return { created: true, org_id: org.id, credentials };
}
