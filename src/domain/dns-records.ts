/** The DNS records an administrator publishes for a domain (`domains add`, docs/operations.md). */
export interface DnsRecord {
  type: 'TXT' | 'MX' | 'CNAME';
  /** Fully qualified owner name. */
  name: string;
  /**
   * The record's data as a zone file writes it, to paste: a TXT record as quoted strings of at
   * most 255 characters each (zoneTxt), an MX record as "preference host".
   */
  value: string;
  /** TXT only: the text receivers read (the strings joined), which verification compares. */
  text?: string;
  /**
   * `inbound`: the MX a receiving domain needs so its mail reaches posthaste. `return_path`: the
   * domain's own return path host, a CNAME to the server's return path domain (or the records in
   * `instead`). `server_mx`, `server_spf`: the server's return path domain's own (serverRecords).
   */
  purpose:
    | 'verification'
    | 'dkim'
    | 'dkim_next'
    | 'dkim_previous'
    | 'spf'
    | 'return_path'
    | 'inbound'
    | 'dmarc'
    | 'server_mx'
    | 'server_spf';
  /** What may be published in this record's place, all of it (the return path's MX and SPF in place of its CNAME). */
  instead?: DnsRecord[];
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

/** What the server's records are made from: its EHLO name, the return path domain and label, the SPF sources (config/settings.ts). */
export interface ServerIdentity {
  hostname: string;
  returnPathDomain: string;
  /** A sending domain's return path host is <label>.<domain>. */
  returnPathLabel: string;
  /** The SPF mechanisms of the addresses mail leaves from (ip4:…, ip6:…); empty: a:<hostname>. */
  spfSources: string[];
}

/** The SPF record of the return path domain: every address mail leaves from, or the server's own name when none is configured. */
export function serverSpf(server: Pick<ServerIdentity, 'hostname' | 'spfSources'>): string {
  const sources = server.spfSources.length ? server.spfSources : [`a:${server.hostname}`];
  return `v=spf1 ${sources.join(' ')} ~all`;
}

/**
 * The server's own records, published once for all its domains (`posthaste dns server`): the
 * return path domain's MX, so bounces arrive, and its SPF record, which every sending domain's
 * return path host reaches through its CNAME.
 */
export function serverRecords(server: ServerIdentity): DnsRecord[] {
  return [
    { type: 'MX', name: server.returnPathDomain, value: `10 ${server.hostname}`, purpose: 'server_mx' },
    txt(server.returnPathDomain, serverSpf(server), 'server_spf'),
  ];
}

/** A sending domain's own return path host: <label>.<domain>. */
export function returnPathHost(domain: string, label: string): string {
  return `${label}.${domain}`;
}

/**
 * The return-path host a domain's mail goes out with: the one verification found holding, only
 * while it is still <label>.<domain> for the label now configured (smtp.return_path_label); null
 * otherwise, and the server's return path domain is used.
 */
export function returnPathInUse(d: { name: string; return_path_host: string | null }, label: string): string | null {
  return d.return_path_host !== null && d.return_path_host === returnPathHost(d.name, label)
    ? d.return_path_host
    : null;
}

/** The domain's return path record: a CNAME to the return path domain, or the same MX and SPF published on the host itself. */
function returnPathRecord(domain: string, server: ServerIdentity): DnsRecord {
  const host = returnPathHost(domain, server.returnPathLabel);
  return {
    type: 'CNAME',
    name: host,
    value: `${server.returnPathDomain}.`,
    purpose: 'return_path',
    instead: [
      { type: 'MX', name: host, value: `10 ${server.hostname}`, purpose: 'return_path' },
      txt(host, serverSpf(server), 'return_path'),
    ],
  };
}

export function dnsRecords(d: DomainKeys, server: ServerIdentity): DnsRecord[] {
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
    // The envelope sender moves onto the domain (SPF passes and aligns) once this is found.
    returnPathRecord(d.name, server),
    // A receiving domain's own mail must reach the inbound listener, which answers as server.hostname.
    ...(d.receiving
      ? [{ type: 'MX' as const, name: d.name, value: `10 ${server.hostname}`, purpose: 'inbound' as const }]
      : []),
    txt(`_dmarc.${d.name}`, 'v=DMARC1; p=none', 'dmarc'),
  ];
}
