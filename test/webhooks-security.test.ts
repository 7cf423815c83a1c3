// The shared security suite over every webhooks and events route: no token, a missing scope, another
// organization's endpoint, delivery or event (404, identical to an unknown id), unknown body fields.
import { createTestApp } from './helpers.js';
import { securitySuite, type SecurityRoute } from './security-suite.js';
import { setSeatTotal } from '../src/modules/organization/service.js';

// The caller's own endpoint, for routes where only the delivery id is foreign (set during setup).
let ownEndpoint = 'whk_unset';
const endpointBody = () => ({ url: 'https://hooks.example.com/sec', events: ['*'] });

const ROUTES: SecurityRoute[] = [
  { method: 'GET', url: '/v1/webhooks', scope: 'webhooks:read' },
  { method: 'POST', url: '/v1/webhooks', scope: 'webhooks:write', body: endpointBody },
  { method: 'GET', url: '/v1/webhooks/:id', scope: 'webhooks:read', idKind: 'endpoint' },
  { method: 'PATCH', url: '/v1/webhooks/:id', scope: 'webhooks:write', idKind: 'endpoint', body: () => ({ description: 'x' }) },
  { method: 'DELETE', url: '/v1/webhooks/:id', scope: 'webhooks:write', idKind: 'endpoint' },
  { method: 'POST', url: '/v1/webhooks/:id/rotate-secret', scope: 'webhooks:write', idKind: 'endpoint' },
  { method: 'POST', url: '/v1/webhooks/:id/test', scope: 'webhooks:write', idKind: 'endpoint' },
  { method: 'GET', url: '/v1/webhooks/:id/deliveries', scope: 'webhooks:read', idKind: 'endpoint' },
  {
    method: 'POST',
    get url() {
      return `/v1/webhooks/${ownEndpoint}/deliveries/:id/retry`;
    },
    scope: 'webhooks:write',
    idKind: 'delivery',
  },
  { method: 'GET', url: '/v1/events', scope: 'events:read' },
  { method: 'GET', url: '/v1/events/:id', scope: 'events:read', idKind: 'event' },
];

securitySuite('webhooks and events', ROUTES, async () => {
  const t = await createTestApp();
  const caller = await t.tenant();
  const other = await t.tenant();
  const create = async (token: string) => (await t.request({ method: 'POST', url: '/v1/webhooks', token, payload: endpointBody() })).json();
  ownEndpoint = (await create(caller.token)).id;
  const foreignEndpoint = (await create(other.token)).id;
  await setSeatTotal(t.ctx, other.orgId, 3); // an event of the other organization, and its delivery
  const event = (await t.request({ method: 'GET', url: '/v1/events?type=seats.updated', token: other.token })).json().data[0];
  const delivery = (await t.request({ method: 'GET', url: `/v1/webhooks/${foreignEndpoint}/deliveries`, token: other.token })).json().data[0];
  return { t, tenant: caller, foreign: { endpoint: foreignEndpoint, delivery: delivery.id, event: event.id } };
});
