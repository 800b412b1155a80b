import type { StoredInbound } from '../model.js';

/**
 * A received message's row as both engines insert it (views.ts): its columns in the order of
 * INBOUND_COLUMNS, the envelope's recipients and the authentication results as JSON.
 */

export const INBOUND_COLUMNS =
  'id, customer_id, domain_id, mail_from, rcpt_to, remote_ip, helo, raw, size, from_header, subject, message_id, attachments, auth, created_at';

export function inboundValues(id: string, m: Omit<StoredInbound, 'raw'>, raw: Buffer, now: number): unknown[] {
  return [
    id,
    m.customerId,
    m.domainId,
    m.mailFrom,
    JSON.stringify(m.rcptTo),
    m.remoteIp,
    m.helo,
    raw,
    raw.length,
    m.fromHeader,
    m.subject,
    m.messageId,
    m.attachments,
    JSON.stringify(m.auth),
    now,
  ];
}
