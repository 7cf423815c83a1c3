// Shared plumbing of the server-rendered pages (portal and console): cookies, sessions, CSRF, HTML error
// pages, security headers, the route-schema helpers that put every page into the OpenAPI document, and the
// e-mail sign-in flow, which works the same for both audiences.
//
// Sessions: the cookie holds a random id; the database holds only its hash. CSRF: every POST carries `_csrf`;
// signed in, it must equal the session's token; before sign-in (the e-mail and confirm forms) it must equal a
// random cookie of its own (double submit), which another site can neither read nor set.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyError } from 'fastify';
import { Type, type TSchema } from '@sinclair/typebox';
import type {} from '@fastify/cookie';
import type { AppContext } from '../context.js';
import type { Audience } from '../db/types.js';
import { AppError, ERROR_CODES } from '../http/errors.js';
import { fieldErrors } from '../http/validation.js';
import { randomToken } from '../auth/secrets.js';
import {
  SESSION_MS,
  endSession,
  findSession,
  requestSignInLink,
  signInLinkState,
  useSignInLink,
  type ActiveSession,
  type LinkState,
} from '../modules/accounts/service.js';
import { html, type SafeHtml } from './html.js';
import { csrfField, renderPage, SITE_NAME } from './layout.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A page of the portal or console that needs no session (the sign-in pages). */
    web?: { anonymous?: boolean };
  }
  interface FastifyRequest {
    web: ActiveSession | null;
  }
}

export const HTML_TYPE = 'text/html; charset=utf-8';
const FORM_COOKIE = 'lms_form';
export const sessionCookie = (audience: Audience) => `lms_${audience}`;

export const TAGS: Record<Audience, string> = { portal: 'Developer portal (HTML)', console: 'Operator console (HTML)' };

const RESPONSE_TEXT: Record<number, string> = {
  200: 'The HTML page.',
  303: 'Redirect to the resulting page (post/redirect/get); to the sign-in page when not signed in.',
  400: 'The form is not valid: an HTML page saying what to fix; nothing was changed.',
  403: 'Missing or wrong CSRF token, or the session has ended: an HTML page; nothing was changed.',
  404: 'Not found (or not yours): an HTML page; nothing was changed.',
  409: 'Not possible in the current state: an HTML page; nothing was changed.',
  410: 'The sign-in link was used already or has expired: an HTML page; nothing was changed.',
};

/** Route schema of a page or form: tag, summary, HTML responses, and form-encoded bodies. */
export function pageSchema(
  audience: Audience,
  summary: string,
  opts: { statuses: number[]; params?: TSchema; querystring?: TSchema; body?: TSchema; description?: string },
) {
  const response: Record<number, unknown> = {};
  // Any page answers a malformed request (bad query, path or form) with an HTML 400 page.
  for (const s of [...new Set([...opts.statuses, 400])].sort()) {
    response[s] =
      s === 303
        ? { description: RESPONSE_TEXT[s], type: 'null' }
        : { description: RESPONSE_TEXT[s], content: { 'text/html': { schema: { type: 'string' } } } };
  }
  return {
    tags: [TAGS[audience]],
    summary,
    ...(opts.description ? { description: opts.description } : {}),
    security: [],
    ...(opts.params ? { params: opts.params } : {}),
    ...(opts.querystring ? { querystring: opts.querystring } : {}),
    ...(opts.body ? { body: opts.body, consumes: ['application/x-www-form-urlencoded'] } : {}),
    response,
  };
}

/** A form body: `_csrf` plus the given fields, nothing else. */
export function formBody(fields: Record<string, TSchema> = {}) {
  return Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 200, description: 'The CSRF token from the form.' })), ...fields }, { additionalProperties: false });
}

/** A multi-valued form field (checkboxes): one value arrives as a string, several as an array. */
export const MultiField = Type.Union([Type.String({ maxLength: 200 }), Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100 })]);
export const asList = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

export function sendHtml(reply: FastifyReply, body: string, status = 200) {
  return reply.code(status).type(HTML_TYPE).send(body);
}

export function seeOther(reply: FastifyReply, location: string) {
  return reply.code(303).header('Location', location).send();
}

function same(a: unknown, b: unknown): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length === 0) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function cookieOptions(ctx: AppContext, path: string, maxAgeSeconds?: number) {
  return {
    path,
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: ctx.config.publicUrl.startsWith('https:'),
    ...(maxAgeSeconds !== undefined ? { maxAge: maxAgeSeconds } : {}),
  };
}

/** The CSRF token for a form shown before sign-in (set as a cookie on first use). */
function formToken(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): string {
  let token = request.cookies[FORM_COOKIE];
  if (!token || token.length < 20 || token.length > 100) {
    token = randomToken();
    reply.setCookie(FORM_COOKIE, token, cookieOptions(ctx, '/'));
  }
  return token;
}

export function viewerOf(request: FastifyRequest) {
  return request.web ? { email: request.web.person.email, csrfToken: request.web.csrfToken } : null;
}

