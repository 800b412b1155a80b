// Each field's rule of a send request (docs/api.md), one check per field, for validateSendRequest
// (send-request.ts) to run in order: each adds its problems to the one Problems, none short-circuits
// another, and each returns the field's value when it has none.

import { MAILBOX_MAX_LENGTH, type Mailbox, parseMailbox, splitAddressList } from './addresses.js';
import type { Problems } from './errors.js';
import { CONTROL_PROBLEM, foldProblem, hasControl } from './header-text.js';

/** An attachment of a send request. */
export interface Attachment {
  filename: string;
  /** The content as the request gave it, strict Base64: decoded only by the composer, so accepting a message never holds its attachments twice. */
  base64: string;
  contentType: string;
}

export const MAX_TAGS = 10;
export const TAG_MAX_LENGTH = 100;
/** ISO 8601 date and time with seconds optional, fractions optional, and a zone (Z or ±hh:mm) required. */
const SCHEDULE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;

const KNOWN_FIELDS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply_to',
  'subject',
  'body',
  'text_body',
  'html_body',
  'attachments',
  'headers',
  'metadata',
  'scheduled_at',
  'tags',
  'unsubscribe',
  'pool',
]);

/** Headers posthaste writes itself (docs/api.md); a request may not set them. Content-* is refused by prefix. */
export const OWNED_HEADER_NAMES: readonly string[] = [
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'return-path',
  'dkim-signature',
  'mime-version',
  'sender',
  'reply-to',
];
const OWNED_HEADERS = new Set(OWNED_HEADER_NAMES);
/**
 * A Message-ID the request gives in `headers` (docs/api.md): one msg-id, `<id-left@id-right>`
 * (RFC 5322 3.6.4), printable ASCII without space, `<`, `>` or a second `@`. The message then
 * carries it in place of posthaste's id, which still names it in the API; it is found by either.
 */
export const MESSAGE_ID_VALUE = '^<[\\x21-\\x3B\\x3D\\x3F\\x41-\\x7E]+@[\\x21-\\x3B\\x3D\\x3F\\x41-\\x7E]+>$';
const MESSAGE_ID = new RegExp(MESSAGE_ID_VALUE);
const HEADER_NAME = /^[\x21-\x39\x3b-\x7e]+$/; // RFC 5322 ftext: printable ASCII except ':'
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
export const METADATA_MAX_KEYS = 50;
export const METADATA_MAX_KEY_LENGTH = 64;
export const METADATA_MAX_VALUE_LENGTH = 1024;
export const SUBJECT_MAX_LENGTH = 998;
/** The longest custom header value, in characters (docs/api.md); it is folded at whitespace. */
export const HEADER_VALUE_MAX_LENGTH = 8192;
export const HEADER_NAME_MAX_LENGTH = 100;
/** The longest attachment file name, in characters (as most file systems allow). */
export const FILENAME_MAX_LENGTH = 255;

/** A character outside the Base64 alphabet (RFC 4648 section 4). */
const NOT_BASE64 = /[^A-Za-z0-9+/]/;

/**
 * Strict Base64 (RFC 4648 section 4): the alphabet only, padded to a multiple of four, no line
 * breaks. One search for a character outside the alphabet, which takes linear time on
 * attachments of any size (a pattern of repeated groups overflowed V8's backtracking stack past
 * about 3 MiB).
 */
export function isStrictBase64(s: string): boolean {
  if (s.length % 4 !== 0) return false;
  let end = s.length;
  if (end > 0 && s.charCodeAt(end - 1) === 0x3d) end -= s.charCodeAt(end - 2) === 0x3d ? 2 : 1;
  return !NOT_BASE64.test(end === s.length ? s : s.slice(0, end));
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function addressField(field: string, v: unknown, p: Problems, required: boolean, max: number): Mailbox[] {
  if (v === undefined || v === null) {
    if (required) p.add(field, 'is required');
    return [];
  }
  let items: unknown[];
  if (typeof v === 'string') items = splitAddressList(v);
  else if (Array.isArray(v)) items = v;
  else {
    p.add(field, 'must be a string or an array of strings');
    return [];
  }
  // Past the recipient limit, no address is read: a list of a million gets one problem, not a million.
  if (items.length > max) {
    p.add(field, `has ${items.length} addresses; at most ${max} recipients are allowed in to, cc and bcc together`);
    return [];
  }
  const out: Mailbox[] = [];
  for (const item of items) {
    if (typeof item !== 'string') {
      p.add(field, 'must contain only strings');
      continue;
    }
    const parsed = parseMailbox(item);
    if (parsed.ok) out.push(parsed.value);
    else p.add(field, `"${printable(item)}" ${parsed.error}`);
  }
  if (required && items.length === 0) p.add(field, 'needs at least one address');
  return out;
}

/** Makes a value safe to echo in an error message. */
function printable(s: string): string {
  const t = s.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return t.length > 80 ? t.slice(0, 77) + '...' : t;
}

export function optionalString(field: string, v: unknown, p: Problems): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') {
    p.add(field, 'must be a string');
    return undefined;
  }
  if (v.includes('\0')) p.add(field, 'must not contain NUL');
  return v;
}

