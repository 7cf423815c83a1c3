// Console pages for the course catalogue: categories (create, rename, move) and courses (create, edit,
// publish, retire). The writes live in the catalogue service, which records the course.* events.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import type { Row } from '../db/types.js';
import { AppError } from '../http/errors.js';
import { IdParams, jsonList } from '../http/schemas.js';
import {
  createCategory,
  createCourse,
  getAnyCourse,
  listAllCategories,
  listAllCourses,
  publishCourse,
  retireCourse,
  updateCategory,
  updateCourse,
  type CourseInput,
} from '../modules/catalogue/service.js';
import { html, type SafeHtml } from '../web/html.js';
import { csrfField, statusBadge } from '../web/layout.js';
import { formBody, pageSchema, seeOther, sendHtml } from '../web/plugin.js';
import { NoticeQuery, operatorActor } from './routes.js';

type Page = (request: FastifyRequest, title: string, current: string | undefined, body: SafeHtml) => string;
type Category = Awaited<ReturnType<typeof listAllCategories>>[number];

const CourseForm = formBody({
  title: Type.String({ maxLength: 1000 }),
  summary: Type.String({ maxLength: 10000 }),
  category_id: Type.String({ maxLength: 64 }),
  language: Type.String({ maxLength: 35 }),
  duration_minutes: Type.String({ maxLength: 10 }),
  tags: Type.String({ maxLength: 2000 }),
  certificate_enabled: Type.Optional(Type.String({ maxLength: 10 })),
  certificate_validity_months: Type.String({ maxLength: 10 }),
});
type CourseFormBody = { title: string; summary: string; category_id: string; language: string; duration_minutes: string; tags: string; certificate_enabled?: string; certificate_validity_months: string };

function courseInput(b: CourseFormBody): CourseInput {
  const whole = (v: string, what: string) => {
    if (!/^\d{1,9}$/.test(v.trim())) throw new AppError('validation_failed', `${what} must be a whole number.`);
    return Number(v.trim());
  };
  return {
    title: b.title,
    summary: b.summary,
    categoryId: b.category_id || null,
    language: b.language.trim(),
    durationMinutes: whole(b.duration_minutes, 'The duration'),
    tags: b.tags.split(',').map((t) => t.trim()).filter(Boolean),
    certificateEnabled: b.certificate_enabled === 'on',
    certificateValidityMonths: b.certificate_validity_months.trim() ? whole(b.certificate_validity_months, 'The certificate validity') : null,
  };
}

function categoryOptions(categories: Category[], selected: string | null, exclude?: string): SafeHtml {
  return html`${categories.filter((c) => c.id !== exclude).map((c) => html`<option value="${c.id}"${c.id === selected ? html` selected` : ''}>${c.name}</option>`)}`;
}

function courseForm(csrf: string, action: string, categories: Category[], c?: Row<'courses'>): SafeHtml {
  return html`<form class="stack" method="post" action="${action}">${csrfField(csrf)}
<div><label for="title">Title</label><input id="title" name="title" type="text" required maxlength="200" value="${c?.title ?? ''}"></div>
<div><label for="summary">Summary</label><textarea id="summary" name="summary" maxlength="5000">${c?.summary ?? ''}</textarea></div>
<div><label for="category_id">Category</label><select id="category_id" name="category_id"><option value="">(none)</option>${categoryOptions(categories, c?.category_id ?? null)}</select></div>
<div><label for="language">Language <span class="hint">BCP 47 tag, e.g. en or de-CH</span></label><input id="language" name="language" type="text" required maxlength="35" value="${c?.language ?? 'en'}"></div>
<div><label for="duration_minutes">Duration in minutes</label><input id="duration_minutes" name="duration_minutes" type="number" min="1" step="1" required value="${c?.duration_minutes ?? 30}"></div>
<div><label for="tags">Tags <span class="hint">Comma-separated</span></label><input id="tags" name="tags" type="text" maxlength="1000" value="${jsonList(c?.tags).join(', ')}"></div>
<fieldset><legend>Certificate</legend>
<label class="choice"><input type="checkbox" name="certificate_enabled"${c?.certificate_enabled ? html` checked` : ''}><span>Completing the course earns a certificate</span></label>
<div><label for="certificate_validity_months">Valid for (months) <span class="hint">Empty: does not expire</span></label>
<input id="certificate_validity_months" name="certificate_validity_months" type="number" min="1" step="1" value="${c?.certificate_validity_months ?? ''}"></div>
</fieldset>
<div><button type="submit">${c ? 'Save course' : 'Create draft course'}</button></div></form>`;
}

