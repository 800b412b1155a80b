import { Readable } from 'node:stream';
import { type ParsedMail, simpleParser } from 'mailparser';
import { MIME_LIMITS, mimeLimitProblem, parserInput, topHeaderFields } from '../mime/limits.js';
import type { InboundRow } from '../store/model.js';

/**
 * HTML-only messages get a `text` converted from their HTML when the message is at most this
 * large: the conversion takes about 0.3 s per MiB on the event loop.
 */
export const HTML_TO_TEXT_MAX_BYTES = 1024 * 1024;

/** A received message in a list (API, CLI, dashboard): what was read at receipt, no parsing. */
export function inboundSummary(r: Omit<InboundRow, 'raw'>) {
  return {
    id: r.id,
    received_at: new Date(r.created_at).toISOString(),
    from: r.from_header,
    to: JSON.parse(r.rcpt_to) as string[],
    subject: r.subject,
    message_id: r.message_id,
    size: r.size,
    attachments: r.attachments,
    authentication: JSON.parse(r.auth) as Record<string, string>,
  };
}

/**
 * A received message as the API shows it: envelope, headers, parts, attachments (Base64),
 * authentication. Mail is stored only when it parses within MIME_LIMITS, so `parsed` is true
 * for it; a row the parser cannot read (stored under other limits) is still shown, from its
 * top-level headers and the fields read at receipt, with `parsed: false` and the reason. The
 * raw message is always at `/raw`.
 */
export async function inboundView(row: InboundRow): Promise<Record<string, unknown>> {
  const common = receiptFields(row);
  let mail: ParsedMail;
  try {
    mail = await parseReceived(row);
  } catch (e) {
    return unparsedView(row, common, e);
  }
  return parsedView(common, mail);
}

/** What every view shows, parsed or not: the envelope and what was read at receipt. */
function receiptFields(row: InboundRow) {
  return {
    id: row.id,
    received_at: new Date(row.created_at).toISOString(),
    envelope: {
      mail_from: row.mail_from,
      rcpt_to: JSON.parse(row.rcpt_to) as string[],
      remote_ip: row.remote_ip,
      helo: row.helo,
    },
    size: row.size,
    authentication: JSON.parse(row.auth) as Record<string, string>,
  };
}

type ReceiptFields = ReturnType<typeof receiptFields>;

/** The stored message parsed within MIME_LIMITS; throws when it cannot be. */
async function parseReceived(row: InboundRow): Promise<ParsedMail> {
  // cid: links stay as they are (each attachment carries its content_id), as the hosted
  // services show inbound mail, rather than every inline image again as a data: URI; and text
  // is derived from HTML only for a message small enough to convert in a moment.
  return simpleParser(parserInput(row.raw), {
    ...MIME_LIMITS,
    skipTextLinks: true,
    keepCidLinks: true,
    skipHtmlToText: row.size > HTML_TO_TEXT_MAX_BYTES,
  } as Parameters<typeof simpleParser>[1]);
}

/** A message the parser could not read: its top-level headers and the fields read at receipt, with the reason. */
function unparsedView(row: InboundRow, common: ReceiptFields, e: unknown): Record<string, unknown> {
  return {
    ...common,
    parsed: false,
    parse_error: `the message has ${mimeLimitProblem(e) ?? 'MIME that cannot be parsed'}; only its top-level headers are shown (the whole message is at /raw)`,
    headers: topHeaderFields(row.raw).map(([name, value]) => ({ name: name.toLowerCase(), value })),
    from: row.from_header,
    to: [],
    cc: [],
    subject: row.subject,
    message_id: row.message_id,
    text: null,
    html: null,
    attachments: [],
  };
}

/** A parsed message: its headers, addresses, text and HTML, and attachments in Base64. */
function parsedView(common: ReceiptFields, mail: ParsedMail): Record<string, unknown> {
  return {
    ...common,
    parsed: true,
    headers: mail.headerLines.map((h) => ({ name: h.key, value: h.line.slice(h.line.indexOf(':') + 1).trim() })),
    from: mail.from?.text ?? '',
    to: addressList(mail.to),
    cc: addressList(mail.cc),
    subject: mail.subject ?? '',
    message_id: mail.messageId ?? '',
    text: mail.text ?? null,
    html: mail.html || null,
    attachments: mail.attachments.map((a) => ({
      filename: a.filename ?? null,
      content_type: a.contentType,
      content_id: a.contentId ?? null,
      size: a.size,
      content: new Base64(a.content),
    })),
  };
}

/** An address field as a list of mailboxes, each `Name <address>` or the bare address. */
function addressList(v: ParsedMail['to']): string[] {
  return v
    ? (Array.isArray(v) ? v : [v]).flatMap((a) =>
        a.value.map((x) => (x.name ? `${x.name} <${x.address}>` : (x.address ?? ''))),
      )
    : [];
}

/** Bytes that appear in JSON as a Base64 string (JSON.stringify calls toJSON; viewJson streams them). */
export class Base64 {
  constructor(readonly bytes: Buffer) {}
  toJSON(): string {
    return this.bytes.toString('base64');
  }
}

/** Base64 is written this many bytes at a time (a multiple of 3, so the pieces join without padding). */
const PIECE = 3 * 16 * 1024;

function hasBase64(value: unknown): boolean {
  if (value instanceof Base64) return true;
  if (Array.isArray(value)) return value.some(hasBase64);
  return value !== null && typeof value === 'object' && Object.values(value).some(hasBase64);
}

/** JSON text in pieces: whole for anything without Base64 in it; Base64 a piece at a time. */
function* pieces(value: unknown): Generator<string> {
  if (value instanceof Base64) {
    yield '"';
    for (let at = 0; at < value.bytes.length; at += PIECE)
      yield value.bytes.toString('base64', at, Math.min(at + PIECE, value.bytes.length));
    yield '"';
  } else if (!hasBase64(value)) yield JSON.stringify(value) ?? 'null';
  else if (Array.isArray(value)) {
    yield '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ',';
      yield* pieces(value[i]);
    }
    yield ']';
  } else {
    let sep = '{';
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      if (v === undefined) continue;
      yield `${sep}${JSON.stringify(key)}:`;
      sep = ',';
      yield* pieces(v);
    }
    yield sep === '{' ? '{}' : '}';
  }
}

/**
 * The view as JSON text, written a piece at a time: the same text as JSON.stringify, but an
 * attachment's Base64 is made 48 KiB at a time as the response is written, never as one string
 * (with the whole JSON around it, a 20 MiB message took five times its size to show).
 */
export function viewJson(view: Record<string, unknown>): Readable {
  return Readable.from(pieces(view), { objectMode: false });
}
