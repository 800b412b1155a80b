import { SEARCH_STATES } from '../../domain/message-search.js';
import { dateTime, nullable, type Obj, ref } from './common.js';
import { EVENT_TYPE, eventSchemaName, MESSAGE_EVENT_TYPES, nullableDateTime } from './events.js';
import { HEADER_MESSAGE_ID, messageId } from './send.js';

/**
 * What the API answers besides a send's 202: messages (store/model.ts), webhook endpoints and
 * their attempts (webhooks/service.ts, store/model.ts), received mail (inbound/view.ts) and
 * suppressions (api/routes/suppressions.ts).
 */

/** A recipient's last reply (recipients.last_response): a reply, why it was suppressed before sending, or nothing yet. */
const LAST_RESPONSE: Obj = {
  description:
    'The last reply for this recipient; `{"suppressed": reason}` when it was on the suppression list at its turn; null before any.',
  oneOf: [
    ref('Reply'),
    { type: 'object', required: ['suppressed'], properties: { suppressed: { type: 'string' } } },
    { type: 'null' },
  ],
};

const INBOUND_ID: Obj = { type: 'string', pattern: '^in_[0-9A-Za-z]+$' };
const STATE = { type: 'string', enum: [...SEARCH_STATES] };
const METADATA: Obj = { type: 'object', additionalProperties: { type: 'string' } };

const MESSAGE_SUMMARY: Obj = {
  type: 'object',
  required: ['email_id', 'message_id', 'header_message_id', 'from', 'subject', 'sandbox', 'created_at', 'states'],
  properties: {
    email_id: { type: 'integer', minimum: 1, description: 'The row id: grows with acceptance time.' },
    message_id: messageId(),
    header_message_id: HEADER_MESSAGE_ID,
    from: { type: 'string', description: 'The From header as sent.' },
    subject: { type: 'string' },
    sandbox: { type: 'boolean' },
    created_at: dateTime('When it was accepted.'),
    states: {
      type: 'object',
      description: 'Recipients per state, e.g. `{"delivered": 2, "bounced": 1}`.',
      propertyNames: STATE,
      additionalProperties: { type: 'integer', minimum: 1 },
    },
  },
};

const RECIPIENT: Obj = {
  type: 'object',
  required: ['address', 'field', 'state', 'attempts', 'next_attempt_at', 'last_response'],
  properties: {
    address: { type: 'string', description: 'As it is delivered.' },
    field: { type: 'string', enum: ['to', 'cc', 'bcc'] },
    state: { ...STATE, description: '`queued` and `deferred` are on their way; the others are final.' },
    attempts: { type: 'integer', minimum: 0 },
    next_attempt_at: nullableDateTime('When it is tried next, while `queued` or `deferred`; null otherwise.'),
    last_response: LAST_RESPONSE,
  },
};

const { states: _states, ...SUMMARY_PROPERTIES } = MESSAGE_SUMMARY.properties as Obj;

const MESSAGE: Obj = {
  type: 'object',
  required: [
    'email_id',
    'message_id',
    'header_message_id',
    'from',
    'subject',
    'sandbox',
    'metadata',
    'size',
    'created_at',
    'scheduled_at',
    'tags',
    'recipients',
    'events',
  ],
  properties: {
    ...SUMMARY_PROPERTIES,
    metadata: METADATA,
    size: {
      type: nullable('integer'),
      minimum: 0,
      description: 'Bytes of the composed MIME message; null until it is first composed for delivery.',
    },
    scheduled_at: nullableDateTime('When it is held until (a scheduled send); null when it was sent at once.'),
    tags: { type: 'array', items: { type: 'string' } },
    recipients: { type: 'array', items: RECIPIENT },
    events: {
      type: 'array',
      description: 'Its events so far, oldest first, as webhooks carry them.',
      items: { oneOf: MESSAGE_EVENT_TYPES.map((t) => ref(eventSchemaName(t))) },
    },
  },
};

