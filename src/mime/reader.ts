/**
 * A small MIME reader for received mail: headers, multipart structure, transfer encodings and
 * charsets, as the bounce and complaint reader (reports/) and the submission listener need them.
 * Pure and synchronous, bounded in parts and depth, and tolerant: real reports come with missing
 * boundaries, wrong content types and undeclared charsets, and everything that can be read is
 * read (a structural parser that refused them, as a mail client's would, would miss the bounce).
 *
 * Text is handled as latin1 strings (one character per byte, lossless) until a part is decoded
 * with its charset.
 */
import { TextDecoder } from 'node:util';
import { MIME_LIMITS } from './limits.js';

export interface Field {
  /** Lower-case name. */
  name: string;
  /** Unfolded, trimmed; encoded-words are left as they are (see decodeWords). */
  value: string;
}

export interface Part {
  headers: Field[];
  /** Lower-case `type/subtype` (text/plain when absent or malformed). */
  type: string;
  params: Record<string, string>;
  /** The body as latin1 text, transfer encoding undone, charset not yet applied. */
  body: string;
  /** Sub-parts of a multipart; the message inside a message/rfc822 part. */
  children: Part[];
  depth: number;
}

/** Header fields of a block of text (up to the first empty line), unfolded. */
export function parseFields(head: string): Field[] {
  const out: Field[] = [];
  for (const line of head.replace(/\r?\n(?=[ \t])/g, '').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).trim().toLowerCase();
    if (!/^[\x21-\x39\x3b-\x7e]+$/.test(name)) continue;
    out.push({ name, value: line.slice(i + 1).trim() });
  }
  return out;
}

export function field(fields: Field[], name: string): string | undefined {
  return fields.find((f) => f.name === name)?.value;
}

/** `type/subtype; a=b; c="d"` → type and parameters (names lower-case). */
export function contentType(value: string | undefined): { type: string; params: Record<string, string> } {
  const params: Record<string, string> = {};
  if (!value) return { type: 'text/plain', params };
  const [head = '', ...rest] = splitParams(value);
  for (const p of rest) {
    const eq = p.indexOf('=');
    if (eq <= 0) continue;
    params[p.slice(0, eq).trim().toLowerCase()] = unquote(p.slice(eq + 1).trim());
  }
  const type = head.trim().toLowerCase();
  return { type: /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(type) ? type : 'text/plain', params };
}

