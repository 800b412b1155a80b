import type { Resolver } from 'node:dns/promises';
import { returnPathDomain, type Config } from '../config/schema.js';
import type { Db } from '../store/db.js';
import { setVerified, type DomainRow } from '../store/domains.js';
import { dnsRecords, type DnsRecord } from '../domain/dns-records.js';
import { checkRecords, isVerified, type RecordCheck } from '../lib/verify-domain.js';

/** The DNS records a domain's owner publishes (the CLI, the API and the dashboard show the same). */
export function domainRecords(d: DomainRow, config: Config): DnsRecord[] {
  return dnsRecords(
    { name: d.name, verificationToken: d.verification_token, dkimSelector: d.dkim_selector, dkimPublicKey: d.dkim_public_key },
    { hostname: config.server.hostname, returnPathDomain: returnPathDomain(config) },
  );
}

/**
 * Looks the domain's records up (through dns.servers) and marks it verified or not; a domain
 * verified before keeps its first verification time.
 */
export async function verifyDomain(db: Db, resolver: Resolver, config: Config, d: DomainRow, now: number): Promise<{ verified: boolean; checks: RecordCheck[] }> {
  const checks = await checkRecords(resolver, domainRecords(d, config));
  const verified = isVerified(checks);
  setVerified(db, d.id, verified ? (d.verified_at ?? now) : null);
  return { verified, checks };
}
