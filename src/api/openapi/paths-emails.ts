import { schema as configSchema } from '../../config/schema.js';
import { MESSAGE_ID_MAX_LENGTH, SEARCH_STATES } from '../../domain/message-search.js';
import { MAX_BATCH } from '../routes/emails.js';
import {
  errorSchema,
  json,
  type Obj,
  PAGE_PARAMETERS,
  page,
  pathParameter,
  ref,
  responseRef,
  responses,
  scoped,
} from './common.js';

/** The send and message endpoints (api/routes/emails.ts; docs/api.md). */

const IDEMPOTENCY_KEY: Obj = {
  name: 'Idempotency-Key',
  in: 'header',
  description: `Makes a retry safe: scoped per customer, an accepted (202) request is remembered for limits.idempotency_ttl (default ${configSchema.limits.idempotency_ttl.default}) and the same key with the same body gets its first answer again, with \`idempotent-replayed: true\`, storing nothing. The same key with another body is 409. Refusals are not remembered.`,
  schema: { type: 'string', pattern: '^[\\x21-\\x7E]{1,255}$', description: '1 to 255 printable ASCII characters.' },
};

const REPLAYED: Obj = {
  'idempotent-replayed': {
    description: '`true` when this is the first answer to an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', const: 'true' },
  },
};

const IDEMPOTENCY_CONFLICT = {
  '409': json(errorSchema(['conflict']), '`conflict`: this Idempotency-Key was used with a different body.'),
};

const MESSAGE_ID = pathParameter('message_id', 'The Message-ID the send answered (`message_id`).');

/** A batch item's own error: what that item would have got alone. */
const ITEM_ERROR = errorSchema(
  [
    'validation_failed',
    'domain_not_verified',
    'forbidden',
    'customer_paused',
    'payload_too_large',
    'recipient_suppressed',
    'rate_limited',
  ],
  'This item was refused; nothing of it was stored. `rate_limited`: over a send quota of the customer, judged in order after the items before it (its `message` says the seconds until there is room).',
);

/** 429: over one of the customer's send quotas (domain/quotas.ts; docs/operations.md, "Send quotas"). */
const RATE_LIMITED = {
  '429': json(
    errorSchema(['rate_limited']),
    "`rate_limited`: the customer's send quota has no room for this send's recipients; nothing was queued. `details` names each quota exceeded (`per_minute`, `per_day`, `per_month`) with its limit and use; `Retry-After` is the seconds until every one of them has room.",
    {
      'retry-after': {
        description: 'Whole seconds until the exceeded quotas have started a new window.',
        schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
      },
    },
  ),
};

export const timeFilter = (name: string, description: string): Obj => ({
  name,
  in: 'query',
  description: `${description}, ISO 8601: a date (\`2026-11-23\`) or a date and time, seconds optional (\`2026-11-23T10:00:00Z\`); without a zone it is UTC.`,
  schema: {
    type: 'string',
    pattern: '^\\d{4}-\\d{2}-\\d{2}(?:[T ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,3})?)?(?:Z|[+-]\\d{2}:\\d{2})?)?$',
  },
});

