// DKIM signing (RFC 6376): rsa-sha256, relaxed/relaxed, d= the sender domain. Written here rather
// than through mailauth's signer, which does the same work through a streaming message parser and
// general-purpose header formatting: on the benchmarks' 2.3 KB message that cost 0.5 ms a message
// besides the 0.8 ms of the RSA signature itself (docs/delivery.md, step 7 "Send"). mailauth
// still verifies (inbound mail, and the tests check every signature made here with it and with
// dkimpy).
import { createHash, createPrivateKey, type KeyObject, sign } from 'node:crypto';

export interface DkimKey {
  domain: string;
  selector: string;
  privateKey: string;
}

/**
 * The header fields signed, when present: those a recipient sees or that decide how the message is
 * read (RFC 6376 5.4.1's list, the List-* and Resent-* fields, and a TLS report's own: RFC 8460
 * 5.3). Every instance present is signed, the last first, as a verifier takes them.
 */
const SIGNED_FIELDS = new Set([
  'from',
  'sender',
  'reply-to',
  'subject',
  'date',
  'message-id',
  'to',
  'cc',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-id',
  'content-description',
  'resent-date',
  'resent-from',
  'resent-sender',
  'resent-to',
  'resent-cc',
  'resent-message-id',
  'in-reply-to',
  'references',
  'list-id',
  'list-help',
  'list-unsubscribe',
  'list-unsubscribe-post',
  'list-subscribe',
  'list-post',
  'list-owner',
  'list-archive',
  'bimi-selector',
  'tls-report-domain',
  'tls-report-submitter',
]);

/** Parsed PEM keys, by their text: parsing costs a good part of a signature. */
const keys = new Map<string, KeyObject>();
function keyObject(pem: string): KeyObject {
  let k = keys.get(pem);
  if (!k) {
    k = createPrivateKey(pem);
    if (k.asymmetricKeyType !== 'rsa')
      throw new Error(`DKIM signing failed: the key is ${k.asymmetricKeyType}, not rsa`);
    if (keys.size >= 1000) keys.clear();
    keys.set(pem, k);
  }
  return k;
}

/**
 * Prepends a DKIM-Signature (rsa-sha256, relaxed/relaxed, d= the sender domain) to the message, in
 * memory of its own (not a slice of Node's shared pool). The message is the composer's: a header
 * section, an empty line, a body.
 */
export function signMessage(raw: Buffer, key: DkimKey, now: number = Date.now()): Buffer {
  const { fields, bodyAt } = headerFields(raw);
  const signed = fields.filter((f) => SIGNED_FIELDS.has(f.name)).reverse();
  const bh = bodyHash(raw, bodyAt);
  const header =
    `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=${key.domain};\r\n` +
    ` s=${key.selector}; q=dns/txt; t=${Math.floor(now / 1000)};\r\n` +
    ` h=${foldList(signed.map((f) => f.casedName))};\r\n` +
    ` bh=${bh};\r\n b=`;
  let canonical = '';
  for (const f of signed) canonical += relaxedHeader(f.text);
  canonical += relaxedHeader(header).slice(0, -2); // the signature's own field, b= empty, no CRLF
  const b = sign('sha256', Buffer.from(canonical, 'latin1'), keyObject(key.privateKey)).toString('base64');
  const field = `${header}${fold(b, 72)}\r\n`;
  // Its own memory (not a slice of the shared pool), so the signing thread can hand it over whole.
  const out = Buffer.allocUnsafeSlow(field.length + raw.length);
  out.write(field, 0, 'latin1');
  raw.copy(out, field.length);
  return out;
}

interface HeaderField {
  /** Lower case, for matching. */
  name: string;
  casedName: string;
  /** The whole field as it stands, folding and line break included. */
  text: string;
}

/**
 * The header fields, and where the body starts (after the first empty line; the message's end if
 * there is none). Lines end in CRLF or a bare LF (sent as CRLF: nodemailer's data stream adds the
 * CR); a line starting with a space or tab continues the field before it.
 */
export function headerFields(raw: Buffer): { fields: HeaderField[]; bodyAt: number } {
  const fields: HeaderField[] = [];
  let at = 0;
  let bodyAt = raw.length;
  while (at < raw.length) {
    const lf = raw.indexOf(0x0a, at);
    const end = lf < 0 ? raw.length : lf + 1;
    const first = raw[at];
    if (first === 0x0a || (first === 0x0d && raw[at + 1] === 0x0a)) {
      bodyAt = end;
      break;
    }
    const line = raw.toString('latin1', at, end);
    const last = fields[fields.length - 1];
    if ((first === 0x20 || first === 0x09) && last) last.text += line;
    else {
      const colon = line.indexOf(':');
      const casedName = (colon < 0 ? '' : line.slice(0, colon)).replace(/[ \t]+$/, '');
      fields.push({ name: casedName.toLowerCase(), casedName, text: line });
    }
    at = end;
  }
  return { fields, bodyAt };
}

/** RFC 6376 3.4.2: name in lower case, unfolded, runs of whitespace as one space, none around the colon or at the end. */
export function relaxedHeader(field: string): string {
  const colon = field.indexOf(':');
  const name = field
    .slice(0, colon)
    .replace(/[ \t]+$/, '')
    .toLowerCase();
  const value = field
    .slice(colon + 1)
    .replace(/\r?\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim();
  return `${name}:${value}\r\n`;
}

const CHUNK = 64 * 1024;
const TRAILING_BREAKS = /(?:\r\n)+$/;

/**
 * RFC 6376 3.4.4's relaxed body, hashed with SHA-256, in base64: whitespace at line ends dropped,
 * runs of it as one space, empty lines at the end dropped, a last line break added if missing.
 * The body goes through in slices cut after a line break, so a 25 MiB message is never one string.
 */
export function bodyHash(raw: Buffer, bodyAt: number): string {
  const hash = createHash('sha256');
  let held = ''; // empty lines not yet known not to be the body's last
  let at = bodyAt;
  while (at < raw.length) {
    let end = at + CHUNK >= raw.length ? raw.length : raw.lastIndexOf(0x0a, at + CHUNK) + 1;
    if (end <= at) end = raw.indexOf(0x0a, at) + 1 || raw.length;
    let text = raw.toString('latin1', at, end);
    // A last line without its break gets one; a lone CR there is sent as CRLF.
    if (end === raw.length && !text.endsWith('\n')) text += text.endsWith('\r') ? '\n' : '\r\n';
    const lines = text
      .replace(/\r?\n/g, '\r\n')
      .replace(/[ \t]+/g, ' ')
      .replace(/ \r\n/g, '\r\n');
    const kept = lines.replace(TRAILING_BREAKS, '');
    if (kept.length === 0) held += lines;
    else {
      hash.update(`${held}${kept}\r\n`, 'latin1');
      held = lines.slice(kept.length + 2);
    }
    at = end;
  }
  return hash.digest('base64');
}

/** Header names for h=, folded after a colon where a line would pass 70 characters. */
function foldList(names: string[]): string {
  let out = '';
  let width = 3;
  for (const n of names) {
    if (out && width + n.length + 1 > 70) {
      out += ':\r\n ';
      width = 1;
    } else if (out) {
      out += ':';
      width += 1;
    }
    out += n;
    width += n.length;
  }
  return out;
}

/** A base64 value in lines of `width`, folded with a space (whitespace inside b= is ignored). */
function fold(value: string, width: number): string {
  let out = value.slice(0, width);
  for (let i = width; i < value.length; i += width) out += `\r\n ${value.slice(i, i + width)}`;
  return out;
}
