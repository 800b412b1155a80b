import {
  json,
  list,
  type Obj,
  PAGE_PARAMETERS,
  page,
  pathParameter,
  ref,
  responseRef,
  responses,
  scoped,
} from './common.js';
import { EVENT_TYPE } from './events.js';
import { UPDATE_WEBHOOK } from './paths-manage.js';

/** A customer's webhook endpoints: added, listed, shown, changed, removed, tested, their attempts and a replay (api/routes/webhooks.ts; docs/api.md). */

const ENDPOINT_ID = pathParameter('id', 'The endpoint id (`wh_…`).');

export const WEBHOOK_PATHS: Obj = {
  '/api/v1/webhooks': {
    post: {
      operationId: 'createWebhook',
      ...scoped('webhooks:write'),
      tags: ['webhooks'],
      summary: 'Add a webhook endpoint',
      description:
        'The URL must be https and its host must resolve only to public addresses (checked now, and again on every connection); `webhooks.allow_private_targets` lifts that for development. Unknown fields are refused.',
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['url'],
              additionalProperties: false,
              properties: {
                url: {
                  type: 'string',
                  format: 'uri',
                  minLength: 1,
                  maxLength: 2048,
                  description:
                    'https://…, no credentials; not `localhost` nor a private, loopback or link-local address.',
                },
                events: {
                  type: ['array', 'null'],
                  minItems: 1,
                  items: EVENT_TYPE,
                  description: 'The types to send; every type when left out or null. Duplicates are dropped.',
                },
                description: { type: ['string', 'null'], maxLength: 500 },
              },
            },
          },
        },
      },
      responses: responses('post', {
        '201': json(ref('WebhookEndpointCreated'), 'Created; the secret is shown only now.'),
        '422': responseRef('ValidationFailed'),
      }),
    },
    get: {
      operationId: 'listWebhooks',
      ...scoped('webhooks:write'),
      tags: ['webhooks'],
      summary: 'The webhook endpoints',
      responses: responses('get', {
        '200': json(list(ref('WebhookEndpoint')), 'Every endpoint of the customer (never the secret).'),
      }),
    },
  },
  '/api/v1/webhooks/{id}': {
    parameters: [ENDPOINT_ID],
    get: {
      operationId: 'getWebhook',
      ...scoped('webhooks:write'),
      tags: ['webhooks'],
      summary: 'A webhook endpoint',
      responses: responses('get', {
        '200': json(ref('WebhookEndpoint'), 'The endpoint (never the secret).'),
        '404': responseRef('NotFound'),
      }),
    },
    patch: UPDATE_WEBHOOK,
    delete: {
      operationId: 'deleteWebhook',
      ...scoped('webhooks:write'),
      tags: ['webhooks'],
      summary: 'Remove a webhook endpoint and its log',
      responses: responses('delete', {
        '200': json(
          {
            type: 'object',
            required: ['id', 'deleted'],
            properties: { id: { type: 'string' }, deleted: { const: true } },
          },
          'Removed: nothing more is sent to it.',
        ),
        '404': responseRef('NotFound'),
      }),
    },
  },
  '/api/v1/webhooks/{id}/test': {
    parameters: [ENDPOINT_ID],
    post: {
      operationId: 'testWebhook',
      ...scoped('webhooks:write'),
      tags: ['webhooks'],
      summary: 'Send a sample event now',
      description: 'Sent at once, signed as every event is, logged, and not retried. The body may be left out.',
      requestBody: {
        required: false,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                type: {
                  ...EVENT_TYPE,
                  default: 'email.delivered',
                  description: 'The event type to sample; other fields are ignored.',
                },
              },
            },
          },
        },
      },
      responses: responses('post', {
        '200': json(
          ref('WebhookAttemptOutcome'),
          'What the endpoint answered (a failure to reach it is a 200 too: see `success`).',
        ),
        '404': responseRef('NotFound'),
        '422': responseRef('ValidationFailed'),
      }),
    },
  },
  '/api/v1/webhooks/{id}/deliveries': {
    parameters: [ENDPOINT_ID],
    get: {
      operationId: 'listWebhookAttempts',
      ...scoped('webhooks:write'),
      tags: ['webhooks'],
      summary: "The endpoint's attempt log, newest first",
      parameters: PAGE_PARAMETERS,
      responses: responses('get', {
        '200': json(page(ref('WebhookAttempt')), 'One page of attempts.'),
        '404': responseRef('NotFound'),
        '422': responseRef('ValidationFailed'),
      }),
    },
  },
  '/api/v1/webhooks/{id}/deliveries/{event_id}/replay': {
    parameters: [ENDPOINT_ID, pathParameter('event_id', 'The event (`msg_…`; `event_id` in the attempt log).')],
    post: {
      operationId: 'replayWebhookEvent',
      ...scoped('webhooks:write'),
      tags: ['webhooks'],
      summary: 'Send an event again now',
      description:
        'The stored event, with the same `webhook-id`; logged as a replay delivery and not retried. No request body.',
      responses: responses('post', {
        '200': json(ref('WebhookAttemptOutcome'), 'What the endpoint answered.'),
        '404': responseRef('NotFound'),
      }),
    },
  },
};
