import { addressKey, type Mailbox } from './addresses.js';
import { Problems } from './errors.js';
import {
  addressField,
  attachmentsField,
  checkBodies,
  checkKnownFields,
  checkRecipientTotal,
  fromField,
  headersField,
  metadataField,
  optionalString,
  replyToField,
  scheduledAtField,
  subjectField,
  tagsField,
  unsubscribeField,
} from './send-fields.js';

export type { Attachment } from './send-fields.js';
export {
  FILENAME_MAX_LENGTH,
  HEADER_NAME_MAX_LENGTH,
  HEADER_VALUE_MAX_LENGTH,
  isRecord,
  isStrictBase64,
  MAX_TAGS,
  METADATA_MAX_KEY_LENGTH,
  METADATA_MAX_KEYS,
  METADATA_MAX_VALUE_LENGTH,
  SUBJECT_MAX_LENGTH,
  TAG_MAX_LENGTH,
} from './send-fields.js';

import type { Attachment } from './send-fields.js';

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
  /** When to send (ms since the epoch), if not at once; its range is the API's to check (it needs the clock). */
  scheduledAt?: number;
  /** Labels of the customer's choosing: echoed in events, searchable. */
  tags: string[];
  /** The List-Unsubscribe fields asked for (docs/delivery.md, "One-click unsubscribe"). */
  unsubscribe: boolean;
  /** The pool of source addresses chosen for this message (docs/delivery.md, "Sending identities"). */
  pool?: string;
}

/** A pool's name (outbound.pools): as a customer's name, 1-63 letters, digits, "_", "." or "-". */
export const POOL_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/i;

/** `pool`: absent, or a pool's name; whether this customer may choose it is the send's to decide (send/admit.ts). */
function poolField(v: unknown, p: Problems): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !POOL_NAME.test(v)) {
    p.add('pool', 'must be the name of a pool (1-63 letters, digits, "_", "." or "-")');
    return undefined;
  }
  return v;
}

/** An attachment's size in bytes, from its Base64 text (strict: padded, no line breaks). */
export function attachmentSize(a: Attachment): number {
  const s = a.base64;
  return (s.length / 4) * 3 - (s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0);
}

export interface SendLimits {
  maxRecipients: number;
}

/**
 * Every line ending to CRLF. nodemailer's composer passes 7bit bodies through as they are, so a
 * bare CR or LF would otherwise reach the stored message and the wire (docs/protocols.md 4), and
 * DKIM signs canonical CRLF lines.
 */
export function normaliseBody(s: string): string {
  // Most bodies have no bare CR or LF to fix, and many no line break at all (indexOf is a memchr).
  if (s.indexOf('\n') === -1 && s.indexOf('\r') === -1) return s;
  return s.replace(/\r\n|\r|\n/g, '\r\n');
}

/** Every rule of send validation (docs/api.md); all problems are collected, none short-circuits another. */
export function validateSendRequest(body: Record<string, unknown>, limits: SendLimits): SendRequest | Problems {
  const p = new Problems();
  checkKnownFields(body, p);
  const from = fromField(body.from, p);
  const max = limits.maxRecipients;
  const to = addressField('to', body.to, p, true, max);
  const cc = addressField('cc', body.cc, p, false, max);
  const bcc = addressField('bcc', body.bcc, p, false, max);
  checkRecipientTotal(to.length + cc.length + bcc.length, max, p);
  const replyTo = replyToField(body.reply_to, p);
  const subject = subjectField(body.subject, p);
  const bodyText = optionalString('body', body.body, p);
  const textBody = optionalString('text_body', body.text_body, p);
  const htmlBody = optionalString('html_body', body.html_body, p);
  checkBodies(body, bodyText, textBody, p);
  const text = textBody ?? bodyText;
  const attachments = attachmentsField(body.attachments, p);
  const headers = headersField(body.headers, p);
  const metadata = metadataField(body.metadata, p);
  const scheduledAt = scheduledAtField(body.scheduled_at, p);
  const tags = tagsField(body.tags, p);
  const unsubscribe = unsubscribeField(body.unsubscribe, headers, p);
  const pool = poolField(body.pool, p);

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
    ...(scheduledAt !== undefined ? { scheduledAt } : {}),
    tags,
    unsubscribe,
    ...(pool !== undefined ? { pool } : {}),
  };
}

/** One recipient row per distinct address (case-insensitive), in to, cc, bcc order. */
export function dedupe(to: Mailbox[], cc: Mailbox[], bcc: Mailbox[]): { to: Mailbox[]; cc: Mailbox[]; bcc: Mailbox[] } {
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
