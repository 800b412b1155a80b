import { addressKey, formatMailbox, type Mailbox, parseAddrSpec, splitAddressList } from '../domain/addresses.js';
import { hasControl } from '../domain/header-text.js';
import { messageIdOfField } from '../domain/message-search.js';
import {
  MAX_TAGS,
  METADATA_MAX_KEY_LENGTH,
  METADATA_MAX_KEYS,
  METADATA_MAX_VALUE_LENGTH,
  POOL_NAME,
  TAG_MAX_LENGTH,
} from '../domain/send-request.js';
import { MIME_LIMITS } from '../mime/limits.js';
import { decodeWords } from '../mime/reader.js';

/**
 * A message submitted over SMTP, read as far as a send needs (docs/submission.md): the header
 * section only, never the body. Pure: bytes in, a value out.
 *
 * What the header section says: the sender (the one mailbox of the one From field, whose domain
 * decides whether the key may send it), the subject, tags and metadata (X-Posthaste-Tag,
 * X-Posthaste-Metadata-<name>), which envelope recipients the To and Cc fields name, and whether
 * the client wrote a Message-ID and a Date. What the stored message becomes: the client's bytes,
 * less its Bcc, Return-Path and X-Posthaste-* fields, with the fields posthaste adds (a Received
 * line first; Message-ID and Date at the end of the header section when missing, RFC 6409 8.3).
 */

/** A refusal after DATA: its SMTP code and text (the enhanced code first). */
export interface Refusal {
  code: number;
  text: string;
}

export interface Submitted {
  from: Mailbox;
  /** `Name <address>`, the name decoded (RFC 2047), as the API stores a sender. */
  fromHeader: string;
  subject: string;
  tags: string[];
  metadata: Record<string, string>;
  /** X-Posthaste-Unsubscribe: yes asked for the List-Unsubscribe fields (docs/submission.md). */
  unsubscribe: boolean;
  /** X-Posthaste-Pool: the pool of source addresses chosen (whether the customer may is the send's to decide). */
  pool?: string;
  /** Address keys the To and Cc fields name (a recipient in neither is a Bcc). */
  to: Set<string>;
  cc: Set<string>;
  hasMessageId: boolean;
  /** The id the client's Message-ID field carries, bare (the first field's; absent when it carries none that can be read). */
  headerMessageId?: string;
  hasDate: boolean;
  /** The stored message: `first` before the client's kept fields, `last` after them, then the body as written. */
  build(first: string, last: string): Buffer;
}

/** One header field: its name as written, and where it is in the header section (its line break included). */
interface RawField {
  name: string;
  lower: string;
  start: number;
  end: number;
}

/** Fields taken out of the stored message: a Bcc must not reach its recipients, a Return-Path is written at final delivery (RFC 5321 4.4), X-Posthaste-* are ours. */
const DROPPED = new Set(['bcc', 'return-path']);
const OURS = 'x-posthaste-';
const TAG = 'x-posthaste-tag';
const METADATA = 'x-posthaste-metadata-';
const UNSUBSCRIBE = 'x-posthaste-unsubscribe';
const POOL = 'x-posthaste-pool';
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
const CRLFCRLF = Buffer.from('\r\n\r\n');

const refuse = (code: number, text: string): Refusal => ({ code, text });

/**
 * The header section's bytes and what follows it: the first chunks joined until the empty line
 * that ends it (at most MIME_LIMITS.maxHeadSize, as inbound mail), the rest left as it arrived.
 */
function splitHead(chunks: Buffer[], size: number): { head: Buffer; headEnd: number; rest: Buffer[] } | Refusal {
  let taken = 0;
  let length = 0;
  let head = Buffer.alloc(0);
  const tooLarge = refuse(
    554,
    `5.6.0 Message refused: its header section is larger than ${MIME_LIMITS.maxHeadSize / 1024 / 1024} MiB`,
  );
  for (let searched = 0; ; ) {
    const found =
      head.length >= 2 && head[0] === 0x0d && head[1] === 0x0a ? 0 : head.indexOf(CRLFCRLF, Math.max(0, searched - 3));
    const headEnd = found === -1 ? head.length : found === 0 ? 0 : found + 2;
    if (headEnd > MIME_LIMITS.maxHeadSize) return tooLarge;
    if (found !== -1) return { head, headEnd, rest: chunks.slice(taken) };
    if (taken === chunks.length)
      return length === size ? { head, headEnd, rest: [] } : refuse(554, '5.6.0 Message refused: it could not be read');
    // At least twice as much each time: a header section arriving in many small chunks is joined
    // a few times, not once per chunk.
    searched = length;
    const from = taken;
    const target = Math.max(64 * 1024, 2 * length);
    while (taken < chunks.length && length < target) length += chunks[taken++]!.length;
    head = Buffer.concat([head, ...chunks.slice(from, taken)], length);
  }
}

