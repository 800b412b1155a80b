import { MAX_SUPPRESSIONS } from '../routes/suppressions.js';
import { json, type Obj, PAGE_PARAMETERS, page, pathParameter, ref, responseRef, responses, scoped } from './common.js';
import { WEBHOOK_PATHS } from './paths-webhooks.js';

/** Received mail, suppressions, the document itself and /healthz (api/routes/; docs/api.md). */

const INBOUND_ID = pathParameter('id', 'The received message (`in_…`).');

const INBOUND_PATHS: Obj = {
  '/api/v1/inbound': {
    get: {
      operationId: 'listInbound',
      ...scoped('inbound:read'),
      tags: ['inbound'],
      summary: 'Received messages, newest first',
      parameters: PAGE_PARAMETERS,
      responses: responses('get', {
        '200': json(page(ref('InboundSummary')), 'One page of received messages.'),
        '422': responseRef('ValidationFailed'),
      }),
    },
  },
  '/api/v1/inbound/{id}': {
    parameters: [INBOUND_ID],
    get: {
      operationId: 'getInbound',
      ...scoped('inbound:read'),
      tags: ['inbound'],
      summary: 'A received message, parsed',
      description: 'A message of 64 KiB or more waits for room in the memory budget first (503 after 60 s).',
      responses: responses('get', {
        '200': json(ref('InboundMessage'), 'The message as JSON, attachments in Base64.'),
        '404': responseRef('NotFound'),
      }),
    },
  },
  '/api/v1/inbound/{id}/raw': {
    parameters: [INBOUND_ID],
    get: {
      operationId: 'getInboundRaw',
      ...scoped('inbound:read'),
      tags: ['inbound'],
      summary: 'A received message as it arrived',
      responses: responses('get', {
        '200': {
          description: 'The message, byte for byte.',
          content: { 'message/rfc822': { schema: { type: 'string' } } },
        },
        '404': responseRef('NotFound'),
      }),
    },
  },
};

const SUPPRESSION_PATHS: Obj = {
  '/api/v1/suppressions': {
    get: {
      operationId: 'listSuppressions',
      ...scoped('suppressions:write'),
      tags: ['suppressions'],
      summary: 'The suppression list, newest first',
      parameters: [
        ...PAGE_PARAMETERS,
        {
          name: 'reason',
          in: 'query',
          description: 'Only this reason.',
          schema: { type: 'string', enum: ['hard_bounce', 'spam_complaint', 'manual', 'unsubscribe'] },
        },
      ],
      responses: responses('get', {
        '200': json(page(ref('Suppression')), 'One page of the list.'),
        '422': responseRef('ValidationFailed'),
      }),
    },
    post: {
      operationId: 'addSuppression',
      ...scoped('suppressions:write'),
      tags: ['suppressions'],
      summary: 'Add an address or a domain, or up to 1,000 at once',
      description: `Reason \`manual\`. \`address\`: one entry, an address or a whole domain written \`@example.com\` (every address at that domain is refused at send, in the API and SMTP submission alike; not its subdomains). \`addresses\`: up to ${MAX_SUPPRESSIONS} entries added together or not at all: one refused entry refuses the request (422, each refused entry under \`addresses[i]\`) and nothing is added. Other fields of the body are ignored.`,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                address: { type: 'string', description: 'An email address (no display name) or `@domain`.' },
                addresses: {
                  type: 'array',
                  minItems: 1,
                  maxItems: MAX_SUPPRESSIONS,
                  items: { type: 'string' },
                  description: 'Addresses or `@domain`s; when present, `address` is ignored.',
                },
              },
            },
          },
        },
      },
      responses: responses('post', {
        '200': json(
          { oneOf: [ref('SuppressionAdded'), ref('SuppressionsAdded')] },
          'One entry that was already on the list (`created: false`), or `addresses`: each entry with whether it was added.',
        ),
        '201': json(ref('SuppressionAdded'), 'Added (`created: true`).'),
        '422': responseRef('ValidationFailed'),
      }),
    },
  },
  '/api/v1/suppressions/{address}': {
    parameters: [pathParameter('address', 'The address, URL-encoded.')],
    delete: {
      operationId: 'removeSuppression',
      ...scoped('suppressions:write'),
      tags: ['suppressions'],
      summary: 'Remove an address',
      responses: responses('delete', {
        '200': json(
          {
            type: 'object',
            required: ['address', 'deleted'],
            properties: { address: { type: 'string' }, deleted: { const: true } },
          },
          'Removed.',
        ),
        '404': responseRef('NotFound'),
      }),
    },
  },
};

export const OPENAPI_PATH = '/api/v1/openapi.json';

const OPEN_PATHS: Obj = {
  [OPENAPI_PATH]: {
    get: {
      operationId: 'getOpenApi',
      tags: ['meta'],
      summary: 'This document',
      description: 'No API key needed.',
      security: [],
      responses: {
        '200': json(
          { type: 'object', required: ['openapi', 'info', 'paths'] },
          'The OpenAPI 3.1 document of this server.',
        ),
        '503': responseRef('Unavailable'),
      },
    },
  },
  '/healthz': {
    get: {
      operationId: 'health',
      tags: ['meta'],
      summary: 'Health',
      description: 'No API key needed.',
      security: [],
      responses: {
        '200': json(ref('Health'), 'The store takes a write and every listener is up.'),
        '503': json(
          { oneOf: [ref('Health'), ref('Unavailable')] },
          'Not healthy (`status: unavailable`), or shutting down (as every request then).',
        ),
      },
    },
  },
};

export const OTHER_PATHS: Obj = { ...WEBHOOK_PATHS, ...INBOUND_PATHS, ...SUPPRESSION_PATHS, ...OPEN_PATHS };

export const OTHER_SCHEMAS: Obj = {
  SuppressionAdded: {
    type: 'object',
    required: ['address', 'reason', 'created'],
    properties: {
      address: { type: 'string', description: 'Lower-cased; `@domain` for a whole domain.' },
      reason: { const: 'manual' },
      created: { type: 'boolean' },
    },
  },
  SuppressionsAdded: {
    type: 'object',
    required: ['data', 'added', 'already'],
    properties: {
      data: { type: 'array', items: ref('SuppressionAdded'), description: 'One per entry, in order.' },
      added: { type: 'integer', description: 'Entries added.' },
      already: { type: 'integer', description: 'Entries that were on the list already.' },
    },
  },
  Health: {
    type: 'object',
    required: ['status', 'store', 'listeners'],
    properties: {
      status: { type: 'string', enum: ['ok', 'unavailable'] },
      store: { type: 'string', enum: ['ok', 'error'] },
      listeners: { type: 'string', enum: ['up', 'down'] },
    },
  },
};
