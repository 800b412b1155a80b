import { SCOPES } from '../../domain/key-scopes.js';
import {
  dateTime,
  errorSchema,
  json,
  list,
  nullable,
  type Obj,
  pathParameter,
  ref,
  responseRef,
  responses,
  scoped,
} from './common.js';

/** The customer's API keys (api/routes/keys.ts; docs/api.md, "Keys and scopes"). */

const SCOPE = { type: 'string', enum: [...SCOPES] };
const KEY_ID = pathParameter('id', 'The key id (`key_…`, its public handle; never the key itself).');

const restriction = (description: string): Obj => ({
  type: nullable('array'),
  minItems: 1,
  items: { type: 'string', minLength: 1 },
  description,
});

const KEY_PROPERTIES: Obj = {
  id: { type: 'string', pattern: '^key_[0-9A-Za-z]{12}$' },
  name: { type: 'string' },
  kind: { type: 'string', enum: ['production', 'sandbox'] },
  scopes: { type: 'array', items: SCOPE, description: 'What the key may do.' },
  from_domains: restriction('The only From domains it may send as; null: any of the customer’s verified domains.'),
  allowed_cidrs: restriction('The only client addresses (CIDR blocks) it may be used from; null: any.'),
  created_at: dateTime('When it was made.'),
  last_used_at: {
    ...dateTime('When a message was last sent with it (to the minute); null: never.'),
    type: nullable('string'),
  },
  revoked_at: { ...dateTime('When it was revoked; null: it is live.'), type: nullable('string') },
};
const KEY_REQUIRED = Object.keys(KEY_PROPERTIES);

export const KEY_SCHEMAS: Obj = {
  ApiKey: { type: 'object', required: KEY_REQUIRED, properties: KEY_PROPERTIES },
  ApiKeyCreated: {
    type: 'object',
    description: 'The key with its secret, shown only here: only a hash of it is stored.',
    required: [...KEY_REQUIRED, 'key'],
    properties: { ...KEY_PROPERTIES, key: { type: 'string', pattern: '^ph_(live|test)_[0-9A-Za-z]{40}$' } },
  },
};

export const KEY_PATHS: Obj = {
  '/api/v1/keys': {
    get: {
      operationId: 'listKeys',
      ...scoped('keys:write'),
      tags: ['keys'],
      summary: 'The API keys',
      responses: responses('get', {
        '200': json(
          list(ref('ApiKey')),
          'Every key of the customer, revoked ones included, oldest first (never a secret).',
        ),
      }),
    },
    post: {
      operationId: 'createKey',
      ...scoped('keys:write'),
      tags: ['keys'],
      summary: 'Make a key',
      description:
        'The scopes are always chosen: a list of scopes, or a preset (`["full"]`, `["send"]`). A key gives no more than it has: no scope it lacks, no restriction wider than its own (left out, the new key takes the creating key’s restrictions), and a sandbox key makes only sandbox keys. Unknown fields are refused.',
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['scopes'],
              additionalProperties: false,
              properties: {
                name: { type: 'string', maxLength: 100 },
                kind: {
                  type: 'string',
                  enum: ['production', 'sandbox'],
                  description: 'Left out: the creating key’s kind.',
                },
                scopes: { type: 'array', minItems: 1, items: { type: 'string', enum: [...SCOPES, 'full'] } },
                from_domains: restriction('Domain names (IDNs allowed); null or left out as described above.'),
                allowed_cidrs: restriction('Addresses or CIDR blocks, IPv4 or IPv6.'),
              },
            },
          },
        },
      },
      responses: responses('post', {
        '201': json(ref('ApiKeyCreated'), 'Made; the key is shown only now.'),
        '422': responseRef('ValidationFailed'),
      }),
    },
  },
  '/api/v1/keys/{id}': {
    parameters: [KEY_ID],
    delete: {
      operationId: 'revokeKey',
      ...scoped('keys:write'),
      tags: ['keys'],
      summary: 'Revoke a key',
      description:
        'Refused from the next request on, on every node. Revoking a revoked key answers it again. A key cannot revoke itself (409).',
      responses: responses('delete', {
        '200': json(ref('ApiKey'), 'The key, revoked.'),
        '404': responseRef('NotFound'),
        '409': json(
          errorSchema(['conflict']),
          '`conflict`: the key named is the key asking; revoke it with another key, in the dashboard or with the CLI.',
        ),
      }),
    },
  },
};
