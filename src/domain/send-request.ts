import { Problems } from './errors.js';
import { addressKey, hasForbiddenControl, parseMailbox, splitAddressList, type Mailbox } from './addresses.js';

/** A send request after validation: only known fields, every address parsed, bodies normalised. */
export interface SendRequest {
  from: Mailbox;
  to: Mailbox[];
  cc: Mailbox[];
  bcc: Mailbox[];
  replyTo?: Mailbox;
  subject: string;
  text?: string;
  html?: string;
  attachments: Attachment[];
  headers: Array<[string, string]>;
  metadata: Record<string, string>;
}

export interface Attachment {
  filename: string;
  content: Buffer;
  contentType: string;
}

export interface SendLimits {
  maxRecipients: number;
}

const KNOWN_FIELDS = new Set([
  'from', 'to', 'cc', 'bcc', 'reply_to', 'subject', 'body', 'text_body', 'html_body', 'attachments', 'headers', 'metadata',
]);

/** Headers posthaste writes itself (docs/api.md); a request may not set them. Content-* is refused by prefix. */
const OWNED_HEADERS = new Set([
  'from', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'return-path', 'dkim-signature', 'mime-version', 'sender', 'reply-to',
]);
const HEADER_NAME = /^[\x21-\x39\x3b-\x7e]+$/; // RFC 5322 ftext: printable ASCII except ':'
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
export const METADATA_MAX_KEYS = 50;
export const METADATA_MAX_KEY_LENGTH = 64;
export const METADATA_MAX_VALUE_LENGTH = 1024;
export const SUBJECT_MAX_LENGTH = 998;

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Every line ending to CRLF. nodemailer's composer passes 7bit bodies through as they are, so a
 * bare CR or LF would otherwise reach the stored message and the wire (docs/protocols.md 4), and
 * DKIM signs canonical CRLF lines.
 */
function normaliseBody(s: string): string {
  // Most bodies have no bare CR or LF to fix, and many no line break at all (indexOf is a memchr).
  if (s.indexOf('\n') === -1 && s.indexOf('\r') === -1) return s;
  return s.replace(/\r\n|\r|\n/g, '\r\n');
}

