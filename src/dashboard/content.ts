import { type ParsedMail, simpleParser } from 'mailparser';
import { UnsendableMessage } from '../domain/errors.js';
import { attachmentSize, type SendRequest } from '../domain/send-request.js';
import { readStoredRequest } from '../domain/stored-request.js';
import { MIME_LIMITS, mimeLimitProblem, parserInput } from '../mime/limits.js';
import type { StoredContent } from '../store/model.js';

/**
 * A sent message's content as its page shows it, from what the store keeps (MessageStore.content,
 * store/store.ts): the request as accepted, read back as delivery reads it, and the composed
 * MIME message while it is kept; or, for a message submitted over SMTP, the message as stored
 * (what is delivered, before its DKIM signature), parsed with mailparser within the MIME limits
 * inbound mail is read under.
 */

export interface AttachmentInfo {
  filename: string;
  contentType: string;
  size: number;
}

export type MessageContent =
  /** Retention removed the body of this finished message. */
  | { kind: 'purged' }
  | {
      kind: 'stored';
      /** Undefined when the request cannot be read back (then only the source is shown, and why). */
      text: string | undefined;
      html: string | undefined;
      attachments: AttachmentInfo[];
      unreadable: string | undefined;
      /** The composed MIME message while kept, else the request as accepted; a submitted message as stored. */
      source: { kind: 'composed' | 'request' | 'submitted'; bytes: Buffer };
    };

/** The most of a message's source its page shows; the whole is a download. */
export const SOURCE_SHOWN = 64 * 1024;

function readRequest(request: Buffer): SendRequest | string {
  try {
    return readStoredRequest(request);
  } catch (e) {
    if (e instanceof UnsendableMessage) return e.message;
    throw e;
  }
}

/** A submitted message parsed, or why it cannot be (then only its source is shown). */
async function parseSubmitted(raw: Buffer): Promise<ParsedMail | string> {
  try {
    return await simpleParser(parserInput(raw), {
      ...MIME_LIMITS,
      skipTextLinks: true,
      keepCidLinks: true,
      skipHtmlToText: true,
    } as Parameters<typeof simpleParser>[1]);
  } catch (e) {
    return `the message has ${mimeLimitProblem(e) ?? 'MIME that cannot be parsed'}`;
  }
}

/** A submitted message's content: its text and HTML parts and its attachments, as a mail client reads them. */
async function submittedContent(raw: Buffer): Promise<MessageContent> {
  const source = { kind: 'submitted' as const, bytes: raw };
  const mail = await parseSubmitted(raw);
  if (typeof mail === 'string')
    return { kind: 'stored', text: undefined, html: undefined, attachments: [], unreadable: mail, source };
  return {
    kind: 'stored',
    text: mail.text?.replace(/\r\n/g, '\n'),
    html: mail.html === false ? undefined : mail.html,
    attachments: mail.attachments.map((a) => ({
      filename: a.filename ?? 'attachment',
      contentType: a.contentType,
      size: a.size,
    })),
    unreadable: undefined,
    source,
  };
}

/** What a message's page shows of its content. */
export async function readContent(stored: StoredContent): Promise<MessageContent> {
  if (stored.request === null) return { kind: 'purged' };
  if (stored.format === 'mime') return submittedContent(stored.request);
  const req = readRequest(stored.request);
  const source = stored.composed
    ? { kind: 'composed' as const, bytes: stored.composed }
    : { kind: 'request' as const, bytes: stored.request };
  if (typeof req === 'string')
    return { kind: 'stored', text: undefined, html: undefined, attachments: [], unreadable: req, source };
  return {
    kind: 'stored',
    text: req.text?.replace(/\r\n/g, '\n'),
    html: req.html,
    attachments: req.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      size: attachmentSize(a),
    })),
    unreadable: undefined,
    source,
  };
}

/** The n-th attachment (from 0) with its bytes, or undefined (none such, or the body is gone). */
export async function attachmentAt(
  stored: StoredContent,
  n: number,
): Promise<(AttachmentInfo & { bytes: Buffer }) | undefined> {
  if (stored.request === null) return undefined;
  if (stored.format === 'mime') {
    const mail = await parseSubmitted(stored.request);
    const a = typeof mail === 'string' ? undefined : mail.attachments[n];
    return a && { filename: a.filename ?? 'attachment', contentType: a.contentType, size: a.size, bytes: a.content };
  }
  const req = readRequest(stored.request);
  const a = typeof req === 'string' ? undefined : req.attachments[n];
  if (!a) return undefined;
  return {
    filename: a.filename,
    contentType: a.contentType,
    size: attachmentSize(a),
    bytes: Buffer.from(a.base64, 'base64'),
  };
}
