import { simpleParser } from 'mailparser';
import { isIP } from 'node:net';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { spf } from 'mailauth/lib/spf/index.js';
import { dmarc } from 'mailauth/lib/dmarc/index.js';
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
    checkAuth(raw, env, resolver).catch(() => null),
  ]);
  const to = mail?.to ? (Array.isArray(mail.to) ? mail.to : [mail.to]).flatMap((a) => a.value.map((v) => v.address ?? '')).filter(Boolean) : [];
  if (bomb) {
    const h = topHeaders(raw);
    return { fromHeader: h.get('from') ?? '', to: h.get('to') ? [h.get('to')!] : [], subject: h.get('subject') ?? '', messageId: h.get('message-id') ?? '', attachments: 0, auth: authOf(auth) };
  }
  return {
    fromHeader: mail?.from?.text ?? '',
    to,
    subject: mail?.subject ?? '',
    messageId: mail?.messageId ?? '',
    attachments: mail?.attachments.length ?? 0,
    auth: authOf(auth),
  };
}

type AuthShape = { spf: string; dkim: string; dmarc: string } | null;

/**
 * SPF, DKIM and DMARC with mailauth's checks, called one by one as its `authenticate` does, but
 * without loading its ARC and BIMI code (BIMI's certificate and SVG libraries alone add about
 * 5 MB of heap and 11 MB of resident memory to the daemon, for a check posthaste never runs).
 */
async function checkAuth(raw: Buffer, env: { remoteIp: string; helo: string; mailFrom: string; hostname: string }, resolver: Resolver): Promise<NonNullable<AuthShape>> {
  const resolve = (name: string, rr: string) => resolver.resolve(name, rr as 'TXT');
  const dkim = await dkimVerify(raw, { resolver: resolve, sender: env.mailFrom });
  const helo = env.helo || env.remoteIp;
  const spfResult = await spf({ ip: env.remoteIp, helo: isIP(helo) ? `[${helo}]` : helo, sender: env.mailFrom, mta: env.hostname, resolver: resolve });
  const spfPass = spfResult?.status?.result === 'pass' && spfResult.domain ? [spfResult.domain] : [];
  const passed = (dkim.results ?? []).filter((r) => r.status?.result === 'pass');
  const dmarcResult = dkim.headerFrom
    ? await dmarc({ headerFrom: dkim.headerFrom, spfDomains: spfPass, dkimDomains: passed.map((r) => ({ id: r.id, domain: r.signingDomain ?? '', aligned: r.status?.aligned, underSized: r.status?.underSized })), resolver: resolve })
    : false;
  return {
    spf: spfResult?.status?.result || 'none',
    dkim: dkim.results?.[0]?.status?.result ?? 'none',
    dmarc: (dmarcResult && dmarcResult.status?.result) || 'none',
  };
}

function authOf(a: AuthShape): ParsedInbound['auth'] {
  return { spf: a?.spf ?? 'none', dkim: a?.dkim ?? 'none', dmarc: a?.dmarc ?? 'none' };
}
