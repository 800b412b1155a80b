import { CLASSIFICATIONS } from '../../domain/classify.js';
import { EVENT_TYPES, type EventType } from '../../domain/events.js';
import { dateTime, nullable, type Obj, ref } from './common.js';
import { HEADER_MESSAGE_ID, messageId } from './send.js';

/**
 * The webhook events (domain/events.ts; their data is made in domain/transitions.ts and
 * store/model/inbound.ts) as schemas; webhook-section.ts describes how each is POSTed to an
 * endpoint.
 */

/** An event type, as a field's schema. */
export const EVENT_TYPE: Obj = { type: 'string', enum: [...EVENT_TYPES] };

/** A server's reply (domain/outcome.ts, Reply). */
export const REPLY: Obj = {
  type: 'object',
  description:
    'The SMTP reply that decided it (or the reply posthaste states itself: DNS failures, the simulator, local errors, a bounce report read later).',
  required: ['code', 'enhanced_code', 'message', 'classification'],
  properties: {
    code: {
      type: 'integer',
      minimum: 0,
      maximum: 599,
      description: 'The reply code; 0 when there was none (a report without one).',
    },
    enhanced_code: { type: 'string', description: 'RFC 3463 status code such as `5.1.1`; empty when there was none.' },
    message: { type: 'string' },
    classification: {
      type: 'string',
      enum: [...CLASSIFICATIONS],
      description: 'Why, as a label (docs/delivery.md, classification labels).',
    },
  },
};

const replyWithout = (description: string): Obj => {
  const { classification: _c, ...properties } = REPLY.properties as Obj;
  return { type: 'object', description, required: ['code', 'enhanced_code', 'message'], properties };
};

/** In every event written since posthaste kept it; an event stored before (the outbox keeps its envelope as written) has none. */
const EVENT_HEADER_MESSAGE_ID: Obj = {
  ...HEADER_MESSAGE_ID,
  description: `${HEADER_MESSAGE_ID.description as string} Absent only in events written by a release before it was kept.`,
};

/** The fields every message event's data carries (domain/events.ts, MessageEventBase). */
const MESSAGE_BASE: Obj = {
  email_id: { type: 'integer', description: 'The message row (`email_id` of the API).' },
  message_id: messageId(),
  header_message_id: EVENT_HEADER_MESSAGE_ID,
  from: { type: 'string', description: 'The From header as sent.' },
  subject: { type: 'string' },
  recipient: { type: 'string', description: 'The recipient this event is about.' },
  sandbox: { type: 'boolean' },
  timestamp: dateTime('When it happened.'),
  metadata: { type: 'object', additionalProperties: { type: 'string' }, description: 'As sent.' },
  tags: { type: 'array', items: { type: 'string' }, description: 'As sent; empty when none.' },
};
const BASE_REQUIRED = Object.keys(MESSAGE_BASE).filter((k) => k !== 'header_message_id');

function messageEvent(description: string, own: Obj, required: string[]): Obj {
  return {
    type: 'object',
    description,
    required: [...BASE_REQUIRED, ...required],
    properties: { ...MESSAGE_BASE, ...own },
  };
}

/** Where an attempt went from, when pools of source addresses are configured (docs/delivery.md, "Sending identities"). */
const SOURCE: Obj = {
  pool: {
    type: 'string',
    description: 'The pool of source addresses the attempt went from (outbound.pools); absent without pools.',
  },
  source_ip: {
    type: 'string',
    description: "The source address the attempt's connection was bound to (outbound.pools); absent without pools.",
  },
};

export const nullableDateTime = (description: string): Obj => ({
  type: nullable('string'),
  format: 'date-time',
  description,
});

