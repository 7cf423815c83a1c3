// The public verification page, server-rendered: small, self-contained (inline CSS, no scripts, fonts or
// images from elsewhere), readable without colour (the verdict is in words, not only in a colour), and
// escaped throughout, since the learner's name and the course title are data.
import type { Verification } from './schemas.js';
import { formatDate } from './pdf.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const STYLE = `
  :root { color-scheme: light dark; --ok: #11693a; --bad: #a4161a; --warn: #8a5300; --ink: #1c2940; --muted: #5b6678; --bg: #f5f7fa; --card: #fff; }
  @media (prefers-color-scheme: dark) { :root { --ok: #5fd18f; --bad: #ff8a8a; --warn: #f0b45a; --ink: #e8edf5; --muted: #a9b3c2; --bg: #10151d; --card: #1a212c; } }
  * { box-sizing: border-box; }
  body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
  main { max-width: 36rem; margin: 3rem auto; padding: 2rem; background: var(--card); border-radius: 12px; box-shadow: 0 1px 4px rgb(0 0 0 / 0.12); }
  h1 { font-size: 1.5rem; margin: 0 0 0.25rem; }
  .verdict { font-size: 1.25rem; font-weight: 700; margin: 1rem 0 1.5rem; padding: 0.75rem 1rem; border-radius: 8px; border: 2px solid currentColor; }
  .valid { color: var(--ok); } .revoked { color: var(--bad); } .expired { color: var(--warn); } .unknown { color: var(--bad); }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.5rem 1.25rem; margin: 0; }
  dt { color: var(--muted); } dd { margin: 0; font-weight: 600; }
  footer { margin-top: 2rem; color: var(--muted); font-size: 0.875rem; }
`;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
<footer>This page is published by the issuer so that anyone holding the certificate's link or QR code can check it.</footer>
</main>
</body>
</html>
`;
}

const VERDICTS = {
  valid: 'Valid: this certificate is genuine and in force.',
  expired: 'Expired: this certificate was genuine but is no longer in force.',
  revoked: 'Revoked: the issuer has withdrawn this certificate.',
} as const;

export function verificationPage(v: Verification): string {
  const rows: [string, string][] = [
    ['Awarded to', v.learner_name],
    ['Course', v.course_title],
    ['Issued', formatDate(v.issued_at)],
    ['Valid until', v.expires_at ? formatDate(v.expires_at) : 'Does not expire'],
  ];
  if (v.revoked_at) rows.push(['Revoked', formatDate(v.revoked_at)]);
  const list = rows.map(([k, val]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(val)}</dd>`).join('\n');
  return layout(
    `Certificate verification: ${v.status}`,
    `<h1>Certificate verification</h1>
<p class="verdict ${v.status}" role="status">${escapeHtml(VERDICTS[v.status])}</p>
<dl>
${list}
</dl>`,
  );
}

export function notFoundPage(): string {
  return layout(
    'Certificate not found',
    `<h1>Certificate not found</h1>
<p class="verdict unknown" role="status">No certificate matches this verification link.</p>
<p>Check that the link was copied completely, or scan the QR code on the certificate again.</p>`,
  );
}
