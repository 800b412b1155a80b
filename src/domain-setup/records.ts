import type { Resolver } from 'node:dns/promises';
import type { Config } from '../config/schema.js';
import { returnPathDomain, serverIdentity } from '../config/settings.js';
import { DKIM_GRACE_MS, type DnsRecord, dnsRecords, returnPathHost, returnPathInUse } from '../domain/dns-records.js';
import { checkRecords, isVerified, type RecordCheck, requiredRecords, unanswered } from '../lib/verify-domain.js';
import type { DomainRow } from '../store/model.js';
import type { DomainStore } from '../store/store.js';

/**
 * The DNS records a domain's owner publishes (the CLI, the API and the dashboard show the same):
 * with the next DKIM key while a rotation waits for it, the previous one for DKIM_GRACE_MS after
 * the switch, and the domain's own MX while it receives.
 */
export function domainRecords(d: DomainRow, config: Config, now: number): DnsRecord[] {
  const { next, previous } = rotationRecords(d, now);
  return dnsRecords(
    {
      name: d.name,
      verificationToken: d.verification_token,
      dkimSelector: d.dkim_selector,
      dkimPublicKey: d.dkim_public_key,
      nextDkim: next,
      previousDkim: previous,
      receiving: d.receiving === 1,
    },
    serverIdentity(config),
  );
}

type Key = { selector: string; publicKey: string };

/** A rotation's keys to publish beside the signing one: the next while it waits, the previous for DKIM_GRACE_MS after the switch. */
export function rotationRecords(d: DomainRow, now: number): { next: Key | null; previous: Key | null } {
  const next =
    d.next_dkim_selector && d.next_dkim_public_key
      ? { selector: d.next_dkim_selector, publicKey: d.next_dkim_public_key }
      : null;
  const previous =
    d.previous_dkim_selector &&
    d.previous_dkim_public_key &&
    d.dkim_switched_at !== null &&
    now < d.dkim_switched_at + DKIM_GRACE_MS
      ? { selector: d.previous_dkim_selector, publicKey: d.previous_dkim_public_key }
      : null;
  return { next, previous };
}

/** Where a domain's DKIM keys stand: the selector signing, one waiting to be published, one retired. */
export function dkimStatus(d: DomainRow): {
  signing: string;
  next: string | null;
  previous: { selector: string; switched_at: string; remove_record_after: string } | null;
} {
  return {
    signing: d.dkim_selector,
    next: d.next_dkim_selector,
    previous:
      d.previous_dkim_selector && d.dkim_switched_at !== null
        ? {
            selector: d.previous_dkim_selector,
            switched_at: new Date(d.dkim_switched_at).toISOString(),
            remove_record_after: new Date(d.dkim_switched_at + DKIM_GRACE_MS).toISOString(),
          }
        : null,
  };
}

/**
 * Where a domain's return path stands: the envelope sender's domain its mail now goes out with,
 * the host to publish, and whether verification last found it holding (`lost` says what is lost
 * until it does).
 */
export function returnPathStatus(
  d: DomainRow,
  config: Config,
): { host: string; holds: boolean; envelope_domain: string; lost: string | null } {
  const label = serverIdentity(config).returnPathLabel;
  const inUse = returnPathInUse(d, label);
  const host = inUse ?? returnPathHost(d.name, label);
  const holds = inUse !== null;
  return {
    host,
    holds,
    envelope_domain: holds ? host : returnPathDomain(config),
    lost: holds
      ? null
      : `until ${host} is found (publish its record, then run "posthaste domains verify ${d.name}"), the envelope sender is on ${returnPathDomain(config)}: SPF is checked there, not on ${d.name}, so it does not align with the From domain and DMARC rests on DKIM alone`,
  };
}

/**
 * The return-path record's state as the lookup found it: its host when it holds, null when the
 * DNS answered that it does not; a lookup the DNS did not answer changes nothing.
 */
async function recordReturnPath(domains: DomainStore, d: DomainRow, checks: RecordCheck[]): Promise<string | null> {
  const c = checks.find((x) => x.purpose === 'return_path');
  if (!c || c.lookup === 'no_answer') return d.return_path_host;
  const host = c.found ? c.name : null;
  if (host !== d.return_path_host) await domains.setReturnPath(d.id, host);
  return host;
}

/**
 * Looks the domain's records up (through dns.servers) and marks it verified or not; a domain
 * verified before keeps its first verification time, and a change of its verified state writes
 * `domain.verified` or `domain.verification_failed` (DomainStore.setVerification). When the DNS
 * server did not answer for a required record, nothing is known: the domain's state is left as it
 * was (a verified domain goes on sending through a resolver outage), `verified` is false and
 * `dnsError` says why, naming dns.servers.
 */
export async function verifyDomain(
  domains: DomainStore,
  resolver: Resolver,
  config: Config,
  d: DomainRow,
  now: number,
): Promise<{
  verified: boolean;
  checks: RecordCheck[];
  switchedTo: string | null;
  dnsError: string | null;
  returnPath: ReturnType<typeof returnPathStatus>;
}> {
  const checks = await checkRecords(resolver, domainRecords(d, config, now));
  const dnsError = unanswered(checks);
  if (dnsError) return { verified: false, checks, switchedTo: null, dnsError, returnPath: returnPathStatus(d, config) };
  const verified = isVerified(checks);
  await domains.setVerification(d.id, { verified, now, records: requiredRecords(checks) });
  const host = await recordReturnPath(domains, d, checks);
  const returnPath = returnPathStatus({ ...d, return_path_host: host }, config);
  // A rotation: once the next key's record is found, signing switches to it.
  const next = checks.find((c) => c.purpose === 'dkim_next');
  const switchedTo = next?.found && d.next_dkim_selector ? d.next_dkim_selector : null;
  if (switchedTo) await domains.switchDkim(d.id, now);
  return { verified, checks, switchedTo, dnsError: null, returnPath };
}
