/**
 * The deliverability doctor's checks as values (docs/operations.md, "Deliverability"): what each
 * check found, judged from the DNS answers given, and on failure the record to publish or the
 * setting to change. Pure: the lookups are made by domain-setup/doctor.ts; the checks of a sending
 * domain are in doctor-domain.ts.
 */

/** pass; fail (with its fix); no_answer: the resolver did not answer (SERVFAIL, timeout), so nothing is known. */
export type CheckState = 'pass' | 'fail' | 'no_answer';

export const CHECK_NAMES = [
  'reverse_dns',
  'dnsbl',
  'dkim',
  'dkim_next',
  'dkim_previous',
  'spf',
  'dmarc',
  'alignment',
  'return_path_mx',
  'mx',
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

export interface DoctorCheck {
  check: CheckName;
  /** The domain checked; null for this node's own addresses. */
  domain: string | null;
  /** What was checked: an address, a record's name, an address on a list. */
  subject: string;
  state: CheckState;
  /** What the DNS said, in words. */
  found: string;
  /** fail: the record to publish or the setting to change; no_answer: the DNS servers to look at; pass: null. */
  fix: string | null;
}

export interface DoctorReport {
  /** When it ran (ISO 8601). */
  at: string;
  checks: DoctorCheck[];
}

/**
 * A lookup's outcome as the checks read it: records; none (NXDOMAIN or NODATA: the DNS answered
 * that there are none); or no answer from the resolver, with why in words (naming dns.servers).
 */
export type Lookup<T> = { kind: 'answered'; records: T } | { kind: 'none' } | { kind: 'no_answer'; why: string };

/** One of this node's source addresses and the name it says in EHLO. */
export interface SourceAddress {
  address: string;
  ehlo: string;
}

const bare = (n: string) => n.toLowerCase().replace(/\.$/, '');

/** A check the resolver did not answer for: nothing known, the fix is the DNS servers'. */
export function noAnswer(c: Pick<DoctorCheck, 'check' | 'domain' | 'subject'>, why: string): DoctorCheck {
  return { ...c, state: 'no_answer', found: why, fix: null };
}

/**
 * Reverse DNS of one source address, as receivers check it (forward-confirmed reverse DNS): a PTR
 * record, naming the EHLO name, whose addresses include this one.
 */
export function judgeReverseDns(
  src: SourceAddress,
  ptr: Lookup<string[]>,
  forward: Lookup<string[]> | null,
): DoctorCheck {
  const c = { check: 'reverse_dns' as const, domain: null, subject: src.address };
  const setPtr = `ask whoever runs ${src.address} (the hosting provider, in its control panel) to set its reverse DNS (PTR record) to ${src.ehlo}`;
  if (ptr.kind === 'no_answer') return noAnswer(c, ptr.why);
  if (ptr.kind === 'none' || ptr.records.length === 0)
    return { ...c, state: 'fail', found: `${src.address} has no PTR record`, fix: setPtr };
  const names = ptr.records.map(bare);
  if (!names.includes(bare(src.ehlo)))
    return {
      ...c,
      state: 'fail',
      found: `the PTR record of ${src.address} names ${names.join(', ')}, not the EHLO name ${src.ehlo}`,
      fix: `${setPtr}; or, if ${names[0]} is the right name, set server.hostname to it`,
    };
  if (!forward || forward.kind === 'no_answer') return noAnswer(c, forward?.why ?? 'no forward lookup');
  const addresses = forward.kind === 'answered' ? forward.records : [];
  if (!addresses.some((a) => sameAddress(a, src.address)))
    return {
      ...c,
      state: 'fail',
      found: `${src.ehlo} resolves to ${addresses.join(', ') || 'no address'}, not to ${src.address}`,
      fix: `publish an ${src.address.includes(':') ? 'AAAA' : 'A'} record for ${src.ehlo} with the value ${src.address}`,
    };
  return { ...c, state: 'pass', found: `${src.address} → ${src.ehlo} → ${src.address}`, fix: null };
}

function sameAddress(a: string, b: string): boolean {
  return expandIp(a) === expandIp(b);
}

/** An address written out in full (IPv6: eight groups of four hex digits), for comparing and reversing. */
export function expandIp(ip: string): string {
  if (!ip.includes(':')) return ip;
  const [head, tail] = ip.toLowerCase().split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array<string>(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((g) => g.padStart(4, '0')).join(':');
}

/** An address's octets (IPv4) or nibbles (IPv6) reversed under a zone: its PTR name (in-addr.arpa, ip6.arpa), or its name on a DNS blocklist. */
export function reverseName(ip: string, zone: string): string {
  const labels = ip.includes(':') ? expandIp(ip).replace(/:/g, '').split('') : ip.split('.');
  return `${labels.reverse().join('.')}.${bare(zone)}`;
}

/**
 * A list's answers in 127.255.255.0/24 are not listings but refusals (Spamhaus: the query came
 * through a public or unregistered resolver, or over the free use limit).
 */
const REFUSAL = /^127\.255\.255\.\d+$/;

/** One address on one DNS blocklist: NXDOMAIN is not listed; an answer in 127.0.0.0/8 is listed. */
export function judgeListing(address: string, zone: string, answer: Lookup<string[]>, reason: string[]): DoctorCheck {
  const c = { check: 'dnsbl' as const, domain: null, subject: `${address} on ${bare(zone)}` };
  if (answer.kind === 'no_answer') return noAnswer(c, answer.why);
  if (answer.kind === 'none' || answer.records.length === 0)
    return { ...c, state: 'pass', found: `${address} is not listed on ${bare(zone)}`, fix: null };
  if (answer.records.every((a) => REFUSAL.test(a)))
    return noAnswer(
      c,
      `${bare(zone)} refused the query (${answer.records.join(', ')}): blocklists refuse queries from public resolvers; set dns.servers to a resolver of your own (docs/operations.md, "Deliverability")`,
    );
  // The list's words, someone else's: no control characters reach a terminal.
  const why = reason.length ? ` (${reason.join(' ').replace(/[\u0000-\u001f\u007f]/g, '?')})` : '';
  return {
    ...c,
    state: 'fail',
    found: `${address} is listed on ${bare(zone)}: ${answer.records.join(', ')}${why}`,
    fix: `find why ${address} was listed at the list's own site (look ${address} up there), stop what caused it, and ask there for its removal`,
  };
}

/** The report's failing checks, the ones to act on. */
export function failures(report: DoctorReport): DoctorCheck[] {
  return report.checks.filter((c) => c.state === 'fail');
}

/** The checks of one domain (node: null for this node's addresses). */
export function checksOf(report: DoctorReport, domain: string | null): DoctorCheck[] {
  return report.checks.filter((c) => c.domain === domain);
}

/** How many checks are in each state. */
export function summarise(report: DoctorReport): Record<CheckState, number> {
  const counts: Record<CheckState, number> = { pass: 0, fail: 0, no_answer: 0 };
  for (const c of report.checks) counts[c.state] += 1;
  return counts;
}
