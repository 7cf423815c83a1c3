// The page frame shared by the portal and the console: skip link, header with navigation and sign-out,
// one <h1> per page, an optional notice, and the stylesheet served by the app itself.
import type { Audience } from '../db/types.js';
import { html, type SafeHtml } from './html.js';

export interface Viewer {
  email: string;
  csrfToken: string;
}

export interface PageOptions {
  audience: Audience;
  title: string;
  viewer?: Viewer | null;
  /** The nav link to mark as the current page. */
  current?: string;
  notice?: { text: string; kind?: 'ok' | 'warn' } | null;
  body: SafeHtml;
}

const NAV: Record<Audience, { href: string; label: string }[]> = {
  portal: [
    { href: '/portal', label: 'My applications' },
    { href: '/portal/applications/new', label: 'Apply for credentials' },
    { href: '/docs', label: 'API reference' },
  ],
  console: [
    { href: '/console', label: 'Review' },
    { href: '/console/applications', label: 'Applications' },
    { href: '/console/organizations', label: 'Organizations' },
    { href: '/console/catalogue', label: 'Catalogue' },
    { href: '/console/audit', label: 'Audit log' },
  ],
};

export const SITE_NAME: Record<Audience, string> = { portal: 'Developer portal', console: 'Operator console' };

export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

export function renderPage(o: PageOptions): string {
  const nav = o.viewer
    ? html`<nav aria-label="Main"><ul>${NAV[o.audience].map(
        (l) => html`<li><a href="${l.href}"${o.current === l.href ? html` aria-current="page"` : ''}>${l.label}</a></li>`,
      )}</ul></nav>
<span class="who">Signed in as ${o.viewer.email}</span>
<form method="post" action="/${o.audience}/sign-out">${csrfField(o.viewer.csrfToken)}<button type="submit">Sign out</button></form>`
    : '';
  const notice = o.notice ? html`<div class="notice${o.notice.kind === 'warn' ? ' warn' : ''}" role="status">${o.notice.text}</div>` : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · ${SITE_NAME[o.audience]} · LMS Integration API</title>
<link rel="stylesheet" href="/assets/site.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site"><div class="inner">
<a class="brand" href="/${o.audience}">LMS Integration API · ${SITE_NAME[o.audience]}</a>
${nav}
</div></header>
<main id="main" tabindex="-1">
${notice}
<h1>${o.title}</h1>
${o.body}
</main>
</body>
</html>
`.value;
}

export function statusBadge(status: string): SafeHtml {
  return html`<span class="badge ${status}">${status}</span>`;
}
