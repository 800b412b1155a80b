import { readStoredRequest } from '../domain/stored-request.js';
import { UnsendableMessage } from '../domain/errors.js';
import { attachmentSize, type SendRequest } from '../domain/send-request.js';
import type { StoredContent } from '../store/model.js';

/**
 * A sent message's content as its page shows it, from what the store keeps (MessageStore.content,
 * store/store.ts): the request as accepted, read back as delivery reads it, and the composed
 * MIME message while it is kept.
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
      /** The composed MIME message while kept, else the request as accepted. */
      source: { kind: 'composed' | 'request'; bytes: Buffer };
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

/** What a message's page shows of its content. */
export function readContent(stored: StoredContent): MessageContent {
  if (stored.request === null) return { kind: 'purged' };
  const req = readRequest(stored.request);
  const source = stored.composed ? { kind: 'composed' as const, bytes: stored.composed } : { kind: 'request' as const, bytes: stored.request };
  if (typeof req === 'string') return { kind: 'stored', text: undefined, html: undefined, attachments: [], unreadable: req, source };
  return {
    kind: 'stored',
    text: req.text?.replace(/\r\n/g, '\n'),
    html: req.html,
    attachments: req.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, size: attachmentSize(a) })),
    unreadable: undefined,
    source,
  };
}

/** The n-th attachment (from 0) with its bytes, or undefined (none such, or the body is gone). */
export function attachmentAt(stored: StoredContent, n: number): (AttachmentInfo & { bytes: Buffer }) | undefined {
  if (stored.request === null) return undefined;
  const req = readRequest(stored.request);
  const a = typeof req === 'string' ? undefined : req.attachments[n];
  if (!a) return undefined;
  return { filename: a.filename, contentType: a.contentType, size: attachmentSize(a), bytes: Buffer.from(a.base64, 'base64') };
}
