// The one place that reads process.env. Every setting is parsed and validated here; a bad value stops
// start-up with a message naming the variable.
import { resolve, join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';

export interface Config {
  port: number;
  host: string;
  publicUrl: string;
  dataDir: string;
  databaseUrl: string; // "sqlite:<path>" or "postgres://..."
  redisUrl: string | null;
  smtpUrl: string | null;
  mailFrom: string;
  rateLimitPerMinute: number;
  /** Requests per minute per client address for calls that carry no valid token (token endpoint, 401s, unknown routes). */
  rateLimitUnauthenticatedPerMinute: number;
  /** Failed token requests allowed per client id, and per address, within tokenGuardWindowMs before 429. */
  tokenGuardFailuresPerClient: number;
  tokenGuardFailuresPerAddress: number;
  tokenGuardWindowMs: number;
  /** Prefix of every Redis key (several deployments, or tests, can share one Redis). */
  redisKeyPrefix: string;
  webhookAllowHttp: boolean;
  webhookAllowPrivateNetworks: boolean;
  webhookRetryScheduleMs: number[];
  webhookTimeoutMs: number;
  /** How long a worker's claim on a delivery lasts; a dead worker's claims are picked up again after it. */
  webhookLeaseMs: number;
  /** Deliveries one worker sends at the same time. */
  webhookConcurrency: number;
  /** How often an idle worker looks for due deliveries. */
  webhookPollMs: number;
  /** An endpoint whose deliveries have all failed for this long is disabled. */
  webhookDisableAfterMs: number;
  /** Run the delivery worker inside `lmsapi serve` (turn off for API-only processes next to `lmsapi worker`). */
  webhookWorkerInServe: boolean;
  logLevel: string;
  tlsCert: string | null;
  tlsKey: string | null;
  trustProxy: boolean;
  tokenIssuer: string;
  tokenAudience: string;
  eventRetentionDays: number;
  /** How long a graceful shutdown may take before in-flight work is cut off (SHUTDOWN_TIMEOUT). */
  shutdownTimeoutMs: number;
  /** How often the retention jobs run (RETENTION_INTERVAL), and how many rows one delete statement removes. */
  retentionIntervalMs: number;
  retentionBatchSize: number;
  /** How often the server moves certificates past expires_at to expired. */
  certificateExpiryIntervalMs: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

type Env = Record<string, string | undefined>;

const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(variable: string, value: string): number {
  const m = DURATION.exec(value.trim());
  if (!m) throw new ConfigError(variable, `"${value}" is not a duration like 500ms, 5s, 5m, 2h or 1d`);
  return Number(m[1]) * UNIT_MS[m[2]];
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `"${raw}" is not a whole number`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `${n} is outside ${min}..${max}`);
  return n;
}

function atLeast(variable: string, ms: number, min: number): number {
  if (ms < min) throw new ConfigError(variable, `must be at least ${min}ms`);
  return ms;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `"${raw}" is not true or false`);
}

function str(env: Env, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw === '' ? null : raw;
}

function url(env: Env, name: string, protocols: string[]): string | null {
  const raw = str(env, name);
  if (raw === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `"${redactUrl(raw)}" is not a URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map((p) => p + '//').join(' or ')}`);
  }
  return raw;
}

/** Hides the password part of a URL so that it can be printed or logged. */
export function redactUrl(raw: string): string {
  return raw.replace(/\/\/([^:/@]+):([^@]+)@/, '//$1:***@');
}

