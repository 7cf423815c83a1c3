// The server-rendered side of the service: the developer portal (/portal), the operator console (/console)
// and their stylesheet. Each audience is its own encapsulated plugin, so its hooks (session, CSRF, HTML
// errors) never touch the JSON API.
import type { FastifyPluginAsync } from 'fastify';
import cookie from '@fastify/cookie';
import type { AppContext } from '../context.js';
import { STYLESHEET } from './stylesheet.js';
import { TAGS } from './plugin.js';
import { portalRoutes } from '../portal/routes.js';
import { consoleRoutes } from '../console/routes.js';

export const webPages: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  await app.register(cookie);

  app.get(
    '/assets/site.css',
    {
      schema: {
        tags: [TAGS.portal, TAGS.console],
        summary: 'The stylesheet of the portal and the console',
        security: [],
        response: { 200: { description: 'CSS', content: { 'text/css': { schema: { type: 'string' } } } } },
      },
    },
    async (_request, reply) => reply.type('text/css; charset=utf-8').header('Cache-Control', 'public, max-age=3600').send(STYLESHEET),
  );

  await app.register(async (portal) => portalRoutes(portal, ctx));
  await app.register(async (console) => consoleRoutes(console, ctx));
};
