// A small cookie-keeping client for the server-rendered pages, driving the real app through inject().
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { TestApp } from './helpers.js';
import { latestMailTo, signInLinkOf } from './mail-helpers.js';

export type Form = Record<string, string | string[]>;

export class WebClient {
  readonly cookies = new Map<string, string>();
  constructor(private readonly app: FastifyInstance) {}

  private keep(res: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of res.cookies as { name: string; value: string; maxAge?: number; expires?: Date }[]) {
      if (c.maxAge === 0 || (c.expires && c.expires.getTime() < Date.now()) || c.value === '') this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    return this.keep(await this.app.inject({ method: 'GET', url, headers: { cookie: this.cookieHeader() } }));
  }

  async post(url: string, form: Form): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    return this.keep(
      await this.app.inject({
        method: 'POST',
        url,
        payload: body.toString(),
        headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      }),
    );
  }

  /** GETs a page and returns the CSRF token of its first form. */
  async csrf(url: string): Promise<string> {
    return csrfOf((await this.get(url)).body);
  }
}

export function csrfOf(page: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(page);
  if (!m) throw new Error('no CSRF field on the page');
  return m[1];
}

/** The path and query of a link from an e-mail (tests listen elsewhere than PUBLIC_URL). */
export function pathOf(link: string): string {
  const u = new URL(link);
  return u.pathname + u.search;
}

/** Signs in through the real e-mail flow: ask for a link, read it from the outbox, confirm. */
export async function signInByMail(t: TestApp, client: WebClient, audience: 'portal' | 'console', email: string): Promise<void> {
  const csrf = await client.csrf(`/${audience}/sign-in`);
  const asked = await client.post(`/${audience}/sign-in`, { _csrf: csrf, email });
  if (asked.statusCode !== 200) throw new Error(`sign-in request failed: ${asked.statusCode}`);
  const link = pathOf(signInLinkOf(latestMailTo(t.config.dataDir, email, /sign-in link/)!));
  const confirmPage = await client.get(link);
  if (confirmPage.statusCode !== 200) throw new Error(`confirm page: ${confirmPage.statusCode}`);
  const token = new URL(link, 'http://x').searchParams.get('token')!;
  const done = await client.post(`/${audience}/sign-in/confirm`, { _csrf: csrfOf(confirmPage.body), token });
  if (done.statusCode !== 303) throw new Error(`confirm failed: ${done.statusCode} ${done.body}`);
}
