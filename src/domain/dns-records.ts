/** The DNS records an administrator publishes for a sending domain (`domains add`, docs/operations.md). */
export interface DnsRecord {
  type: 'TXT' | 'MX';
  /** Fully qualified owner name. */
  name: string;
  /** The whole record text. */
  value: string;
  purpose: 'verification' | 'dkim' | 'spf' | 'return_path' | 'dmarc';
}

export interface DomainKeys {
  name: string;
  verificationToken: string;
  dkimSelector: string;
  dkimPublicKey: string;
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
    { type: 'TXT', name: d.name, value: `v=spf1 a:${server.hostname} ~all`, purpose: 'spf' },
    // Asynchronous bounces come back to bounces+<token>@<return path domain>: it must route to us.
    { type: 'MX', name: server.returnPathDomain, value: `10 ${server.hostname}`, purpose: 'return_path' },
    { type: 'TXT', name: `_dmarc.${d.name}`, value: 'v=DMARC1; p=none', purpose: 'dmarc' },
  ];
}
