// Acceptance 2 (issue 3): the shared security suite over every users, learners and enrolments route.
import { createTestApp } from './helpers.js';
import { securitySuite, type SecurityRoute } from './security-suite.js';

let courseId = '';
const learner = (email: string) => ({ email, first_name: 'Ada', last_name: 'Lovelace' });

const ROUTES: SecurityRoute[] = [
  { method: 'GET', url: '/v1/users', scope: 'users:read' },
  { method: 'POST', url: '/v1/users', scope: 'users:write', body: () => learner('sec-user@example.com') },
  { method: 'GET', url: '/v1/users/:id', scope: 'users:read', idKind: 'user' },
  { method: 'PATCH', url: '/v1/users/:id', scope: 'users:write', idKind: 'user', body: () => ({ first_name: 'X' }) },
  { method: 'DELETE', url: '/v1/users/:id', scope: 'users:write', idKind: 'user' },
  { method: 'GET', url: '/v1/learners', scope: 'learners:read' },
  { method: 'POST', url: '/v1/learners', scope: 'learners:write', body: () => learner('sec-learner@example.com') },
  { method: 'POST', url: '/v1/learners/bulk', scope: 'learners:write', body: () => ({ learners: [learner('sec-bulk@example.com')] }) },
  { method: 'GET', url: '/v1/learners/:id', scope: 'learners:read', idKind: 'learner' },
  { method: 'PATCH', url: '/v1/learners/:id', scope: 'learners:write', idKind: 'learner', body: () => ({ department: 'Ops' }) },
  { method: 'DELETE', url: '/v1/learners/:id', scope: 'learners:write', idKind: 'learner' },
  { method: 'GET', url: '/v1/learners/:id/enrolments', scope: 'enrolments:read', idKind: 'learner' },
  { method: 'GET', url: '/v1/learners/:id/certificates', scope: 'certificates:read', idKind: 'learner' },
  { method: 'GET', url: '/v1/enrolments', scope: 'enrolments:read' },
  {
    method: 'POST',
    url: '/v1/enrolments',
    scope: 'enrolments:write',
    idKind: 'learner',
    idIn: 'body',
    body: (id) => ({ learner_id: id, course_id: courseId }),
  },
  {
    method: 'POST',
    url: '/v1/enrolments/bulk',
    scope: 'enrolments:write',
    body: () => ({ enrolments: [{ email: 'nobody@example.com', course_id: courseId }] }),
  },
  { method: 'GET', url: '/v1/enrolments/:id', scope: 'enrolments:read', idKind: 'enrolment' },
  { method: 'PATCH', url: '/v1/enrolments/:id', scope: 'enrolments:write', idKind: 'enrolment', body: () => ({ progress: 10 }) },
  { method: 'POST', url: '/v1/enrolments/:id/complete', scope: 'enrolments:write', idKind: 'enrolment', body: () => ({ score: 90 }) },
  { method: 'POST', url: '/v1/enrolments/:id/withdraw', scope: 'enrolments:write', idKind: 'enrolment', body: () => ({}) },
];

securitySuite('users, learners, enrolments', ROUTES, async () => {
  const t = await createTestApp();
  await t.loadCatalogue();
  const caller = await t.tenant();
  const other = await t.tenant();
  const course = (await t.request({ method: 'GET', url: '/v1/courses?limit=1', token: other.token })).json().data[0];
  courseId = course.id;
  const user = (await t.request({ method: 'POST', url: '/v1/users', token: other.token, payload: { ...learner('u@other.example'), roles: ['manager'] } })).json();
  const l = (await t.request({ method: 'POST', url: '/v1/learners', token: other.token, payload: learner('l@other.example') })).json();
  const e = await t.request({ method: 'POST', url: '/v1/enrolments', token: other.token, payload: { learner_id: l.id, course_id: course.id } });
  if (e.statusCode !== 201) throw new Error(`fixture enrolment: ${e.body}`);
  return { t, tenant: caller, foreign: { user: user.id, learner: l.id, enrolment: e.json().id } };
});
