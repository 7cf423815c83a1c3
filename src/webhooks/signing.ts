// Standard Webhooks signing (https://www.standardwebhooks.com): the receiver verifies
// base64(HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")) where key is the base64-decoded part of the
// `whsec_` secret. The `standardwebhooks` libraries verify these headers unchanged.
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes (the spec asks for 24–64). */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  return 'v1,' + createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
}

/**
 * The three headers of one attempt. During the 24 h after a rotation the old secret signs too, so the header
 * carries two space-separated signatures and receivers still holding the old secret keep verifying.
 */
export function signedHeaders(
  secrets: string[],
  id: string,
  timestampSeconds: number,
  body: string,
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signature(s, id, timestampSeconds, body)).join(' '),
  };
}