const EVENT_DATA: Record<EventType, Obj> = {
  'email.delivered': messageEvent(
    'The receiving server accepted the message for this recipient.',
    {
      response: replyWithout('The accepting reply.'),
      mx: { type: 'string', description: 'The host that accepted it (`sandbox` for a sandbox message).' },
      tls: { type: 'boolean', description: 'Sent over TLS.' },
      tls_verified: {
        type: 'boolean',
        description:
          "The server's certificate was checked (DANE, MTA-STS enforce, the relay host), not only encrypted to.",
      },
      attempt: { type: 'integer', minimum: 1 },
      ...SOURCE,
    },
    ['response', 'mx', 'tls', 'tls_verified', 'attempt'],
  ),
  'email.deferred': messageEvent(
    'A temporary failure: retried at `next_attempt_at`.',
    {
      response: ref('Reply'),
      attempt: { type: 'integer', minimum: 1 },
      next_attempt_at: nullableDateTime(
        'The next attempt; null when an operator held the recipient during this attempt (it is tried when released).',
      ),
      ...SOURCE,
    },
    ['response', 'attempt', 'next_attempt_at'],
  ),
  'email.bounced': messageEvent(
    'A permanent failure: the recipient will not get the message.',
    {
      bounce_type: {
        type: 'string',
        enum: ['hard', 'async', 'expired'],
        description:
          '`hard`: refused during delivery; `async`: a bounce report came back after delivery; `expired`: retried until max_queue_time.',
      },
      response: ref('Reply'),
      ...SOURCE,
    },
    ['bounce_type', 'response'],
  ),
  'email.complained': messageEvent(
    "The recipient reported the message as spam (a feedback report from the recipient's provider).",
    {
      feedback_type: { type: 'string', description: "The report's Feedback-Type, e.g. `abuse`." },
      user_agent: { type: 'string', description: 'The reporting software, when the report names it.' },
      arrival_date: { type: 'string', description: "The report's Arrival-Date as written, when it gives one." },
    },
    ['feedback_type'],
  ),
  'recipient.suppressed': {
    type: 'object',
    description:
      'An address was put on the suppression list by a bounce or a complaint (once per address; always in the sandbox, where the list is not touched).',
    required: ['recipient', 'reason', 'email_id', 'message_id', 'sandbox', 'timestamp'],
    properties: {
      recipient: { type: 'string' },
      reason: { type: 'string', enum: ['hard_bounce', 'spam_complaint'] },
      email_id: MESSAGE_BASE.email_id,
      message_id: messageId(),
      header_message_id: EVENT_HEADER_MESSAGE_ID,
      sandbox: { type: 'boolean' },
      timestamp: dateTime('When it happened.'),
    },
  },
  'recipient.unsubscribed': {
    type: 'object',
    description:
      "The recipient unsubscribed, by the one-click POST (RFC 8058) or a mail to the List-Unsubscribe mailto address: the address is now on the customer's suppression list (reason `unsubscribe`). Once per address; an address already on the list fires nothing.",
    required: ['recipient', 'reason', 'method', 'email_id', 'message_id', 'timestamp'],
    properties: {
      recipient: { type: 'string' },
      reason: { type: 'string', enum: ['unsubscribe'] },
      method: { type: 'string', enum: ['one_click', 'mailto'], description: 'How the recipient asked.' },
      email_id: MESSAGE_BASE.email_id,
      message_id: messageId(),
      header_message_id: EVENT_HEADER_MESSAGE_ID,
      timestamp: dateTime('When it happened.'),
    },
  },
  'email.received': {
    type: 'object',
    description:
      "A message arrived for one of the customer's receiving domains; `GET /api/v1/inbound/{id}` shows it whole.",
    required: ['id', 'from', 'to', 'subject', 'message_id', 'size', 'attachments', 'spf', 'dkim', 'dmarc'],
    properties: {
      id: { type: 'string', pattern: '^in_[0-9A-Za-z]+$' },
      from: { type: 'string', description: 'The From header.' },
      to: { type: 'array', items: { type: 'string' }, description: 'The To addresses.' },
      subject: { type: 'string' },
      message_id: { type: 'string', description: 'The Message-ID header as written; empty when there was none.' },
      size: { type: 'integer', minimum: 0, description: 'Bytes as received.' },
      attachments: { type: 'integer', minimum: 0, description: 'How many.' },
      spf: {
        type: 'string',
        description: 'The SPF result: `pass`, `fail`, `softfail`, `neutral`, `none`, `temperror` or `permerror`.',
      },
      dkim: { type: 'string', description: "The first DKIM signature's result, `none` without one." },
      dmarc: { type: 'string', description: 'The DMARC result, `none` without a policy.' },
    },
  },
  'inbound.limited': {
    type: 'object',
    description:
      'A receiving domain went over its inbound limit: mail to it is refused with 451 until the window ends. At most once an hour per domain.',
    required: ['domain', 'limit', 'window_ends_at'],
    properties: {
      domain: { type: 'string' },
      limit: {
        type: 'string',
        enum: ['rate', 'monthly'],
        description: '`rate`: per minute; `monthly`: per calendar month.',
      },
      window_ends_at: dateTime('When mail is taken again.'),
    },
  },
  'customer.warning': customerState(
    "The customer's bounce or complaint rate over the window reached a warning threshold (`[reputation]`): nothing is refused yet. Once per crossing.",
  ),
  'customer.paused': customerState(
    "The customer's sending was paused: by its rates reaching a pause threshold (`by`: `reputation`), or by an administrator. New sends are refused (`403 customer_paused`), its queued mail is held; the sandbox still works.",
  ),
  'customer.resumed': customerState(
    'An administrator resumed the customer: its held mail goes out, and its rates are counted again from now.',
  ),
  'domain.verified': domainEvent(
    'A domain became verified: its verification and DKIM records were found (`POST /api/v1/domains/{name}/verify`, `posthaste domains verify`). Sent once, when the state changes, not for every check that finds them again.',
  ),
  'domain.verification_failed': domainEvent(
    'A verified domain is verified no longer: a check (the periodic re-check, `dns.recheck_interval`, or a verify) got a definite answer that a required record is absent or wrong. Mail from it is refused (`domain_not_verified`) until a verify finds the records again. A DNS server that does not answer (SERVFAIL, a timeout) never causes it.',
  ),
};

