import { ERROR_STATUS, type ErrorCode } from '../../domain/errors.js';
import type { Scope } from '../../domain/key-scopes.js';

/**
 * What the OpenAPI modules share: a JSON object type, references, the patterns that restate the
 * validation rules of domain/ as JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1), and the
 * error object of docs/api.md with its responses.
 */

/** A JSON object: a Schema Object, an Operation, a Response… (the document is plain data). */
export type Obj = { [key: string]: unknown };

export const ref = (name: string): Obj => ({ $ref: `#/components/schemas/${name}` });
export const responseRef = (name: string): Obj => ({ $ref: `#/components/responses/${name}` });

/** `[Xx]` for each letter: JSON Schema patterns have no case-insensitive flag. */
export function anyCase(s: string): string {
  return s.replace(/[a-z]/gi, (c) => `[${c.toUpperCase()}${c.toLowerCase()}]`);
}

/** Header text (domain/header-text.ts): no control character but tab (C0, DEL, C1). */
export const NO_CONTROL = '^[^\\x00-\\x08\\x0A-\\x1F\\x7F-\\x9F]*$';
/** Header text that is not blank either (trim() strips what `\s` matches). */
export const NOT_BLANK_NO_CONTROL = '^(?=\\s*\\S)[^\\x00-\\x08\\x0A-\\x1F\\x7F-\\x9F]*$';
/** No control character at all, tab included (tags). */
export const NO_CONTROL_OR_TAB = '^[^\\x00-\\x1F\\x7F-\\x9F]*$';

export const dateTime = (description: string): Obj => ({ type: 'string', format: 'date-time', description });
export const nullable = (type: string): string[] => [type, 'null'];

/** The codes the API answers with. */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** `{"error": {code, message, details}}` with the given codes (all of them by default). */
export function errorSchema(codes: readonly ErrorCode[] = ERROR_CODES, description?: string): Obj {
  return {
    type: 'object',
    ...(description ? { description } : {}),
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'details'],
        properties: {
          code: { type: 'string', enum: [...codes] },
          message: {
            type: 'string',
            description: 'For people: what went wrong, in a sentence. Never internal detail.',
          },
          details: ref('ErrorDetails'),
        },
      },
    },
  };
}

export const ERROR_DETAILS: Obj = {
  type: 'object',
  description:
    'A field (a request body field such as `to`, `attachments[0].io`, `headers.X-Tag`, a query parameter, or a header name such as `Idempotency-Key`) mapped to its problems. Every problem is counted; at most the first 100 are listed, and the message says how many there were. Empty when the error is not about a field.',
  additionalProperties: { type: 'array', items: { type: 'string' } },
};

const codesOf = (status: number): ErrorCode[] => ERROR_CODES.filter((c) => ERROR_STATUS[c] === status);

const errorResponse = (status: number, description: string): Obj => ({
  description,
  content: { 'application/json': { schema: errorSchema(codesOf(status)) } },
});

/** The 503 body: the error object, or fastify's own while it closes connections (return503OnClosing). */
export const UNAVAILABLE: Obj = {
  oneOf: [
    errorSchema(codesOf(503)),
    {
      type: 'object',
      description: "fastify's answer on a connection it is closing, in the last moments of a shutdown.",
      required: ['error', 'message', 'statusCode'],
      properties: { error: { const: 'Service Unavailable' }, message: { type: 'string' }, statusCode: { const: 503 } },
    },
  ],
};

