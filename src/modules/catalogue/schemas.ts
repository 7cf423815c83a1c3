import { Type, type Static } from '@sinclair/typebox';
import { Nullable, NullableTimestamp, resourceFields } from '../../http/schemas.js';
import { PageQuery, pageOf } from '../../http/pagination.js';
import type { Row } from '../../db/types.js';
import { jsonList } from '../../http/schemas.js';

export const CourseSchema = Type.Object(
  {
    ...resourceFields('course'),
    title: Type.String(),
    summary: Type.String(),
    category_id: Nullable(Type.String()),
    language: Type.String({ description: 'BCP 47 language tag.', examples: ['en', 'de-CH'] }),
    duration_minutes: Type.Integer(),
    tags: Type.Array(Type.String()),
    status: Type.Union([Type.Literal('draft'), Type.Literal('published'), Type.Literal('retired')]),
    published_at: NullableTimestamp,
    certificate: Type.Object({
      enabled: Type.Boolean(),
      validity_months: Nullable(Type.Integer({ description: 'null: the certificate does not expire.' })),
    }),
  },
  { $id: 'Course', title: 'Course' },
);
export type Course = Static<typeof CourseSchema>;

export const CategorySchema = Type.Object(
  {
    ...resourceFields('course_category'),
    name: Type.String(),
    parent_id: Nullable(Type.String()),
    course_count: Type.Integer({ description: 'Published courses directly in this category.' }),
  },
  { $id: 'CourseCategory', title: 'CourseCategory' },
);
export type Category = Static<typeof CategorySchema>;

export const CourseListQuery = Type.Object(
  {
    ...PageQuery,
    category_id: Type.Optional(Type.String({ maxLength: 64 })),
    language: Type.Optional(Type.String({ maxLength: 35, description: 'Exact BCP 47 tag, e.g. en.' })),
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Text search in title and summary.' })),
  },
  { additionalProperties: false },
);

export const CategoryListQuery = Type.Object({ ...PageQuery, parent_id: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: false });

export const CoursePage = pageOf(Type.Ref(CourseSchema), 'CoursePage');
export const CategoryPage = pageOf(Type.Ref(CategorySchema), 'CourseCategoryPage');

export function toCourse(row: Row<'courses'>): Course {
  return {
    id: row.id,
    object: 'course',
    title: row.title,
    summary: row.summary,
    category_id: row.category_id,
    language: row.language,
    duration_minutes: row.duration_minutes,
    tags: jsonList(row.tags),
    status: row.status,
    published_at: row.published_at,
    certificate: { enabled: Boolean(row.certificate_enabled), validity_months: row.certificate_validity_months },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function toCategory(row: Row<'course_categories'> & { course_count: number }): Category {
  return {
    id: row.id,
    object: 'course_category',
    name: row.name,
    parent_id: row.parent_id,
    course_count: Number(row.course_count),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The JSON file read by `lmsapi courses import` (and the demo catalogue). */
export interface CatalogueFile {
  categories: { key: string; name: string; parent?: string | null }[];
  courses: {
    title: string;
    summary: string;
    category: string;
    language: string;
    duration_minutes: number;
    tags?: string[];
    status?: 'draft' | 'published' | 'retired';
    certificate?: { enabled: boolean; validity_months?: number | null };
  }[];
}
