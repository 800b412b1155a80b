import type { Resolver } from 'node:dns/promises';
import type { DnsRecord } from '../domain/dns-records.js';

export interface RecordCheck {
  purpose: DnsRecord['purpose'];
  name: string;
  expected: string;
  found: boolean;
  /** What was there instead, or the DNS error code. */
  seen: string[];
}

function normaliseTxt(s: string): string {
  return s.replace(/\s+/g, ' ').replace(/;\s*$/, '').trim();
}

/** Looks each published record up; TXT values are joined from their strings and compared loosely on whitespace. */
export async function checkRecords(resolver: Resolver, records: DnsRecord[]): Promise<RecordCheck[]> {
  return Promise.all(
    records.map(async (r): Promise<RecordCheck> => {
      try {
        if (r.type === 'TXT') {
          const txt = (await resolver.resolveTxt(r.name)).map((parts) => parts.join(''));
          const want = normaliseTxt(r.value);
          const found = r.purpose === 'spf' || r.purpose === 'dmarc' ? txt.some((t) => t.startsWith(r.purpose === 'spf' ? 'v=spf1' : 'v=DMARC1')) : txt.some((t) => normaliseTxt(t) === want);
          return { purpose: r.purpose, name: r.name, expected: r.value, found, seen: txt };
        }
        const host = r.value.split(' ')[1]!.toLowerCase();
        const mx = await resolver.resolveMx(r.name);
        return { purpose: r.purpose, name: r.name, expected: r.value, found: mx.some((m) => m.exchange.toLowerCase() === host), seen: mx.map((m) => `${m.priority} ${m.exchange}`) };
      } catch (e) {
        return { purpose: r.purpose, name: r.name, expected: r.value, found: false, seen: [String((e as { code?: string }).code ?? e)] };
      }
    }),
  );
}

/** Ownership is proven by the verification TXT; signing needs the DKIM key published. SPF, DMARC and return path are advice. */
export function isVerified(checks: RecordCheck[]): boolean {
  return checks.filter((c) => c.purpose === 'verification' || c.purpose === 'dkim').every((c) => c.found);
}