const ENDPOINT_PROPERTIES: Obj = {
  id: { type: 'string', pattern: '^wh_[0-9A-Za-z]+$' },
  url: { type: 'string', format: 'uri' },
  events: {
    type: 'array',
    items: EVENT_TYPE,
    description: 'The types it gets: every type when it was created without `events`.',
  },
  description: { type: 'string' },
  enabled: { type: 'boolean', description: 'false once an attempt was answered 410 Gone.' },
  disabled_reason: { type: 'string', description: 'Why it was disabled; only when it was.' },
  created_at: dateTime('When it was created.'),
};
const ENDPOINT_REQUIRED = ['id', 'url', 'events', 'description', 'enabled', 'created_at'];

/** `{success, status, error, duration_ms, response, event_id, type}`: one POST to an endpoint, as a test or a replay made it. */
const ATTEMPT_OUTCOME: Obj = {
  type: 'object',
  required: ['success', 'status', 'error', 'duration_ms', 'response', 'event_id', 'type'],
  properties: {
    success: { type: 'boolean', description: 'A 2xx came back in time.' },
    status: {
      type: nullable('integer'),
      description: "The endpoint's HTTP status; null when none came (refused, timed out, unreachable).",
    },
    error: { type: nullable('string'), description: 'Why there was no status.' },
    duration_ms: { type: 'integer', minimum: 0 },
    response: { type: nullable('string'), description: 'The first 1 KiB of the response body.' },
    event_id: { type: 'string', pattern: '^msg_[0-9A-Za-z]+$' },
    type: EVENT_TYPE,
  },
};

const ATTEMPT: Obj = {
  type: 'object',
  required: [
    'event_id',
    'event_type',
    'attempt',
    'at',
    'status',
    'error',
    'duration_ms',
    'response',
    'delivery_state',
    'kind',
  ],
  properties: {
    event_id: { type: 'string', pattern: '^msg_[0-9A-Za-z]+$' },
    event_type: EVENT_TYPE,
    attempt: { type: 'integer', minimum: 1 },
    at: dateTime('When the attempt started.'),
    status: { type: nullable('integer') },
    error: { type: nullable('string') },
    duration_ms: { type: 'integer', minimum: 0 },
    response: { type: nullable('string'), description: 'The first 1 KiB of the response body.' },
    delivery_state: {
      type: nullable('string'),
      enum: ['pending', 'succeeded', 'failed', null],
      description:
        "The delivery's state now (`pending`: more attempts to come); null for a test event, which has no delivery.",
    },
    kind: {
      type: 'string',
      enum: ['event', 'replay', 'test'],
      description: 'What sent it: the delivery of an event, a replay, or a test event.',
    },
  },
};

const AUTHENTICATION: Obj = {
  type: 'object',
  required: ['spf', 'dkim', 'dmarc'],
  properties: { spf: { type: 'string' }, dkim: { type: 'string' }, dmarc: { type: 'string' } },
  description: 'SPF, DKIM and DMARC results (`pass`, `fail`, `none`…) checked on arrival.',
};

const INBOUND_SUMMARY: Obj = {
  type: 'object',
  required: ['id', 'received_at', 'from', 'to', 'subject', 'message_id', 'size', 'attachments', 'authentication'],
  properties: {
    id: INBOUND_ID,
    received_at: dateTime('When it arrived.'),
    from: { type: 'string', description: 'The From header.' },
    to: { type: 'array', items: { type: 'string' }, description: 'The envelope recipients (RCPT TO).' },
    subject: { type: 'string' },
    message_id: { type: 'string', description: 'The Message-ID header as written; empty when there was none.' },
    size: { type: 'integer', minimum: 0 },
    attachments: { type: 'integer', minimum: 0, description: 'How many.' },
    authentication: AUTHENTICATION,
  },
};