function addressField(field: string, v: unknown, p: Problems, required: boolean): Mailbox[] {
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

function optionalString(field: string, v: unknown, p: Problems): string | undefined {
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
  let parsed = senders.get(input);
  if (parsed === undefined) {
    parsed = parseMailbox(input);
    if (parsed.ok) Object.freeze(parsed.value);
    if (senders.size >= 1000) senders.clear();
    senders.set(input, Object.freeze(parsed));
  }
  return parsed;
}

/** Every rule of send validation (docs/api.md); all problems are collected, none short-circuits another. */
export function validateSendRequest(body: Record<string, unknown>, limits: SendLimits): SendRequest | Problems {
  const p = new Problems();
  for (const key of Object.keys(body)) if (!KNOWN_FIELDS.has(key)) p.add(key, 'is not a known field');

  let from: Mailbox | undefined;
  if (typeof body.from !== 'string') p.add('from', body.from === undefined ? 'is required' : 'must be a string');
  else {
    const parsed = parseSender(body.from);
    if (parsed.ok) from = parsed.value;
    else p.add('from', `"${printable(body.from)}" ${parsed.error}`);
  }

  const to = addressField('to', body.to, p, true);
  const cc = addressField('cc', body.cc, p, false);
  const bcc = addressField('bcc', body.bcc, p, false);
  const total = to.length + cc.length + bcc.length;
  if (total > limits.maxRecipients) p.add('to', `has ${total} recipients in to, cc and bcc together; at most ${limits.maxRecipients} are allowed`);

  let replyTo: Mailbox | undefined;
  if (body.reply_to !== undefined && body.reply_to !== null) {
    if (typeof body.reply_to !== 'string') p.add('reply_to', 'must be a string');
    else {
      const parsed = parseMailbox(body.reply_to);
      if (parsed.ok) replyTo = parsed.value;
      else p.add('reply_to', `"${printable(body.reply_to)}" ${parsed.error}`);
    }
  }

  let subject = '';
  if (body.subject === undefined || body.subject === null) p.add('subject', 'is required');
  else if (typeof body.subject !== 'string') p.add('subject', 'must be a string');
  else if (body.subject.trim() === '') p.add('subject', 'must not be blank');
  else if (hasForbiddenControl(body.subject)) p.add('subject', 'must not contain a line break or NUL');
  else if (body.subject.length > SUBJECT_MAX_LENGTH) p.add('subject', `must be at most ${SUBJECT_MAX_LENGTH} characters`);
  else subject = body.subject;

  const bodyText = optionalString('body', body.body, p);
  const textBody = optionalString('text_body', body.text_body, p);
  const htmlBody = optionalString('html_body', body.html_body, p);
  if (bodyText !== undefined && textBody !== undefined && bodyText !== textBody)
    p.add('text_body', 'body and text_body are aliases; give one, or both equal');
  const text = textBody ?? bodyText;
  if (body.body == null && body.text_body == null && body.html_body == null)
    p.add('body', 'one of body, text_body or html_body is required');

  const attachments: Attachment[] = [];
  if (body.attachments !== undefined && body.attachments !== null) {
    if (!Array.isArray(body.attachments)) p.add('attachments', 'must be an array');
    else
      body.attachments.forEach((a: unknown, i: number) => {
        const f = `attachments[${i}]`;
        if (!isRecord(a)) return p.add(f, 'must be an object');
        for (const key of Object.keys(a))
          if (key !== 'filename' && key !== 'io' && key !== 'content_type') p.add(`${f}.${key}`, 'is not a known field');
        const { filename, io, content_type: ct } = a;
        let ok = true;
        if (typeof filename !== 'string' || filename.trim() === '') ((ok = false), p.add(`${f}.filename`, 'must be a non-empty string'));
        else if (/[\x00-\x1f\x7f]/.test(filename)) ((ok = false), p.add(`${f}.filename`, 'must not contain control characters'));
        if (typeof io !== 'string' || !BASE64.test(io)) ((ok = false), p.add(`${f}.io`, 'must be strict Base64 (RFC 4648, padded, no line breaks)'));
        if (typeof ct !== 'string' || !MIME_TYPE.test(ct)) ((ok = false), p.add(`${f}.content_type`, 'must be a media type of the form type/subtype'));
        if (ok) attachments.push({ filename: filename as string, content: Buffer.from(io as string, 'base64'), contentType: (ct as string).toLowerCase() });
      });
  }

  const headers: Array<[string, string]> = [];
  if (body.headers !== undefined && body.headers !== null) {
    if (!isRecord(body.headers)) p.add('headers', 'must be an object of string to string');
    else
      for (const [name, value] of Object.entries(body.headers)) {
        const f = `headers.${printable(name)}`;
        if (!HEADER_NAME.test(name)) p.add(f, 'is not a valid header name');
        else if (OWNED_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith('content-'))
          p.add(f, 'is set by posthaste and cannot be given');
        else if (typeof value !== 'string') p.add(f, 'must be a string');
        else if (hasForbiddenControl(value)) p.add(f, 'must not contain a line break or NUL');
        else headers.push([name, value]);
      }
  }

  // Keys are the client's: a null-prototype object stores "__proto__" as data, not as a prototype.
  const metadata = Object.create(null) as Record<string, string>;
  if (body.metadata !== undefined && body.metadata !== null) {
    if (!isRecord(body.metadata)) p.add('metadata', 'must be an object of string to string');
    else {
      const entries = Object.entries(body.metadata);
      if (entries.length > METADATA_MAX_KEYS) p.add('metadata', `has more than ${METADATA_MAX_KEYS} keys`);
      for (const [key, value] of entries) {
        const f = `metadata.${printable(key)}`;
        if (key.length === 0 || key.length > METADATA_MAX_KEY_LENGTH) p.add(f, `key must be 1 to ${METADATA_MAX_KEY_LENGTH} characters`);
        else if (typeof value !== 'string') p.add(f, 'must be a string');
        else if (value.length > METADATA_MAX_VALUE_LENGTH) p.add(f, `must be at most ${METADATA_MAX_VALUE_LENGTH} characters`);
        else metadata[key] = value;
      }
    }
  }

  if (!p.empty || !from) return p;
  return {
    from,
    ...dedupe(to, cc, bcc),
    ...(replyTo ? { replyTo } : {}),
    subject,
    ...(text !== undefined ? { text: normaliseBody(text) } : {}),
    ...(htmlBody !== undefined ? { html: normaliseBody(htmlBody) } : {}),
    attachments,
    headers,
    metadata,
  };
}

/** One recipient row per distinct address (case-insensitive), in to, cc, bcc order. */
function dedupe(to: Mailbox[], cc: Mailbox[], bcc: Mailbox[]): { to: Mailbox[]; cc: Mailbox[]; bcc: Mailbox[] } {
  const seen = new Set<string>();
  const keep = (list: Mailbox[]) =>
    list.filter((m) => {
      const key = addressKey(m.address);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  return { to: keep(to), cc: keep(cc), bcc: keep(bcc) };
}

/** All recipients with the field they came from. */
export function recipientsOf(r: SendRequest): Array<{ field: 'to' | 'cc' | 'bcc'; mailbox: Mailbox }> {
  return [
    ...r.to.map((mailbox) => ({ field: 'to' as const, mailbox })),
    ...r.cc.map((mailbox) => ({ field: 'cc' as const, mailbox })),
    ...r.bcc.map((mailbox) => ({ field: 'bcc' as const, mailbox })),
  ];
}

/**
 * The stored form of an accepted request is the request body exactly as received (bytes): it
 * validated once, and validation is a pure function of it, so delivery gets the same SendRequest
 * back by validating it again. Storing the bytes costs nothing on the accept path (re-serialising
 * the validated request took about 6 % of the event loop's time per request, measured).
 */
export function deserializeRequest(stored: Uint8Array | string): SendRequest {
  if (typeof stored !== 'string') {
    const bytes = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
    const body = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    // The recipient count was checked against the limit in force at acceptance.
    const r = validateSendRequest(body, { maxRecipients: Infinity });
    if (r instanceof Problems) throw new Error(`the stored request no longer validates: ${JSON.stringify(r.details)}`);
    return r;
  }
  // Rows stored by earlier builds hold the validated request re-serialised as JSON text (attachments as Base64).
  const r = JSON.parse(stored) as Omit<SendRequest, 'attachments'> & { attachments: Array<Omit<Attachment, 'content'> & { content: string }> };
  return { ...r, attachments: r.attachments.map((a) => ({ ...a, content: Buffer.from(a.content, 'base64') })) };
}
