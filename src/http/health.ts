// /healthz: the process is up. /readyz: the database answers and every migration is applied (and the process
// is not shutting down) — a load balancer should only send traffic while it says ready.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import type { AppContext } from '../context.js';
import { migrationsApplied } from '../db/index.js';

// Per context (not per process), so that a test closing one server leaves the others ready.
const shuttingDown = new WeakSet<AppContext>();

/** From now on /readyz answers 503, so load balancers stop sending traffic while the process drains. */
export function markShuttingDown(ctx: AppContext): void {
  shuttingDown.add(ctx);
}

export function isShuttingDown(ctx: AppContext): boolean {
  return shuttingDown.has(ctx);
}

const Health = Type.Object({ status: Type.String(), checks: Type.Optional(Type.Record(Type.String(), Type.String())) }, { title: 'Health' });

export const healthRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/healthz', { schema: { tags: ['Meta'], summary: 'Liveness', response: { 200: Health } } }, async () => ({ status: 'ok' }));

  app.get(
    '/readyz',
    { schema: { tags: ['Meta'], summary: 'Readiness: database reachable, migrations applied', response: { 200: Health, 503: Health } } },
    async (_request, reply) => {
      const checks: Record<string, string> = {};
      const closing = isShuttingDown(ctx);
      let ready = !closing;
      checks.process = closing ? 'shutting down' : 'ok';
      try {
        await sql`select 1`.execute(ctx.db.kysely);
        checks.database = (await migrationsApplied(ctx.db)) ? 'ok' : 'migrations pending';
      } catch {
        checks.database = 'unreachable';
      }
      if (checks.database !== 'ok') ready = false;
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
    },
  );
};
