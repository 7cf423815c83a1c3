// Access tokens: RFC 9068 JWTs (typ at+jwt) signed with an Ed25519 key. Keys are generated on first start and
// kept in the database (so every API process signs and verifies with the same set); public keys are served at
// /.well-known/jwks.json. Verification pins the algorithm, issuer, audience and type, then checks the
// application's current status through a short cache (at most 5 s of lag across processes).
import { KeyObject, randomUUID, sign } from 'node:crypto';
import {
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  type JWK,
  type JSONWebKeySet,
  type CryptoKey,
} from 'jose';
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { iso } from '../clock.js';
import type { Scope } from './scopes.js';
import { isScope } from './scopes.js';

export const TOKEN_LIFETIME_SECONDS = 3600;
const ALG = 'EdDSA';

export interface AuthContext {
  appId: string;
  orgId: string;
  scopes: Scope[];
  tokenId: string;
}

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  /** The encoded protected header, the same for every token signed with this key. */
  header: string;
}

interface AppState {
  status: string;
  credentialVersion: number;
  orgId: string | null;
  fetchedAt: number;
}

export class TokenService {
  private signingKey!: SigningKey;
  private jwks!: JSONWebKeySet;
  private keySet!: ReturnType<typeof createLocalJWKSet>;
  private readonly appCache = new Map<string, AppState>();
  static readonly APP_CACHE_MS = 2000;
  // Tokens whose signature and claims were already verified, by their exact text: a client sends the same token
  // for up to an hour, and EdDSA verification through WebCrypto (a thread-pool hop) was the largest single cost of
  // an authenticated request in the profile. Only successful verifications enter; expiry is checked on every use,
  // and the application's status still goes through the 2 s cache below, so suspension still takes effect.
  private readonly verifiedTokens = new Map<string, { auth: AuthContext; exp: number; cv: unknown }>();
  static readonly VERIFIED_TOKENS_MAX = 10_000;

  constructor(
    private readonly db: Db,
    private readonly config: Config,
    private readonly clock: Clock,
  ) {}

  /** Loads the signing keys, generating the first one if there is none. */
  async init(): Promise<void> {
    let rows = await this.activeKeys();
    if (rows.length === 0) {
      const { publicKey, privateKey } = await generateKeyPair(ALG, { extractable: true, crv: 'Ed25519' });
      const kid = randomUUID();
      const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
      const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: ALG };
      // Several processes may start at once: the first key inserted wins, the others load it.
      await this.db.kysely
        .insertInto('signing_keys')
        .values({
          kid,
          alg: ALG,
          public_jwk: JSON.stringify(publicJwk),
          private_jwk: JSON.stringify(privateJwk),
          created_at: iso(this.clock.now()),
          retired_at: null,
        })
        .execute();
      rows = await this.activeKeys();
    }
    const newest = rows[0];
    this.signingKey = {
      kid: newest.kid,
      privateKey: KeyObject.from((await importJWK(JSON.parse(newest.private_jwk) as JWK, ALG)) as CryptoKey),
      header: Buffer.from(JSON.stringify({ alg: ALG, typ: 'at+jwt', kid: newest.kid })).toString('base64url'),
    };
    this.jwks = { keys: rows.map((r) => JSON.parse(r.public_jwk) as JWK) };
    this.keySet = createLocalJWKSet(this.jwks);
  }

  private activeKeys() {
    return this.db.kysely
      .selectFrom('signing_keys')
      .selectAll()
      .where('retired_at', 'is', null)
      .orderBy('created_at', 'desc')
      .orderBy('kid', 'desc')
      .execute();
  }

  publicJwks(): JSONWebKeySet {
    return this.jwks;
  }

  async issue(app: { id: string; orgId: string; scopes: Scope[]; credentialVersion: number }): Promise<string> {
    const now = Math.floor(this.clock.now().getTime() / 1000);
    // The JWS compact form (RFC 7515 §7.1) signed with node:crypto's one-shot Ed25519 `sign`. jose's SignJWT goes
    // through WebCrypto, whose argument checking and thread-pool job took a quarter of the token endpoint's CPU in
    // the profile; the token is byte-for-byte the same shape and is still verified by jose (jwtVerify below).
    const claims = {
      client_id: app.id,
      scope: app.scopes.join(' '),
      org_id: app.orgId,
      cv: app.credentialVersion,
      iss: this.config.tokenIssuer,
      aud: this.config.tokenAudience,
      sub: app.id,
      iat: now,
      exp: now + TOKEN_LIFETIME_SECONDS,
      jti: randomUUID(),
    };
    const signingInput = `${this.signingKey.header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    return `${signingInput}.${sign(null, Buffer.from(signingInput), this.signingKey.privateKey).toString('base64url')}`;
  }

  /** Verifies a bearer token; returns null for anything that is not a currently valid token. */
  async verify(token: string): Promise<AuthContext | null> {
    const known = this.verifiedTokens.get(token);
    if (known) {
      if (this.clock.now().getTime() >= known.exp * 1000) {
        this.verifiedTokens.delete(token);
        return null;
      }
      return (await this.applicationAllows(known.auth.appId, known.auth.orgId, known.cv)) ? known.auth : null;
    }
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.keySet, {
        algorithms: [ALG],
        issuer: this.config.tokenIssuer,
        audience: this.config.tokenAudience,
        typ: 'at+jwt',
        currentDate: this.clock.now(),
        requiredClaims: ['exp', 'iat', 'sub', 'jti'],
      }));
    } catch {
      return null;
    }
    const appId = payload.client_id;
    const orgId = payload.org_id;
    if (typeof appId !== 'string' || typeof orgId !== 'string' || typeof payload.scope !== 'string') return null;
    if (!(await this.applicationAllows(appId, orgId, payload.cv))) return null;
    const auth: AuthContext = { appId, orgId, scopes: payload.scope.split(' ').filter(isScope), tokenId: String(payload.jti) };
    if (this.verifiedTokens.size >= TokenService.VERIFIED_TOKENS_MAX) {
      this.verifiedTokens.delete(this.verifiedTokens.keys().next().value as string); // the oldest entry
    }
    this.verifiedTokens.set(token, { auth, exp: Number(payload.exp), cv: payload.cv });
    return auth;
  }

  /** The application still exists, is approved, belongs to the token's organization, and its credentials were not reset. */
  private async applicationAllows(appId: string, orgId: string, credentialVersion: unknown): Promise<boolean> {
    const state = await this.applicationState(appId);
    return Boolean(state && state.status === 'approved' && state.orgId === orgId && state.credentialVersion === credentialVersion);
  }

  private async applicationState(appId: string): Promise<AppState | null> {
    const now = Date.now();
    const cached = this.appCache.get(appId);
    if (cached && now - cached.fetchedAt < TokenService.APP_CACHE_MS) return cached;
    const row = await this.db.kysely
      .selectFrom('applications')
      .select(['status', 'credential_version', 'org_id'])
      .where('id', '=', appId)
      .executeTakeFirst();
    if (!row) {
      this.appCache.delete(appId);
      return null;
    }
    const state = { status: row.status, credentialVersion: row.credential_version, orgId: row.org_id, fetchedAt: now };
    if (this.appCache.size > 10_000) this.appCache.clear();
    this.appCache.set(appId, state);
    return state;
  }

  /** Drops the cached state of an application after this process changed it (other processes lag ≤ 2 s). */
  forgetApplication(appId: string): void {
    this.appCache.delete(appId);
  }
}
