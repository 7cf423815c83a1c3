// The course catalogue: listing for the API, and the import used by `lmsapi courses import` and the demo.
import type { AppContext } from '../../context.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { AppError, notFound } from '../../http/errors.js';
import type { Executor } from '../../db/index.js';
import { recordAudit } from '../audit/service.js';
import { normaliseInstant, toPage, type Page } from '../../http/pagination.js';
import { recordEvent } from '../../events/record.js';
import * as repo from './repo.js';
import { toCategory, toCourse, type CatalogueFile, type Category, type Course } from './schemas.js';

/**
 * Published courses. With `updated_since` (delta sync) retired courses are included too, as tombstones with
 * status "retired", so that a syncing client learns that a course left the catalogue. Drafts are never shown.
 */
export async function listPublishedCourses(ctx: AppContext, f: repo.CourseFilter): Promise<Page<Course>> {
  const updatedSince = f.updated_since && normaliseInstant(f.updated_since, '/updated_since');
  const params = { ...f, updated_since: updatedSince, statuses: updatedSince ? (['published', 'retired'] as const).slice() : undefined };
  const rows = await repo.listCourses(ctx.db.kysely, params);
  return toPage(rows, params, toCourse);
}

export async function getPublishedCourse(ctx: AppContext, id: string): Promise<Course> {
  const row = await repo.findCourse(ctx.db.kysely, id);
  if (!row) throw notFound('course');
  return toCourse(row);
}

export async function listCategories(ctx: AppContext, f: Parameters<typeof repo.listCategories>[1]): Promise<Page<Category>> {
  const params = { ...f, updated_since: f.updated_since && normaliseInstant(f.updated_since, '/updated_since') };
  const rows = await repo.listCategories(ctx.db.kysely, params);
  return toPage(rows, params, toCategory);
}

export async function getCategory(ctx: AppContext, id: string): Promise<Category> {
  const row = await repo.findCategory(ctx.db.kysely, id);
  if (!row) throw notFound('course category');
  return toCategory(row);
}

export class CatalogueFileError extends Error {}

function checkCatalogueFile(file: unknown): asserts file is CatalogueFile {
  const f = file as CatalogueFile;
  if (!f || !Array.isArray(f.categories) || !Array.isArray(f.courses)) {
    throw new CatalogueFileError('the file must be a JSON object with "categories" and "courses" arrays');
  }
  const keys = new Set<string>();
  for (const [i, c] of f.categories.entries()) {
    if (typeof c.key !== 'string' || typeof c.name !== 'string') throw new CatalogueFileError(`categories[${i}] needs "key" and "name"`);
    if (c.parent && !keys.has(c.parent)) throw new CatalogueFileError(`categories[${i}].parent "${c.parent}" is not an earlier category key`);
    keys.add(c.key);
  }
  for (const [i, c] of f.courses.entries()) {
    if (typeof c.title !== 'string' || !c.title) throw new CatalogueFileError(`courses[${i}] needs a "title"`);
    if (!keys.has(c.category)) throw new CatalogueFileError(`courses[${i}].category "${c.category}" is not a category key`);
    if (!Number.isInteger(c.duration_minutes) || c.duration_minutes <= 0) {
      throw new CatalogueFileError(`courses[${i}].duration_minutes must be a positive whole number`);
    }
    if (typeof c.language !== 'string' || !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(c.language)) {
      throw new CatalogueFileError(`courses[${i}].language must be a BCP 47 tag such as "en"`);
    }
  }
}

/**
 * Imports categories and courses. Categories are matched by name (and parent), courses by title, so importing
 * the same file twice changes nothing. All of it happens in one transaction.
 */