/** One shared response per error status (docs/api.md, Errors); each names the codes it carries. */
export const ERROR_RESPONSES: Obj = {
  InvalidJson: errorResponse(
    400,
    '`invalid_json`: the body is not JSON, not UTF-8 (the message names the byte offset), not an object (or, for a batch, not an array), empty, or shorter than its Content-Length.',
  ),
  Unauthorized: errorResponse(
    401,
    '`unauthorized`: the API key is missing, malformed, unknown or revoked. Checked before anything else, unknown routes included.',
  ),
  Forbidden: errorResponse(
    403,
    "`insufficient_scope`: the key lacks the scope the operation needs (named in the message and in `details.scope`; docs/api.md, Keys and scopes). `forbidden`: the key's restrictions refuse the request: the client address is outside its `allowed_cidrs` (`details.client_address`), or (a send) the From domain is not among its `from_domains` (`details.from`). `domain_not_verified` (a send): the sender domain is the customer's but not verified yet (a domain that is not the customer's at all is a 422 on `from`). `customer_paused` (a send): the customer's sending is paused (its bounce or complaint rate, or an administrator: the message says why); an administrator resumes it. A sandbox key's sends are not refused.",
  ),
  NotFound: errorResponse(404, "`not_found`: no such resource, or another customer's."),
  PayloadTooLarge: errorResponse(
    413,
    '`payload_too_large`: the request body is over limits.max_message_bytes × 4/3 + 256 KiB, or (a send) the encoded MIME message is over limits.max_message_bytes; the message says the size when it was measured.',
  ),
  UnsupportedMediaType: errorResponse(
    415,
    '`unsupported_media_type`: a body was sent with a Content-Type other than `application/json`.',
  ),
  ValidationFailed: errorResponse(422, '`validation_failed`: every problem at once, per field, in `details`.'),
  InternalError: errorResponse(500, '`internal_error`: a bug; never with internal detail.'),
  Unavailable: {
    description:
      "`unavailable`: the server is shutting down, or a large request found no room in memory within 60 s. `store_unavailable`: the store cannot be reached or cannot write now (its database stopped or out of reach, a full disk). Nothing was accepted; retry after the time given. A request that reaches a connection fastify is already closing (the last moments of a shutdown) gets fastify's own body instead, without Retry-After.",
    headers: {
      'Retry-After': {
        description: 'Seconds to wait before retrying (always with `unavailable` and `store_unavailable`).',
        schema: { type: 'string', pattern: '^[0-9]+$' },
      },
    },
    content: { 'application/json': { schema: ref('Unavailable') } },
  },
};

/** What any request under /api/v1 can be answered: the key (checked first) and its scope and restrictions, a bug, shutting down. */
const ALWAYS = {
  '401': responseRef('Unauthorized'),
  '403': responseRef('Forbidden'),
  '500': responseRef('InternalError'),
  '503': responseRef('Unavailable'),
};
/** What a request that carries a body can be answered before its handler runs. */
const BODY = {
  '400': responseRef('InvalidJson'),
  '413': responseRef('PayloadTooLarge'),
  '415': responseRef('UnsupportedMediaType'),
};

/**
 * An operation's responses: its own, the ones every authenticated request can get, and for a
 * method whose body fastify reads (POST, PATCH, DELETE) the body's. Sorted by status.
 */
export function responses(method: 'get' | 'post' | 'delete' | 'patch', own: Obj): Obj {
  const all: Obj = { ...ALWAYS, ...(method === 'get' ? {} : BODY), ...own };
  return Object.fromEntries(Object.entries(all).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The key scope an operation needs (api/authorization.ts, needs), as OpenAPI 3.1 writes it: the
 * role names of a security requirement, for either way of presenting the key.
 */
export const scoped = (scope: Scope): Obj => ({ security: [{ bearer: [scope] }, { token: [scope] }] });

export const json = (schema: Obj, description: string, headers?: Obj): Obj => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema } },
});

/** `?limit=&after=`: lists are paged by cursor, newest first (api/paging.ts). */
export const PAGE_PARAMETERS: Obj[] = [
  {
    name: 'limit',
    in: 'query',
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
  {
    name: 'after',
    in: 'query',
    description: 'The `next` of the previous page (an opaque cursor; today a positive integer written as a string).',
    schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
  },
];

/** `{data}`: a whole list, in one answer. */
export function list(item: Obj): Obj {
  return { type: 'object', required: ['data'], properties: { data: { type: 'array', items: item } } };
}

/** `{data, next}`: one page of a list, `next` the cursor of the following page or null on the last. */
export function page(item: Obj): Obj {
  return {
    type: 'object',
    required: ['data', 'next'],
    properties: {
      data: { type: 'array', items: item },
      next: { type: nullable('string'), description: 'Pass as `after` for the next page; null on the last page.' },
    },
  };
}

export const pathParameter = (name: string, description: string): Obj => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', minLength: 1 },
});