/** The data of the customer.* events (domain/reputation.ts, stateEventData). */
function customerState(description: string): Obj {
  const rate = (what: string): Obj => ({
    type: ['number', 'null'],
    minimum: 0,
    maximum: 100,
    description: `${what}, in percent; null until the window holds enough recipients with an outcome.`,
  });
  const count = (description: string): Obj => ({ type: 'integer', minimum: 0, description });
  const threshold: Obj = { type: 'number', minimum: 0, maximum: 100 };
  return {
    type: 'object',
    description,
    required: ['customer', 'state', 'reason', 'by', 'rates', 'window', 'threshold', 'timestamp'],
    properties: {
      customer: { type: 'string', description: "The customer's name." },
      state: { type: 'string', enum: ['ok', 'warning', 'paused'], description: 'The state it is in now.' },
      reason: { type: 'string', description: "Why: the rates past their thresholds, or the administrator's words." },
      by: { type: 'string', enum: ['reputation', 'administrator'] },
      rates: {
        type: 'object',
        required: ['bounce_rate', 'complaint_rate', 'recipients', 'hard_bounces', 'expired', 'delivered', 'complaints'],
        properties: {
          bounce_rate: rate('Hard bounces over recipients with an outcome'),
          complaint_rate: rate('Complaints over recipients delivered'),
          recipients: count('Recipients with an outcome (delivered, or bounced during delivery) in the window.'),
          hard_bounces: count('Hard bounces, during delivery or reported later.'),
          expired: count('Recipients that expired (shown beside the rate, not counted in it).'),
          delivered: count('Recipients delivered.'),
          complaints: count('Complaints.'),
        },
      },
      window: {
        type: 'object',
        required: ['days', 'min_recipients'],
        properties: {
          days: { type: 'number', minimum: 0 },
          min_recipients: count('Outcomes needed before a rate is judged.'),
        },
      },
      threshold: {
        type: 'object',
        description: 'The thresholds of the state reached (for `customer.resumed`: the pause thresholds).',
        required: ['bounce_rate', 'complaint_rate'],
        properties: { bounce_rate: threshold, complaint_rate: threshold },
      },
      timestamp: dateTime('When it happened.'),
    },
  };
}

/** The data of a domain's verified state changing (domain/events.ts, DomainEventData). */
function domainEvent(description: string): Obj {
  return {
    type: 'object',
    description,
    required: ['domain', 'verified_at', 'records'],
    properties: {
      domain: { type: 'string' },
      verified_at: {
        type: nullable('string'),
        format: 'date-time',
        description: 'When it was first verified; null once it is not.',
      },
      records: {
        type: 'array',
        description:
          'The records verification requires, as the check found them (empty when an administrator forced it).',
        items: {
          type: 'object',
          required: ['purpose', 'name', 'found'],
          properties: {
            purpose: { type: 'string', enum: ['verification', 'dkim'] },
            name: { type: 'string' },
            found: { type: 'boolean' },
          },
        },
      },
    },
  };
}

/** The schema names of the events: `EmailDeliveredEvent` for `email.delivered`. */
export const eventSchemaName = (type: EventType): string =>
  `${type
    .split(/[._]/)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('')}Event`;

/** Each event's envelope: `{id, type, timestamp, data}`, as stored and as POSTed. */
export function eventSchemas(): Obj {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => [
      eventSchemaName(type),
      {
        type: 'object',
        description: (EVENT_DATA[type].description as string) ?? '',
        required: ['id', 'type', 'timestamp', 'data'],
        properties: {
          id: {
            type: 'string',
            pattern: '^msg_[0-9A-Za-z]+$',
            description: 'The event id; also the `webhook-id` header, the same on every retry and replay.',
          },
          type: { const: type },
          timestamp: dateTime('When the event was written.'),
          data: EVENT_DATA[type],
        },
      },
    ]),
  );
}

/** The events a sent message has (`GET /api/v1/emails/{message_id}`, `events`). */
export const MESSAGE_EVENT_TYPES: EventType[] = [
  'email.delivered',
  'email.deferred',
  'email.bounced',
  'email.complained',
  'recipient.suppressed',
  'recipient.unsubscribed',
];
