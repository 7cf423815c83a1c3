// The course catalogue: listing for the API, and the import used by `lmsapi courses import` and the demo.
import type { AppContext } from '../../context.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { notFound } from '../../http/errors.js';
import { normaliseInstant, toPage, type Page } from '../../http/pagination.js';
import { recordEvent } from '../../events/record.js';
import * as repo from './repo.js';
import { toCategory, toCourse, type CatalogueFile, type Category, type Course } from './schemas.js';

export async function listPublishedCourses(ctx: AppContext, f: repo.CourseFilter): Promise<Page<Course>> {
  const params = { ...f, updated_since: f.updated_since && normaliseInstant(f.updated_since, '/updated_since') };
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
