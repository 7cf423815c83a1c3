// Logs without secrets. Two layers: pino's path redaction (LOG_REDACT_PATHS in app.ts: headers and named fields),
// and a scrubber that rewrites any string in a log line — messages, error messages and stacks, URLs — that
// carries something shaped like a credential: access tokens (JWT), client secrets, webhook secrets, Basic/Bearer
// header values, sensitive query parameters and long random path segments (sign-in links, session ids).
import pino, { type Logger } from 'pino';

const R = '[redacted]';

const PATTERNS: [RegExp, string][] = [
  // Authorization header values, wherever they were copied.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9\-._~+/]+=*/gi, `$1 ${R}`],
  // Signed JWTs (access tokens).
  [/\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}/g, R],
  // Client secrets and webhook signing secrets have recognisable prefixes.
  [/\blms_secret_[A-Za-z0-9_-]+/g, R],
  [/\bwhsec_[A-Za-z0-9+/=_-]+/g, R],
  // Query parameters that carry credentials or one-time links: ?token=…, &code=…, ?client_secret=…
  [/([?&;][A-Za-z_]*(?:token|secret|code|key|password|signature|sig|session|link)[A-Za-z_]*=)[^&\s"'#<>]+/gi, `$1${R}`],
  // Cookies copied into a message.
  [/\b((?:cookie|set-cookie):\s*)[^\r\n"]+/gi, `$1${R}`],
  // Long random runs (32 random bytes in base64url are 43 characters): sign-in link tokens, session ids, hashes.
  [/(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{40,}(?![A-Za-z0-9_-])/g, R],
];

// Cheap pre-check so that ordinary strings cost one regex test, not seven replacements.
const SUSPICIOUS = /Bearer|Basic|eyJ|lms_secret_|whsec_|[?&;][A-Za-z_]*(?:token|secret|code|key|password|signature|sig|session|link)|cookie|[A-Za-z0-9_-]{40}/i;

export function scrubString(value: string): string {
  if (!SUSPICIOUS.test(value)) return value;
  let out = value;
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/** pino's error shape (type, message, stack, cause, own fields) as a plain object, so that it can be scrubbed. */
function plainError(err: Error): Record<string, unknown> {
  const serialized = pino.stdSerializers.err(err) as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = { type: serialized.type, message: serialized.message, stack: serialized.stack };
  for (const key of Object.keys(serialized)) out[key] = serialized[key];
  return out;
}

/** A copy of a log record with every string scrubbed (plain objects and arrays, to a bounded depth). */
export function scrubSecrets<T>(value: T, depth = 0): T {
  if (typeof value === 'string') return scrubString(value) as T;
  if (value === null || typeof value !== 'object' || depth > 6) return value;
  if (Array.isArray(value)) return value.map((v) => scrubSecrets(v, depth + 1)) as T;
  if (value instanceof Error) return scrubSecrets(plainError(value), depth) as T;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = scrubSecrets(v, depth + 1);
  return out as T;
}

/** A URL for a log line: credential-carrying query parameters and long random path segments hidden. */
export function redactUrlForLog(url: string): string {
  return scrubString(url);
}

export interface LoggerOptions {
  level: string;
  redactPaths: string[];
  /** Where lines go (tests capture them); standard output by default. */
  destination?: pino.DestinationStream;
}

export function createRedactingLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level,
      redact: { paths: options.redactPaths, censor: R },
      formatters: { log: (record) => scrubSecrets(record) },
      serializers: {
        // pino passes the message string through the serializer named after the message key.
        msg: (msg: unknown) => (typeof msg === 'string' ? scrubString(msg) : msg),
        err: (err: unknown) => (err instanceof Error ? scrubSecrets(plainError(err)) : err),
        req: (req: { method?: string; url?: string; id?: unknown; ip?: string }) => ({
          method: req.method,
          url: req.url ? redactUrlForLog(req.url) : undefined,
          id: req.id,
          remote_address: req.ip,
        }),
        res: (res: { statusCode?: number }) => ({ status: res.statusCode }),
      },
    },
    options.destination,
  );
}
