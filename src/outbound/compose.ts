import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { SendRequest } from '../domain/send-request.js';
import type { Mailbox } from '../domain/addresses.js';

const asAddress = (m: Mailbox): Mail.Address => ({ name: m.name ?? '', address: m.address });

/**
 * Composes the MIME message with nodemailer's composer from validated fields only. Nothing from
 * the request reaches nodemailer as an option: no `path`, `href` or `raw`, and file and URL
 * access are disabled besides, so no request can make the server read a file or fetch a URL.
 * Message-ID and Date are fixed when the message is accepted, so composing again gives the same
 * message (up to MIME boundaries).
 */
export async function composeMessage(req: SendRequest, messageId: string, date: number): Promise<Buffer> {
  const mail: Mail.Options = {
    disableFileAccess: true,
    disableUrlAccess: true,
    from: asAddress(req.from),
    to: req.to.map(asAddress),
    subject: req.subject,
    messageId: `<${messageId}>`,
    date: new Date(date),
    attachments: req.attachments.map((a) => ({ filename: a.filename, content: a.content, contentType: a.contentType })),
    headers: req.headers.map(([key, value]) => ({ key, value })),
  };
  // Bcc recipients are in the envelope only; the composer leaves Bcc out of the headers.
  if (req.cc.length > 0) mail.cc = req.cc.map(asAddress);
  if (req.replyTo) mail.replyTo = asAddress(req.replyTo);
  if (req.text !== undefined) mail.text = req.text;
  if (req.html !== undefined) mail.html = req.html;
  return new MailComposer(mail).compile().build();
}

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');
/** Header text in RFC 2047 encoded-words: at most 3 bytes per byte (Q) plus a 12-byte wrapper per 52 chars, and folding. */
const encodedHeader = (s: string) => 4 * utf8(s) + 64;
/** Base64 body: 4 per 3 bytes, CRLF every 76 characters. */
const base64Body = (n: number) => Math.ceil(Math.ceil(n / 3) * 4 * (78 / 76)) + 2;

/**
 * An upper bound on the size of the composed message, computed without composing it. The accept
 * path composes only when this bound exceeds the limit, so the common case stays cheap and the
 * size limit is never exceeded. A unit test checks the bound against the composer.
 */
export function encodedSizeBound(req: SendRequest): number {
  let n = 4096; // fixed headers (Date, Message-ID, MIME-Version), boundaries and part headers
  const mailboxes = [req.from, ...req.to, ...req.cc, ...(req.replyTo ? [req.replyTo] : [])];
  for (const m of mailboxes) n += encodedHeader(m.name ?? '') + m.address.length + 8;
  n += encodedHeader(req.subject);
  for (const [name, value] of req.headers) n += name.length + 4 + encodedHeader(value);
  // Text parts: 7bit, quoted-printable (at most 3 bytes per byte, a soft break per 76) or Base64.
  for (const body of [req.text, req.html]) if (body !== undefined) n += Math.ceil(utf8(body) * 3 * (78 / 75)) + 512;
  for (const a of req.attachments) n += base64Body(a.content.length) + encodedHeader(a.filename) * 2 + a.contentType.length + 512;
  return n;
}