export async function importCatalogue(ctx: AppContext, file: unknown): Promise<{ categories: number; courses: number; created: number }> {
  checkCatalogueFile(file);
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const ids = new Map<string, string>();
    const now = iso(ctx.clock.now());
    for (const c of file.categories) {
      const parentId = c.parent ? ids.get(c.parent)! : null;
      let q = trx.selectFrom('course_categories').select('id').where('name', '=', c.name);
      q = parentId ? q.where('parent_id', '=', parentId) : q.where('parent_id', 'is', null);
      const existing = await q.executeTakeFirst();
      const id = existing?.id ?? newId('category');
      if (!existing) await repo.insertCategory(trx, { id, name: c.name, parent_id: parentId, created_at: now, updated_at: now });
      ids.set(c.key, id);
    }
    let created = 0;
    for (const c of file.courses) {
      const existing = await trx.selectFrom('courses').select('id').where('title', '=', c.title).executeTakeFirst();
      if (existing) continue;
      const status = c.status ?? 'published';
      const row = {
        id: newId('course'),
        title: c.title,
        summary: c.summary ?? '',
        category_id: ids.get(c.category)!,
        language: c.language,
        duration_minutes: c.duration_minutes,
        tags: JSON.stringify(c.tags ?? []),
        status,
        published_at: status === 'draft' ? null : now,
        certificate_enabled: c.certificate?.enabled ? 1 : 0,
        certificate_validity_months: c.certificate?.enabled ? (c.certificate.validity_months ?? null) : null,
        created_at: now,
        updated_at: now,
      };
      await repo.insertCourse(trx, row);
      if (status === 'published') await recordEvent(trx, ctx.clock, { orgId: null, type: 'course.published', object: toCourse(row) });
      created++;
    }
    return { categories: file.categories.length, courses: file.courses.length, created };
  });
}

// ---- Catalogue editing (operator console) --------------------------------------------------------------
// Changes that integrators can see record their event in the same transaction: publishing (course.published),
// editing a published course (course.updated) and retiring a published course (course.retired). Drafts are
// invisible through /v1, so their edits record nothing but the audit entry.

export interface CourseInput {
  title: string;
  summary: string;
  categoryId: string | null;
  language: string;
  durationMinutes: number;
  tags: string[];
  certificateEnabled: boolean;
  certificateValidityMonths: number | null;
}

const LANGUAGE_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

async function checkCourseInput(db: Executor, input: CourseInput): Promise<void> {
  const bad = (msg: string) => new AppError('validation_failed', msg);
  if (!input.title.trim() || input.title.length > 200) throw bad('The title is required (at most 200 characters).');
  if (input.summary.length > 5000) throw bad('The summary is longer than 5000 characters.');
  if (!LANGUAGE_TAG.test(input.language)) throw bad('The language must be a BCP 47 tag such as "en" or "de-CH".');
  if (!Number.isInteger(input.durationMinutes) || input.durationMinutes <= 0 || input.durationMinutes > 100_000) {
    throw bad('The duration must be a positive whole number of minutes.');
  }
  if (input.tags.length > 20 || input.tags.some((t) => t.length > 50)) throw bad('At most 20 tags of at most 50 characters each.');
  if (input.certificateValidityMonths !== null && (!Number.isInteger(input.certificateValidityMonths) || input.certificateValidityMonths <= 0 || input.certificateValidityMonths > 600)) {
    throw bad('The certificate validity must be a positive whole number of months, or empty for no expiry.');
  }
  if (input.categoryId && !(await db.selectFrom('course_categories').select('id').where('id', '=', input.categoryId).executeTakeFirst())) {
    throw bad('Choose an existing category.');
  }
}

function courseColumns(input: CourseInput) {
  return {
    title: input.title.trim(),
    summary: input.summary.trim(),
    category_id: input.categoryId,
    language: input.language,
    duration_minutes: input.durationMinutes,
    tags: JSON.stringify(input.tags),
    certificate_enabled: input.certificateEnabled ? 1 : 0,
    certificate_validity_months: input.certificateEnabled ? input.certificateValidityMonths : null,
  };
}

/** Every course whatever its status (the console), newest first. */
export function listAllCourses(ctx: AppContext) {
  return ctx.db.kysely.selectFrom('courses').selectAll().orderBy('id', 'desc').limit(500).execute();
}

export async function listAllCategories(ctx: AppContext) {
  return repo.listCategories(ctx.db.kysely, { limit: 500 });
}

export async function getAnyCourse(ctx: AppContext, id: string) {
  const row = await repo.findCourse(ctx.db.kysely, id, ['draft', 'published', 'retired']);
  if (!row) throw notFound('course');
  return row;
}

export async function createCourse(ctx: AppContext, actor: string, input: CourseInput): Promise<Course> {
  return ctx.db.kysely.transaction().execute(async (trx) => {
    await checkCourseInput(trx, input);
    const now = iso(ctx.clock.now());
    const row = { id: newId('course'), ...courseColumns(input), status: 'draft' as const, published_at: null, created_at: now, updated_at: now };
    await repo.insertCourse(trx, row);
    await recordAudit(trx, ctx.clock, { actor, action: 'course.created', target: row.id, details: { title: row.title } });
    return toCourse(row);
  });
}

