import { simpleParser } from 'mailparser';
import type { InboundRow } from '../store/inbound.js';

/** A received message as the API shows it: envelope, headers, parts, attachments (Base64), authentication. */
export async function inboundView(row: InboundRow): Promise<Record<string, unknown>> {
  const mail = await simpleParser(row.raw, { skipTextLinks: true } as Parameters<typeof simpleParser>[1]);
  const addrs = (v: typeof mail.to) => (v ? (Array.isArray(v) ? v : [v]).flatMap((a) => a.value.map((x) => (x.name ? `${x.name} <${x.address}>` : (x.address ?? '')))) : []);
  return {
    id: row.id,
    received_at: new Date(row.created_at).toISOString(),
    envelope: { mail_from: row.mail_from, rcpt_to: JSON.parse(row.rcpt_to) as string[], remote_ip: row.remote_ip, helo: row.helo },
    headers: mail.headerLines.map((h) => ({ name: h.key, value: h.line.slice(h.line.indexOf(':') + 1).trim() })),
    from: mail.from?.text ?? '',
    to: addrs(mail.to),
    cc: addrs(mail.cc),
    subject: mail.subject ?? '',
    message_id: mail.messageId ?? '',
    text: mail.text ?? null,
    html: mail.html || null,
    attachments: mail.attachments.map((a) => ({ filename: a.filename ?? null, content_type: a.contentType, size: a.size, content: a.content.toString('base64') })),
    size: row.size,
    authentication: JSON.parse(row.auth) as Record<string, string>,
  };
}
