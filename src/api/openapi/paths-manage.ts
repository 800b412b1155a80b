import { DKIM_GRACE_MS } from '../../domain/dns-records.js';
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
import { EVENT_TYPE } from './events.js';
import { DMARC_PATHS, DMARC_SCHEMAS } from './paths-dmarc.js';

/** A customer's domains, and what changes a webhook endpoint after its creation (api/routes/; docs/api.md). */

const DOMAIN_NAME = pathParameter('name', 'The domain name (IDNs in their ASCII form, `xn--…`).');
const PURPOSES = ['verification', 'dkim', 'dkim_next', 'dkim_previous', 'spf', 'return_path', 'inbound', 'dmarc'];

const DNS_RECORD: Obj = {
  type: 'object',
  description: 'A record to publish in DNS (what `posthaste domains show` prints).',
  required: ['type', 'name', 'value', 'purpose'],
  properties: {
    type: { type: 'string', enum: ['TXT', 'MX', 'CNAME'] },
    name: { type: 'string', description: 'The owner name, fully qualified.' },
    value: { type: 'string', description: 'As a zone file writes it: TXT as quoted strings, MX as "preference host".' },
    text: { type: 'string', description: 'TXT only: the text receivers read, the strings joined.' },
    purpose: {
      type: 'string',
      enum: PURPOSES,
      description:
        '`verification` and `dkim` are required for the domain to be verified; `return_path` is the `bounces.<domain>` CNAME the envelope sender uses once it holds (docs/delivery.md, "Sending identities"); the others are advice.',
    },
    instead: {
      type: 'array',
      description: 'Records that may stand in place of the CNAME (the same MX and SPF on the host itself).',
      items: { type: 'object', required: ['type', 'name', 'value'] },
    },
  },
};

const RECORD_CHECK: Obj = {
  type: 'object',
  required: ['purpose', 'name', 'expected', 'found', 'lookup', 'seen'],
  properties: {
    purpose: { type: 'string', enum: PURPOSES },
    name: { type: 'string' },
    expected: { type: 'string' },
    found: { type: 'boolean', description: 'The record holds.' },
    lookup: {
      type: 'string',
      enum: ['answered', 'no_domain', 'no_record', 'no_answer'],
      description: '`no_answer`: the DNS server did not answer (SERVFAIL, a timeout): nothing is known of the record.',
    },
    seen: { type: 'array', items: { type: 'string' }, description: 'What is there instead, or why nothing is.' },
  },
};

const DOMAIN: Obj = {
  type: 'object',
  required: ['name', 'verified', 'verified_at', 'receiving', 'dkim', 'return_path', 'dns_records', 'created_at'],
  properties: {
    name: { type: 'string' },
    verified: { type: 'boolean', description: 'Mail can be sent from it.' },
    verified_at: { type: nullable('string'), format: 'date-time' },
    receiving: { type: 'boolean' },
    dkim: {
      type: 'object',
      required: ['signing', 'next', 'previous'],
      properties: {
        signing: { type: 'string', description: 'The selector signing now.' },
        next: { type: nullable('string'), description: 'A rotated key waiting for its record to be found.' },
        previous: {
          type: ['object', 'null'],
          required: ['selector', 'switched_at', 'remove_record_after'],
          properties: {
            selector: { type: 'string' },
            switched_at: dateTime('When signing moved off it.'),
            remove_record_after: dateTime('Its record can go after this.'),
          },
        },
      },
    },
    return_path: {
      type: 'object',
      required: ['host', 'holds', 'envelope_domain', 'lost'],
      properties: {
        host: { type: 'string', description: 'The return-path host to publish, `bounces.<domain>`.' },
        holds: { type: 'boolean', description: 'Verification (or the periodic re-check) last found its record.' },
        envelope_domain: {
          type: 'string',
          description: "The envelope sender's domain the domain's mail goes out with.",
        },
        lost: { type: nullable('string'), description: 'What is lost while it does not hold.' },
      },
    },
    dns_records: { type: 'array', items: ref('DnsRecord') },
    created_at: dateTime('When it was added.'),
  },
};

const CONFLICT = json(
  errorSchema(['conflict']),
  '`conflict`: the domain is registered already, by this customer or another (which is never said).',
);

