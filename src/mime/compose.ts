import * as base64 from 'nodemailer/lib/base64/index.js';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type MimeNode from 'nodemailer/lib/mime-node/index.js';
import * as qp from 'nodemailer/lib/qp/index.js';
import type { Mailbox } from '../domain/addresses.js';
import { UnsendableMessage } from '../domain/errors.js';
import { MAX_LINE_LENGTH } from '../domain/header-text.js';
import { attachmentSize, type SendRequest } from '../domain/send-request.js';

const asAddress = (m: Mailbox): Mail.Address => ({ name: m.name ?? '', address: m.address });

/**
 * Composes the MIME message with nodemailer's composer from validated fields only. Nothing from
 * the request reaches nodemailer as an option: no `path`, `href` or `raw`, and file and URL
 * access are disabled besides, so no request can make the server read a file or fetch a URL.
 * Message-ID and Date are fixed when the message is accepted, so composing again gives the same
 * message (up to MIME boundaries).
 */
export async function composeMessage(req: SendRequest, messageId: string, date: number): Promise<Buffer> {
  const raw = serialize(mimeTree(req, messageId, date));
  const lines = new LineMeter();
  lines.feed(raw);
  checkLines(lines);
  return raw;
}

/** The exact size of the composed message, without holding it: the composer's output is counted as it streams. */
export async function composedSize(req: SendRequest, messageId: string, date: number): Promise<number> {
  return (await streamed(mimeTree(req, messageId, date), false)).size;
}

/**
 * The message as nodemailer's own stream writes it (createReadStream), counted as it streams and
 * kept only when `keep`: composedSize counts with it, and the tests compare serialize's bytes
 * with these for the same tree.
 */
export async function streamed(root: MimeNode, keep: boolean): Promise<{ size: number; raw?: Buffer }> {
  const chunks: Buffer[] = [];
  const lines = new LineMeter();
  let size = 0;
  for await (const chunk of root.createReadStream() as AsyncIterable<Buffer>) {
    size += chunk.length;
    lines.feed(chunk);
    if (keep) chunks.push(chunk);
  }
  checkLines(lines);
  return keep ? { size, raw: Buffer.concat(chunks, size) } : { size };
}

function checkLines(lines: LineMeter): void {
  if (lines.longest > MAX_LINE_LENGTH)
    throw new UnsendableMessage(
      `the composed message has a line of ${lines.longest} characters; at most ${MAX_LINE_LENGTH} are allowed (RFC 5322 2.1.1)`,
    );
}

/** nodemailer's MIME tree for the request: every header, part, encoding and boundary decided. */
export function mimeTree(req: SendRequest, messageId: string, date: number): MimeNode {
  // A Message-ID the request gave (docs/api.md, headers) is the message's, in place of posthaste's.
  const own = req.headers.find(([key]) => key.toLowerCase() === 'message-id');
  const mail: Mail.Options = {
    disableFileAccess: true,
    disableUrlAccess: true,
    from: asAddress(req.from),
    to: req.to.map(asAddress),
    subject: req.subject,
    messageId: own ? own[1] : `<${messageId}>`,
    date: new Date(date),
    attachments: req.attachments.map((a) => ({
      filename: a.filename,
      content: a.base64,
      encoding: 'base64',
      contentType: a.contentType,
    })),
    headers: req.headers.filter(([key]) => key.toLowerCase() !== 'message-id').map(([key, value]) => ({ key, value })),
  };
  // Bcc recipients are in the envelope only; the composer leaves Bcc out of the headers.
  if (req.cc.length > 0) mail.cc = req.cc.map(asAddress);
  if (req.replyTo) mail.replyTo = asAddress(req.replyTo);
  if (req.text !== undefined) mail.text = textPart(req.text);
  if (req.html !== undefined) mail.html = textPart(req.html);
  return new MailComposer(mail).compile();
}

/**
 * The bytes nodemailer's createReadStream gives for a tree of in-memory content, written in one
 * synchronous pass. Its stream pipes every part through a Transform of its own and waits a
 * setImmediate between parts: composing the benchmarks' 2.3 KB message took 0.79 ms with it and
 * 0.46 ms without (docs/delivery.md, step 7). The headers are still nodemailer's
 * (buildHeaders), as are the encoders; this does what MimeNode.stream and its base64 and
 * quoted-printable Encoders do with content given as one chunk, and adds the final line break
 * its LastNewline adds. A unit test compares the bytes with the stream's for many requests.
 */