export async function updateCourse(ctx: AppContext, actor: string, id: string, input: CourseInput): Promise<Course> {
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const before = await repo.findCourse(trx, id, ['draft', 'published', 'retired']);
    if (!before) throw notFound('course');
    await checkCourseInput(trx, input);
    const now = iso(ctx.clock.now());
    const row = { ...before, ...courseColumns(input), updated_at: now };
    await trx.updateTable('courses').set({ ...courseColumns(input), updated_at: now }).where('id', '=', id).execute();
    if (row.status === 'published') await recordEvent(trx, ctx.clock, { orgId: null, type: 'course.updated', object: toCourse(row) });
    await recordAudit(trx, ctx.clock, { actor, action: 'course.updated', target: id, details: { title: row.title } });
    return toCourse(row);
  });
}

async function moveCourse(ctx: AppContext, actor: string, id: string, to: 'published' | 'retired'): Promise<Course> {
  return ctx.db.kysely.transaction().execute(async (trx) => {
    const before = await repo.findCourse(trx, id, ['draft', 'published', 'retired']);
    if (!before) throw notFound('course');
    if (before.status === to) throw new AppError('invalid_state', `"${before.title}" is ${to} already.`);
    if (to === 'retired' && before.status !== 'published') throw new AppError('invalid_state', `Only a published course can be retired; "${before.title}" is ${before.status}.`);
    const now = iso(ctx.clock.now());
    const row = { ...before, status: to, updated_at: now, published_at: to === 'published' ? now : before.published_at };
    const result = await trx
      .updateTable('courses')
      .set({ status: row.status, published_at: row.published_at, updated_at: now })
      .where('id', '=', id)
      .where('status', '=', before.status)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw new AppError('conflict', 'The course changed meanwhile; reload and try again.');
    await recordEvent(trx, ctx.clock, { orgId: null, type: to === 'published' ? 'course.published' : 'course.retired', object: toCourse(row) });
    await recordAudit(trx, ctx.clock, { actor, action: to === 'published' ? 'course.published' : 'course.retired', target: id, details: { title: row.title } });
    return toCourse(row);
  });
}

export const publishCourse = (ctx: AppContext, actor: string, id: string) => moveCourse(ctx, actor, id, 'published');
export const retireCourse = (ctx: AppContext, actor: string, id: string) => moveCourse(ctx, actor, id, 'retired');

async function checkCategory(db: Executor, id: string | null, name: string, parentId: string | null): Promise<void> {
  if (!name.trim() || name.length > 200) throw new AppError('validation_failed', 'The category needs a name (at most 200 characters).');
  // Walk up from the new parent: reaching the category itself would make a cycle.
  let cursor = parentId;
  for (let depth = 0; cursor; depth++) {
    if (cursor === id || depth > 50) throw new AppError('validation_failed', 'A category cannot be placed inside itself.');
    const parent = await db.selectFrom('course_categories').select('parent_id').where('id', '=', cursor).executeTakeFirst();
    if (!parent) throw new AppError('validation_failed', 'Choose an existing parent category.');
    cursor = parent.parent_id;
  }
}

export async function createCategory(ctx: AppContext, actor: string, input: { name: string; parentId: string | null }): Promise<string> {
  return ctx.db.kysely.transaction().execute(async (trx) => {
    await checkCategory(trx, null, input.name, input.parentId);
    const now = iso(ctx.clock.now());
    const id = newId('category');
    await repo.insertCategory(trx, { id, name: input.name.trim(), parent_id: input.parentId, created_at: now, updated_at: now });
    await recordAudit(trx, ctx.clock, { actor, action: 'category.created', target: id, details: { name: input.name.trim() } });
    return id;
  });
}

export async function updateCategory(ctx: AppContext, actor: string, id: string, input: { name: string; parentId: string | null }): Promise<void> {
  await ctx.db.kysely.transaction().execute(async (trx) => {
    if (!(await trx.selectFrom('course_categories').select('id').where('id', '=', id).executeTakeFirst())) throw notFound('course category');
    await checkCategory(trx, id, input.name, input.parentId);
    const now = iso(ctx.clock.now());
    await trx.updateTable('course_categories').set({ name: input.name.trim(), parent_id: input.parentId, updated_at: now }).where('id', '=', id).execute();
    await recordAudit(trx, ctx.clock, { actor, action: 'category.updated', target: id, details: { name: input.name.trim() } });
  });
}