/** The signed-in person; the hooks below guarantee one on every route that is not anonymous. */
export function personOf(request: FastifyRequest) {
  if (!request.web) throw new AppError('forbidden', 'Sign in first.');
  return request.web.person;
}

function errorPage(audience: Audience, request: FastifyRequest, title: string, message: SafeHtml | string): string {
  const home = request.web ? `/${audience}` : `/${audience}/sign-in`;
  return renderPage({
    audience,
    title,
    viewer: viewerOf(request),
    body: html`<div class="error" role="alert">${typeof message === 'string' ? html`<p>${message}</p>` : message}</div>
<p><a href="${home}">Back to the ${SITE_NAME[audience].toLowerCase()}</a></p>`,
  });
}

/**
 * Installs sessions, CSRF checks, HTML errors and security headers on one audience's (encapsulated) plugin,
 * and registers its sign-in, confirm and sign-out routes.
 */
export function setUpAudience(app: FastifyInstance, ctx: AppContext, audience: Audience): void {
  const cookie = sessionCookie(audience);
  app.decorateRequest('web', null);

  app.addHook('onRequest', async (request) => {
    const sid = request.cookies[cookie];
    request.web = sid && sid.length <= 100 ? await findSession(ctx, audience, sid) : null;
  });

  // Before the body is validated: a form without its token is refused as such, whatever else is wrong with it.
  app.addHook('preValidation', async (request, reply) => {
    const anonymous = request.routeOptions.config.web?.anonymous === true;
    if (!anonymous && !request.web) {
      if (request.method === 'GET' || request.method === 'HEAD') return seeOther(reply, `/${audience}/sign-in`);
      throw new AppError('forbidden', 'You are not signed in (or your session has ended). Sign in again, then repeat what you were doing. Nothing was changed.');
    }
    if (request.method === 'POST') {
      const sent = (request.body as { _csrf?: unknown } | undefined)?._csrf;
      const expected = anonymous ? request.cookies[FORM_COOKIE] : request.web!.csrfToken;
      if (!same(sent, expected)) {
        throw new AppError('forbidden', 'This form is missing its security token or the token is out of date. Reload the page and try again. Nothing was changed.');
      }
    }
  });

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('Cache-Control', 'no-store');
    reply.header('Content-Security-Policy', "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('X-Frame-Options', 'DENY');
    // Sign-in links carry their token in the URL: never send it on to another site.
    reply.header('Referrer-Policy', 'no-referrer');
    return payload;
  });

  app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
    let status = 500;
    let title = 'Something went wrong';
    let message: SafeHtml | string = 'Something went wrong on our side. Please try again; if it keeps happening, quote this request id: ' + request.id;
    if (err instanceof AppError) {
      status = err.status;
      title = ({ 400: 'Please check the form', 403: 'Not allowed', 404: 'Not found', 409: 'Not possible in the current state' } as Record<number, string>)[status] ?? ERROR_CODES[err.code].title;
      message = /Nothing was changed/.test(err.message) ? err.message : html`<p>${err.message}</p><p>Nothing was changed.</p>`;
    } else if ((err as FastifyError).validation) {
      status = 400;
      title = 'Please check the form';
      const problems = fieldErrors((err as FastifyError).validation as never);
      message = html`<p>The form could not be used. Nothing was changed.</p><ul>${problems.map((p) => html`<li><code>${p.pointer.slice(1) || 'form'}</code> ${p.message}</li>`)}</ul>`;
    } else if ((err as FastifyError).statusCode && (err as FastifyError).statusCode! < 500) {
      status = (err as FastifyError).statusCode!;
      title = 'The request could not be understood';
      message = 'The request could not be understood. Nothing was changed.';
    } else {
      request.log.error({ err }, 'unhandled error on a web page');
    }
    return sendHtml(reply, errorPage(audience, request, title, message), status);
  });

  registerSignIn(app, ctx, audience);
}

const LINK_PROBLEM: Record<Exclude<LinkState, 'valid'>, string> = {
  used: 'This sign-in link has been used already. Each link works once.',
  expired: 'This sign-in link has expired. Links are valid for 15 minutes.',
  unknown: 'This sign-in link is not valid. Check that you opened the whole link from the e-mail.',
};

function linkProblemPage(audience: Audience, request: FastifyRequest, state: Exclude<LinkState, 'valid'>) {
  return errorPage(
    audience,
    request,
    'This sign-in link cannot be used',
    html`<p>${LINK_PROBLEM[state]}</p><p>Nothing was changed. <a href="/${audience}/sign-in">Ask for a new link</a>.</p>`,
  );
}

