/** The DNS records an administrator publishes for a domain (`domains add`, docs/operations.md). */
export interface DnsRecord {
  type: 'TXT' | 'MX';
  /** Fully qualified owner name. */
  name: string;
  /**
   * The record's data as a zone file writes it, to paste: a TXT record as quoted strings of at
   * most 255 characters each (zoneTxt), an MX record as "preference host".
   */
  value: string;
  /** TXT only: the text receivers read (the strings joined), which verification compares. */
  text?: string;
  /** `inbound`: the MX a receiving domain needs so its mail reaches posthaste. */
  purpose: 'verification' | 'dkim' | 'dkim_next' | 'dkim_previous' | 'spf' | 'return_path' | 'inbound' | 'dmarc';
}

/** The longest string of a TXT record (RFC 1035 3.3: a <character-string> is a length octet and that many octets). */
export const TXT_STRING_MAX = 255;

/**
 * TXT data as a zone file writes it: quoted strings of at most 255 characters each, the way BIND
 * and the zone editors that refuse a longer string take a long record (RFC 7208 3.3; a DKIM key is
 * over 400). Receivers join the strings with nothing between them (RFC 6376 3.6.2.2), so the split
 * may fall anywhere. The texts here are ASCII: a character is an octet.
 */
export function zoneTxt(text: string): string {
  const strings: string[] = [];
  for (let i = 0; i < text.length; i += TXT_STRING_MAX) strings.push(text.slice(i, i + TXT_STRING_MAX));
  return (strings.length ? strings : ['']).map((s) => `"${s.replace(/["\\]/g, '\\$&')}"`).join(' ');
}

const txt = (name: string, text: string, purpose: DnsRecord['purpose']): DnsRecord => ({
  type: 'TXT',
  name,
  value: zoneTxt(text),
  text,
  purpose,
});

/** How long the previous selector's record stays needed after signing switched away from it. */
export const DKIM_GRACE_MS = 7 * 24 * 3_600_000;

export interface DomainKeys {
  name: string;
  verificationToken: string;
  dkimSelector: string;
  dkimPublicKey: string;
  /** A key made by rotate-dkim, to publish before signing switches to it. */
  nextDkim?: { selector: string; publicKey: string } | null;
  /** The key signed with before the last switch, while its record is still needed. */
  previousDkim?: { selector: string; publicKey: string } | null;
  /** The domain receives mail (inbound): it needs its own MX. */
  receiving?: boolean;
}

export const VERIFICATION_LABEL = '_posthaste';

export function verificationValue(token: string): string {
  return `posthaste-verification=${token}`;
}

export function dkimValue(publicKey: string): string {
  return `v=DKIM1; k=rsa; p=${publicKey}`;
}

export function dnsRecords(d: DomainKeys, server: { hostname: string; returnPathDomain: string }): DnsRecord[] {
  return [
    txt(`${VERIFICATION_LABEL}.${d.name}`, verificationValue(d.verificationToken), 'verification'),
    txt(`${d.dkimSelector}._domainkey.${d.name}`, dkimValue(d.dkimPublicKey), 'dkim'),
    ...(d.nextDkim
      ? [txt(`${d.nextDkim.selector}._domainkey.${d.name}`, dkimValue(d.nextDkim.publicKey), 'dkim_next')]
      : []),
    ...(d.previousDkim
      ? [txt(`${d.previousDkim.selector}._domainkey.${d.name}`, dkimValue(d.previousDkim.publicKey), 'dkim_previous')]
      : []),
    txt(d.name, `v=spf1 a:${server.hostname} ~all`, 'spf'),
    // Asynchronous bounces come back to bounces+<token>@<return path domain>: it must route to us.
    { type: 'MX', name: server.returnPathDomain, value: `10 ${server.hostname}`, purpose: 'return_path' },
    // A receiving domain's own mail must reach the inbound listener, which answers as server.hostname.
    ...(d.receiving
      ? [{ type: 'MX' as const, name: d.name, value: `10 ${server.hostname}`, purpose: 'inbound' as const }]
      : []),
    txt(`_dmarc.${d.name}`, 'v=DMARC1; p=none', 'dmarc'),
  ];
}
