import { simpleParser } from 'mailparser';
import { authenticate } from 'mailauth';
import type { Resolver } from 'node:dns/promises';
import { tooComplex, topHeaders } from '../reports/limits.js';
import type { StoredInbound } from '../store/inbound.js';

/** What a received message is described by (the stored row's parsed fields). */
export type ParsedInbound = Pick<StoredInbound, 'fromHeader' | 'to' | 'subject' | 'messageId' | 'attachments' | 'auth'>;

/** Reads what `email.received` reports, and checks SPF, DKIM and DMARC through `dns.servers`. */
export async function inspectInbound(
  raw: Buffer,
  env: { remoteIp: string; helo: string; mailFrom: string; hostname: string },
  resolver: Resolver,
): Promise<ParsedInbound> {
  // A MIME bomb is stored as received and described from its top-level headers only.
  const bomb = tooComplex(raw);
  const [mail, auth] = await Promise.all([
    bomb ? Promise.resolve(null) : simpleParser(raw, { skipHtmlToText: true, skipTextLinks: true, skipImageLinks: true } as Parameters<typeof simpleParser>[1]).catch(() => null),
    authenticate(raw, {
      ip: env.remoteIp,
      helo: env.helo,
      sender: env.mailFrom,
      mta: env.hostname,
      resolver: (name: string, rr: string) => resolver.resolve(name, rr as 'TXT'),
      disableArc: true,
      disableBimi: true,
    } as Parameters<typeof authenticate>[1]).catch(() => null),
  ]);
  const to = mail?.to ? (Array.isArray(mail.to) ? mail.to : [mail.to]).flatMap((a) => a.value.map((v) => v.address ?? '')).filter(Boolean) : [];
  const a = auth as AuthShape;
  if (bomb) {
    const h = topHeaders(raw);
    return { fromHeader: h.get('from') ?? '', to: h.get('to') ? [h.get('to')!] : [], subject: h.get('subject') ?? '', messageId: h.get('message-id') ?? '', attachments: 0, auth: authOf(a) };
  }
  return {
    fromHeader: mail?.from?.text ?? '',
    to,
    subject: mail?.subject ?? '',
    messageId: mail?.messageId ?? '',
    attachments: mail?.attachments.length ?? 0,
    auth: authOf(a),
  };
}

type AuthShape = { spf?: { status?: { result?: string } } | false; dkim?: { results?: Array<{ status?: { result?: string } }> }; dmarc?: { status?: { result?: string } } | false } | null;

function authOf(a: AuthShape): ParsedInbound['auth'] {
  return {
    spf: (a?.spf && a.spf.status?.result) || 'none',
    dkim: a?.dkim?.results?.[0]?.status?.result ?? 'none',
    dmarc: (a?.dmarc && a.dmarc.status?.result) || 'none',
  };
}
