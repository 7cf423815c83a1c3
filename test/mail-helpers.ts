// Reading the e-mail the service sends, for tests: the .eml outbox (DATA_DIR/mail/) and raw SMTP messages.
// A small MIME reader: headers (with RFC 2047 encoded words), multipart bodies, quoted-printable and base64.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ParsedMail {
  file?: string;
  headers: Record<string, string>;
  subject: string;
  to: string;
  text: string;
  html: string;
  raw: string;
}

function decodeWords(value: string): string {
  // Whitespace between two encoded words is not part of the text (RFC 2047 §6.2).
  return value.replace(/\?=\s+=\?/g, '?==?').replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g, (_m, _charset, enc: string, data: string) =>
    enc.toUpperCase() === 'B'
      ? Buffer.from(data, 'base64').toString('utf8')
      : Buffer.from(data.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8'),
  );
}

function splitHeaders(part: string): { headers: Record<string, string>; body: string } {
  const normal = part.replace(/\r\n/g, '\n');
  const end = normal.indexOf('\n\n');
  const head = end < 0 ? normal : normal.slice(0, end);
  const body = end < 0 ? '' : normal.slice(end + 2);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\n(?=[ \t])/g, '').split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = decodeWords(line.slice(i + 1).trim());
  }
  return { headers, body };
}

function decodeBody(body: string, encoding = ''): string {
  const enc = encoding.toLowerCase();
  if (enc === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (enc === 'quoted-printable') {
    const bytes = body.replace(/=\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

function collect(part: { headers: Record<string, string>; body: string }, out: { text: string; html: string }): void {
  const type = part.headers['content-type'] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (type.toLowerCase().startsWith('multipart/') && boundary) {
    const sections = part.body.split(`--${boundary}`).slice(1);
    for (const section of sections) {
      if (section.startsWith('--')) break;
      collect(splitHeaders(section.replace(/^\n/, '')), out);
    }
    return;
  }
  const decoded = decodeBody(part.body, part.headers['content-transfer-encoding']);
  if (type.toLowerCase().startsWith('text/html')) out.html += decoded;
  else if (type.toLowerCase().startsWith('text/plain')) out.text += decoded;
}

export function parseMail(raw: string, file?: string): ParsedMail {
  const top = splitHeaders(raw);
  const out = { text: '', html: '' };
  collect(top, out);
  return { file, headers: top.headers, subject: top.headers.subject ?? '', to: top.headers.to ?? '', text: out.text, html: out.html, raw };
}

/** Every message in the outbox, oldest first (file names are time-ordered). */
export function readOutbox(dataDir: string): ParsedMail[] {
  const dir = join(dataDir, 'mail');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.eml'))
    .sort()
    .map((f) => parseMail(readFileSync(join(dir, f), 'utf8'), join(dir, f)));
}

/** The newest message to an address (optionally whose subject matches), or undefined. */
export function latestMailTo(dataDir: string, to: string, subject?: RegExp): ParsedMail | undefined {
  return readOutbox(dataDir)
    .filter((m) => m.to.toLowerCase().includes(to.toLowerCase()) && (!subject || subject.test(m.subject)))
    .at(-1);
}

/** Waits (polling the outbox) for a message to arrive; for browser tests where the send follows a click. */
export async function waitForMail(dataDir: string, to: string, subject: RegExp, after = 0, timeoutMs = 30_000): Promise<ParsedMail> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = readOutbox(dataDir).filter((m) => m.to.toLowerCase().includes(to.toLowerCase()) && subject.test(m.subject));
    if (all.length > after) return all[all.length - 1];
    if (Date.now() > deadline) throw new Error(`no mail to ${to} matching ${subject} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function signInLinkOf(mail: ParsedMail): string {
  const m = /https?:\/\/\S+\/sign-in\/confirm\?token=[A-Za-z0-9_%-]+/.exec(mail.text);
  if (!m) throw new Error(`no sign-in link in: ${mail.text}`);
  return m[0];
}

export function credentialsOf(mail: ParsedMail): { client_id: string; client_secret: string; scopes: string[] } {
  const id = /client_id:\s+(\S+)/.exec(mail.text)?.[1];
  const secret = /client_secret:\s+(\S+)/.exec(mail.text)?.[1];
  const scopes = /scopes:\s+(.*)/.exec(mail.text)?.[1];
  if (!id || !secret || scopes === undefined) throw new Error(`no credentials in: ${mail.text}`);
  return { client_id: id, client_secret: secret, scopes: scopes.trim().split(/\s+/) };
}
