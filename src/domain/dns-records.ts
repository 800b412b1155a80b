/** The DNS records an administrator publishes for a sending domain (`domains add`, docs/operations.md). */
export interface DnsRecord {
  type: 'TXT' | 'MX';
  /** Fully qualified owner name. */
  name: string;
  /** The whole record text. */
  value: string;
  purpose: 'verification' | 'dkim' | 'dkim_next' | 'dkim_previous' | 'spf' | 'return_path' | 'dmarc';
}

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
    { type: 'TXT', name: `${VERIFICATION_LABEL}.${d.name}`, value: verificationValue(d.verificationToken), purpose: 'verification' },
    { type: 'TXT', name: `${d.dkimSelector}._domainkey.${d.name}`, value: dkimValue(d.dkimPublicKey), purpose: 'dkim' },
    ...(d.nextDkim ? [{ type: 'TXT' as const, name: `${d.nextDkim.selector}._domainkey.${d.name}`, value: dkimValue(d.nextDkim.publicKey), purpose: 'dkim_next' as const }] : []),
    ...(d.previousDkim ? [{ type: 'TXT' as const, name: `${d.previousDkim.selector}._domainkey.${d.name}`, value: dkimValue(d.previousDkim.publicKey), purpose: 'dkim_previous' as const }] : []),
    { type: 'TXT', name: d.name, value: `v=spf1 a:${server.hostname} ~all`, purpose: 'spf' },
    // Asynchronous bounces come back to bounces+<token>@<return path domain>: it must route to us.
    { type: 'MX', name: server.returnPathDomain, value: `10 ${server.hostname}`, purpose: 'return_path' },
    { type: 'TXT', name: `_dmarc.${d.name}`, value: 'v=DMARC1; p=none', purpose: 'dmarc' },
  ];
}
