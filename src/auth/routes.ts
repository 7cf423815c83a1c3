// POST /v1/oauth/token (client_credentials; JSON, form-encoded or HTTP Basic) and GET /.well-known/jwks.json.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../context.js';
import { authenticateClient } from '../modules/applications/service.js';
import { TOKEN_LIFETIME_SECONDS } from './tokens.js';
import { parseScopes, type Scope } from './scopes.js';
import { tokensIssued, tokensRefused } from '../metrics.js';
import { bindAuthToLog } from '../http/operations.js';

type OAuthError = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope';

const OAuthErrorSchema = Type.Object(
  {
    error: Type.Union([
      Type.Literal('invalid_request'),
      Type.Literal('invalid_client'),
      Type.Literal('unsupported_grant_type'),
      Type.Literal('invalid_scope'),
    ]),
    error_description: Type.String(),
  },
  { $id: 'OAuthError', title: 'OAuthError', description: 'RFC 6749 §5.2 error response.' },
);

const TokenRequest = Type.Object(
  {
    grant_type: Type.Optional(Type.Literal('client_credentials')),
    client_id: Type.Optional(Type.String({ description: 'Omit when using HTTP Basic authentication.' })),
    client_secret: Type.Optional(Type.String({ description: 'Omit when using HTTP Basic authentication.' })),
    scope: Type.Optional(Type.String({ description: 'Space-separated subset of the approved scopes.' })),
  },
  { title: 'TokenRequest' },
);

const TokenResponse = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ examples: [3600] }),
    scope: Type.String({ examples: ['courses:read learners:read'] }),
  },
  { title: 'TokenResponse' },
);

function oauthError(reply: FastifyReply, error: OAuthError, description: string, basic = false) {
  const status = error === 'invalid_client' ? 401 : 400;
  tokensRefused.inc({ reason: error });
  if (error === 'invalid_client' && basic) reply.header('WWW-Authenticate', 'Basic realm="lms"');
  return reply.code(status).header('Cache-Control', 'no-store').send({ error, error_description: description });
}

function parseBasic(header: string | undefined): { id: string; secret: string } | null | 'malformed' {
  if (!header || !/^Basic /i.test(header)) return null;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'malformed';
  try {
    // RFC 6749 §2.3.1: each part is form-urlencoded before being joined.
    const form = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    return { id: form(decoded.slice(0, colon)), secret: form(decoded.slice(colon + 1)) };
  } catch {
    return 'malformed';
  }
}

export const authRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.addSchema(OAuthErrorSchema);

  app.post(
    '/v1/oauth/token',
    {
      config: { public: true, oauthErrors: true },
      schema: {
        tags: ['Authentication'],
        summary: 'Exchange client credentials for an access token',
        description:
          'The client_credentials grant. Send `client_id` and `client_secret` as JSON (or form-encoded), or use HTTP Basic ' +
          'authentication with a form-encoded body. The token is valid for 1 hour; there is no refresh token.',
        security: [],
        consumes: ['application/json', 'application/x-www-form-urlencoded'],
        body: TokenRequest,
        response: {
          200: TokenResponse,
          400: { description: 'invalid_request, unsupported_grant_type or invalid_scope', ...Type.Ref(OAuthErrorSchema) },
          401: { description: 'invalid_client', ...Type.Ref(OAuthErrorSchema) },
        },
      },
      // The body is checked by hand below: OAuth clients expect RFC 6749 errors, not schema errors.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      if (typeof body !== 'object' || Array.isArray(body)) return oauthError(reply, 'invalid_request', 'The body must be an object.');
      for (const field of ['grant_type', 'client_id', 'client_secret', 'scope']) {
        if (body[field] !== undefined && typeof body[field] !== 'string') {
          return oauthError(reply, 'invalid_request', `${field} must be a string.`);
        }
      }
      const grantType = body.grant_type as string | undefined;
      if (grantType !== undefined && grantType !== 'client_credentials') {
        return oauthError(reply, 'unsupported_grant_type', 'Only the client_credentials grant is supported.');
      }
      const basic = parseBasic(request.headers.authorization);
      if (basic === 'malformed') return oauthError(reply, 'invalid_request', 'The Basic authorization header is malformed.');
      if (basic && (body.client_id !== undefined || body.client_secret !== undefined)) {
        return oauthError(reply, 'invalid_request', 'Send the client credentials either with HTTP Basic or in the body, not both.');
      }
      const clientId = basic ? basic.id : (body.client_id as string | undefined);
      const clientSecret = basic ? basic.secret : (body.client_secret as string | undefined);
      // Brute-force guard: refused (429) before the secret is even looked at once this id or address failed too often.
      await app.tokenGuard.check(clientId, request.ip);
      if (!clientId || !clientSecret) {
        await app.tokenGuard.recordFailure(clientId, request.ip);
        return oauthError(reply, 'invalid_client', 'Client authentication is missing: send client_id and client_secret.', Boolean(basic));
      }
      const client = await authenticateClient(ctx, clientId, clientSecret);
      if (!client) {
        await app.tokenGuard.recordFailure(clientId, request.ip);
        return oauthError(reply, 'invalid_client', 'The client credentials are not valid.', Boolean(basic));
      }
      let scopes: Scope[] = client.scopes;
      if (typeof body.scope === 'string' && body.scope.trim() !== '') {
        const asked = parseScopes(body.scope);
        const notApproved = [...asked.unknown, ...asked.scopes.filter((s) => !client.scopes.includes(s))];
        if (notApproved.length > 0) {
          return oauthError(reply, 'invalid_scope', `Not approved for this application: ${notApproved.join(' ')}.`);
        }
        scopes = asked.scopes;
      }
      bindAuthToLog(request, client.id, client.orgId);
      const accessToken = await ctx.tokens.issue({ ...client, scopes });
      tokensIssued.inc();
      return reply
        .header('Cache-Control', 'no-store')
        .header('Pragma', 'no-cache')
        .send({ access_token: accessToken, token_type: 'Bearer' as const, expires_in: TOKEN_LIFETIME_SECONDS, scope: scopes.join(' ') });
    },
  );

  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags: ['Authentication'],
        summary: 'Public keys that verify access tokens',
        security: [],
        response: {
          200: Type.Object(
            { keys: Type.Array(Type.Object({ kty: Type.String(), kid: Type.String() }, { additionalProperties: true })) },
            { title: 'JWKS' },
          ),
        },
      },
    },
    async (_request, reply) => {
      reply.header('Cache-Control', 'public, max-age=300');
      return ctx.tokens.publicJwks() as never;
    },
  );
};
