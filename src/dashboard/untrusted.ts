import type { FastifyReply } from 'fastify';

/**
 * How the dashboard hands out content someone else wrote (a message's HTML, its attachments, its
 * source) without running it or letting it reach out: opening a message must not tell its
 * sender that, when, or from where it was read.
 */

/**
 * The policy of a message's HTML in its frame: nothing is fetched (no remote image, stylesheet,
 * font or frame; data: images only), nothing runs, no form goes anywhere, and the document is
 * sandboxed (an opaque origin) even if opened on its own. Inline styles are allowed: mail is
 * styled inline.
 */
export const MAIL_HTML_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox";

/**
 * A nested frame's start and end tags (iframe, frame, frameset, object, embed, portal,
 * fencedframe) renamed to an unknown element, which loads nothing. The policy above already
 * blocks what they would load, but Chromium opens a TCP connection to a blocked frame's host
 * before it refuses it, which is enough to tell the sender the message was opened, and from
 * where. A tag name ends at whitespace, "/" or ">" (HTML's tokenizer), and nothing else makes
 * one of these elements, so renaming at every "<name" is complete, if not pretty inside comments.
 */
export function inertHtml(html: string): string {
  return html.replace(
    /<(\/?)(iframe|frameset|frame|object|embed|portal|fencedframe)(?=[\t\n\f\r />]|$)/gi,
    '<$1x-inert-$2',
  );
}

/** A message's HTML for the sandboxed frame of its page (made inert, under MAIL_HTML_CSP). */
export function sendMailHtml(reply: FastifyReply, html: string): FastifyReply {
  return reply
    .header('content-security-policy', MAIL_HTML_CSP)
    .header('x-frame-options', 'SAMEORIGIN')
    .header('x-dns-prefetch-control', 'off')
    .header('referrer-policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .send(inertHtml(html));
}

/**
 * Content-Disposition for a download: always an attachment (never shown in the browser), with
 * an ASCII fallback name (anything but letters, digits, ". _ - @ +" becomes "_") and the real
 * name in RFC 5987 form (filename*=UTF-8''…) for browsers that read it.
 */
export function attachmentDisposition(filename: string): string {
  const name = filename.trim() || 'attachment';
  const ascii = name.replace(/[^A-Za-z0-9._@+-]/g, '_').slice(0, 200);
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/**
 * Bytes someone else wrote, as a download: a disposition of attachment, a type that no browser
 * renders (application/octet-stream unless told otherwise), nosniff (set on every answer), and a
 * sandboxing policy should the browser show it anyway.
 */
export function sendDownload(reply: FastifyReply, d: { filename: string; body: Buffer; type?: string }): FastifyReply {
  return reply
    .header('content-disposition', attachmentDisposition(d.filename))
    .header('content-security-policy', "default-src 'none'; sandbox")
    .type(d.type ?? 'application/octet-stream')
    .send(d.body);
}
