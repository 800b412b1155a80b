import { asciiDomain, type Mailbox, splitAddressList } from './addresses.js';
import { UnsendableMessage } from './errors.js';
import { type Attachment, dedupe, isRecord, normaliseBody, type SendRequest } from './send-request.js';

/**
 * The stored form of an accepted request is the request body exactly as received (bytes; storing
 * them costs the accept path nothing, where re-serialising the validated request took about 6 % of
 * the event loop's time per request, measured).
 *
 * Delivery reads it back with this reader, which builds the same SendRequest that validation built
 * at acceptance but judges nothing: the body passed the rules in force when it was accepted, and a
 * rule added or tightened since (a shorter limit, a header refused, a stricter address grammar)
 * must not turn queued, scheduled or held mail into bounces. Only what cannot be read at all (not
 * JSON, a field of the wrong type) makes the message unsendable.
 *
 * It shares the normalisation with validation (line endings, recipient de-duplication, the
 * media type's case); test/unit/domain/stored-request.test.ts checks that both give the same
 * request for valid bodies of every shape.
 */
export function readStoredRequest(stored: Uint8Array): SendRequest {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).toString('utf8'));
  } catch {
    throw new UnsendableMessage('the stored request is not JSON');
  }
  if (!isRecord(body)) throw unreadable('the request');
  const text = optional(body, 'text_body') ?? optional(body, 'body');
  const html = optional(body, 'html_body');
  const replyTo = optional(body, 'reply_to');
  const scheduled = optional(body, 'scheduled_at');
  return {
    from: readMailbox(required(body, 'from')),
    ...dedupe(addresses(body, 'to'), addresses(body, 'cc'), addresses(body, 'bcc')),
    ...(replyTo !== undefined ? { replyTo: readMailbox(replyTo) } : {}),
    subject: required(body, 'subject'),
    ...(text !== undefined ? { text: normaliseBody(text) } : {}),
    ...(html !== undefined ? { html: normaliseBody(html) } : {}),
    attachments: list(body, 'attachments').map(attachment),
    headers: Object.entries(stringMap(body, 'headers')),
    metadata: stringMap(body, 'metadata'),
    ...(scheduled !== undefined ? { scheduledAt: Date.parse(scheduled) } : {}),
    tags: [...new Set(list(body, 'tags').map((t) => asString(t, 'tags')))],
    // Delivery reads the message row's flag (QueuedMessage.unsubscribe), not this.
    unsubscribe: body.unsubscribe === true,
  };
}

/**
 * `address` or `Display Name <address>`, split the way validation's parser splits it (the last
 * `<...>` at the end is the address; a quoted name is unquoted), the domain made lower-case ASCII.
 */
export function readMailbox(input: string): Mailbox {
  const s = input.trim();
  const open = s.endsWith('>') ? s.lastIndexOf('<') : -1;
  const inner = s.slice(open + 1, -1);
  let spec = s;
  let name = '';
  if (open !== -1 && !inner.includes('>')) {
    spec = inner.trim();
    name = s.slice(0, open).trim();
    if (name.length >= 2 && name.startsWith('"') && name.endsWith('"'))
      name = name.slice(1, -1).replace(/\\(.)/g, '$1');
  }
  const at = spec.lastIndexOf('@');
  if (at <= 0) throw unreadable(`the address "${spec.slice(0, 80)}"`);
  const local = spec.slice(0, at);
  const raw = spec.slice(at + 1);
  const domain = asciiDomain(raw) || raw.toLowerCase();
  const mailbox: Mailbox = { address: `${local}@${domain}`, local, domain };
  return name ? { ...mailbox, name } : mailbox;
}

function unreadable(what: string): UnsendableMessage {
  return new UnsendableMessage(`the stored request cannot be read: ${what}`);
}

function asString(v: unknown, field: string): string {
  if (typeof v !== 'string') throw unreadable(field);
  return v;
}

function optional(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  return v === undefined || v === null ? undefined : asString(v, field);
}

function required(body: Record<string, unknown>, field: string): string {
  return asString(body[field], field);
}

function list(body: Record<string, unknown>, field: string): unknown[] {
  const v = body[field];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw unreadable(field);
  return v;
}

function addresses(body: Record<string, unknown>, field: string): Mailbox[] {
  const v = body[field];
  const items = typeof v === 'string' ? splitAddressList(v) : list(body, field);
  return items.map((item) => readMailbox(asString(item, field)));
}

function attachment(a: unknown): Attachment {
  if (!isRecord(a)) throw unreadable('attachments');
  return {
    filename: asString(a.filename, 'attachments'),
    base64: asString(a.io, 'attachments'),
    contentType: asString(a.content_type, 'attachments').toLowerCase(),
  };
}

/** An object of string to string, as a null-prototype object (its keys are the client's). */
function stringMap(body: Record<string, unknown>, field: string): Record<string, string> {
  const v = body[field];
  const out = Object.create(null) as Record<string, string>;
  if (v === undefined || v === null) return out;
  if (!isRecord(v)) throw unreadable(field);
  for (const [k, value] of Object.entries(v)) out[k] = asString(value, field);
  return out;
}
