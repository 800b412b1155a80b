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

/** Looks one record up: TXT records are joined from their strings and compared with the text published, loosely on whitespace. */
async function checkRecord(resolver: Resolver, r: DnsRecord): Promise<RecordCheck> {
  const base = { purpose: r.purpose, name: r.name, expected: r.value };
  try {
    if (r.type === 'TXT') {
      const txt = (await resolver.resolveTxt(r.name)).map((parts) => parts.join(''));
      // The text receivers read: the record's strings joined, however the zone split them.
      const want = normaliseTxt(r.text ?? r.value);
      const found =
        r.purpose === 'spf' || r.purpose === 'dmarc'
          ? txt.some((t) => t.startsWith(r.purpose === 'spf' ? 'v=spf1' : 'v=DMARC1'))
          : txt.some((t) => normaliseTxt(t) === want);
      return { ...base, found, lookup: 'answered', seen: txt };
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

export function isVerified(checks: RecordCheck[]): boolean {
  return checks.filter(REQUIRED).every((c) => c.found);
}

/** Why a required record could not be checked at all (the resolver did not answer); null when every required lookup was answered. */
export function unanswered(checks: RecordCheck[]): string | null {
  return checks.find((c) => REQUIRED(c) && c.lookup === 'no_answer')?.seen[0] ?? null;
}
