// People who use the web pages: developers (portal) and operators (console). Both sign in with a single-use
// link sent by e-mail (no passwords). Only hashes of link tokens and session ids are stored, so a copy of
// the database signs nobody in. A developer account is created by the first successful sign-in; operators
// exist only when added with `lmsapi operators add`.
import type { AppContext } from '../../context.js';
import type { Audience, Row } from '../../db/types.js';
import { iso } from '../../clock.js';
import { newId } from '../../ids.js';
import { hashSecret, randomToken } from '../../auth/secrets.js';
import { uniqueViolation } from '../../db/index.js';
import { AppError } from '../../http/errors.js';
import { recordAudit } from '../audit/service.js';
import { signInMail } from '../../mail/templates.js';

export const SIGN_IN_LINK_MS = 15 * 60_000;
export const SESSION_MS = 12 * 3_600_000;
/** At most this many links per address and audience within SIGN_IN_LINK_MS: nobody can flood an inbox. */
export const MAX_LINKS_PER_WINDOW = 5;

const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

export function normaliseEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (e.length > 254 || !EMAIL.test(e)) throw new AppError('validation_failed', 'Enter an e-mail address such as name@example.com.');
  return e;
}

export interface Person {
  id: string;
  email: string;
  audience: Audience;
}

export async function addOperator(ctx: AppContext, email: string, actor = 'cli'): Promise<Row<'operators'>> {
  const normalized = normaliseEmail(email);
  const row = { id: newId('operator'), email: email.trim(), email_normalized: normalized, created_at: iso(ctx.clock.now()) };
  try {
    await ctx.db.kysely.transaction().execute(async (trx) => {
      await trx.insertInto('operators').values(row).execute();
      await recordAudit(trx, ctx.clock, { actor, action: 'operator.added', target: row.id, details: { email: row.email } });
    });
  } catch (err) {
    if (uniqueViolation(err)) throw new AppError('conflict', `${row.email} is an operator already.`);
    throw err;
  }
  return row;
}

/**
 * E-mails a sign-in link. Answers the same whether or not the address is known (no account enumeration);
 * for the console, only operators' addresses actually get a message. At most MAX_LINKS_PER_WINDOW links per
 * address are sent within 15 minutes; further requests are answered the same but send nothing.
 */
export async function requestSignInLink(ctx: AppContext, audience: Audience, email: string): Promise<void> {
  const normalized = normaliseEmail(email);
  if (audience === 'console') {
    const op = await ctx.db.kysely.selectFrom('operators').select('id').where('email_normalized', '=', normalized).executeTakeFirst();
    if (!op) return;
  }
  const token = randomToken();
  const now = ctx.clock.now();
  const sent = await ctx.db.kysely.transaction().execute(async (trx) => {
    const recent = await trx
      .selectFrom('sign_in_links')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('email_normalized', '=', normalized)
      .where('audience', '=', audience)
      .where('created_at', '>', iso(new Date(now.getTime() - SIGN_IN_LINK_MS)))
      .executeTakeFirstOrThrow();
    if (Number(recent.n) >= MAX_LINKS_PER_WINDOW) return false;
    // Housekeeping: links and sessions that ended more than a day ago are of no use to anyone.
    const dayAgo = iso(new Date(now.getTime() - 86_400_000));
    await trx.deleteFrom('sign_in_links').where('expires_at', '<', dayAgo).execute();
    await trx.deleteFrom('sessions').where('expires_at', '<', dayAgo).execute();
    await trx
      .insertInto('sign_in_links')
      .values({
        token_hash: hashSecret(token),
        email_normalized: normalized,
        audience,
        expires_at: iso(new Date(now.getTime() + SIGN_IN_LINK_MS)),
        used_at: null,
        created_at: iso(now),
      })
      .execute();
    return true;
  });
  // Same answer either way: the caller cannot tell a throttled address from a fresh one.
  if (!sent) return;
  const link = `${ctx.config.publicUrl}/${audience}/sign-in/confirm?token=${encodeURIComponent(token)}`;
  await ctx.mailer.send(signInMail(email.trim(), audience, link));
}

export type LinkState = 'valid' | 'used' | 'expired' | 'unknown';

export async function signInLinkState(ctx: AppContext, audience: Audience, token: string): Promise<LinkState> {
  const row = await ctx.db.kysely
    .selectFrom('sign_in_links')
    .selectAll()
    .where('token_hash', '=', hashSecret(token))
    .where('audience', '=', audience)
    .executeTakeFirst();
  if (!row) return 'unknown';
  if (row.used_at) return 'used';
  if (row.expires_at <= iso(ctx.clock.now())) return 'expired';
  return 'valid';
}

export interface NewSession {
  sessionId: string;
  person: Person;
}

/**
 * Uses a sign-in link: marks it used (one conditional UPDATE, so two clicks cannot both succeed), finds or
 * creates the person and opens a session. A used, expired or unknown link changes nothing.
 */
export async function useSignInLink(ctx: AppContext, audience: Audience, token: string): Promise<NewSession | LinkState> {
  const now = iso(ctx.clock.now());
  const tokenHash = hashSecret(token);
  const result = await ctx.db.kysely.transaction().execute(async (trx) => {
    const link = await trx
      .updateTable('sign_in_links')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('audience', '=', audience)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('email_normalized')
      .executeTakeFirst();
    if (!link) return null;
    let person: Person;
    if (audience === 'console') {
      const op = await trx.selectFrom('operators').selectAll().where('email_normalized', '=', link.email_normalized).executeTakeFirst();
      if (!op) return null; // removed since the link was sent
      person = { id: op.id, email: op.email, audience };
    } else {
      let dev = await trx.selectFrom('developers').selectAll().where('email_normalized', '=', link.email_normalized).executeTakeFirst();
      if (!dev) {
        dev = { id: newId('developer'), email: link.email_normalized, email_normalized: link.email_normalized, created_at: now, updated_at: now };
        await trx.insertInto('developers').values(dev).execute();
      }
      person = { id: dev.id, email: dev.email, audience };
    }
    const sessionId = randomToken();
    await trx
      .insertInto('sessions')
      .values({
        id_hash: hashSecret(sessionId),
        audience,
        subject_id: person.id,
        csrf_token: randomToken(),
        expires_at: iso(new Date(ctx.clock.now().getTime() + SESSION_MS)),
        created_at: now,
      })
      .execute();
    return { sessionId, person };
  });
  return result ?? (await signInLinkState(ctx, audience, token));
}

export interface ActiveSession {
  idHash: string;
  csrfToken: string;
  person: Person;
}

export async function findSession(ctx: AppContext, audience: Audience, sessionId: string): Promise<ActiveSession | null> {
  const session = await ctx.db.kysely
    .selectFrom('sessions')
    .selectAll()
    .where('id_hash', '=', hashSecret(sessionId))
    .where('audience', '=', audience)
    .where('expires_at', '>', iso(ctx.clock.now()))
    .executeTakeFirst();
  if (!session) return null;
  const table = audience === 'portal' ? 'developers' : 'operators';
  const person = await ctx.db.kysely.selectFrom(table).select(['id', 'email']).where('id', '=', session.subject_id).executeTakeFirst();
  if (!person) return null;
  return { idHash: session.id_hash, csrfToken: session.csrf_token, person: { ...person, audience } };
}

export async function endSession(ctx: AppContext, idHash: string): Promise<void> {
  await ctx.db.kysely.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
}

export async function findDeveloper(ctx: AppContext, id: string) {
  return ctx.db.kysely.selectFrom('developers').selectAll().where('id', '=', id).executeTakeFirst();
}
