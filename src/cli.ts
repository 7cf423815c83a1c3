// The `lmsapi` command. Every --json output is one JSON object on stdout; errors go to stderr with a
// non-zero exit code. Configuration comes from the environment (and an optional .env file), validated first.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig, loadDotEnv, redactUrl, type Config } from './config.js';
import { createContext, type AppContext } from './context.js';
import { migrateToLatest, openDb } from './db/index.js';
import { closeOnSignals, createLogger, startBackgroundRunners, startServer, stopRunners, type BackgroundRunner } from './server.js';
import { startRetention } from './ops/retention.js';
import { startWorker } from './webhooks/worker.js';
import { seedDemo, type DemoResult } from './demo/seed.js';
import { isClusterWorker, runClusterPrimary } from './cluster.js';
import { backupSqlite, restoreSqlite } from './ops/backup.js';
import { createOrganization, setSeatTotal } from './modules/organization/service.js';
import { createApprovedApplication } from './modules/applications/service.js';
import { importCatalogue } from './modules/catalogue/service.js';
import { parseScopes } from './auth/scopes.js';
import { AppError } from './http/errors.js';

export class CliError extends Error {}

function config(): Config {
  loadDotEnv();
  return loadConfig();
}

/** Runs a command with a context, closing the database afterwards. */
async function withContext<T>(fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const ctx = await createContext(config());
  try {
    return await fn(ctx);
  } finally {
    await ctx.db.close();
  }
}

function output(json: boolean, value: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? JSON.stringify(value) + '\n' : text + '\n');
}

