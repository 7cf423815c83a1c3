// Conditional requests (RFC 9110 §13) for single resources. The ETag is a strong validator: a hash of the
// resource exactly as the API shows it, so it changes whenever any visible field changes (even two changes within
// one millisecond, which an updated_at-based tag would miss).
//   GET:          sendWithEtag(request, reply, resource)   → ETag header; 304 when If-None-Match matches
//   PATCH/DELETE: assertIfMatch(ifMatchOf(request), resource) inside the transaction, against the current row → 412
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { AppError } from './errors.js';

export function etagOf(resource: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(resource)).digest('base64url').slice(0, 32)}"`;
}

/** Splits an If-Match / If-None-Match header into its entity tags ("*" stays "*"). */
function tagsOf(header: string): string[] {
  return header
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}

const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);

/** If-None-Match uses the weak comparison: W/"x" matches "x". */
export function noneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return tagsOf(header).some((t) => t === '*' || opaque(t) === etag);
}

/** If-Match uses the strong comparison: a weak tag never matches; "*" matches any current representation. */
export function ifMatchHolds(header: string | undefined, etag: string): boolean {
  if (header === undefined) return true;
  return tagsOf(header).some((t) => t === '*' || t === etag);
}

export function ifMatchOf(request: FastifyRequest): string | undefined {
  const h = request.headers['if-match'];
  return Array.isArray(h) ? h.join(',') : h;
}

/** Throws 412 precondition_failed when the client's If-Match does not match the resource as it is now. */
export function assertIfMatch(ifMatch: string | undefined, current: unknown): void {
  if (!ifMatchHolds(ifMatch, etagOf(current))) {
    throw new AppError('precondition_failed', 'The resource has changed since you read it (If-Match does not match its ETag). Read it again and retry.');
  }
}

/** Sets the ETag of a single resource and answers 304 Not Modified when the client already has it. */
export function sendWithEtag<T>(request: FastifyRequest, reply: FastifyReply, resource: T): T | FastifyReply {
  const etag = etagOf(resource);
  reply.header('ETag', etag);
  const inm = request.headers['if-none-match'];
  if ((request.method === 'GET' || request.method === 'HEAD') && noneMatchHits(Array.isArray(inm) ? inm.join(',') : inm, etag)) {
    return reply.code(304).send();
  }
  return resource;
}

/** Request headers a conditional route documents in OpenAPI. */
export const ConditionalHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ maxLength: 1000, description: 'Only apply the change if the resource still has this ETag (else 412).' })),
});
export const CacheHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String({ maxLength: 1000, description: 'Answer 304 if the resource still has this ETag.' })),
});

/** The 304 answer of a GET that honours If-None-Match, for a route's `response` schema (no body). */
export const notModifiedResponse = {
  304: { description: 'Not Modified: If-None-Match matches the current ETag.', type: 'null' },
} as const;
