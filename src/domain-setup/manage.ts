import type { Resolver } from 'node:dns/promises';
import type { Config } from '../config/schema.js';
import { normaliseDomain } from '../domain/addresses.js';
import { DKIM_GRACE_MS } from '../domain/dns-records.js';
import type { DomainRow } from '../store/model.js';
import type { DomainStore } from '../store/store.js';
import { dkimStatus, domainRecords, returnPathStatus, verifyDomain } from './records.js';

// A domain managed for its customer, the same through every door (the CLI, the API, the
// dashboard): its name read, added once across all customers, shown with its records, verified,
// its DKIM key rotated, and the verified domains checked again on a schedule.

/** A domain name as given (a final dot dropped, IDNs in their ASCII form), or why it is not one. */
export function parseDomainName(name: string): { ok: true; value: string } | { ok: false; error: string } {
  const d = normaliseDomain(name.trim().replace(/\.$/, ''));
  return d.ok ? { ok: true, value: d.value } : { ok: false, error: d.error };
}

/**
 * Adds a domain for a customer. A name is held by one customer at most: when it is taken, the
 * answer says only whether by this customer or by another (never which).
 */
export async function addDomainFor(
  domains: DomainStore,
  input: { customerId: number; name: string; receiving: boolean; now: number },
): Promise<{ kind: 'added'; domain: DomainRow } | { kind: 'taken'; own: boolean }> {
  const existing = await domains.find(input.name);
  if (existing) return { kind: 'taken', own: existing.customer_id === input.customerId };
  try {
    return { kind: 'added', domain: await domains.add(input) };
  } catch (e) {
    // Added by another request meanwhile (the name is unique in the store): taken, as above.
    const now = await domains.find(input.name);
    if (now) return { kind: 'taken', own: now.customer_id === input.customerId };
    throw e;
  }
}

/** A customer's own domain by name; undefined for a name not theirs (another customer's reads as none). */
export async function ownDomain(
  domains: DomainStore,
  customerId: number,
  name: string,
): Promise<DomainRow | undefined> {
  const parsed = parseDomainName(name);
  const d = parsed.ok ? await domains.find(parsed.value) : undefined;
  return d && d.customer_id === customerId ? d : undefined;
}

/** A domain as the CLI and the API show it: its state, DKIM keys, return path and the records to publish. */
export function domainView(d: DomainRow, config: Config, now: number) {
  return {
    name: d.name,
    verified: d.verified_at !== null,
    verified_at: d.verified_at === null ? null : new Date(d.verified_at).toISOString(),
    receiving: d.receiving === 1,
    dkim: dkimStatus(d),
    return_path: returnPathStatus(d, config),
    dns_records: domainRecords(d, config, now),
    created_at: new Date(d.created_at).toISOString(),
  };
}

/** A new DKIM key under a new selector (signing switches once verify finds its record): what to publish. */
export async function rotateDkimFor(domains: DomainStore, d: DomainRow, config: Config, now: number) {
  const r = await domains.rotateDkim(d.id, now);
  return {
    name: r.name,
    selector: r.next_dkim_selector,
    record: domainRecords(r, config, now).find((x) => x.purpose === 'dkim_next')!,
    signing: r.dkim_selector,
    grace_days: DKIM_GRACE_MS / 86_400_000,
  };
}

/** An administrator's word that the domain is verified, without looking (`domains verify --force`). */
export async function forceVerified(domains: DomainStore, d: DomainRow, now: number): Promise<void> {
  await domains.setVerification(d.id, { verified: true, now, records: [] });
}

/** What one pass of the re-check came to. */
export interface RecheckSummary {
  checked: number;
  /** Domains found no longer verified (their records answered absent or wrong). */
  unverified: string[];
  /** Domains not judged: the DNS server did not answer for a required record. */
  unanswered: string[];
  /** Domains whose return-path host was found gone, or found again. */
  returnPathChanged: string[];
}

/**
 * Checks every verified domain's records again, as `domains verify` does, one at a time: a domain
 * whose required records are answered absent or wrong is no longer verified (and
 * `domain.verification_failed` is written); one whose lookups the DNS server did not answer is
 * left as it is; the return-path host is recorded holding or not from a definite answer only.
 */
export async function recheckDomains(
  domains: DomainStore,
  resolver: Resolver,
  config: Config,
  now: () => number,
): Promise<RecheckSummary> {
  const summary: RecheckSummary = { checked: 0, unverified: [], unanswered: [], returnPathChanged: [] };
  for (const d of await domains.list()) {
    if (d.verified_at === null) continue;
    const before = returnPathStatus(d, config).holds;
    const r = await verifyDomain(domains, resolver, config, d, now());
    summary.checked++;
    if (r.dnsError) summary.unanswered.push(d.name);
    else if (!r.verified) summary.unverified.push(d.name);
    if (r.returnPath.holds !== before) summary.returnPathChanged.push(d.name);
  }
  return summary;
}
