// Request limits that protect the parser and everything behind it (§1, §7), applied before any route sees a body:
// - the body is at most 1 MiB (Fastify's bodyLimit in app.ts → 413 payload_too_large);
// - JSON bodies are parsed by our own parser with secure-json-parse semantics (a `__proto__` key, or a
//   `constructor` key holding a `prototype`, is refused rather than silently dropped), and are refused when nested
//   deeper than MAX_DEPTH, when a string is longer than MAX_STRING_LENGTH characters, or an array has more than
//   MAX_ARRAY_ITEMS items (bulk routes cap themselves lower in their schemas: 500);
// - every other body type on /v1 is 415 (conventions.ts), unknown fields are 400 (schemas: additionalProperties false);
// - a /v1 route that declares no query parameters accepts none (an unknown parameter is 400, as on every list).
import type { FastifyInstance, RouteOptions } from 'fastify';
import { AppError } from './errors.js';

export const MAX_DEPTH = 32;
export const MAX_STRING_LENGTH = 10_000;
export const MAX_ARRAY_ITEMS = 1_000;

/** Parses a JSON text and enforces the limits above; throws AppError('invalid_request') naming the offence. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new AppError('invalid_request', 'The request body is empty; send a JSON value.');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError('invalid_request', 'The request body is not valid JSON.');
  }
  checkValue(value, 1, '');
  return value;
}

function refuse(pointer: string, message: string): never {
  throw new AppError('invalid_request', `The request body is refused: ${pointer || '/'} ${message}.`, {
    errors: [{ pointer: pointer || '/', message }],
  });
}

function checkValue(value: unknown, depth: number, pointer: string): void {
  if (typeof value === 'string') {
    if (value.length > MAX_STRING_LENGTH) refuse(pointer, `is longer than ${MAX_STRING_LENGTH} characters`);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (depth > MAX_DEPTH) refuse(pointer, `is nested deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(value)) {
    if (value.length > MAX_ARRAY_ITEMS) refuse(pointer, `has more than ${MAX_ARRAY_ITEMS} items`);
    for (let i = 0; i < value.length; i++) checkValue(value[i], depth + 1, `${pointer}/${i}`);
    return;
  }
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, unknown>)[key];
    const here = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (key.length > MAX_STRING_LENGTH) refuse(pointer, `has a key longer than ${MAX_STRING_LENGTH} characters`);
    // Prototype poisoning (the keys secure-json-parse refuses): harmless in JSON.parse's own result, dangerous as
    // soon as someone merges the object into another one.
    if (key === '__proto__') refuse(here, 'is a forbidden key');
    if (key === 'constructor' && child !== null && typeof child === 'object' && Object.prototype.hasOwnProperty.call(child, 'prototype')) {
      refuse(here, 'is a forbidden key');
    }
    checkValue(child, depth + 1, here);
  }
}

export function registerRequestLimits(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.startsWith('/v1/')) return;
    const schema = (route.schema ??= {}) as { querystring?: unknown };
    schema.querystring ??= { type: 'object', properties: {}, additionalProperties: false };
  });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