/**
 * parseMailbox for `from`, remembered: an application sends from a handful of addresses, and
 * parsing one (IDNA, the atom checks) is a few microseconds of every request. Results are frozen,
 * as they are shared; the cache is emptied when it reaches 1,000 entries.
 */
const senders = new Map<string, ReturnType<typeof parseMailbox>>();
function parseSender(input: string): ReturnType<typeof parseMailbox> {
  if (input.length > MAILBOX_MAX_LENGTH) return parseMailbox(input); // refused; never kept as a key
  let parsed = senders.get(input);
  if (parsed === undefined) {
    parsed = parseMailbox(input);
    if (parsed.ok) Object.freeze(parsed.value);
    if (senders.size >= 1000) senders.clear();
    senders.set(input, Object.freeze(parsed));
  }
  return parsed;
}

export function checkKnownFields(body: Record<string, unknown>, p: Problems): void {
  for (const key of Object.keys(body)) if (!KNOWN_FIELDS.has(key)) p.add(key, 'is not a known field');
}

export function fromField(v: unknown, p: Problems): Mailbox | undefined {
  if (typeof v !== 'string') {
    p.add('from', v === undefined ? 'is required' : 'must be a string');
    return undefined;
  }
  const parsed = parseSender(v);
  if (parsed.ok) return parsed.value;
  p.add('from', `"${printable(v)}" ${parsed.error}`);
  return undefined;
}

export function checkRecipientTotal(total: number, max: number, p: Problems): void {
  if (total > max) p.add('to', `has ${total} recipients in to, cc and bcc together; at most ${max} are allowed`);
}

export function replyToField(v: unknown, p: Problems): Mailbox | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') {
    p.add('reply_to', 'must be a string');
    return undefined;
  }
  const parsed = parseMailbox(v);
  if (parsed.ok) return parsed.value;
  p.add('reply_to', `"${printable(v)}" ${parsed.error}`);
  return undefined;
}

export function subjectField(v: unknown, p: Problems): string {
  if (v === undefined || v === null) p.add('subject', 'is required');
  else if (typeof v !== 'string') p.add('subject', 'must be a string');
  else if (v.trim() === '') p.add('subject', 'must not be blank');
  else if (hasControl(v)) p.add('subject', CONTROL_PROBLEM);
  else if (v.length > SUBJECT_MAX_LENGTH) p.add('subject', `must be at most ${SUBJECT_MAX_LENGTH} characters`);
  else {
    const fold = foldProblem('Subject: '.length, v);
    if (!fold) return v;
    p.add('subject', fold);
  }
  return '';
}

/** body and text_body are aliases; one of the three bodies is required. */
export function checkBodies(
  body: Record<string, unknown>,
  bodyText: string | undefined,
  textBody: string | undefined,
  p: Problems,
): void {
  if (bodyText !== undefined && textBody !== undefined && bodyText !== textBody)
    p.add('text_body', 'body and text_body are aliases; give one, or both equal');
  if (body.body == null && body.text_body == null && body.html_body == null)
    p.add('body', 'one of body, text_body or html_body is required');
}

export function attachmentsField(v: unknown, p: Problems): Attachment[] {
  const attachments: Attachment[] = [];
  if (v === undefined || v === null) return attachments;
  if (!Array.isArray(v)) p.add('attachments', 'must be an array');
  else
    v.forEach((a: unknown, i: number) => {
      const attachment = attachmentField(`attachments[${i}]`, a, p);
      if (attachment) attachments.push(attachment);
    });
  return attachments;
}

/** One attachment at field path `f`: every problem it has, or the attachment. */
function attachmentField(f: string, a: unknown, p: Problems): Attachment | undefined {
  if (!isRecord(a)) {
    p.add(f, 'must be an object');
    return undefined;
  }
  for (const key of Object.keys(a))
    if (key !== 'filename' && key !== 'io' && key !== 'content_type') p.add(`${f}.${key}`, 'is not a known field');
  const { filename, io, content_type: ct } = a;
  let ok = true;
  const problem = (field: string, message: string) => {
    ok = false;
    p.add(`${f}.${field}`, message);
  };
  if (typeof filename !== 'string' || filename.trim() === '') problem('filename', 'must be a non-empty string');
  else if (hasControl(filename)) problem('filename', CONTROL_PROBLEM);
  else if (filename.length > FILENAME_MAX_LENGTH)
    problem('filename', `must be at most ${FILENAME_MAX_LENGTH} characters`);
  if (typeof io !== 'string' || !isStrictBase64(io))
    problem('io', 'must be strict Base64 (RFC 4648, padded, no line breaks)');
  if (typeof ct !== 'string' || !MIME_TYPE.test(ct))
    problem('content_type', 'must be a media type of the form type/subtype');
  return ok
    ? { filename: filename as string, base64: io as string, contentType: (ct as string).toLowerCase() }
    : undefined;
}