function signInForm(token: string, audience: Audience, email = '', error?: string): SafeHtml {
  const who = audience === 'portal' ? 'developer' : 'operator';
  return html`${error ? html`<div class="error" role="alert"><p>${error}</p></div>` : ''}
<p class="lead">No password: we e-mail you a link that signs you in. It works once and for 15 minutes.</p>
<form class="stack" method="post" action="/${audience}/sign-in">
${csrfField(token)}
<div><label for="email">Your e-mail address</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${email}"${error ? html` aria-invalid="true"` : ''}></div>
<div><button type="submit">E-mail me a sign-in link</button></div>
</form>
${audience === 'portal' ? html`<p class="muted">New here? Signing in creates your ${who} account.</p>` : html`<p class="muted">Operators are added by an administrator with <code>lmsapi operators add</code>.</p>`}`;
}

function registerSignIn(app: FastifyInstance, ctx: AppContext, audience: Audience): void {
  const anonymous = { web: { anonymous: true } };
  const SIGNED_OUT = 'You are signed out.';

  app.get(
    `/${audience}/sign-in`,
    {
      config: anonymous,
      schema: pageSchema(audience, 'Sign-in page (asks for an e-mail address)', {
        statuses: [200, 303],
        querystring: Type.Object({ signed_out: Type.Optional(Type.String({ maxLength: 10 })) }),
      }),
    },
    async (request, reply) => {
      if (request.web) return seeOther(reply, `/${audience}`);
      const q = request.query as { signed_out?: string };
      const body = signInForm(formToken(ctx, request, reply), audience);
      return sendHtml(reply, renderPage({ audience, title: `Sign in to the ${SITE_NAME[audience].toLowerCase()}`, body, notice: q.signed_out ? { text: SIGNED_OUT } : null }));
    },
  );

  app.post(
    `/${audience}/sign-in`,
    {
      config: anonymous,
      schema: pageSchema(audience, 'E-mail a single-use sign-in link', {
        statuses: [200, 400, 403],
        body: formBody({ email: Type.String({ maxLength: 254 }) }),
      }),
    },
    async (request, reply) => {
      const { email } = request.body as { email: string };
      try {
        await requestSignInLink(ctx, audience, email);
      } catch (err) {
        if (err instanceof AppError && err.code === 'validation_failed') {
          const body = signInForm(formToken(ctx, request, reply), audience, email, err.message);
          return sendHtml(reply, renderPage({ audience, title: `Sign in to the ${SITE_NAME[audience].toLowerCase()}`, body }), 400);
        }
        throw err;
      }
      const body = html`<p>If <strong>${email}</strong> ${audience === 'console' ? 'belongs to an operator, it' : ''} can sign in, a link is on its way.
Open it within 15 minutes; it works once.</p>
<p><a href="/${audience}/sign-in">Use another address</a></p>`;
      return sendHtml(reply, renderPage({ audience, title: 'Check your e-mail', body }));
    },
  );

  const TokenQuery = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) });

  app.get(
    `/${audience}/sign-in/confirm`,
    {
      config: anonymous,
      schema: pageSchema(audience, 'Sign-in link target: asks to confirm the sign-in', {
        description: 'Opening the link changes nothing (mail scanners may open it); the button on the page signs in.',
        statuses: [200, 400, 410],
        querystring: TokenQuery,
      }),
    },
    async (request, reply) => {
      const { token } = request.query as { token: string };
      const state = await signInLinkState(ctx, audience, token);
      if (state !== 'valid') return sendHtml(reply, linkProblemPage(audience, request, state), 410);
      const body = html`<p>Continue to sign in to the ${SITE_NAME[audience].toLowerCase()}.</p>
<form method="post" action="/${audience}/sign-in/confirm">
${csrfField(formToken(ctx, request, reply))}
<input type="hidden" name="token" value="${token}">
<button type="submit">Sign in</button>
</form>`;
      return sendHtml(reply, renderPage({ audience, title: 'Sign in', body }));
    },
  );

  app.post(
    `/${audience}/sign-in/confirm`,
    {
      config: anonymous,
      schema: pageSchema(audience, 'Use a sign-in link and open a session', {
        statuses: [303, 400, 403, 410],
        body: formBody({ token: Type.String({ minLength: 1, maxLength: 200 }) }),
      }),
    },
    async (request, reply) => {
      const { token } = request.body as { token: string };
      const result = await useSignInLink(ctx, audience, token);
      if (typeof result === 'string') return sendHtml(reply, linkProblemPage(audience, request, result as Exclude<LinkState, 'valid'>), 410);
      reply.setCookie(sessionCookie(audience), result.sessionId, cookieOptions(ctx, `/${audience}`, SESSION_MS / 1000));
      return seeOther(reply, `/${audience}`);
    },
  );

  app.post(
    `/${audience}/sign-out`,
    { schema: pageSchema(audience, 'Sign out (ends the session)', { statuses: [303, 403], body: formBody() }) },
    async (request, reply) => {
      if (request.web) await endSession(ctx, request.web.idHash);
      reply.clearCookie(sessionCookie(audience), cookieOptions(ctx, `/${audience}`));
      return seeOther(reply, `/${audience}/sign-in?signed_out=1`);
    },
  );
}

