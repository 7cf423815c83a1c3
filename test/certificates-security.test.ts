// Acceptance 2 (issue 3): the shared security suite over every certificates route. The foreign certificate is
// earned over HTTP by a learner of another organization (enrol → complete).
import { createTestApp } from './helpers.js';
import { securitySuite, type SecurityRoute } from './security-suite.js';

const ROUTES: SecurityRoute[] = [
  { method: 'GET', url: '/v1/certificates', scope: 'certificates:read' },
  { method: 'GET', url: '/v1/certificates/:id', scope: 'certificates:read', idKind: 'certificate' },
  { method: 'GET', url: '/v1/certificates/:id/pdf', scope: 'certificates:read', idKind: 'certificate' },
  { method: 'POST', url: '/v1/certificates/:id/revoke', scope: 'certificates:write', idKind: 'certificate', body: () => ({ reason: 'security suite' }) },
];

securitySuite('certificates', ROUTES, async () => {
  const t = await createTestApp();
  await t.loadCatalogue();
  const caller = await t.tenant();
  const other = await t.tenant();
  const call = async (method: 'GET' | 'POST', url: string, payload?: object) => {
    const res = await t.request({ method, url, payload, token: other.token });
    if (res.statusCode >= 300) throw new Error(`fixture ${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const courses = (await call('GET', '/v1/courses?limit=100')).data as { id: string; certificate: { enabled: boolean } }[];
  const course = courses.find((c) => c.certificate.enabled)!;
  const learner = await call('POST', '/v1/learners', { email: 'cert-owner@other.example', first_name: 'Mary', last_name: 'Jackson' });
  const enrolment = await call('POST', '/v1/enrolments', { learner_id: learner.id, course_id: course.id });
  const completed = await call('POST', `/v1/enrolments/${enrolment.id}/complete`, {});
  if (!completed.certificate_id) throw new Error('fixture: completion issued no certificate');
  return { t, tenant: caller, foreign: { certificate: completed.certificate_id } };
});
