import { schema as configSchema } from '../../config/schema.js';
import { VERSION } from '../../lib/version.js';
import { ERROR_DETAILS, ERROR_RESPONSES, errorSchema, type Obj, UNAVAILABLE } from './common.js';
import { eventSchemas, REPLY } from './events.js';
import { EMAIL_PATHS } from './paths-emails.js';
import { KEY_PATHS, KEY_SCHEMAS } from './paths-keys.js';
import { MANAGE_PATHS, MANAGE_SCHEMAS } from './paths-manage.js';
import { OPENAPI_PATH, OTHER_PATHS, OTHER_SCHEMAS } from './paths-other.js';
import { ACCEPTED, SEND_REQUEST } from './send.js';
import { viewSchemas } from './views.js';
import { webhookSection } from './webhook-section.js';

/**
 * The OpenAPI 3.1 document of the HTTP API, built from the constants the validation and the
 * routes use, so a limit changed there changes here. Served at GET /api/v1/openapi.json and kept
 * as docs/openapi.json (`npm run openapi` writes it; test/unit/api/openapi.test.ts fails when the
 * file differs from what this builds). Every response the integration tests receive is checked
 * against the file (test/helpers/contract.ts).
 */

const DESCRIPTION = `posthaste's HTTP API: send mail, follow it, manage webhook endpoints, read received mail and the suppression list. Prose, with the reasons behind each rule: docs/api.md.

**Authentication.** Every request under \`/api/v1\` but this document carries \`Authorization: Bearer <API key>\` or, the same, \`Authorization: Token <API key>\` (\`ph_live_…\` or \`ph_test_…\`, a sandbox key; the scheme in any case). The key is checked before anything else: an unknown route answers 401 before 404 without a good key.

**Errors.** Every error is \`{"error": {"code", "message", "details"}}\`; \`details\` maps a field to its problems. An unknown route is \`404 not_found\`.

**Idempotency.** \`POST /api/v1/emails\` and \`/batch\` take an \`Idempotency-Key\` header: a retry with the same key and body gets the first answer again (\`idempotent-replayed: true\`) and stores nothing.

**Limits.** The limits a configuration sets (\`limits.max_recipients\`, \`limits.max_message_bytes\`, \`limits.max_schedule_ahead\`, \`limits.idempotency_ttl\`) are given with their defaults; a server may be configured otherwise. String lengths are counted as JavaScript counts them, in UTF-16 code units: a character outside the Basic Multilingual Plane (most emoji) counts two, where JSON Schema's \`maxLength\` counts one.

**Responses.** Objects list every field the server sends today. Later versions may add fields: ignore the ones you do not know.

**Webhooks.** The \`webhooks\` section describes what posthaste POSTs to your endpoints, one entry per event type, signed per Standard Webhooks.`;

/**
 * Where the API is: the operator's own address, so a template whose defaults are what a fresh
 * install listens on (api.listen, plain HTTP); a client sets its server's scheme and host.
 */
const SERVERS = [
  {
    url: '{scheme}://{host}',
    description:
      'Your posthaste server: the address of its `api.listen`, or the URL of the reverse proxy in front of it. The defaults are those of a fresh install.',
    variables: {
      scheme: {
        default: 'http',
        enum: ['http', 'https'],
        description: 'https when `api.tls.cert` is set or a proxy terminates TLS.',
      },
      host: {
        default: configSchema.api.listen.default,
        description: "Host name or address, and the port unless it is the scheme's own.",
      },
    },
  },
];

export function openApiDocument(): Obj {
  return {
    openapi: '3.1.1',
    info: {
      title: 'posthaste HTTP API',
      version: VERSION,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: SERVERS,
    tags: [
      { name: 'emails', description: 'Sending, searching and canceling messages.' },
      { name: 'webhooks', description: 'Webhook endpoints, their attempt log, test events and replays.' },
      { name: 'inbound', description: "Mail received for the customer's receiving domains." },
      { name: 'suppressions', description: 'Addresses mail is not sent to.' },
      {
        name: 'domains',
        description: "The customer's sending and receiving domains: their DNS records and verification.",
      },
      { name: 'keys', description: 'The API keys: their scopes, restrictions and last use; made and revoked.' },
      { name: 'meta', description: 'This document and the health check: no key needed.' },
    ],
    security: [{ bearer: [] }, { token: [] }],
    paths: { ...EMAIL_PATHS, ...OTHER_PATHS, ...MANAGE_PATHS, ...KEY_PATHS },
    webhooks: webhookSection(),
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'The API key as a bearer token: `Authorization: Bearer ph_live_…`.',
        },
        token: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description:
            'The same key after the word `Token`: `Authorization: Token ph_live_…`, as Postmark-style clients send it. An `apiKey` scheme, since `Token` is not a registered HTTP authentication scheme; a client sets the whole value, or a prefix of `Token ` where its generator has one (openapi-generator: `apiKeyPrefix`).',
        },
      },
      schemas: {
        SendRequest: SEND_REQUEST,
        Accepted: ACCEPTED,
        Error: errorSchema(),
        ErrorDetails: ERROR_DETAILS,
        Unavailable: UNAVAILABLE,
        Reply: REPLY,
        ...viewSchemas(),
        ...OTHER_SCHEMAS,
        ...MANAGE_SCHEMAS,
        ...KEY_SCHEMAS,
        ...eventSchemas(),
      },
      responses: ERROR_RESPONSES,
    },
  };
}

/** The document as docs/openapi.json holds it. */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}

export { OPENAPI_PATH };
