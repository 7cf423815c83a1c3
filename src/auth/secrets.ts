// Client secrets and other high-entropy tokens: random (256 bits), shown once, stored only as a hash.
// A fast hash is right for high-entropy secrets (nothing to brute-force); comparisons are constant-time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export function randomToken(prefix = '', bytes = 32): string {
  return prefix + randomBytes(bytes).toString('base64url');
}

export function newClientSecret(): string {
  return randomToken('lms_secret_');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

// Hash of a secret nobody holds, compared against when the client is unknown so both paths take the same time.
const DUMMY_HASH = hashSecret(randomToken());

/** Constant-time check of a presented secret against a stored hash (or against nothing, in equal time). */
export function verifySecret(presented: string, storedHash: string | null): boolean {
  const a = Buffer.from(hashSecret(presented));
  const b = Buffer.from(storedHash ?? DUMMY_HASH);
  return a.length === b.length && timingSafeEqual(a, b) && storedHash !== null;
}
