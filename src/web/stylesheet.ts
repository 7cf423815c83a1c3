// The one stylesheet of the portal and the console, served by the app at /assets/site.css (no CDN).
// Readable type, visible focus, colour contrast of at least 4.5:1, and a single column on a phone.
export const STYLESHEET = `
:root { --fg: #1b1f24; --muted: #57606a; --bg: #ffffff; --panel: #f6f8fa; --line: #d0d7de; --accent: #0b5cad;
  --accent-fg: #ffffff; --danger: #b42318; --ok: #1a7f37; --warn: #8a5a00; --focus: #f5a623; }
* { box-sizing: border-box; }
html { font-size: 100%; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; line-height: 1.5; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
a:hover { text-decoration-thickness: 2px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--fg); color: #fff; padding: .5rem 1rem; }
.skip:focus { left: .5rem; }
header.site { background: #0f2742; color: #fff; }
header.site .inner { max-width: 64rem; margin: 0 auto; padding: .75rem 1rem; display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: center; }
header.site a { color: #fff; }
header.site .brand { font-weight: 700; text-decoration: none; margin-right: auto; }
header.site nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0; padding: 0; }
header.site nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
header.site form { margin: 0; }
header.site .who { color: #d6e4f5; font-size: .9rem; }
header.site button { background: transparent; color: #fff; border: 1px solid #9fb6d1; padding: .25rem .6rem; }
main { max-width: 64rem; margin: 0 auto; padding: 1.25rem 1rem 3rem; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: .5rem 0 1rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 .75rem; }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .5rem; }
p.lead { color: var(--muted); margin-top: -.5rem; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 1rem; margin: 1rem 0; }
.notice { border-left: 4px solid var(--ok); background: #eefbf1; padding: .75rem 1rem; margin: 0 0 1rem; }
.notice.warn { border-color: var(--warn); background: #fff8e6; }
.error { border-left: 4px solid var(--danger); background: #fff1f0; padding: .75rem 1rem; margin: 0 0 1rem; }
form.stack { display: grid; gap: 1rem; max-width: 40rem; }
form.inline { display: inline; }
label { font-weight: 600; display: block; }
.hint { color: var(--muted); font-size: .9rem; font-weight: 400; display: block; }
input[type="text"], input[type="email"], input[type="number"], select, textarea {
  font: inherit; width: 100%; padding: .5rem .6rem; border: 1px solid #8c959f; border-radius: 4px; background: #fff; color: var(--fg); }
textarea { min-height: 6rem; }
fieldset { border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; margin: 0; }
legend { font-weight: 600; padding: 0 .25rem; }
.choice { display: flex; gap: .6rem; align-items: flex-start; padding: .35rem 0; font-weight: 400; }
.choice input { margin-top: .3rem; width: 1.1rem; height: 1.1rem; flex: none; }
.choice code { font-weight: 600; }
button, .button { font: inherit; cursor: pointer; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg);
  padding: .5rem 1rem; text-decoration: none; display: inline-block; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
caption { text-align: left; padding: .25rem 0; }
input.narrow { max-width: 8rem; }
th, td { text-align: left; padding: .5rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { background: var(--panel); font-size: .9rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; word-break: break-all; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .4rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
.badge { display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .85rem; font-weight: 600; border: 1px solid currentColor; }
.badge.pending { color: var(--warn); } .badge.approved, .badge.published { color: var(--ok); }
.badge.rejected, .badge.suspended, .badge.retired { color: var(--danger); } .badge.draft { color: var(--muted); }
ul.scopes { margin: 0; padding-left: 1.1rem; }
.muted { color: var(--muted); }
@media (max-width: 40rem) {
  h1 { font-size: 1.35rem; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: .5rem; }
  table.cards thead { display: none; }
  table.cards tr { display: block; border: 1px solid var(--line); border-radius: 6px; margin-bottom: .75rem; padding: .25rem .5rem; }
  table.cards td { display: block; border: 0; padding: .25rem 0; }
  table.cards td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; }
}
`;
