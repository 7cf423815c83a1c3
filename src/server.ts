// The entry that listens: builds the context and the app, listens on HOST:PORT (HTTPS with HTTP/2 and HTTP/1.1
// when TLS_CERT/TLS_KEY are set), starts the background runners, and closes with grace on SIGTERM/SIGINT:
//   1. /readyz answers 503 and the listener closes: no new connections;
//   2. in-flight requests finish (HTTP/2 sessions get GOAWAY, idle keep-alive connections are closed) and the
//      background runners stop (the webhook worker finishes or releases its claimed deliveries);
//   3. after SHUTDOWN_TIMEOUT whatever is left is cut off; then the database closes.
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { Http2Session } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type pino from 'pino';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { ConfigError, type Config } from './config.js';
import { buildApp, LOG_REDACT_PATHS } from './app.js';
import { createContext, type AppContext } from './context.js';
import { markShuttingDown } from './http/health.js';
import { createRedactingLogger } from './logging.js';
import { startRetention } from './ops/retention.js';
import { startWorker } from './webhooks/worker.js';
import { startCertificateExpiryJob } from './modules/certificates/expiry.js';

/**
 * Something that runs next to the HTTP server (retention jobs, the webhook delivery worker) and must stop before
 * the database closes. stop() should finish or hand back its current work within the shutdown bound.
 */
export interface BackgroundRunner {
  name: string;
  /** Finishes current work; when `handBack` aborts (the bound is near) it must hand unfinished work back at once. */
  stop(handBack?: AbortSignal): Promise<void>;
}

/**
 * Stops runners within a bound: they are asked to finish, and shortly before the bound (at most 1 s, at least a
 * quarter of it) to hand back what is left (the webhook worker releases its claimed deliveries). Resolves true when
 * every runner stopped in time.
 */
export async function stopRunners(runners: BackgroundRunner[], boundMs: number, log: Pick<pino.Logger, 'error'>): Promise<boolean> {
  const handBack = new AbortController();
  const timer = setTimeout(() => handBack.abort(), boundMs - Math.min(1000, boundMs / 4));
  try {
    const stopped = Promise.all(
      runners.map((r) => r.stop(handBack.signal).catch((err) => log.error({ err, runner: r.name }, 'background runner failed to stop'))),
    );
    return await withinBound(stopped, boundMs);
  } finally {
    clearTimeout(timer);
  }
}

export interface RunningServer {
  app: FastifyInstance;
  ctx: AppContext;
  url: string;
  /** Stopped by close(), after the listener and before the database. */
  runners: BackgroundRunner[];
  /** Graceful close (idempotent). Resolves true when everything finished within SHUTDOWN_TIMEOUT. */
  close(): Promise<boolean>;
}

export interface StartServerOptions {
  ctx?: AppContext;
  /** Where log lines go (tests capture them); standard output by default. */
  logDestination?: pino.DestinationStream;
  /** Start the background runners (default true). */
  background?: boolean;
}

export function createLogger(config: Config, destination?: pino.DestinationStream) {
  return createRedactingLogger({ level: config.logLevel, redactPaths: LOG_REDACT_PATHS, destination });
}

function readPem(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError(variable, `cannot read ${path}: ${(err as Error).message}`);
  }
}

/** Fastify options for HTTPS: HTTP/2 with HTTP/1.1 fallback, negotiated by ALPN. */
function tlsOptions(config: Config) {
  if (!config.tlsCert || !config.tlsKey) return {};
  return {
    http2: true as const,
    https: { allowHTTP1: true, cert: readPem('TLS_CERT', config.tlsCert), key: readPem('TLS_KEY', config.tlsKey) },
  };
}

/**
 * The jobs that run next to the API: retention, certificate expiry and (unless WEBHOOK_WORKER=false) the webhook
 * delivery worker. `serve` runs them in its one process; `serve --processes N` runs them once, in the primary.
 */
export function startBackgroundRunners(ctx: AppContext, log: FastifyBaseLogger): BackgroundRunner[] {
  const config = ctx.config;
  const runners: BackgroundRunner[] = [startRetention(ctx, log)];
  // The webhook delivery worker; WEBHOOK_WORKER=false leaves delivery to separate `lmsapi worker` processes.
  if (config.webhookWorkerInServe) runners.push(startWorker(ctx, { logger: log as never }));
  runners.push({
    name: 'certificate-expiry',
    stop: startCertificateExpiryJob(ctx, {
      intervalMs: config.certificateExpiryIntervalMs,
      onError: (err) => log.error({ err }, 'certificate expiry: run failed (will retry at the next interval)'),
      onRun: (expired) => {
        if (expired > 0) log.info({ expired }, 'certificate expiry: certificates expired');
      },
    }),
  });
  return runners;
}