function splitParams(value: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '"' && value[i - 1] !== '\\') quoted = !quoted;
    if (c === ';' && !quoted) {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

function unquote(s: string): string {
  return s.startsWith('"') && s.endsWith('"') && s.length >= 2 ? s.slice(1, -1).replace(/\\(.)/g, '$1') : s;
}

/** Splits a message (latin1 text) into its header block and body. */
export function splitMessage(text: string): { head: string; body: string } {
  // A part that opens with a blank line has no header fields (RFC 2046 5.1.1): all of it is body.
  const bare = /^\r?\n/.exec(text);
  if (bare) return { head: '', body: text.slice(bare[0].length) };
  const m = /\r?\n\r?\n/.exec(text);
  if (!m) return /^[\x21-\x39\x3b-\x7e]+:/.test(text) ? { head: text, body: '' } : { head: '', body: text };
  return { head: text.slice(0, m.index), body: text.slice(m.index + m[0].length) };
}

/** Parses a message (latin1 text) into its tree of parts. */
export function parseMessage(
  text: string,
  depth = 0,
  budget: { parts: number } = { parts: MIME_LIMITS.maxChildNodes },
): Part {
  const { head, body } = splitMessage(text);
  return parsePart(parseFields(head), body, depth, budget);
}

function parsePart(headers: Field[], rawBody: string, depth: number, budget: { parts: number }): Part {
  const declared = field(headers, 'content-type');
  const { type, params } = declared === undefined ? undeclaredType(rawBody) : contentType(declared);
  const part: Part = { headers, type, params, body: '', children: [], depth };
  budget.parts--;
  const boundary = params.boundary;
  if (type.startsWith('multipart/') && boundary && depth < 20 && budget.parts > 0) {
    const pieces = splitMultipart(rawBody, boundary);
    if (pieces) {
      part.body = pieces.preamble;
      for (const piece of pieces.parts) {
        if (budget.parts <= 0) break;
        const { head, body } = splitMessage(piece);
        part.children.push(parsePart(parseFields(head), body, depth + 1, budget));
      }
      return part;
    }
  }
  // A multipart without its boundary in the body (PMDF writes such reports): read it as text.
  if (type.startsWith('multipart/')) part.type = 'text/plain';
  part.body = decodeTransfer(rawBody, field(headers, 'content-transfer-encoding'));
  if ((type === 'message/rfc822' || type === 'message/global') && depth < 20 && budget.parts > 0)
    part.children.push(parseMessage(part.body, depth + 1, budget));
  return part;
}

/**
 * The type of a body whose headers declare none: text/plain (RFC 2045 5.2), unless the body is
 * plainly a multipart whose Content-Type was lost (Sendmail's reports as some mail stores keep
 * them: "This is a MIME-encapsulated message", then "--w58I6rE4086062.1528481217/mx.example.org",
 * a part, and a part with its own Content-Type). Read as text, its preamble and boundaries would
 * pass for the message's words.
 */
function undeclaredType(body: string): { type: string; params: Record<string, string> } {
  const boundary = sniffedBoundary(body);
  return boundary ? { type: 'multipart/mixed', params: { boundary } } : { type: 'text/plain', params: {} };
}

/** A delimiter line near the top that recurs, closes the body or opens a part with a Content-Type; not a row of dashes. */
function sniffedBoundary(body: string): string | null {
  const lines = body.split(/\r?\n/, 400);
  const first = lines.slice(0, 12).findIndex((l) => /^--[0-9A-Za-z'()+_,./:=?-]{1,70}\s*$/.test(l));
  if (first < 0) return null;
  const boundary = lines[first]!.trim().slice(2);
  if (/^-*$/.test(boundary) || boundary.endsWith('--')) return null;
  const delimiter = `--${boundary}`;
  const opensTyped = (i: number) => lines[i]?.trim() === delimiter && /^content-type:/i.test(lines[i + 1] ?? '');
  const closes = lines.some((l) => l.trim() === `${delimiter}--`);
  return closes || lines.some((_, i) => i > first && opensTyped(i)) ? boundary : null;
}

/** The parts between `--boundary` lines; null when the boundary never appears. */
function splitMultipart(body: string, boundary: string): { preamble: string; parts: string[] } | null {
  const delimiter = `--${boundary}`;
  const lines = body.split(/\r?\n/);
  const parts: string[] = [];
  let preamble: string[] | null = [];
  let current: string[] | null = null;
  for (const line of lines) {
    if (line.startsWith(delimiter)) {
      const rest = line.slice(delimiter.length);
      if (rest.startsWith('--')) {
        if (current) parts.push(current.join('\r\n'));
        current = null;
        break;
      }
      if (/^[ \t]*$/.test(rest)) {
        if (current) parts.push(current.join('\r\n'));
        else preamble = preamble ?? [];
        current = [];
        continue;
      }
    }
    if (current) current.push(line);
    else preamble?.push(line);
  }
  if (current) parts.push(current.join('\r\n'));
  if (parts.length === 0) return null;
  return { preamble: (preamble ?? []).join('\r\n'), parts };
}

/** Undoes base64 and quoted-printable; anything else is as it is. */
export function decodeTransfer(body: string, encoding: string | undefined): string {
  const e = (encoding ?? '').trim().toLowerCase();
  if (e === 'base64') return Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64').toString('latin1');
  if (e === 'quoted-printable')
    return body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return body;
}

const decoders = new Map<string, TextDecoder | null>();

/** latin1 text (bytes) in a charset → a string; unknown charsets and US-ASCII are read as UTF-8 when they are valid UTF-8, else latin1. */
export function decodeCharset(bytes: string, charset: string | undefined): string {
  // Nothing but ASCII: nothing to decode (most reports).
  if (!/[\x80-\xff\x1b]/.test(bytes)) return bytes;
  const name = (charset ?? '').trim().toLowerCase().replace(/^"|"$/g, '');
  let decoder = decoders.get(name);
  if (decoder === undefined) {
    try {
      decoder = name && !/^(us-)?ascii$/.test(name) ? new TextDecoder(name) : null;
    } catch {
      decoder = null;
    }
    decoders.set(name, decoder);
  }
  const buf = Buffer.from(bytes, 'latin1');
  if (decoder) return decoder.decode(buf);
  const utf8 = buf.toString('utf8');
  return utf8.includes('\ufffd') ? bytes : utf8;
}

/** A text part's content as a string. */
export function partText(part: Part): string {
  return decodeCharset(part.body, part.params.charset);
}

/** RFC 2047 encoded-words in a header value, decoded. */
export function decodeWords(value: string): string {
  return value.replace(
    /=\?([^?]+)\?([bBqQ])\?([^?]*)\?=(\s+(?==\?))?/g,
    (_, charset: string, enc: string, text: string) => {
      const bytes =
        enc.toUpperCase() === 'B'
          ? Buffer.from(text, 'base64').toString('latin1')
          : text
              .replace(/_/g, ' ')
              .replace(/=([0-9A-Fa-f]{2})/g, (__, h: string) => String.fromCharCode(parseInt(h, 16)));
      return decodeCharset(bytes, charset.split('*')[0]);
    },
  );
}

/** Every part of the tree, depth first, in document order (the root first). */
export function walk(root: Part): Part[] {
  const out: Part[] = [];
  const visit = (p: Part) => {
    out.push(p);
    for (const c of p.children) visit(c);
  };
  visit(root);
  return out;
}
