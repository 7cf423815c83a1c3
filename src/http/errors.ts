// One error type, one code → status table, one problem+json schema. The runtime and the OpenAPI
// document both read ERROR_CODES, so the documented status and the real one cannot drift apart.
import { Type, type Static } from '@sinclair/typebox';

export const ERROR_CODES = {
  invalid_request: { status: 400, title: 'Invalid request' },
  validation_failed: { status: 400, title: 'Validation failed' },
  invalid_token: { status: 401, title: 'Invalid or missing access token' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  not_acceptable: { status: 406, title: 'Not acceptable' },
  conflict: { status: 409, title: 'Conflict' },
  already_enrolled: { status: 409, title: 'Already enrolled' },
  seat_limit_reached: { status: 409, title: 'Seat limit reached' },
  invalid_state: { status: 409, title: 'Invalid state transition' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  precondition_failed: { status: 412, title: 'Precondition failed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused' },
  course_not_available: { status: 422, title: 'Course not available' },
  invalid_webhook_url: { status: 422, title: 'Invalid webhook URL' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal_error: { status: 500, title: 'Internal server error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface FieldError {
  pointer: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    detail?: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail ?? ERROR_CODES[code].title);
    this.status = ERROR_CODES[code].status;
  }
}

export const notFound = (what = 'resource') => new AppError('not_found', `No such ${what}.`);

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'A URI identifying the problem type.' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: Object.keys(ERROR_CODES),
      description: 'Stable machine-readable error code.',
    }),
    request_id: Type.String(),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          pointer: Type.String({ description: 'JSON Pointer to the offending field, e.g. /email.' }),
          message: Type.String(),
        }),
      ),
    ),
  },
  { $id: 'Problem', title: 'Problem', description: 'RFC 9457 problem details.' },
);
export type Problem = Static<typeof ProblemSchema>;

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

export function problemBody(
  code: ErrorCode,
  detail: string,
  requestId: string,
  errors?: FieldError[],
): Problem {
  const { status, title } = ERROR_CODES[code];
  return {
    type: `https://docs.lmsapi.dev/errors/${code}`,
    title,
    status,
    detail,
    code,
    request_id: requestId,
    ...(errors && errors.length > 0 ? { errors } : {}),
  };
}

/**
 * Response schemas for the error statuses a route can answer. Every /v1 route gets 400, 401, 403, 429 and 500
 * (added in app.ts); routes list the others they use, e.g. errorResponses(404, 409).
 */
export function errorResponses(...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const status of statuses) {
    const codes = Object.entries(ERROR_CODES)
      .filter(([, v]) => v.status === status)
      .map(([k]) => k);
    out[status] = {
      description: `Problem: ${codes.join(', ')}`,
      content: { 'application/problem+json': { schema: Type.Ref(ProblemSchema) } },
    };
  }
  return out;
}
