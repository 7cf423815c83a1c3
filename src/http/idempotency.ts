// Idempotency-Key (§1) as a route option: a creating POST declares `config: { idempotent: true }` and these hooks
// do the rest.
//   preHandler (after auth and validation): claim (app, key) by INSERTING an in-flight row — the primary key makes
//     the claim atomic across requests and processes. If the key exists: same request still running → 409
//     idempotency_key_in_use; a different request (method, route or body) → 422 idempotency_key_reused;
//     finished → the stored response is replayed (status, body, Content-Type/Location/ETag) with
//     `Idempotent-Replayed: true`.
//   onSend: store the response (2xx–4xx) for 24 h (src/ops/retention.ts purges expired keys; a claim also
//     replaces an expired key on its own). 5xx (and 429) answers release the key so a retry runs again.
// Requests that fail validation or auth never claim a key. If the process dies between the handler's commit and
// onSend, the key stays in flight; an in-flight claim older than STALE_CLAIM_MS is then taken over by a retry.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import type { Executor } from '../db/index.js';
import { uniqueViolation } from '../db/index.js';
import { iso } from '../clock.js';
import { AppError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route honours Idempotency-Key (creating POSTs). Needs a token (the key is scoped to the application). */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    idempotencyClaim: { appId: string; key: string } | null;
  }
}

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const STALE_CLAIM_MS = 5 * 60 * 1000;
const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'link'];

/** The header a route documents in OpenAPI (its length is enforced here as well as by the hook). */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Makes the request safe to retry: the same key and body within 24 h return the first answer again.',
    }),
  ),
});

/** A fingerprint of the request: method, path (with query) and the body with object keys in a canonical order. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.keys(v as object).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
    }
    return v;
  };
  return createHash('sha256').update(JSON.stringify([method, path, canonical(body ?? null)])).digest('hex');
}

type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; headers: Record<string, string>; body: string };

/** Claims the key for this request or tells what to do instead. Throws 409/422 as §1 says. */
export async function claimKey(db: Executor, appId: string, key: string, hash: string, now: Date): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await db
        .insertInto('idempotency_keys')
        .values({
          app_id: appId,
          key,
          request_hash: hash,
          state: 'in_flight',
          response_status: null,
          response_headers: null,
          response_body: null,
          created_at: iso(now),
          expires_at: iso(new Date(now.getTime() + IDEMPOTENCY_TTL_MS)),
        })
        .execute();
      return { kind: 'claimed' };
    } catch (err) {
      if (!uniqueViolation(err)) throw err;
    }
    const row = await db.selectFrom('idempotency_keys').selectAll().where('app_id', '=', appId).where('key', '=', key).executeTakeFirst();
    if (!row) continue; // released or purged meanwhile: try to claim again
    const expired = row.expires_at <= iso(now);
    const stale = row.state === 'in_flight' && row.created_at <= iso(new Date(now.getTime() - STALE_CLAIM_MS));
    if (expired || stale) {
      // Only the request that deletes this very row may take over; a concurrent taker then loses the insert.
      await db
        .deleteFrom('idempotency_keys')
        .where('app_id', '=', appId)
        .where('key', '=', key)
        .where('created_at', '=', row.created_at)
        .execute();
      continue;
    }
    if (row.request_hash !== hash) {
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request. Use a new key for a new request.');
    }
    if (row.state === 'in_flight') {
      throw new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed. Retry later.', {
        headers: { 'Retry-After': '1' },
      });
    }
    return {
      kind: 'replay',
      status: row.response_status ?? 200,
      headers: JSON.parse(row.response_headers ?? '{}') as Record<string, string>,
      body: row.response_body ?? '',
    };
  }
  throw new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed. Retry later.');
}

export async function releaseKey(db: Executor, appId: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('app_id', '=', appId).where('key', '=', key).where('state', '=', 'in_flight').execute();
}

export async function storeResponse(
  db: Executor,
  appId: string,
  key: string,
  response: { status: number; headers: Record<string, string>; body: string },
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({
      state: 'done',
      response_status: response.status,
      response_headers: JSON.stringify(response.headers),
      response_body: response.body,
    })
    .where('app_id', '=', appId)
    .where('key', '=', key)
    .where('state', '=', 'in_flight')
    .execute();
}

function headerOf(request: FastifyRequest): string | undefined {
  const h = request.headers['idempotency-key'];
  return Array.isArray(h) ? h[0] : h;
}

export function registerIdempotency(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('idempotencyClaim', null);

  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.routeOptions.config?.idempotent) return;
    const key = headerOf(request);
    if (key === undefined) return;
    if (key.length < 1 || key.length > 255) {
      throw new AppError('invalid_request', 'Idempotency-Key must be 1–255 characters.', {
        errors: [{ pointer: '/headers/idempotency-key', message: 'must be 1–255 characters' }],
      });
    }
    const appId = request.auth?.appId;
    if (!appId) return;
    // The concrete path (not the route pattern): the same key on /enrolments/A/complete and /enrolments/B/complete
    // names two different requests.
    const hash = requestFingerprint(request.method, request.url, request.body);
    const claim = await claimKey(ctx.db.kysely, appId, key, hash, ctx.clock.now());
    if (claim.kind === 'claimed') {
      request.idempotencyClaim = { appId, key };
      return;
    }
    reply.headers(claim.headers).header('Idempotent-Replayed', 'true').code(claim.status);
    return reply.serializer((p: unknown) => p as string).send(claim.body);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotencyClaim;
    if (!claim) return payload;
    request.idempotencyClaim = null;
    const status = reply.statusCode;
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    if (status >= 500 || status === 429 || body === null) {
      await releaseKey(ctx.db.kysely, claim.appId, claim.key);
      return payload;
    }
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const v = reply.getHeader(name);
      if (v !== undefined) headers[name] = String(v);
    }
    await storeResponse(ctx.db.kysely, claim.appId, claim.key, { status, headers, body });
    return payload;
  });

  // A response that never reached onSend (aborted connection) must not keep its key in flight.
  app.addHook('onResponse', async (request) => {
    const claim = request.idempotencyClaim;
    if (!claim) return;
    request.idempotencyClaim = null;
    await releaseKey(ctx.db.kysely, claim.appId, claim.key);
  });
}
