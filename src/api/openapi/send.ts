import { schema as configSchema } from '../../config/schema.js';
import { DISPLAY_NAME_MAX_LENGTH, MAILBOX_MAX_LENGTH } from '../../domain/addresses.js';
import { MESSAGE_ID_MAX_LENGTH } from '../../domain/message-search.js';
import { MESSAGE_ID_VALUE, OWNED_HEADER_NAMES } from '../../domain/send-fields.js';
import {
  FILENAME_MAX_LENGTH,
  HEADER_NAME_MAX_LENGTH,
  HEADER_VALUE_MAX_LENGTH,
  MAX_TAGS,
  METADATA_MAX_KEY_LENGTH,
  METADATA_MAX_KEYS,
  METADATA_MAX_VALUE_LENGTH,
  SUBJECT_MAX_LENGTH,
  TAG_MAX_LENGTH,
} from '../../domain/send-request.js';
import { anyCase, NO_CONTROL, NO_CONTROL_OR_TAB, NOT_BLANK_NO_CONTROL, nullable, type Obj } from './common.js';

/**
 * The send request (`POST /api/v1/emails`, each item of a batch) as JSON Schema: every rule of
 * validateSendRequest (domain/send-request.ts) that JSON Schema can state, from the same
 * constants; the rest is in the descriptions. test/unit/api/openapi-send.test.ts holds the two
 * to agreeing on a table of requests at each limit and on random field values.
 */

const limits = configSchema.limits;
export const MAX_RECIPIENTS_DEFAULT = limits.max_recipients.default as number;

/** Headers posthaste writes itself (domain/send-fields.ts; docs/api.md); Content-* is refused by prefix. */
export const OWNED_HEADERS = OWNED_HEADER_NAMES;
/** RFC 5322 ftext (printable ASCII but `:`), and none of the owned names in any case. */
export const HEADER_NAME_PATTERN = `^(?!(?:${OWNED_HEADERS.map(anyCase).join('|')})$|${anyCase('content-')})[\\x21-\\x39\\x3B-\\x7E]+$`;
/** type/subtype (send-fields.ts, MIME_TYPE). */
export const MEDIA_TYPE_PATTERN = '^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$';
/** ISO 8601 with a zone, seconds and fractions optional (send-fields.ts, SCHEDULE_TIME, which ignores case). */
export const SCHEDULE_PATTERN =
  '^\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?(?:[Zz]|[+-]\\d{2}:\\d{2})$';
/** The Base64 alphabet with its padding. A pattern cannot say "a multiple of four" in linear time: the description does. */
const BASE64_PATTERN = '^[A-Za-z0-9+/]*={0,2}$';

const FOLD =
  'Header text is folded at whitespace, so a run of printable ASCII without whitespace, with the whitespace before it and the field name, must fit in a line of 998 characters (RFC 5322 2.1.1): refused with 422 otherwise.';

const mailbox = (description: string): Obj => ({
  type: 'string',
  maxLength: MAILBOX_MAX_LENGTH,
  pattern: NO_CONTROL,
  description,
});

const MAILBOX_TEXT = `\`addr@example.com\` or \`Display Name <addr@example.com>\` (a display name of at most ${DISPLAY_NAME_MAX_LENGTH} characters, quoted when it holds \`"\`, \`<\` or \`>\`). Address literals and comments are refused; an IDN domain is converted to A-labels.`;

function addressList(field: string, required: boolean): Obj {
  return {
    type: required ? ['string', 'array'] : ['string', 'array', 'null'],
    description: `One address, a comma-separated list of them, or an array. ${MAILBOX_TEXT} to, cc and bcc together hold 1 to limits.max_recipients (default ${MAX_RECIPIENTS_DEFAULT}) addresses; duplicates (case-insensitive) are sent once.${required ? '' : ` null is the same as leaving ${field} out.`}`,
    ...(required ? { minLength: 1, minItems: 1 } : {}),
    items: mailbox('One address.'),
  };
}