/**
 * The fields of a header section (latin1: one character per byte). A line that is neither a field
 * nor the continuation of one ends the section there, as a reader would take it; what follows is
 * body, kept as written.
 */
function fieldsOf(text: string, headEnd: number): { fields: RawField[]; bodyAt: number } {
  const fields: RawField[] = [];
  let at = 0;
  while (at < headEnd) {
    const eol = text.indexOf('\r\n', at);
    const end = eol === -1 || eol >= headEnd ? headEnd : eol + 2;
    const c = text.charCodeAt(at);
    const last = fields[fields.length - 1];
    if ((c === 0x20 || c === 0x09) && last) last.end = end;
    else {
      const colon = text.indexOf(':', at);
      const name = colon > at && colon < end ? text.slice(at, colon).trimEnd() : '';
      if (!FIELD_NAME.test(name)) return { fields, bodyAt: at };
      fields.push({ name, lower: name.toLowerCase(), start: at, end });
    }
    at = end;
  }
  return { fields, bodyAt: headEnd };
}

/** A field's value, unfolded and trimmed, as UTF-8 text (8-bit header bytes are read as UTF-8). */
function fieldValue(text: string, f: RawField): string {
  const raw = text.slice(f.start + f.name.length, f.end).replace(/^\s*:/, '');
  const unfolded = raw.replace(/\r\n(?=[ \t])/g, '').trim();
  return /[\x80-\xff]/.test(unfolded) ? Buffer.from(unfolded, 'latin1').toString('utf8') : unfolded;
}

/** The addr-spec of one mailbox as written: `Name <addr>` or `addr (comment)`. */
function addrSpecOf(item: string): { spec: string; name: string } {
  const s = item.trim();
  const open = s.endsWith('>') ? s.lastIndexOf('<') : -1;
  if (open === -1) return { spec: s.replace(/\([^()]*\)/g, '').trim(), name: '' };
  let name = s.slice(0, open).trim();
  if (name.length >= 2 && name.startsWith('"') && name.endsWith('"')) name = name.slice(1, -1).replace(/\\(.)/g, '$1');
  return { spec: s.slice(open + 1, -1).trim(), name: decodeWords(name) };
}

/** The one mailbox of the From field: the sender whose domain must be the key's customer's. */
function senderOf(fields: RawField[], text: string): { from: Mailbox; fromHeader: string } | Refusal {
  const from = fields.filter((f) => f.lower === 'from');
  if (from.length !== 1)
    return refuse(
      550,
      `5.7.1 The message has ${from.length === 0 ? 'no From field' : `${from.length} From fields`}: posthaste sends a message with one From address at a verified domain`,
    );
  const items = splitAddressList(fieldValue(text, from[0]!));
  if (items.length !== 1)
    return refuse(
      550,
      `5.7.1 The From field names ${items.length} addresses: posthaste sends a message with one From address at a verified domain`,
    );
  const { spec, name } = addrSpecOf(items[0]!);
  const parsed = parseAddrSpec(spec);
  if (!parsed.ok) return refuse(550, `5.7.1 The From address cannot be read: ${parsed.error}`);
  const mailbox = name && !hasControl(name) ? { ...parsed.value, name } : parsed.value;
  return { from: mailbox, fromHeader: formatMailbox(mailbox) };
}

/** Address keys of the mailboxes a To or Cc field names (groups and odd forms are simply not matched). */
function namedIn(fields: RawField[], text: string, name: string): Set<string> {
  const out = new Set<string>();
  for (const f of fields)
    if (f.lower === name)
      for (const item of splitAddressList(fieldValue(text, f))) out.add(addressKey(addrSpecOf(item).spec));
  return out;
}

type Labels = { tags: string[]; metadata: Record<string, string>; unsubscribe: boolean; pool?: string };

/**
 * X-Posthaste-Tag (one tag a field, repeatable), X-Posthaste-Metadata-<name>, under the API's
 * limits, X-Posthaste-Unsubscribe (yes or no; yes with the message's own List-Unsubscribe is
 * refused) and X-Posthaste-Pool (once, a pool's name).
 */
