// The entry that listens: builds the context and the app, listens on HOST:PORT, and closes with grace on
// SIGTERM/SIGINT (stop accepting, finish in-flight requests within a bound, close the database).
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { buildApp, LOG_REDACT_PATHS } from './app.js';
import { createContext, type AppContext } from './context.js';
import { healthState } from './http/health.js';

export interface RunningServer {
  app: FastifyInstance;
  ctx: AppContext;
  url: string;
  close(): Promise<void>;
}

export function createLogger(config: Config) {
  return pino({
    level: config.logLevel,
    redact: { paths: LOG_REDACT_PATHS, censor: '[redacted]' },
  });
}

export async function startServer(config: Config, options: { ctx?: AppContext } = {}): Promise<RunningServer> {
  const logger = createLogger(config);
  const ctx = options.ctx ?? (await createContext(config));
  const app = await buildApp(ctx, { loggerInstance: logger as never });
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  if (!isLoopback(config.host) && !config.tlsCert) {
    app.log.warn(
      { host: config.host },
      'listening on a non-loopback address without TLS: put a TLS-terminating proxy in front (and set TRUST_PROXY=true)',
    );
  }
  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      healthState.shuttingDown = true;
      await app.close();
      await ctx.db.close();
    })();
    return closing;
  };
  return { app, ctx, url: `${config.tlsCert ? 'https' : 'http'}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`, close };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

/** Closes the server on SIGTERM/SIGINT; a second signal exits at once. */
export function closeOnSignals(server: RunningServer, graceMs = 10_000): void {
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      server.app.log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    signalled = true;
    server.app.log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      server.app.log.error('shutdown took too long: exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    server.close().then(
      () => process.exit(0),
      (err) => {
        server.app.log.error({ err }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