export function serialize(root: MimeNode): Buffer {
  const out: Buffer[] = [];
  let size = 0;
  const push = (b: Buffer) => {
    if (b.length === 0) return;
    out.push(b);
    size += b.length;
  };
  const text = (s: string) => push(Buffer.from(s, 'utf8'));
  const walk = (node: MimeNode) => {
    if ((node as MimeNode & { _raw?: unknown })._raw) throw new Error('a raw MIME node cannot be serialized here');
    const encoding = node.getTransferEncoding();
    text(`${node.buildHeaders()}\r\n\r\n`);
    const content = node.content;
    if (content) {
      if (typeof content !== 'string' && !Buffer.isBuffer(content))
        throw new Error('only in-memory MIME content can be serialized here');
      const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
      if (encoding === 'quoted-printable') text(qp.wrap(qp.encode(bytes), 76));
      else if (encoding === 'base64') text(base64Lines(bytes));
      else push(bytes);
    }
    if (node.multipart) {
      node.childNodes.forEach((child, i) => {
        text(`${i > 0 ? '\r\n' : ''}--${node.boundary}\r\n`);
        walk(child);
      });
      text(`\r\n--${node.boundary}--\r\n`);
    }
  };
  walk(root);
  const last = size > 0 ? out[out.length - 1]![out[out.length - 1]!.length - 1] : undefined;
  if (last !== 0x0a) text(last === 0x0d ? '\n' : '\r\n');
  return Buffer.concat(out, size);
}

/**
 * Base64 in lines of 76, as nodemailer's Encoder writes one chunk: the whole 3-byte groups
 * wrapped, then the encoded remainder appended to the last line (which can so reach 80).
 */
function base64Lines(bytes: Buffer): string {
  const whole = bytes.length - (bytes.length % 3);
  let b64 = base64.wrap(base64.encode(bytes.subarray(0, whole)), 76);
  const lastLf = b64.lastIndexOf('\n');
  let line = b64;
  if (lastLf < 0) b64 = '';
  else {
    line = b64.substring(lastLf + 1);
    b64 = b64.substring(0, lastLf + 1);
    if (b64 && !b64.endsWith('\r\n')) b64 += '\r\n';
  }
  return b64 + line + (whole < bytes.length ? base64.encode(bytes.subarray(whole)) : '');
}

/** What nodemailer checks before it picks an encoding for a text part (mime-funcs isPlainText, hasLongerLines). */
const NOT_PLAIN = /[\x00-\x08\x0b\x0c\x0e-\x1f\u0080-\uFFFF]/;
const LONG_LINE = /^.{77,}/m;

/**
 * A text or HTML part, with the transfer encoding nodemailer would choose for it stated up front.
 * Text that is not plain 7-bit in short lines is quoted-printable when it has more Latin letters
 * than control and non-ASCII characters, else Base64: nodemailer's own rule (mime-node
 * _getTextEncoding), which it applies by collecting every letter of the part into an array (a
 * third of a signing thread's time on a 2 KB message with long lines). This counts them in one
 * pass; the composed message is the same (a unit test compares the two).
 */
export function textPart(content: string): string | { content: string; contentTransferEncoding: string } {
  if (content.length <= 128 * 1024 && !NOT_PLAIN.test(content) && !LONG_LINE.test(content)) return content; // 7bit: nodemailer's check is cheap
  let latin = 0;
  let other = 0;
  for (let i = 0; i < content.length; i++) {
    const c = content.charCodeAt(i);
    if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90)) latin++;
    else if (c >= 0x80 || c <= 0x08 || c === 0x0b || c === 0x0c || (c >= 0x0e && c <= 0x1f)) other++;
  }
  return { content, contentTransferEncoding: other < latin ? 'quoted-printable' : 'base64' };
}

/**
 * The longest line of a message, CRLF excluded, measured as it streams. Validation keeps every
 * header line within RFC 5322's 998 (domain/header-text.ts) and the composer encodes bodies in
 * lines of 76; this is the last check before anything is stored or sent, so that no rule missed
 * can put a longer line on the wire. One memchr-backed search per line.
 */
export class LineMeter {
  longest = 0;
  /** Length of the line still open at the end of the last chunk. */
  private open = 0;
  /** The last chunk ended in CR: a LF first in the next one ends that line. */
  private cr = false;

  feed(chunk: Buffer): void {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; start = end + 1, end = chunk.indexOf(10, start)) {
      const cr = end > start ? chunk[end - 1] === 13 : this.cr;
      this.longest = Math.max(this.longest, this.open + end - start - (cr ? 1 : 0));
      this.open = 0;
      this.cr = false;
    }
    if (start < chunk.length) {
      this.open += chunk.length - start;
      this.cr = chunk[chunk.length - 1] === 13;
    }
    this.longest = Math.max(this.longest, this.open - (this.cr ? 1 : 0));
  }
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
  for (const a of req.attachments)
    n += base64Body(attachmentSize(a)) + encodedHeader(a.filename) * 2 + a.contentType.length + 512;
  return n;
}

/**
 * A lower bound on the size of the composed message: every attachment's Base64 (in lines of at
 * most 80 characters: nodemailer's encoder can leave a last line of 80) and every body's bytes
 * (no transfer encoding makes text smaller). A request whose floor is over the limit is refused
 * without composing it. A unit test checks the floor against the composer.
 */
export function encodedSizeFloor(req: SendRequest): number {
  let n = 0;
  for (const body of [req.text, req.html]) if (body !== undefined) n += utf8(body);
  for (const a of req.attachments) {
    const chars = 4 * Math.ceil(attachmentSize(a) / 3);
    n += chars + 2 * Math.max(0, Math.ceil(chars / 80) - 1);
  }
  return n;
}