const DOMAIN_PATHS: Obj = {
  '/api/v1/domains': {
    get: {
      operationId: 'listDomains',
      ...scoped('domains:write'),
      tags: ['domains'],
      summary: "The customer's domains",
      responses: responses('get', {
        '200': json(list(ref('Domain')), 'Every domain of the customer, by name.'),
      }),
    },
    post: {
      operationId: 'addDomain',
      ...scoped('domains:write'),
      tags: ['domains'],
      summary: 'Add a domain',
      description:
        'Makes its DKIM key and verification token; the answer lists the DNS records to publish, then `verify`. Mail from it is refused until it is verified.',
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['name'],
              additionalProperties: false,
              properties: {
                name: { type: 'string', minLength: 1, description: 'The domain (a final dot is dropped).' },
                receiving: { type: 'boolean', default: false, description: 'Also receive mail for it.' },
              },
            },
          },
        },
      },
      responses: responses('post', {
        '201': json(ref('Domain'), 'Added.'),
        '409': CONFLICT,
        '422': responseRef('ValidationFailed'),
      }),
    },
  },
  '/api/v1/domains/{name}': {
    parameters: [DOMAIN_NAME],
    get: {
      operationId: 'getDomain',
      ...scoped('domains:write'),
      tags: ['domains'],
      summary: 'A domain and the DNS records to publish',
      responses: responses('get', { '200': json(ref('Domain'), 'The domain.'), '404': responseRef('NotFound') }),
    },
    delete: {
      operationId: 'deleteDomain',
      ...scoped('domains:write'),
      tags: ['domains'],
      summary: 'Remove a domain',
      description: 'Sending from it stops at once; its DKIM keys are gone.',
      responses: responses('delete', {
        '200': json(
          {
            type: 'object',
            required: ['name', 'deleted'],
            properties: { name: { type: 'string' }, deleted: { const: true } },
          },
          'Removed.',
        ),
        '404': responseRef('NotFound'),
      }),
    },
  },
  '/api/v1/domains/{name}/verify': {
    parameters: [DOMAIN_NAME],
    post: {
      operationId: 'verifyDomain',
      ...scoped('domains:write'),
      tags: ['domains'],
      summary: 'Look the records up and mark the domain verified',
      description:
        "Through the server's DNS servers. A domain becoming verified sends `domain.verified`; a verified one whose required records are answered absent sends `domain.verification_failed` and is verified no longer. A DNS server that does not answer changes nothing: `dns_error` says why. A DKIM rotation's next key found switches signing to it. No body.",
      responses: responses('post', {
        '200': json(ref('DomainVerification'), 'What the lookups found and the domain as it now is.'),
        '404': responseRef('NotFound'),
      }),
    },
  },
  '/api/v1/domains/{name}/rotate-dkim': {
    parameters: [DOMAIN_NAME],
    post: {
      operationId: 'rotateDkim',
      ...scoped('domains:write'),
      tags: ['domains'],
      summary: 'Make a new DKIM key under a new selector',
      description: `Signing goes on with the current key until \`verify\` finds the new record, then switches; keep the old record ${DKIM_GRACE_MS / 86_400_000} days after. No body.`,
      responses: responses('post', {
        '200': json(
          {
            type: 'object',
            required: ['name', 'selector', 'record', 'signing', 'grace_days'],
            properties: {
              name: { type: 'string' },
              selector: { type: 'string', description: 'The new key’s selector.' },
              record: ref('DnsRecord'),
              signing: { type: 'string', description: 'The selector signing until the switch.' },
              grace_days: { type: 'integer' },
            },
          },
          'The record to publish.',
        ),
        '404': responseRef('NotFound'),
      }),
    },
  },
};

/** PATCH /api/v1/webhooks/{id}: the operation, for paths-other.ts to hold beside get and delete. */
export const UPDATE_WEBHOOK: Obj = {
  operationId: 'updateWebhook',
  ...scoped('webhooks:write'),
  tags: ['webhooks'],
  summary: 'Change a webhook endpoint',
  description:
    'Each field as at creation; what is left out stays. `enabled: true` takes an endpoint disabled for a 410 back. Deliveries already held follow within a second.',
  requestBody: {
    required: true,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: {
            url: { type: 'string', format: 'uri', minLength: 1, maxLength: 2048 },
            events: {
              type: ['array', 'null'],
              minItems: 1,
              items: EVENT_TYPE,
              description: 'The types to send; null: every type.',
            },
            description: { type: ['string', 'null'], maxLength: 500 },
            enabled: { type: 'boolean' },
          },
        },
      },
    },
  },
  responses: responses('patch', {
    '200': json(ref('WebhookEndpoint'), 'The endpoint as it now is.'),
    '404': responseRef('NotFound'),
    '422': responseRef('ValidationFailed'),
  }),
};

const ROTATE_PATHS: Obj = {
  '/api/v1/webhooks/{id}/rotate-secret': {
    parameters: [pathParameter('id', 'The endpoint id (`wh_…`).')],
    post: {
      operationId: 'rotateWebhookSecret',
      ...scoped('webhooks:write'),
      tags: ['webhooks'],
      summary: "Replace an endpoint's secret",
      description:
        'The new secret is shown only now. Until `previous_secret_expires_at` (webhooks.secret_grace, 24 h by default) every delivery carries both signatures, `v1,<old> v1,<new>`, so a receiver verifying with either secret accepts it while it switches. No body.',
      responses: responses('post', {
        '200': json(ref('WebhookEndpointRotated'), 'Rotated.'),
        '404': responseRef('NotFound'),
      }),
    },
  },
};

export const MANAGE_PATHS: Obj = { ...DOMAIN_PATHS, ...DMARC_PATHS, ...ROTATE_PATHS };

export const MANAGE_SCHEMAS: Obj = {
  ...DMARC_SCHEMAS,
  Domain: DOMAIN,
  DnsRecord: DNS_RECORD,
  RecordCheck: RECORD_CHECK,
  DomainVerification: {
    type: 'object',
    description: 'The domain as it now is, and what the lookups found.',
    required: [...(DOMAIN.required as string[]), 'checks', 'dkim_switched_to', 'dns_error'],
    properties: {
      ...(DOMAIN.properties as Obj),
      checks: { type: 'array', items: ref('RecordCheck') },
      dkim_switched_to: { type: nullable('string'), description: 'The selector signing switched to now, if it did.' },
      dns_error: {
        type: nullable('string'),
        description: 'Why nothing was decided: the DNS server did not answer for a required record.',
      },
    },
  },
};