export const EMAIL_PATHS: Obj = {
  '/api/v1/emails': {
    post: {
      operationId: 'sendEmail',
      ...scoped('send'),
      tags: ['emails'],
      summary: 'Send a message',
      description:
        'Validates the message, checks the sender domain and the encoded size, and answers 202 only once the message and its recipients are committed to disk. A recipient on the suppression list refuses the whole message (422 `recipient_suppressed`, nothing queued).',
      parameters: [IDEMPOTENCY_KEY],
      requestBody: { required: true, content: { 'application/json': { schema: ref('SendRequest') } } },
      responses: responses('post', {
        '202': json(ref('Accepted'), 'Accepted: stored, and queued or scheduled.', REPLAYED),
        ...IDEMPOTENCY_CONFLICT,
        '422': json(
          errorSchema(['validation_failed', 'recipient_suppressed']),
          "`validation_failed`: the request breaks a rule (every problem in `details`), or the sender domain is not the customer's; `recipient_suppressed`: a recipient is on the suppression list (`details` names them, under to, cc or bcc).",
        ),
        ...RATE_LIMITED,
      }),
    },
    get: {
      operationId: 'listEmails',
      ...scoped('emails:read'),
      tags: ['emails'],
      summary: 'Search messages',
      description: "The customer's messages, newest first. Filters combine; an empty value is no filter.",
      parameters: [
        {
          name: 'recipient',
          in: 'query',
          description:
            'Messages to this address as it was sent (the local part is case-sensitive; the lower-cased address is tried too).',
          schema: { type: 'string', maxLength: 320, pattern: '@' },
        },
        {
          name: 'message_id',
          in: 'query',
          description:
            "Messages with this Message-ID, angle brackets optional: posthaste's (`message_id`, one message) or the one in the message's Message-ID field (`header_message_id`: an application's own, as its mailer wrote it; several messages may carry it).",
          schema: { type: 'string', maxLength: MESSAGE_ID_MAX_LENGTH + 2 },
        },
        {
          name: 'state',
          in: 'query',
          description: 'Messages with at least one recipient in this state.',
          schema: { type: 'string', enum: [...SEARCH_STATES] },
        },
        {
          name: 'tag',
          in: 'query',
          description: 'Messages sent with this tag.',
          schema: { type: 'string', maxLength: 100 },
        },
        timeFilter('since', 'Accepted at or after this time'),
        timeFilter('until', 'Accepted before this time'),
        ...PAGE_PARAMETERS,
      ],
      responses: responses('get', {
        '200': json(page(ref('MessageSummary')), 'One page of messages, newest first.'),
        '422': responseRef('ValidationFailed'),
      }),
    },
  },
  '/api/v1/emails/batch': {
    post: {
      operationId: 'sendEmailBatch',
      ...scoped('send'),
      tags: ['emails'],
      summary: `Send up to ${MAX_BATCH} messages`,
      description:
        "Each item is what `POST /api/v1/emails` takes and is judged on its own; every item that passes is stored in one transaction. A batch with refused items is still a 202: look at each entry. The Idempotency-Key covers the whole batch. The body size limit is the single send's, for the whole batch.",
      parameters: [IDEMPOTENCY_KEY],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { type: 'array', minItems: 1, maxItems: MAX_BATCH, items: ref('SendRequest') },
          },
        },
      },
      responses: responses('post', {
        '202': json(
          {
            type: 'object',
            required: ['data'],
            properties: {
              data: {
                type: 'array',
                description: 'One entry per item, in order.',
                items: { oneOf: [ref('Accepted'), ITEM_ERROR] },
              },
            },
          },
          'Every item judged; those that passed are stored.',
          REPLAYED,
        ),
        ...IDEMPOTENCY_CONFLICT,
        '422': json(
          errorSchema(['validation_failed']),
          `\`validation_failed\`: the array is empty or longer than ${MAX_BATCH}; nothing was stored.`,
        ),
      }),
    },
  },
  '/api/v1/emails/{message_id}': {
    parameters: [MESSAGE_ID],
    get: {
      operationId: 'getEmail',
      ...scoped('emails:read'),
      tags: ['emails'],
      summary: 'A message, its recipients and its events',
      responses: responses('get', { '200': json(ref('Message'), 'The message.'), '404': responseRef('NotFound') }),
    },
    delete: {
      operationId: 'cancelEmail',
      ...scoped('send'),
      tags: ['emails'],
      summary: 'Cancel what of a message has not been sent',
      description:
        'Its recipients still waiting (queued, scheduled, deferred after an attempt, or held) become `canceled`, for good; no event is sent. Recipients delivered, bounced or complained about are never changed. A recipient being delivered at this moment finishes that attempt first: delivered, it stays delivered; deferred, it is canceled then. No request body.',
      responses: responses('delete', {
        '200': json(
          ref('Message'),
          'Canceled: the message as `GET` shows it now (the recipients canceled are `canceled`).',
        ),
        '404': responseRef('NotFound'),
        '409': json(
          errorSchema(['conflict']),
          '`conflict`: no recipient was left to cancel; `details.recipients` counts them per state. Nothing changed.',
        ),
      }),
    },
  },
  '/api/v1/emails/{message_id}/retry': {
    parameters: [MESSAGE_ID],
    post: {
      operationId: 'retryEmail',
      ...scoped('send'),
      tags: ['emails'],
      summary: 'Retry the deferred recipients of a message now',
      description:
        "Its recipients deferred after an attempt, or held back by their destination's pause or limits (not held, not being delivered; never a scheduled message before its time), become due now, without waiting for the retry schedule, and their destination's adaptive pause ends: delivery takes them within a second or so. This is not counted as an attempt and does not move `max_queue_time`. No request body.",
      responses: responses('post', {
        '200': json(
          {
            type: 'object',
            additionalProperties: false,
            required: ['message_id', 'retried'],
            properties: {
              message_id: { type: 'string', description: 'The Message-ID.' },
              retried: {
                type: 'integer',
                minimum: 0,
                description: 'Recipients made due now; 0 when none was deferred (or each is being delivered already).',
              },
            },
          },
          'What changed.',
        ),
        '404': responseRef('NotFound'),
      }),
    },
  },
};