export function headersField(v: unknown, p: Problems): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  if (v === undefined || v === null) return headers;
  if (!isRecord(v)) {
    p.add('headers', 'must be an object of string to string');
    return headers;
  }
  let messageId = false;
  for (const [name, value] of Object.entries(v)) {
    const f = `headers.${printable(name)}`;
    const isMessageId = name.toLowerCase() === 'message-id';
    if (!HEADER_NAME.test(name)) p.add(f, 'is not a valid header name');
    else if (name.length > HEADER_NAME_MAX_LENGTH) p.add(f, `must be at most ${HEADER_NAME_MAX_LENGTH} characters`);
    else if (OWNED_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith('content-'))
      p.add(f, 'is set by posthaste and cannot be given');
    else if (typeof value !== 'string') p.add(f, 'must be a string');
    else if (hasControl(value)) p.add(f, CONTROL_PROBLEM);
    else if (isMessageId && !MESSAGE_ID.test(value))
      p.add(f, 'must be one Message-ID, <id@domain> (RFC 5322 3.6.4), without spaces or comments');
    else if (isMessageId && messageId) p.add(f, 'is given twice (a message has one Message-ID)');
    else if (value.length > HEADER_VALUE_MAX_LENGTH) p.add(f, `must be at most ${HEADER_VALUE_MAX_LENGTH} characters`);
    else {
      const fold = foldProblem(name.length + 2, value);
      if (fold) p.add(f, fold);
      else headers.push([name, value]);
      messageId ||= isMessageId;
    }
  }
  return headers;
}

export function metadataField(v: unknown, p: Problems): Record<string, string> {
  // Keys are the client's: a null-prototype object stores "__proto__" as data, not as a prototype.
  const metadata = Object.create(null) as Record<string, string>;
  if (v === undefined || v === null) return metadata;
  if (!isRecord(v)) {
    p.add('metadata', 'must be an object of string to string');
    return metadata;
  }
  const entries = Object.entries(v);
  if (entries.length > METADATA_MAX_KEYS) p.add('metadata', `has more than ${METADATA_MAX_KEYS} keys`);
  for (const [key, value] of entries) {
    const f = `metadata.${printable(key)}`;
    if (key.length === 0 || key.length > METADATA_MAX_KEY_LENGTH)
      p.add(f, `key must be 1 to ${METADATA_MAX_KEY_LENGTH} characters`);
    else if (typeof value !== 'string') p.add(f, 'must be a string');
    else if (value.length > METADATA_MAX_VALUE_LENGTH)
      p.add(f, `must be at most ${METADATA_MAX_VALUE_LENGTH} characters`);
    else metadata[key] = value;
  }
  return metadata;
}

export function scheduledAtField(v: unknown, p: Problems): number | undefined {
  if (v === undefined || v === null) return undefined;
  const t = typeof v === 'string' && SCHEDULE_TIME.test(v) ? Date.parse(v) : NaN;
  if (!Number.isNaN(t)) return t;
  p.add('scheduled_at', 'must be an ISO 8601 date and time with a zone, e.g. "2026-11-24T09:00:00Z"');
  return undefined;
}

export function tagsField(v: unknown, p: Problems): string[] {
  const tags: string[] = [];
  if (v === undefined || v === null) return tags;
  if (!Array.isArray(v)) p.add('tags', `must be an array of up to ${MAX_TAGS} strings`);
  else if (v.length > MAX_TAGS) p.add('tags', `has ${v.length} tags; at most ${MAX_TAGS} are allowed`);
  else
    for (const [i, tag] of (v as unknown[]).entries()) {
      if (typeof tag !== 'string' || tag.length === 0 || tag.length > TAG_MAX_LENGTH)
        p.add(`tags[${i}]`, `must be a string of 1 to ${TAG_MAX_LENGTH} characters`);
      else if (hasControl(tag) || tag.includes('\t')) p.add(`tags[${i}]`, 'must not contain a control character');
      else if (!tags.includes(tag)) tags.push(tag);
    }
  return tags;
}

/**
 * `unsubscribe`: true asks for the List-Unsubscribe and List-Unsubscribe-Post fields (RFC 8058),
 * which posthaste writes per recipient; the request's own `headers` may not set them then.
 */
export function unsubscribeField(v: unknown, headers: Array<[string, string]>, p: Problems): boolean {
  if (v === undefined || v === null || v === false) return false;
  if (v !== true) {
    p.add('unsubscribe', 'must be true or false');
    return false;
  }
  for (const [name] of headers)
    if (/^list-unsubscribe(-post)?$/i.test(name))
      p.add('headers', `${name} cannot be given with unsubscribe: true (posthaste writes it for each recipient)`);
  return true;
}
