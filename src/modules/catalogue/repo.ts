// The shared course catalogue. Not organization-owned: every organization sees the same published courses.
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { NewRow, Row } from '../../db/types.js';
import { applyPage, type PageParams } from '../../http/pagination.js';

export interface CourseFilter extends PageParams {
  category_id?: string;
  language?: string;
  q?: string;
  /** Leave unset for the public API (published only); the operator console passes every status. */
  statuses?: Row<'courses'>['status'][];
}

function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export function listCourses(db: Executor, f: CourseFilter): Promise<Row<'courses'>[]> {
  let q = db.selectFrom('courses').selectAll().where('status', 'in', f.statuses ?? ['published']);
  if (f.category_id) q = q.where('category_id', '=', f.category_id);
  if (f.language) q = q.where('language', '=', f.language);
  if (f.updated_since) q = q.where('updated_at', '>=', f.updated_since);
  if (f.q) {
    const pattern = likePattern(f.q);
    q = q.where((eb) =>
      eb.or([
        eb(sql`lower(title)`, 'like', sql`${pattern} escape '\\'`),
        eb(sql`lower(summary)`, 'like', sql`${pattern} escape '\\'`),
      ]),
    );
  }
  return applyPage(q, f).execute();
}

export function findCourse(db: Executor, id: string, statuses: Row<'courses'>['status'][] = ['published']) {
  return db.selectFrom('courses').selectAll().where('id', '=', id).where('status', 'in', statuses).executeTakeFirst();
}

export async function insertCourse(db: Executor, row: NewRow<'courses'>): Promise<void> {
  await db.insertInto('courses').values(row).execute();
}

function categoriesWithCounts(db: Executor) {
  return db
    .selectFrom('course_categories as c')
    .selectAll('c')
    .select((eb) =>
      eb
        .selectFrom('courses')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('courses.category_id', '=', 'c.id')
        .where('courses.status', '=', 'published')
        .as('course_count'),
    );
}

export function listCategories(db: Executor, f: PageParams & { parent_id?: string }) {
  let q = categoriesWithCounts(db);
  if (f.parent_id) q = q.where('c.parent_id', '=', f.parent_id);
  if (f.updated_since) q = q.where('c.updated_at', '>=', f.updated_since);
  return applyPage(q, f, 'c.id').execute() as Promise<(Row<'course_categories'> & { course_count: number })[]>;
}

export function findCategory(db: Executor, id: string) {
  return categoriesWithCounts(db).where('c.id', '=', id).executeTakeFirst() as Promise<
    (Row<'course_categories'> & { course_count: number }) | undefined
  >;
}

export async function insertCategory(db: Executor, row: NewRow<'course_categories'>): Promise<void> {
  await db.insertInto('course_categories').values(row).execute();
}
