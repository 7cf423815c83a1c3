// Access tokens: RFC 9068 JWTs (typ at+jwt) signed with an Ed25519 key. Keys are generated on first start and
// kept in the database (so every API process signs and verifies with the same set); public keys are served at
// /.well-known/jwks.json. Verification pins the algorithm, issuer, audience and type, then checks the
// application's current status through a short cache (at most 5 s of lag across processes).
import { randomUUID } from 'node:crypto';
import {
  SignJWT,
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
  privateKey: CryptoKey;
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
      privateKey: (await importJWK(JSON.parse(newest.private_jwk) as JWK, ALG)) as CryptoKey,
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
    return new SignJWT({
      client_id: app.id,
      scope: app.scopes.join(' '),
      org_id: app.orgId,
      cv: app.credentialVersion,
    })
      .setProtectedHeader({ alg: ALG, typ: 'at+jwt', kid: this.signingKey.kid })
      .setIssuer(this.config.tokenIssuer)
      .setAudience(this.config.tokenAudience)
      .setSubject(app.id)
      .setIssuedAt(now)
      .setExpirationTime(now + TOKEN_LIFETIME_SECONDS)
      .setJti(randomUUID())
      .sign(this.signingKey.privateKey);
  }

  /** Verifies a bearer token; returns null for anything that is not a currently valid token. */
  async verify(token: string): Promise<AuthContext | null> {
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
    const state = await this.applicationState(appId);
    if (!state || state.status !== 'approved' || state.orgId !== orgId || state.credentialVersion !== payload.cv) {
      return null;
    }
    return {
      appId,
      orgId,
      scopes: payload.scope.split(' ').filter(isScope),
      tokenId: String(payload.jti),
    };
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