/** Reads a `.env` file in the working directory (if any) without overriding variables already set. */
export function loadDotEnv(env: Env = process.env, file = '.env'): void {
  if (!existsSync(file)) return;
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const m = /^\s*([A-Z0-9_]+)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trimStart().startsWith('#')) continue;
    const value = m[2].replace(/^(['"])(.*)\1$/, '$2');
    if (env[m[1]] === undefined) env[m[1]] = value;
  }
}

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 3000, 0, 65535);
  const host = str(env, 'HOST') ?? '127.0.0.1';
  const dataDir = resolve(str(env, 'DATA_DIR') ?? './data');
  const tlsCert = str(env, 'TLS_CERT');
  const tlsKey = str(env, 'TLS_KEY');
  if ((tlsCert === null) !== (tlsKey === null)) {
    throw new ConfigError(tlsCert === null ? 'TLS_CERT' : 'TLS_KEY', 'TLS_CERT and TLS_KEY must be set together');
  }
  const scheme = tlsCert ? 'https' : 'http';
  const hostForUrl = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const publicUrl = (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `${scheme}://${hostForUrl}:${port}`).replace(/\/+$/, '');
  const databaseUrl =
    url(env, 'DATABASE_URL', ['postgres:', 'postgresql:', 'sqlite:']) ?? `sqlite:${join(dataDir, 'lmsapi.sqlite')}`;
  const schedule = (str(env, 'WEBHOOK_RETRY_SCHEDULE') ?? '5s,5m,30m,2h,5h,10h,10h')
    .split(',')
    .map((part) => parseDuration('WEBHOOK_RETRY_SCHEDULE', part));
  const webhookTimeoutMs = parseDuration('WEBHOOK_TIMEOUT', str(env, 'WEBHOOK_TIMEOUT') ?? '15s');
  if (webhookTimeoutMs < 1) throw new ConfigError('WEBHOOK_TIMEOUT', 'must be at least 1ms');
  const leaseRaw = str(env, 'WEBHOOK_LEASE');
  const webhookLeaseMs = leaseRaw ? parseDuration('WEBHOOK_LEASE', leaseRaw) : webhookTimeoutMs + 15_000;
  if (webhookLeaseMs <= webhookTimeoutMs) {
    throw new ConfigError('WEBHOOK_LEASE', 'must be longer than WEBHOOK_TIMEOUT (a claim has to outlast one attempt)');
  }
  const logLevel = str(env, 'LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `"${logLevel}" is not one of fatal, error, warn, info, debug, trace, silent`);
  }
  const mailFrom = str(env, 'MAIL_FROM') ?? 'no-reply@localhost';
  return {
    port,
    host,
    publicUrl,
    dataDir,
    databaseUrl,
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom,
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 1200, 1, 1_000_000),
    rateLimitUnauthenticatedPerMinute: int(env, 'RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE', 600, 1, 1_000_000),
    tokenGuardFailuresPerClient: int(env, 'TOKEN_GUARD_FAILURES_PER_CLIENT', 10, 1, 1_000_000),
    tokenGuardFailuresPerAddress: int(env, 'TOKEN_GUARD_FAILURES_PER_ADDRESS', 100, 1, 1_000_000),
    tokenGuardWindowMs: parseDuration('TOKEN_GUARD_WINDOW', str(env, 'TOKEN_GUARD_WINDOW') ?? '10m'),
    redisKeyPrefix: str(env, 'REDIS_KEY_PREFIX') ?? 'lmsapi:',
    webhookAllowHttp: bool(env, 'WEBHOOK_ALLOW_HTTP', false),
    webhookAllowPrivateNetworks: bool(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    webhookRetryScheduleMs: schedule,
    webhookTimeoutMs,
    webhookLeaseMs,
    webhookConcurrency: int(env, 'WEBHOOK_CONCURRENCY', 32, 1, 1000),
    webhookPollMs: parseDuration('WEBHOOK_POLL_INTERVAL', str(env, 'WEBHOOK_POLL_INTERVAL') ?? '250ms'),
    webhookDisableAfterMs: parseDuration('WEBHOOK_DISABLE_AFTER', str(env, 'WEBHOOK_DISABLE_AFTER') ?? '5d'),
    webhookWorkerInServe: bool(env, 'WEBHOOK_WORKER', true),
    logLevel,
    tlsCert,
    tlsKey,
    trustProxy: bool(env, 'TRUST_PROXY', false),
    tokenIssuer: publicUrl,
    tokenAudience: `${publicUrl}/v1`,
    eventRetentionDays: int(env, 'EVENT_RETENTION_DAYS', 30, 30, 3650),
    shutdownTimeoutMs: parseDuration('SHUTDOWN_TIMEOUT', str(env, 'SHUTDOWN_TIMEOUT') ?? '10s'),
    retentionIntervalMs: atLeast('RETENTION_INTERVAL', parseDuration('RETENTION_INTERVAL', str(env, 'RETENTION_INTERVAL') ?? '1h'), 100),
    retentionBatchSize: int(env, 'RETENTION_BATCH_SIZE', 500, 1, 100_000),
    certificateExpiryIntervalMs: atLeast(
      'CERTIFICATE_EXPIRY_INTERVAL',
      parseDuration('CERTIFICATE_EXPIRY_INTERVAL', str(env, 'CERTIFICATE_EXPIRY_INTERVAL') ?? '1m'),
      100,
    ),
  };
}
