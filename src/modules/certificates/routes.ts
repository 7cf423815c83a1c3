import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { authOf } from '../../auth/bearer.js';
import { errorResponses, notFound } from '../../http/errors.js';
import { IdParams } from '../../http/schemas.js';
import { withLinkHeader } from '../../http/pagination.js';
import { CacheHeaders, notModifiedResponse, sendWithEtag } from '../../http/etag.js';
import { CertificateListQuery, CertificatePage, CertificateSchema, RevokeBody, VerificationSchema } from './schemas.js';
import { notFoundPage, verificationPage } from './verify-page.js';
import * as service from './service.js';

/**
 * True when the client prefers JSON to HTML (RFC 9110 §12.5.1 quality values). No Accept header, a browser's
 * Accept or * / * all get the HTML page; `Accept: application/json` gets JSON.
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  let json = 0;
  let html = 0;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (Number.isNaN(q)) continue;
    const t = type.trim();
    if (t === 'application/json' || t === 'application/*') json = Math.max(json, t === 'application/json' ? q : q - 0.0001);
    if (t === 'text/html' || t === 'text/*') html = Math.max(html, t === 'text/html' ? q : q - 0.0001);
  }
  return json > 0 && json > html;
}

export const certificateRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.addSchema(CertificateSchema);
  app.addSchema(VerificationSchema);

  app.get(
    '/v1/certificates',
    {
      config: { scope: 'certificates:read' },
      schema: {
        tags: ['Certificates'],
        summary: "List the organization's certificates",
        querystring: CertificateListQuery,
        response: { 200: CertificatePage },
      },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await service.listCertificates(ctx, authOf(request).orgId, request.query), ctx.config.publicUrl),
  );

  app.get(
    '/v1/certificates/:id',
    {
      config: { scope: 'certificates:read' },
      schema: {
        tags: ['Certificates'],
        summary: 'Get a certificate',
        params: IdParams(),
        headers: CacheHeaders,
        response: { 200: Type.Ref(CertificateSchema), ...notModifiedResponse, ...errorResponses(404) },
      },
    },
    async (request, reply) => sendWithEtag(request, reply, await service.getCertificate(ctx, authOf(request).orgId, request.params.id)),
  );

  app.get(
    '/v1/certificates/:id/pdf',
    {
      config: { scope: 'certificates:read' },
      schema: {
        tags: ['Certificates'],
        summary: 'Download a certificate as a one-page PDF',
        description:
          "A printable A4 page with the learner's name, the course, the certificate number, the dates, and the public " +
          'verification URL as text and as a QR code. Revoked and expired certificates say so on the page.',
        params: IdParams(),
        response: {
          200: {
            description: 'The certificate as PDF.',
            content: { 'application/pdf': { schema: Type.String({ format: 'binary' }) } },
          },
          ...errorResponses(404),
        },
      },
    },
    async (request, reply) => {
      const { filename, pdf } = await service.getCertificatePdf(ctx, authOf(request).orgId, request.params.id);
      return reply
        .type('application/pdf')
        .header('Content-Disposition', `inline; filename="${filename}"`)
        .header('Cache-Control', 'private, no-store')
        .send(Buffer.from(pdf) as never); // bytes, sent as they are (the schema documents them as binary)
    },
  );

  app.post(
    '/v1/certificates/:id/revoke',
    {
      config: { scope: 'certificates:write' },
      schema: {
        tags: ['Certificates'],
        summary: 'Revoke a certificate',
        description: 'The certificate becomes `revoked` and its public verification page says so. Revoking twice → 409 `invalid_state`.',
        params: IdParams(),
        body: RevokeBody,
        response: { 200: Type.Ref(CertificateSchema), ...errorResponses(404, 409) },
      },
    },
    async (request) => service.revokeCertificate(ctx, authOf(request).orgId, request.params.id, request.body.reason),
  );

  // Public: the link and QR code on every certificate lead here. Not under /v1, so it needs no token.
  app.get(
    '/verify/:code',
    {
      schema: {
        tags: ['Verification'],
        summary: 'Verify a certificate (public, no token)',
        description:
          'The page behind the verification URL and QR code: whether the certificate is valid, the learner\'s name, the ' +
          'course title and the dates, nothing else. HTML by default; JSON with `Accept: application/json`.',
        security: [],
        params: Type.Object({ code: Type.String({ minLength: 1, maxLength: 128, description: 'The verification code from the URL.' }) }),
        response: {
          200: {
            description: 'The verification result.',
            content: {
              'application/json': { schema: Type.Ref(VerificationSchema) },
              'text/html': { schema: Type.String() },
            },
          },
          404: {
            description: 'No certificate has this code (problem+json for JSON clients, an HTML page otherwise).',
            content: {
              'application/problem+json': { schema: Type.Ref('Problem') },
              'text/html': { schema: Type.String() },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const json = prefersJson(request.headers.accept);
      reply
        .header('Vary', 'Accept')
        .header('Cache-Control', 'no-store')
        .header('X-Robots-Tag', 'noindex, nofollow')
        .header('Referrer-Policy', 'no-referrer');
      const result = await service.verifyCertificate(ctx, request.params.code);
      if (json) {
        if (!result) throw notFound('certificate');
        return reply.type('application/json; charset=utf-8').send(result);
      }
      reply
        .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        .type('text/html; charset=utf-8');
      if (!result) return reply.code(404).send(notFoundPage());
      return reply.send(verificationPage(result));
    },
  );
};