const bodyText = (description: string): Obj => ({
  type: nullable('string'),
  pattern: '^[^\\x00]*$',
  description: `${description} No NUL. Line endings are normalised to CRLF.`,
});

export const SEND_REQUEST: Obj = {
  type: 'object',
  description:
    'One message. Unknown fields are refused (422 naming the field). Every problem is reported at once. A field given as null is the same as a field left out, except `from`, `to` and `subject`, which are required.',
  required: ['from', 'to', 'subject'],
  additionalProperties: false,
  properties: {
    from: mailbox(
      `The sender. ${MAILBOX_TEXT} Its domain must be a domain of the key's customer (422 on \`from\` otherwise) and verified (403 \`domain_not_verified\`).`,
    ),
    to: addressList('to', true),
    cc: addressList('cc', false),
    bcc: addressList('bcc', false),
    reply_to: { ...mailbox(`Reply-To. ${MAILBOX_TEXT}`), type: nullable('string') },
    subject: {
      type: 'string',
      minLength: 1,
      maxLength: SUBJECT_MAX_LENGTH,
      pattern: NOT_BLANK_NO_CONTROL,
      description: `Not blank; header text: no control character but tab. ${FOLD}`,
    },
    body: bodyText('Plain text; an alias of text_body (both present and different is refused).'),
    text_body: bodyText('Plain text.'),
    html_body: bodyText('HTML.'),
    attachments: {
      type: nullable('array'),
      items: {
        type: 'object',
        required: ['filename', 'io', 'content_type'],
        additionalProperties: false,
        properties: {
          filename: {
            type: 'string',
            minLength: 1,
            maxLength: FILENAME_MAX_LENGTH,
            pattern: NOT_BLANK_NO_CONTROL,
            description: 'Not blank; header text (no control character but tab).',
          },
          io: {
            type: 'string',
            contentEncoding: 'base64',
            pattern: BASE64_PATTERN,
            description:
              'The content in strict Base64 (RFC 4648 section 4): the alphabet only, padded to a multiple of four characters, no line breaks. Any size, within the message limit.',
          },
          content_type: {
            type: 'string',
            pattern: MEDIA_TYPE_PATTERN,
            description: 'A media type, `type/subtype` (no parameters).',
            examples: ['application/pdf'],
          },
        },
      },
    },
    headers: {
      type: nullable('object'),
      description: `Extra header fields, name to value. The ones posthaste writes (${OWNED_HEADERS.join(', ')}, and every Content-*) are refused, in any case. A \`Message-ID\` (one \`<id@domain>\`) replaces posthaste's in the message: \`message_id\` still names the message, and \`header_message_id\` is that id (\`GET /api/v1/emails?message_id=\` finds it by either).`,
      propertyNames: { maxLength: HEADER_NAME_MAX_LENGTH, pattern: HEADER_NAME_PATTERN },
      patternProperties: {
        [`^${anyCase('message-id')}$`]: {
          type: 'string',
          pattern: MESSAGE_ID_VALUE,
          maxLength: 998 - 'Message-ID: '.length,
          description: "One msg-id, `<id@domain>` (RFC 5322 3.6.4): the message's Message-ID in place of posthaste's.",
        },
      },
      additionalProperties: {
        type: 'string',
        maxLength: HEADER_VALUE_MAX_LENGTH,
        pattern: NO_CONTROL,
        description: `Header text (no control character but tab). ${FOLD}`,
      },
    },
    metadata: {
      type: nullable('object'),
      description: 'String to string, echoed in every event of the message.',
      maxProperties: METADATA_MAX_KEYS,
      propertyNames: { minLength: 1, maxLength: METADATA_MAX_KEY_LENGTH },
      additionalProperties: { type: 'string', maxLength: METADATA_MAX_VALUE_LENGTH },
    },
    scheduled_at: {
      type: nullable('string'),
      pattern: SCHEDULE_PATTERN,
      description: `Send at this time rather than at once: ISO 8601 with a zone (\`2026-11-24T09:00:00Z\`, \`2026-11-24T10:00+01:00\`), a real date and time, at most limits.max_schedule_ahead (default ${limits.max_schedule_ahead.default}) ahead. A time already past sends at once. The answer is then \`"status": "scheduled"\` with \`scheduled_at\`.`,
      examples: ['2026-11-24T09:00:00Z'],
    },
    tags: {
      type: nullable('array'),
      maxItems: MAX_TAGS,
      description:
        'Labels of your choosing: echoed in every event as `tags` and searchable with `GET /api/v1/emails?tag=`. Duplicates are dropped.',
      items: { type: 'string', minLength: 1, maxLength: TAG_MAX_LENGTH, pattern: NO_CONTROL_OR_TAB },
    },
    unsubscribe: {
      type: nullable('boolean'),
      description:
        "`true`: posthaste adds one-click unsubscribe (RFC 8058) to each recipient's copy: `List-Unsubscribe` (an https URL under unsubscribe.public_url and a mailto at the return path domain, a token of the recipient's own) and `List-Unsubscribe-Post: List-Unsubscribe=One-Click`, both DKIM-signed. Unsubscribing suppresses the address (reason `unsubscribe`) and fires `recipient.unsubscribed`. Refused (422) when the server has no unsubscribe.public_url, or with a `List-Unsubscribe` in `headers`. A customer may have it on by default (`posthaste customers set NAME --unsubscribe on`).",
    },
    pool: {
      type: nullable('string'),
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$',
      description:
        "The pool of source addresses this message leaves from (docs/delivery.md, \"Sending identities\"): one of the customer's allowed pools (`posthaste customers set NAME --allow-pools`) or its default pool. Absent: the customer's default pool, else the server's. A pool the server does not have, or the customer may not choose, is refused (422, `details.pool`), nothing queued.",
    },
  },
  anyOf: ['body', 'text_body', 'html_body'].map((field) => ({
    required: [field],
    properties: { [field]: { type: 'string' } },
  })),
};