function labelsOf(fields: RawField[], text: string): Labels | Refusal {
  const tags: string[] = [];
  const metadata = Object.create(null) as Record<string, string>;
  let unsubscribe = false;
  let pool: string | undefined;
  for (const f of fields) {
    if (!f.lower.startsWith(OURS)) continue;
    const value = decodeWords(fieldValue(text, f));
    if (f.lower === POOL) {
      if (pool !== undefined) return refuse(554, `5.6.0 ${f.name} is given twice`);
      if (!POOL_NAME.test(value))
        return refuse(554, `5.6.0 ${f.name}: a pool's name is 1 to 63 letters, digits, "_", "." or "-"`);
      pool = value;
    } else if (f.lower === UNSUBSCRIBE) {
      if (!/^(yes|no)$/i.test(value)) return refuse(554, `5.6.0 ${f.name}: the value is yes or no`);
      unsubscribe = value.toLowerCase() === 'yes';
    } else if (f.lower === TAG) {
      if (value.length === 0 || value.length > TAG_MAX_LENGTH || hasControl(value) || value.includes('\t'))
        return refuse(554, `5.6.0 ${f.name}: a tag is 1 to ${TAG_MAX_LENGTH} characters without control characters`);
      if (!tags.includes(value)) tags.push(value);
    } else if (f.lower.startsWith(METADATA) && f.lower.length > METADATA.length) {
      const key = f.name.slice(METADATA.length);
      if (key.length > METADATA_MAX_KEY_LENGTH)
        return refuse(554, `5.6.0 ${f.name}: a metadata name is at most ${METADATA_MAX_KEY_LENGTH} characters`);
      if (key in metadata) return refuse(554, `5.6.0 ${f.name} is given twice`);
      if (value.length > METADATA_MAX_VALUE_LENGTH)
        return refuse(554, `5.6.0 ${f.name}: a metadata value is at most ${METADATA_MAX_VALUE_LENGTH} characters`);
      metadata[key] = value;
    } else
      return refuse(
        554,
        `5.6.0 ${f.name} is not a field posthaste knows (X-Posthaste-Tag, X-Posthaste-Metadata-<name>, X-Posthaste-Unsubscribe, X-Posthaste-Pool)`,
      );
  }
  return labelsWithin(fields, { tags, metadata, unsubscribe, ...(pool !== undefined ? { pool } : {}) });
}

/** The labels read, within the API's limits and not at odds with the message's own fields. */
function labelsWithin(fields: RawField[], labels: Labels): Labels | Refusal {
  const { tags, metadata, unsubscribe } = labels;
  if (tags.length > MAX_TAGS)
    return refuse(554, `5.6.0 The message has ${tags.length} tags; at most ${MAX_TAGS} are allowed`);
  if (Object.keys(metadata).length > METADATA_MAX_KEYS)
    return refuse(554, `5.6.0 The message has more than ${METADATA_MAX_KEYS} metadata fields`);
  if (unsubscribe && fields.some((f) => f.lower === 'list-unsubscribe' || f.lower === 'list-unsubscribe-post'))
    return refuse(
      554,
      "5.6.0 X-Posthaste-Unsubscribe: yes with the message's own List-Unsubscribe: posthaste writes it for each recipient",
    );
  return labels;
}

/** Reads a submitted message from the chunks DATA arrived in (`size` bytes in all); a refusal says why it cannot be sent. */
export function readSubmitted(chunks: Buffer[], size: number): Submitted | Refusal {
  const split = splitHead(chunks, size);
  if ('code' in split) return split;
  const { head, headEnd, rest } = split;
  const text = head.toString('latin1', 0, headEnd);
  const { fields, bodyAt } = fieldsOf(text, headEnd);
  const sender = senderOf(fields, text);
  if ('code' in sender) return sender;
  const labels = labelsOf(fields, text);
  if ('code' in labels) return labels;
  const subject = fields.find((f) => f.lower === 'subject');
  const messageIdField = fields.find((f) => f.lower === 'message-id');
  const headerMessageId = messageIdField ? messageIdOfField(fieldValue(text, messageIdField)) : undefined;
  const has = (name: string) => fields.some((f) => f.lower === name);
  const kept = fields.filter((f) => !DROPPED.has(f.lower) && !f.lower.startsWith(OURS));
  return {
    ...sender,
    ...labels,
    subject: subject ? decodeWords(fieldValue(text, subject)) : '',
    to: namedIn(fields, text, 'to'),
    cc: namedIn(fields, text, 'cc'),
    hasMessageId: messageIdField !== undefined,
    ...(headerMessageId !== undefined ? { headerMessageId } : {}),
    hasDate: has('date'),
    build(first: string, last: string): Buffer {
      const parts = [
        Buffer.from(first, 'latin1'),
        ...kept.map((f) => head.subarray(f.start, f.end)),
        Buffer.from(last, 'latin1'),
        head.subarray(bodyAt),
        ...rest,
      ];
      return Buffer.concat(parts);
    },
  };
}
