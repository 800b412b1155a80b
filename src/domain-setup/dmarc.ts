import ipaddr from 'ipaddr.js';
import type { DmarcDaySource, DmarcSummaryQuery } from '../store/model.js';
import type { Store } from '../store/store.js';

/** A summary row with whether its source address is one mail leaves posthaste from. */
export type DmarcSource = DmarcDaySource & { ours: boolean };

/** What receivers reported for a domain over a period: each day's sources, and the two numbers that matter. */
export interface DmarcSummary {
  domain: string;
  since: number;
  until: number;
  sources: DmarcSource[];
  /** Mail from posthaste's own addresses that failed DMARC (neither DKIM nor SPF aligned): a record to fix. */
  ours_failing: number;
  /** Mail claiming the domain from addresses that are not posthaste's: another sender, or someone forging it. */
  others: number;
}

/** The canonical text of an address (IPv6 compressed, IPv4-mapped as IPv4), or the text as given when it is none. */
function canonical(ip: string): string {
  try {
    const a = ipaddr.process(ip.trim());
    return a.toString();
  } catch {
    return ip.trim().toLowerCase();
  }
}

/**
 * The DMARC aggregate reports kept for a domain (store.dmarc), summed per day and source address,
 * each source marked ours when it is one of `ownAddresses` (the addresses the server's SPF record
 * lists: config/settings.ts, serverIdentity). The CLI, the API and the dashboard show this.
 */
export async function dmarcSummary(
  store: Pick<Store, 'dmarc'>,
  ownAddresses: string[],
  q: DmarcSummaryQuery,
): Promise<DmarcSummary> {
  const own = new Set(ownAddresses.map(canonical));
  const sources = (await store.dmarc.summary(q)).map((s) => ({ ...s, ours: own.has(canonical(s.source_ip)) }));
  return {
    domain: q.domain,
    since: q.since,
    until: q.until,
    sources,
    ours_failing: sources.reduce((n, s) => n + (s.ours ? s.messages - s.dmarc_pass : 0), 0),
    others: sources.reduce((n, s) => n + (s.ours ? 0 : s.messages), 0),
  };
}

/** The addresses an SPF source list names (`ip4:…`, `ip6:…`), bare. */
export function addressesOfSpf(sources: string[]): string[] {
  return sources.map((s) => s.replace(/^ip[46]:/, ''));
}