export function buildCli(): Command {
  const program = new Command('lmsapi')
    .description('Learning-Management Integration API: server, worker and operator commands')
    .showHelpAfterError()
    .exitOverride();

  program
    .command('serve')
    .description('run the API (and the webhook delivery worker); applies migrations on start')
    .option('--demo', 'seed the demo organization, catalogue and application on first start, and print the credentials')
    .option('--processes <n>', 'API processes sharing the port (Node cluster; the primary runs no HTTP)', (v) => parseWholeNumber('--processes', v), 1)
    .option('--no-worker', 'do not run the webhook delivery worker here (run `lmsapi worker` processes instead)')
    .action(async (opts: { demo?: boolean; processes: number; worker: boolean }) => {
      const loaded = config();
      // --no-worker is the command-line form of WEBHOOK_WORKER=false.
      const cfg: Config = { ...loaded, webhookWorkerInServe: loaded.webhookWorkerInServe && opts.worker };
      if (opts.processes < 1) throw new CliError('--processes must be at least 1');
      if (isClusterWorker()) {
        // One of the API processes of `serve --processes N`: HTTP only; the primary runs the background jobs.
        closeOnSignals(await startServer(cfg, { background: false }), cfg.shutdownTimeoutMs);
        return;
      }
      if (opts.processes > 1) {
        // The primary: migrations and the first signing key once, before forking; then the background jobs
        // (retention, certificate expiry, and the webhook delivery worker unless --no-worker) and no HTTP.
        const ctx = await createContext(cfg);
        const demo = opts.demo ? await seedDemo(ctx) : null;
        const logger = createLogger(cfg);
        const runners = startBackgroundRunners(ctx, logger as never);
        runClusterPrimary({
          processes: opts.processes,
          graceMs: cfg.shutdownTimeoutMs + 5_000,
          log: (m) => logger.warn(m),
          onListening: ({ port }) => {
            const url = `${cfg.tlsCert ? 'https' : 'http'}://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${port}`;
            process.stdout.write(serveBanner(cfg, url, ctx.mailer.describe(), demo, `${opts.processes} API processes`).join('\n') + '\n');
          },
          onShutdown: async () => {
            // Within the bound; the webhook worker hands back what it is still sending near it.
            await stopRunners(runners, cfg.shutdownTimeoutMs, logger);
            await ctx.db.close();
          },
        });
        return;
      }
      const server = await startServer(cfg);
      closeOnSignals(server, cfg.shutdownTimeoutMs);
      const demo = opts.demo ? await seedDemo(server.ctx) : null;
      process.stdout.write(serveBanner(cfg, server.url, server.ctx.mailer.describe(), demo, null).join('\n') + '\n');
    });

  program
    .command('worker')
    .description('run the webhook delivery worker and the retention jobs without the API (next to API processes started with WEBHOOK_WORKER=false)')
    .option('--json', 'print JSON lines (started, stopped with counts)')
    .action(async (opts: { json?: boolean }) => {
      const cfg = config();
      const logger = createLogger(cfg);
      const ctx = await createContext(cfg);
      const worker = startWorker(ctx, { logger });
      // The retention jobs run in every process that runs background work (idempotent deletes: they share it).
      const runners: BackgroundRunner[] = [worker, startRetention(ctx, logger)];
      output(Boolean(opts.json), { worker: worker.id, status: 'started' }, `webhook worker ${worker.id} running`);
      let signalled = false;
      const onSignal = (signal: NodeJS.Signals) => {
        if (signalled) process.exit(1);
        signalled = true;
        logger.info({ signal }, 'stopping the webhook worker');
        // Finishes the deliveries it holds; near SHUTDOWN_TIMEOUT it hands the rest back (released, due at once).
        stopRunners(runners, cfg.shutdownTimeoutMs, logger)
          .then(async (clean) => {
            await ctx.db.close();
            return clean;
          })
          .then(
            (clean) => {
              const s = worker.stats;
              output(Boolean(opts.json), { worker: worker.id, status: 'stopped', ...s }, `webhook worker ${worker.id} stopped: ${s.succeeded} delivered`);
              process.exit(clean ? 0 : 1);
            },
            (err) => {
              logger.error({ err }, 'error while stopping the worker');
              process.exit(1);
            },
          );
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
    });

  program
    .command('migrate')
    .description('apply database migrations and exit')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const cfg = config();
      const db = openDb(cfg.databaseUrl);
      try {
        const applied = await migrateToLatest(db);
        output(Boolean(opts.json), { applied, database: redactUrl(cfg.databaseUrl) }, applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
      } finally {
        await db.close();
      }
    });

  program
    .command('demo')
    .description('seed a demo organization, a catalogue and an approved application; print its credentials')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const demo = await withContext(seedDemo);
      const c = demo.credentials;
      output(
        Boolean(opts.json),
        { created: demo.created, org_id: demo.org_id, client_id: c?.client_id ?? null, client_secret: c?.client_secret ?? null },
        [
          demo.created ? 'Demo data created.' : 'Demo data already present.',
          `org_id:        ${demo.org_id}`,
          `client_id:     ${c?.client_id ?? '(unknown)'}`,
          `client_secret: ${c?.client_secret ?? '(not kept: create a new application with lmsapi apps create)'}`,
        ].join('\n'),
      );
    });

  const orgs = program.command('orgs').description('organizations and their seats');
  orgs
    .command('create')
    .description('create an organization with a seat allowance')
    .requiredOption('--name <name>', 'organization name')
    .requiredOption('--seats <n>', 'number of seats', (v) => parseWholeNumber('--seats', v))
    .option('--slug <slug>', 'URL-friendly name (default: from the name)')
    .option('--json', 'print JSON')
    .action(async (opts: { name: string; seats: number; slug?: string; json?: boolean }) => {
      const org = await withContext((ctx) => createOrganization(ctx, opts));
      output(Boolean(opts.json), { ...org }, `created ${org.id} (${org.name}) with ${org.seats.total} seats`);
    });
  orgs
    .command('set-seats')
    .description("change an organization's seat total")
    .argument('<org>', 'organization id')
    .argument('<seats>', 'new total', (v) => parseWholeNumber('seats', v))
    .option('--json', 'print JSON')
    .action(async (orgId: string, seats: number, opts: { json?: boolean }) => {
      const allowance = await withContext((ctx) => setSeatTotal(ctx, orgId, seats));
      output(Boolean(opts.json), { org_id: orgId, ...allowance }, `${orgId}: ${allowance.total} seats, ${allowance.in_use} in use`);
    });

  const apps = program.command('apps').description('API applications (client credentials)');
  apps
    .command('create')
    .description('create an approved application; prints client_id and client_secret once')
    .requiredOption('--org <org>', 'organization id')
    .requiredOption('--name <name>', 'application name')
    .requiredOption('--scopes <scopes>', 'space-separated scopes, e.g. "courses:read learners:read"')
    .option('--json', 'print JSON')
    .action(async (opts: { org: string; name: string; scopes: string; json?: boolean }) => {
      const { scopes, unknown } = parseScopes(opts.scopes);
      if (unknown.length) throw new CliError(`unknown scopes: ${unknown.join(' ')}`);
      if (!scopes.length) throw new CliError('--scopes needs at least one scope');
      const creds = await withContext((ctx) => createApprovedApplication(ctx, { orgId: opts.org, name: opts.name, scopes }));
      output(
        Boolean(opts.json),
        { ...creds },
        `client_id:     ${creds.client_id}\nclient_secret: ${creds.client_secret}\n(the secret is shown only this once)`,
      );
    });

  const operators = program.command('operators').description('operators of the console (/console)');
  operators
    .command('add')
    .description('add an operator; they sign in at /console with a link e-mailed to this address')
    .argument('<email>', 'e-mail address')
    .option('--json', 'print JSON')
    .action(async (email: string, opts: { json?: boolean }) => {
      const { addOperator } = await import('./modules/accounts/service.js');
      const op = await withContext((ctx) => addOperator(ctx, email));
      output(Boolean(opts.json), { id: op.id, email: op.email }, `added operator ${op.email} (${op.id}); sign in at /console`);
    });

  const courses = program.command('courses').description('the course catalogue');
  courses
    .command('import')
    .description('import categories and courses from a JSON file (see demo/catalogue.json); existing titles are kept')
    .argument('<file>', 'JSON file')
    .option('--json', 'print JSON')
    .action(async (file: string, opts: { json?: boolean }) => {
      let data: unknown;
      try {
        data = JSON.parse(readFileSync(file, 'utf8'));
      } catch (err) {
        throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
      }
      const result = await withContext((ctx) => importCatalogue(ctx, data));
      output(Boolean(opts.json), result, `${result.created} courses created (${result.courses} in the file, ${result.categories} categories)`);
    });

  program
    .command('backup')
    .description('write an online, consistent copy of the SQLite database to FILE (safe while the service runs)')
    .argument('<file>', 'where to write the copy')
    .option('--force', 'overwrite FILE if it exists')
    .option('--json', 'print JSON')
    .action((file: string, opts: { force?: boolean; json?: boolean }) => {
      const copy = backupSqlite(config().databaseUrl, file, { force: opts.force });
      output(Boolean(opts.json), { ...copy }, `backup written to ${copy.file} (${copy.bytes} bytes, integrity ok)`);
    });

  program
    .command('restore')
    .description('replace the SQLite database with a backup made by lmsapi backup (stop the service first)')
    .argument('<file>', 'the backup file')
    .option('--json', 'print JSON')
    .action(async (file: string, opts: { json?: boolean }) => {
      const restored = await restoreSqlite(config().databaseUrl, file);
      output(
        Boolean(opts.json),
        { ...restored },
        `restored ${restored.database} from ${file}` + (restored.previous ? `\n(the database it replaced was kept as ${restored.previous})` : ''),
      );
    });

  program
    .command('openapi')
    .description('print the OpenAPI 3.1 document (JSON, or YAML with --yaml) without starting a server')
    .option('--yaml', 'print YAML')
    .action(async (opts: { yaml?: boolean }) => {
      const { buildApp } = await import('./app.js');
      const cfg = loadConfig({ ...process.env, DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
      const ctx = await createContext(cfg);
      const app = await buildApp(ctx);
      await app.ready();
      const doc = opts.yaml ? String(app.swagger({ yaml: true })) : JSON.stringify(app.swagger(), null, 2);
      process.stdout.write(doc + '\n');
      await app.close();
      await ctx.db.close();
    });

  return program;
}

function serveBanner(cfg: Config, url: string, mail: string, demo: DemoResult | null, processes: string | null): string[] {
  const lines = [
    `LMS Integration API listening on ${url}${processes ? ` (${processes})` : ''}`,
    `  API reference: ${cfg.publicUrl}/docs`,
    `  Developer portal: ${cfg.publicUrl}/portal   Operator console: ${cfg.publicUrl}/console (lmsapi operators add EMAIL)`,
    `  E-mail: ${mail}`,
  ];
  if (demo) {
    lines.push(demo.created ? '  Demo data created.' : '  Demo data already present (not created again).');
    if (demo.credentials) {
      lines.push(
        `  Demo client_id:     ${demo.credentials.client_id}`,
        `  Demo client_secret: ${demo.credentials.client_secret}`,
        `  Try: curl -s ${cfg.publicUrl}/v1/oauth/token -H 'content-type: application/json' \\`,
        `         -d '{"client_id":"${demo.credentials.client_id}","client_secret":"${demo.credentials.client_secret}"}'`,
      );
    }
  }
  return lines;
}

function parseWholeNumber(name: string, value: string): number {
  if (!/^\d+$/.test(value)) throw new CliError(`${name} must be a whole number`);
  return Number(value);
}

export async function runCli(argv: string[]): Promise<number> {
  try {
    await buildCli().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    const message =
      err instanceof ConfigError
        ? `configuration error: ${err.message}`
        : err instanceof CliError || err instanceof AppError || (err as Error)?.constructor?.name?.endsWith('Error')
          ? `error: ${(err as Error).message}`
          : String(err);
    process.stderr.write(message + '\n');
    return err instanceof ConfigError ? 2 : 1;
  }
}

// Run when executed directly (node dist/cli.js, tsx src/cli.ts, or bin/lmsapi.js).
const invoked = process.argv[1] ?? '';
if (/(cli\.(ts|js)|lmsapi(\.js)?)$/.test(invoked)) {
  const code = await runCli(process.argv.slice(2));
  // serve keeps running (its server holds the event loop); other commands exit with their code.
  if (code !== 0) process.exit(code);
}
