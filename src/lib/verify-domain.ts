import type { Resolver } from 'node:dns/promises';
import type { DnsRecord } from '../domain/dns-records.js';
import { describeLookupFailure, type LookupFailure, lookupFailure } from './dns.js';

export interface RecordCheck {
  purpose: DnsRecord['purpose'];
  name: string;
  expected: string;
  found: boolean;
  /** 'answered': the DNS answered with records; otherwise why there were none (dns.ts LookupFailure). */
  lookup: 'answered' | LookupFailure;
  /** What was there instead; when the lookup failed, why, in words (naming dns.servers when the resolver did not answer). */
  seen: string[];
}

function normaliseTxt(s: string): string {
  return s.replace(/\s+/g, ' ').replace(/;\s*$/, '').trim();
}

/** A name without its final dot, lower case, as DNS compares names. */
const bareName = (n: string) => n.toLowerCase().replace(/\.$/, '');

/**
 * A TXT record's text is found when it is there as published, loosely on whitespace; an SPF or
 * DMARC record is the administrator's to word, so any record of its kind counts.
 */
function txtFound(r: DnsRecord, txt: string[]): boolean {
  const want = normaliseTxt(r.text ?? r.value);
  const kind = want.startsWith('v=spf1') ? 'v=spf1' : r.purpose === 'dmarc' ? 'v=DMARC1' : null;
  return kind ? txt.some((t) => t.startsWith(kind)) : txt.some((t) => normaliseTxt(t) === want);
}

/**
 * A CNAME is found when the name is an alias of the record's target; a name that is no alias
 * (no CNAME there) may hold the records of `instead`, all of them, in its place.
 */
async function checkCname(resolver: Resolver, r: DnsRecord, base: Omit<RecordCheck, 'found' | 'lookup' | 'seen'>) {
  let targets: string[];
  try {
    targets = await resolver.resolveCname(r.name);
  } catch (e) {
    const code = (e as { code?: string }).code ?? String(e);
    if (lookupFailure(code) === 'no_answer' || !r.instead?.length) throw e;
    const others = await checkRecords(resolver, r.instead);
    const failed = others.find((c) => c.lookup === 'no_answer');
    return {
      ...base,
      found: !failed && others.every((c) => c.found),
      lookup: failed ? failed.lookup : others.some((c) => c.lookup === 'answered') ? 'answered' : lookupFailure(code),
      seen: others.flatMap((c) => c.seen),
    } satisfies RecordCheck;
  }
  return {
    ...base,
    found: targets.some((t) => bareName(t) === bareName(r.value)),
    lookup: 'answered',
    seen: targets,
  } satisfies RecordCheck;
}

/** Looks one record up: TXT records are joined from their strings and compared with the text published (txtFound). */
async function checkRecord(resolver: Resolver, r: DnsRecord): Promise<RecordCheck> {
  const base = { purpose: r.purpose, name: r.name, expected: r.value };
  try {
    if (r.type === 'CNAME') return await checkCname(resolver, r, base);
    if (r.type === 'TXT') {
      // The text receivers read: the record's strings joined, however the zone split them.
      const txt = (await resolver.resolveTxt(r.name)).map((parts) => parts.join(''));
      return { ...base, found: txtFound(r, txt), lookup: 'answered', seen: txt };
    }
    const host = r.value.split(' ')[1]!.toLowerCase();
    const mx = await resolver.resolveMx(r.name);
    return {
      ...base,
      found: mx.some((m) => m.exchange.toLowerCase() === host),
      lookup: 'answered',
      seen: mx.map((m) => `${m.priority} ${m.exchange}`),
    };
  } catch (e) {
    const code = (e as { code?: string }).code ?? String(e);
    return {
      ...base,
      found: false,
      lookup: lookupFailure(code),
      seen: [describeLookupFailure(resolver, r.name, r.type, code)],
    };
  }
}

/** Looks each published record up through the resolver given (dns.servers). */
export function checkRecords(resolver: Resolver, records: DnsRecord[]): Promise<RecordCheck[]> {
  return Promise.all(records.map((r) => checkRecord(resolver, r)));
}

/** The records a domain needs to be verified: ownership is proven by the verification TXT; signing needs the DKIM key published. SPF, DMARC and return path are advice. */
const REQUIRED = (c: RecordCheck) => c.purpose === 'verification' || c.purpose === 'dkim';

/** The required records' checks, as a domain event names them. */
export function requiredRecords(checks: RecordCheck[]): Array<{ purpose: string; name: string; found: boolean }> {
  return checks.filter(REQUIRED).map((c) => ({ purpose: c.purpose, name: c.name, found: c.found }));
}

export function isVerified(checks: RecordCheck[]): boolean {
  return checks.filter(REQUIRED).every((c) => c.found);
}

/** Why a required record could not be checked at all (the resolver did not answer); null when every required lookup was answered. */
export function unanswered(checks: RecordCheck[]): string | null {
  return checks.find((c) => REQUIRED(c) && c.lookup === 'no_answer')?.seen[0] ?? null;
}
