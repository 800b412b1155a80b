import { parseReturnToken, returnToken } from './return-path.js';

// One-click unsubscribe (RFC 8058; docs/delivery.md, "One-click unsubscribe"). The token names a
// recipient row (which names the customer and the address), with a 60-bit HMAC of it under the
// server's own unsubscribe secret: the return path token's shape (domain/return-path.ts), 20
// lower-case base32 characters, so it is URL-safe, fits an address's local part with room to
// spare, and survives a remote MTA folding the case of the mailto address. A forged or altered
// token names nothing. Recipient rows outlive retention (only bodies are purged), so a link keeps
// working for as long as the message's recipient is known.

/** Made with the server's unsubscribe secret (never the return path's: one cannot stand for the other). */
export function unsubscribeToken(secret: Buffer, recipientId: number): string {
  return returnToken(secret, recipientId);
}

/** The recipient row id a token names, or undefined when it is malformed or forged (constant-time compare). */
export function parseUnsubscribeToken(secret: Buffer, token: string): number | undefined {
  return parseReturnToken(secret, token);
}

/** The path of the one-click URL under unsubscribe.public_url. */
export const UNSUBSCRIBE_PATH = '/u/';

/** The local part of the mailto address: unsubscribe+<token>. */
const MAILTO_LOCAL = /^unsubscribe\+([0-9a-z]{20})$/i;

/** The token of a mailto address's local part, when it is unsubscribe+<token>. */
export function mailtoToken(local: string): string | undefined {
  const m = MAILTO_LOCAL.exec(local);
  return m ? m[1]!.toLowerCase() : undefined;
}

/**
 * The two fields added before the message's own, per recipient: the https URL first (RFC 8058
 * 3.1 takes the https one for the POST), then the mailto at the return path domain, and
 * List-Unsubscribe-Post. Both are in outbound/signing/dkim.ts's signed fields.
 */
export function unsubscribeFields(publicUrl: string, token: string, mailDomain: string): string {
  const base = publicUrl.replace(/\/+$/, '');
  return (
    `List-Unsubscribe: <${base}${UNSUBSCRIBE_PATH}${token}>,\r\n <mailto:unsubscribe+${token}@${mailDomain}>\r\n` +
    'List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n'
  );
}

/** Whether a POST's body is RFC 8058's one-click request: the form field List-Unsubscribe=One-Click (form-encoded). */
export function isOneClick(body: string): boolean {
  return new URLSearchParams(body).get('List-Unsubscribe') === 'One-Click';
}

/** How the recipient asked: the one-click POST or a mail to the mailto address. */
export type UnsubscribeMethod = 'one_click' | 'mailto';

/** What the store answers an unsubscribe: suppressed now, already suppressed (nothing changes, no event), or no such recipient. */
export type UnsubscribeResult = 'unsubscribed' | 'already' | 'unknown';

/** `recipient.unsubscribed`'s data (docs/api.md, Webhook endpoints). */
export function unsubscribedEventData(
  m: { id: number; messageId: string; headerMessageId: string | null },
  address: string,
  method: UnsubscribeMethod,
  now: number,
): Record<string, unknown> {
  return {
    recipient: address,
    reason: 'unsubscribe',
    method,
    email_id: m.id,
    message_id: m.messageId,
    header_message_id: m.headerMessageId ?? m.messageId,
    timestamp: new Date(now).toISOString(),
  };
}
