// Request validation. Bodies are validated strictly (no type coercion, unknown fields rejected); query
// strings and path parameters are coerced from text ("5" → 5) because that is all a URL can carry.
// Installed as Fastify's validator *builder* (schemaController.compilersFactory) rather than with
// setValidatorCompiler, because a plugin that adds shared schemas rebuilds its compiler from the builder.
import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { FieldError } from './errors.js';

function makeAjv(options: Options, shared: object[]): Ajv {
  const ajv = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: true, strict: false, ...options });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  for (const schema of shared) ajv.addSchema(schema);
  return ajv;
}

/** Builds the validator compiler for a Fastify context, knowing the shared schemas ($id) added to it. */
export function buildValidator(externalSchemas: Record<string, object> = {}): FastifySchemaCompiler<unknown> {
  const shared = Object.values(externalSchemas);
  const bodyAjv = makeAjv({ coerceTypes: false }, shared);
  const textAjv = makeAjv({ coerceTypes: 'array' }, shared);
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : textAjv;
    return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  };
}

/** Turns Ajv errors into the problem's `errors[]`: a JSON pointer and a message each. */
export function fieldErrors(errors: ErrorObject[]): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    let pointer = e.instancePath || '';
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      pointer += `/${(e.params as { missingProperty: string }).missingProperty}`;
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      pointer += `/${(e.params as { additionalProperty: string }).additionalProperty}`;
      message = 'is not a known field';
    }
    const item = { pointer: pointer || '/', message };
    if (!out.some((o) => o.pointer === item.pointer && o.message === item.message)) out.push(item);
  }
  return out;
}