/** A Message-ID without its angle brackets; posthaste draws 26 characters of Crockford base32 (time first) @ the sender domain. */
const MESSAGE_ID: Obj = {
  type: 'string',
  pattern: '^[^@\\s<>]+@[^@\\s<>]+$',
  description:
    'The Message-ID, without angle brackets (posthaste draws 26 characters of base32 @ the sender domain): it names the message in every other call.',
};
export const messageId = (description?: string): Obj => (description ? { ...MESSAGE_ID, description } : MESSAGE_ID);

/** The id in a message's Message-ID field (domain/message-search.ts); also in every event's data. */
export const HEADER_MESSAGE_ID: Obj = {
  type: 'string',
  maxLength: MESSAGE_ID_MAX_LENGTH,
  description:
    "The id in the message's Message-ID field, without angle brackets: the sender's own when it wrote one (an application's mailer over SMTP submission), else `message_id`. `GET /api/v1/emails?message_id=` finds the message by either.",
};

export const ACCEPTED: Obj = {
  type: 'object',
  required: ['message_id', 'status', 'sandbox', 'recipients'],
  properties: {
    message_id: MESSAGE_ID,
    status: { type: 'string', enum: ['queued', 'scheduled'], description: '`scheduled`: held until `scheduled_at`.' },
    scheduled_at: { type: 'string', format: 'date-time', description: 'Only with `"status": "scheduled"`.' },
    sandbox: {
      type: 'boolean',
      description: 'Sent with a sandbox key: nothing leaves the machine (docs/delivery.md, the simulator).',
    },
    recipients: {
      type: 'array',
      items: { type: 'string' },
      description: 'Every distinct recipient, as it will be delivered (IDN domains as A-labels).',
    },
  },
  if: { properties: { status: { const: 'scheduled' } } },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else, not a thenable
  then: { required: ['scheduled_at'] },
  else: { not: { required: ['scheduled_at'] } },
};