export async function startServer(config: Config, options: StartServerOptions = {}): Promise<RunningServer> {
  const logger = createLogger(config, options.logDestination);
  const tls = tlsOptions(config);
  const ctx = options.ctx ?? (await createContext(config));
  const app = await buildApp(ctx, { loggerInstance: logger as never, fastify: tls as never });
  const connections = trackConnections(app.server as never, Boolean(config.tlsCert));
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const warning = insecureBindingWarning(config);
  if (warning) app.log.warn({ host: config.host, trust_proxy: config.trustProxy }, warning);

  const runners = options.background !== false ? startBackgroundRunners(ctx, app.log) : [];

  let closing: Promise<boolean> | null = null;
  const close = () => {
    closing ??= (async () => {
      markShuttingDown(ctx);
      const bound = config.shutdownTimeoutMs;
      const appClosed = app.close();
      // HTTP/2 clients get GOAWAY (no new streams; open ones finish). Once the last in-flight request is
      // answered, idle keep-alive connections are closed so that the listener can finish closing.
      connections.goAway();
      void connections.idle().then(() => connections.endAll());
      const stopped = stopRunners(runners, bound, app.log);
      const clean = (await withinBound(appClosed, bound)) && (await stopped);
      if (!clean) {
        app.log.error({ in_flight: connections.inFlight(), timeout_ms: bound }, 'shutdown bound reached: cutting off what is left');
        await stopped;
        connections.destroyAll();
        await withinBound(appClosed, 1000);
      }
      await ctx.db.close();
      app.log.info({ clean }, 'closed');
      return clean;
    })();
    return closing;
  };

  const scheme = config.tlsCert ? 'https' : 'http';
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
  return { app, ctx, url: `${scheme}://${hostForUrl}:${port}`, runners, close };
}

export async function withinBound(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Follows connections, HTTP/2 sessions and in-flight requests so that close() can drain them. */
function trackConnections(server: import('node:net').Server, tls: boolean) {
  const sockets = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  let inFlight = 0;
  let waiters: (() => void)[] = [];
  server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    res.once('close', () => {
      inFlight--;
      if (inFlight === 0 && waiters.length) {
        const w = waiters;
        waiters = [];
        for (const fn of w) fn();
      }
    });
  });
  return {
    inFlight: () => inFlight,
    idle: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    goAway: () => {
      for (const s of sessions) s.close();
    },
    /** Half-closes what is left once nothing is in flight (idle keep-alive connections). */
    endAll: () => {
      for (const s of sessions) s.close();
      for (const s of sockets) if (!s.destroyed) s.end();
    },
    destroyAll: () => {
      for (const s of sessions) s.destroy();
      for (const s of sockets) s.destroy();
    },
  };
}

/** Plain HTTP beyond loopback is only right behind a TLS-terminating proxy: say so at start. */
export function insecureBindingWarning(config: Config): string | null {
  if (isLoopback(config.host) || config.tlsCert) return null;
  return (
    `listening on ${config.host} with plain HTTP: a TLS-terminating proxy is expected in front ` +
    `(set TRUST_PROXY=true so X-Forwarded-For/-Proto are trusted), or set TLS_CERT and TLS_KEY to serve HTTPS`
  );
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

interface Closable {
  close(): Promise<boolean | void>;
  app?: { log: { info(o: object, m: string): void; warn(o: object, m: string): void; error(o: object, m: string): void } };
}

/**
 * Closes the server on SIGTERM/SIGINT and exits: 0 when everything closed within SHUTDOWN_TIMEOUT, 1 when it had
 * to cut work off. A second signal exits at once. A backstop exits if closing hangs past the bound.
 */
export function closeOnSignals(server: Closable, graceMs = 10_000): void {
  const log = server.app?.log ?? { info: () => {}, warn: () => {}, error: () => {} };
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    signalled = true;
    log.info({ signal }, 'shutting down');
    const backstop = setTimeout(() => {
      log.error({}, 'shutdown hung past its bound: exiting');
      process.exit(1);
    }, graceMs + 5_000);
    backstop.unref();
    server.close().then(
      (clean) => process.exit(clean === false ? 1 : 0),
      (err) => {
        log.error({ err }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
