// Keyset pagination shared by every list: `limit` (1–100, default 20), an opaque `cursor`, `updated_since`,
// `{data, next_cursor}` and an RFC 8288 Link header. Lists are ordered by id (time-ordered ULIDs) ascending,
// so a page is one index range scan however deep it is, and items created during a walk land after it.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SelectQueryBuilder } from 'kysely';
import { AppError } from './errors.js';
import { Timestamp } from './schemas.js';

export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1–100 (default 20).' }),
  ),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'The `next_cursor` of the previous page.' }),
  ),
  updated_since: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Only items updated at or after this instant; removed items are then included as tombstones.',
    }),
  ),
};

export interface PageParams {
  limit?: number;
  cursor?: string;
  updated_since?: string;
}

export function pageOf<T extends TSchema>(item: T, name: string) {
  return Type.Object(
    {
      data: Type.Array(item),
      next_cursor: Type.Union([Type.String(), Type.Null()], {
        description: 'Pass as `cursor` to get the next page; null on the last page.',
      }),
    },
    { title: name },
  );
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

// The cursor is the last id of the page, base64url-encoded so that clients treat it as opaque.
export function encodeCursor(lastId: string): string {
  return Buffer.from(`v1:${lastId}`).toString('base64url');
}

export function decodeCursor(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith('v1:') || text.length < 5 || text.length > 120) {
    throw new AppError('invalid_request', 'The cursor is not one this API issued.', {
      errors: [{ pointer: '/cursor', message: 'unknown cursor' }],
    });
  }
  return text.slice(3);
}

/** Normalises an RFC 3339 instant to the stored form (UTC, milliseconds) so that text comparison is correct. */
export function normaliseInstant(value: string, pointer: string): string {
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) {
    throw new AppError('validation_failed', `${pointer.slice(1)} is not an RFC 3339 date-time.`, {
      errors: [{ pointer, message: 'must be an RFC 3339 date-time' }],
    });
  }
  return d.toISOString();
}

/**
 * Applies the keyset (id > cursor), the limit (+1 to learn whether there is a next page) and the order to a
 * query whose table has an `id` column. `idColumn` names it when the query joins several tables.
 */
export function applyPage<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  params: PageParams,
  idColumn = 'id',
): SelectQueryBuilder<DB, TB, O> {
  let q = qb;
  if (params.cursor) q = q.where(idColumn as any, '>', decodeCursor(params.cursor));
  return q.orderBy(idColumn as any, 'asc').limit((params.limit ?? 20) + 1);
}

/** Turns the rows of applyPage (limit + 1 of them) into a page, mapping each row to its API shape. */
export function toPage<R extends { id: string }, T>(rows: R[], params: PageParams, map: (row: R) => T): Page<T> {
  const limit = params.limit ?? 20;
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  return {
    data: pageRows.map(map),
    next_cursor: more ? encodeCursor(pageRows[pageRows.length - 1].id) : null,
  };
}

/** Sets the Link header for the next page (same query, new cursor) and returns the page for sending. */
export function withLinkHeader<T>(request: FastifyRequest, reply: FastifyReply, page: Page<T>, publicUrl: string): Page<T> {
  if (page.next_cursor) {
    const url = new URL(request.url, publicUrl);
    url.searchParams.set('cursor', page.next_cursor);
    reply.header('Link', `<${publicUrl}${url.pathname}${url.search}>; rel="next"`);
  }
  return page;
}

export type PageQueryType = Static<ReturnType<typeof Type.Object<typeof PageQuery>>>;