const INBOUND_MESSAGE: Obj = {
  type: 'object',
  description:
    'Mail is stored only when it parses within the MIME limits, so `parsed` is true; a stored message the parser cannot read is shown from its top-level headers with `parsed: false`, a `parse_error`, and `text`, `html` and `attachments` empty (`/raw` has it whole).',
  required: [
    'id',
    'received_at',
    'envelope',
    'size',
    'authentication',
    'parsed',
    'headers',
    'from',
    'to',
    'cc',
    'subject',
    'message_id',
    'text',
    'html',
    'attachments',
  ],
  properties: {
    id: INBOUND_ID,
    received_at: dateTime('When it arrived.'),
    envelope: {
      type: 'object',
      required: ['mail_from', 'rcpt_to', 'remote_ip', 'helo'],
      properties: {
        mail_from: { type: 'string' },
        rcpt_to: { type: 'array', items: { type: 'string' } },
        remote_ip: { type: 'string' },
        helo: { type: 'string' },
      },
    },
    size: { type: 'integer', minimum: 0, description: 'Bytes as received.' },
    authentication: AUTHENTICATION,
    parsed: { type: 'boolean' },
    parse_error: { type: 'string', description: 'Only with `parsed: false`.' },
    headers: {
      type: 'array',
      description: 'Every header field in order; names in lower case.',
      items: {
        type: 'object',
        required: ['name', 'value'],
        properties: { name: { type: 'string' }, value: { type: 'string' } },
      },
    },
    from: { type: 'string' },
    to: { type: 'array', items: { type: 'string' } },
    cc: { type: 'array', items: { type: 'string' } },
    subject: { type: 'string' },
    message_id: { type: 'string' },
    text: {
      type: nullable('string'),
      description: 'The text part; converted from the HTML for an HTML-only message of at most 1 MiB; null otherwise.',
    },
    html: { type: nullable('string'), description: 'The HTML part, `cid:` links kept as they are.' },
    attachments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['filename', 'content_type', 'content_id', 'size', 'content'],
        properties: {
          filename: { type: nullable('string') },
          content_type: { type: 'string' },
          content_id: { type: nullable('string'), description: 'What `cid:` links in `html` name.' },
          size: { type: 'integer', minimum: 0 },
          content: { type: 'string', contentEncoding: 'base64' },
        },
      },
    },
  },
  if: { properties: { parsed: { const: false } } },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else, not a thenable
  then: { required: ['parse_error'] },
  else: { not: { required: ['parse_error'] } },
};

const SUPPRESSION_REASON = { type: 'string', enum: ['hard_bounce', 'spam_complaint', 'manual', 'unsubscribe'] };

/** components.schemas besides the send request, the error and the events. */
export function viewSchemas(): Obj {
  return {
    MessageSummary: MESSAGE_SUMMARY,
    Message: MESSAGE,
    Recipient: RECIPIENT,
    WebhookEndpoint: { type: 'object', required: ENDPOINT_REQUIRED, properties: ENDPOINT_PROPERTIES },
    WebhookEndpointCreated: {
      type: 'object',
      description: 'The endpoint with its secret, shown only here.',
      required: [...ENDPOINT_REQUIRED, 'secret'],
      properties: {
        ...ENDPOINT_PROPERTIES,
        secret: {
          type: 'string',
          pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
          description: '`whsec_` and the Base64 of 32 random bytes: the key of `webhook-signature`.',
        },
      },
    },
    WebhookEndpointRotated: {
      type: 'object',
      description: 'The endpoint with its new secret, shown only here, and until when the old one still signs.',
      required: [...ENDPOINT_REQUIRED, 'secret', 'previous_secret_expires_at'],
      properties: {
        ...ENDPOINT_PROPERTIES,
        secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]{43}=$' },
        previous_secret_expires_at: dateTime('Until when deliveries carry the old secret’s signature too.'),
      },
    },
    WebhookAttemptOutcome: ATTEMPT_OUTCOME,
    WebhookAttempt: ATTEMPT,
    InboundSummary: INBOUND_SUMMARY,
    InboundMessage: INBOUND_MESSAGE,
    Suppression: {
      type: 'object',
      required: ['address', 'reason', 'message_id', 'created_at'],
      properties: {
        address: { type: 'string' },
        reason: SUPPRESSION_REASON,
        message_id: {
          type: nullable('string'),
          description: 'The message whose bounce or complaint put it there; null for `manual`.',
        },
        created_at: dateTime('When it was added.'),
      },
    },
  };
}