export function catalogueRoutes(app: FastifyInstance, ctx: AppContext, page: Page): void {
  const actor = operatorActor;

  app.get(
    '/console/catalogue',
    { schema: pageSchema('console', 'The course catalogue: categories and courses in every state', { statuses: [200, 303], querystring: NoticeQuery }) },
    async (request, reply) => {
      const [courses, categories] = await Promise.all([listAllCourses(ctx), listAllCategories(ctx)]);
      const names = new Map(categories.map((c) => [c.id, c.name]));
      const csrf = request.web!.csrfToken;
      const body = html`<p><a class="button" href="/console/courses/new">New course</a></p>
<h2>Courses</h2>
<div class="table-wrap"><table class="cards"><thead><tr><th scope="col">Course</th><th scope="col">Category</th><th scope="col">State</th><th scope="col">Actions</th></tr></thead>
<tbody>${courses.map(
        (c) => html`<tr><td data-label="Course"><a href="/console/courses/${c.id}">${c.title}</a> <span class="muted">${c.language}, ${c.duration_minutes} min</span></td>
<td data-label="Category">${c.category_id ? (names.get(c.category_id) ?? '') : '—'}</td>
<td data-label="State">${statusBadge(c.status)}</td>
<td data-label="Actions"><div class="actions">${c.status !== 'published' ? html`<form class="inline" method="post" action="/console/courses/${c.id}/publish">${csrfField(csrf)}<button type="submit" class="secondary" aria-label="Publish ${c.title}">Publish</button></form>` : ''}
${c.status === 'published' ? html`<form class="inline" method="post" action="/console/courses/${c.id}/retire">${csrfField(csrf)}<button type="submit" class="secondary" aria-label="Retire ${c.title}">Retire</button></form>` : ''}</div></td></tr>`,
      )}</tbody></table></div>
<h2>Categories</h2>
<div class="table-wrap"><table class="cards"><thead><tr><th scope="col">Category</th><th scope="col">Parent</th><th scope="col">Published courses</th></tr></thead>
<tbody>${categories.map(
        (c) => html`<tr><td data-label="Category"><a href="/console/categories/${c.id}">${c.name}</a></td><td data-label="Parent">${c.parent_id ? (names.get(c.parent_id) ?? '') : '—'}</td><td data-label="Published courses">${c.course_count}</td></tr>`,
      )}</tbody></table></div>
<h3>New category</h3>
<form class="stack" method="post" action="/console/categories">${csrfField(csrf)}
<div><label for="cat-name">Name</label><input id="cat-name" name="name" type="text" required maxlength="200"></div>
<div><label for="cat-parent">Parent</label><select id="cat-parent" name="parent_id"><option value="">(top level)</option>${categoryOptions(categories, null)}</select></div>
<div><button type="submit">Create category</button></div></form>`;
      return sendHtml(reply, page(request, 'Course catalogue', '/console/catalogue', body));
    },
  );

  const CategoryForm = formBody({ name: Type.String({ maxLength: 1000 }), parent_id: Type.String({ maxLength: 64 }) });

  app.post(
    '/console/categories',
    { schema: pageSchema('console', 'Create a category', { statuses: [303, 400, 403], body: CategoryForm }) },
    async (request, reply) => {
      const b = request.body as { name: string; parent_id: string };
      await createCategory(ctx, actor(request), { name: b.name, parentId: b.parent_id || null });
      return seeOther(reply, '/console/catalogue?notice=category_saved');
    },
  );

  app.get(
    '/console/categories/:id',
    { schema: pageSchema('console', 'Edit a category', { statuses: [200, 303, 404], params: IdParams() }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const categories = await listAllCategories(ctx);
      const c = categories.find((x) => x.id === id);
      if (!c) throw new AppError('not_found', 'No such category.');
      const body = html`<form class="stack" method="post" action="/console/categories/${c.id}">${csrfField(request.web!.csrfToken)}
<div><label for="cat-name">Name</label><input id="cat-name" name="name" type="text" required maxlength="200" value="${c.name}"></div>
<div><label for="cat-parent">Parent</label><select id="cat-parent" name="parent_id"><option value="">(top level)</option>${categoryOptions(categories, c.parent_id, c.id)}</select></div>
<div><button type="submit">Save category</button></div></form>
<p><a href="/console/catalogue">Back to the catalogue</a></p>`;
      return sendHtml(reply, page(request, `Category: ${c.name}`, undefined, body));
    },
  );

  app.post(
    '/console/categories/:id',
    { schema: pageSchema('console', 'Rename or move a category', { statuses: [303, 400, 403, 404], params: IdParams(), body: CategoryForm }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const b = request.body as { name: string; parent_id: string };
      await updateCategory(ctx, actor(request), id, { name: b.name, parentId: b.parent_id || null });
      return seeOther(reply, '/console/catalogue?notice=category_saved');
    },
  );

  app.get(
    '/console/courses/new',
    { schema: pageSchema('console', 'The form for a new course', { statuses: [200, 303] }) },
    async (request, reply) => {
      const categories = await listAllCategories(ctx);
      return sendHtml(reply, page(request, 'New course', undefined, courseForm(request.web!.csrfToken, '/console/courses', categories)));
    },
  );

  app.post(
    '/console/courses',
    { schema: pageSchema('console', 'Create a course (as a draft)', { statuses: [303, 400, 403], body: CourseForm }) },
    async (request, reply) => {
      const course = await createCourse(ctx, actor(request), courseInput(request.body as CourseFormBody));
      return seeOther(reply, `/console/courses/${course.id}?notice=course_created`);
    },
  );

  app.get(
    '/console/courses/:id',
    { schema: pageSchema('console', 'Edit a course; publish or retire it', { statuses: [200, 303, 404], params: IdParams(), querystring: NoticeQuery }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const [c, categories] = await Promise.all([getAnyCourse(ctx, id), listAllCategories(ctx)]);
      const csrf = request.web!.csrfToken;
      const body = html`<p>State: ${statusBadge(c.status)} <code>${c.id}</code></p>
<div class="actions">${c.status !== 'published' ? html`<form class="inline" method="post" action="/console/courses/${c.id}/publish">${csrfField(csrf)}<button type="submit">Publish</button></form>` : ''}
${c.status === 'published' ? html`<form class="inline" method="post" action="/console/courses/${c.id}/retire">${csrfField(csrf)}<button type="submit" class="danger">Retire</button></form>` : ''}</div>
<h2>Details</h2>
${courseForm(csrf, `/console/courses/${c.id}`, categories, c)}
<p><a href="/console/catalogue">Back to the catalogue</a></p>`;
      return sendHtml(reply, page(request, c.title, undefined, body));
    },
  );

  app.post(
    '/console/courses/:id',
    { schema: pageSchema('console', 'Save a course (a published course records course.updated)', { statuses: [303, 400, 403, 404], params: IdParams(), body: CourseForm }) },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      await updateCourse(ctx, actor(request), id, courseInput(request.body as CourseFormBody));
      return seeOther(reply, `/console/courses/${id}?notice=course_saved`);
    },
  );

  for (const [action, fn, notice] of [
    ['publish', publishCourse, 'course_published'],
    ['retire', retireCourse, 'course_retired'],
  ] as const) {
    app.post(
      `/console/courses/:id/${action}`,
      { schema: pageSchema('console', action === 'publish' ? 'Publish a course (course.published)' : 'Retire a published course (course.retired)', { statuses: [303, 403, 404, 409], params: IdParams(), body: formBody() }) },
      async (request, reply) => {
        const { id } = request.params as { id: string };
        await fn(ctx, actor(request), id);
        return seeOther(reply, `/console/courses/${id}?notice=${notice}`);
      },
    );
  }
}
