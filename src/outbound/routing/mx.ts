import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Clock } from '../../lib/clock.js';
import { describeLookupFailure, lookupAddresses } from '../../lib/dns.js';

export interface MxHost {
  host: string;
  priority: number;
}

export type MxResult =
  | { kind: 'hosts'; hosts: MxHost[]; implicit: boolean }
  /** RFC 7505: the domain accepts no mail. */
  | { kind: 'null_mx' }
  /** NXDOMAIN: permanent. */
  | { kind: 'no_domain'; detail: string }
  /** SERVFAIL, timeout, refused: try again later. */
  | { kind: 'temporary'; detail: string };

const PERMANENT = new Set(['ENOTFOUND']);
const NO_RECORDS = new Set(['ENODATA']);
/** Node's resolveMx does not expose TTLs, so MX answers are kept a fixed, short time. */
export const MX_CACHE_MS = 60_000;

/** Sorts by preference; equal preferences in random order (RFC 5321 5.1: MUST randomise). */
export function orderMx(records: MxHost[], random: () => number = Math.random): MxHost[] {
  const shuffled = records.map((r) => ({ r, k: random() }));
  shuffled.sort((a, b) => a.r.priority - b.r.priority || a.k - b.k);
  return shuffled.map((x) => x.r);
}

export class MxResolver {
  private cache = new Map<string, { at: number; result: MxResult }>();
  private addrCache = new Map<string, { until: number; addrs: string[] }>();

  constructor(
    private readonly resolver: Resolver,
    private readonly clock: Clock,
  ) {}

  /** MX hosts for a domain in the order to try them (RFC 5321 5.1, RFC 7505). */
  async resolve(domain: string): Promise<MxResult> {
    const hit = this.cache.get(domain);
    const now = this.clock.now();
    if (hit && now - hit.at < MX_CACHE_MS && hit.result.kind !== 'temporary') {
      return hit.result.kind === 'hosts' ? { ...hit.result, hosts: orderMx(hit.result.hosts) } : hit.result;
    }
    const result = await this.lookup(domain);
    this.cache.set(domain, { at: now, result });
    return result;
  }

  private async lookup(domain: string): Promise<MxResult> {
    try {
      const records = await this.resolver.resolveMx(domain);
      const real = records.filter((r) => r.exchange !== '' && r.exchange !== '.');
      // A null MX alone means "no mail"; mixed with real records it is a misconfiguration and ignored.
      if (real.length === 0 && records.length > 0) return { kind: 'null_mx' };
      if (real.length > 0)
        return {
          kind: 'hosts',
          hosts: orderMx(
            real.map((r) => ({ host: r.exchange.replace(/\.$/, '').toLowerCase(), priority: r.priority })),
          ),
          implicit: false,
        };
    } catch (e) {
      const code = String((e as { code?: string }).code);
      if (PERMANENT.has(code)) return { kind: 'no_domain', detail: `${domain}: domain does not exist (NXDOMAIN)` };
      if (!NO_RECORDS.has(code))
        return { kind: 'temporary', detail: describeLookupFailure(this.resolver, domain, 'MX', code) };
    }
    // No MX records: the implicit MX is the domain itself (RFC 5321 5.1), if it has an address.
    const addrs = await this.addresses(domain).catch((e: unknown) => e as Error & { code?: string });
    if (Array.isArray(addrs))
      return addrs.length
        ? { kind: 'hosts', hosts: [{ host: domain, priority: 0 }], implicit: true }
        : { kind: 'no_domain', detail: `${domain}: no MX and no address records` };
    if (addrs.code === 'ENOTFOUND') return { kind: 'no_domain', detail: `${domain}: domain does not exist (NXDOMAIN)` };
    return {
      kind: 'temporary',
      detail: addrs.code
        ? describeLookupFailure(this.resolver, domain, 'A/AAAA', addrs.code)
        : `${domain}: address lookup failed (${addrs.message})`,
    };
  }

  /** A and AAAA addresses of a host, through the configured resolver, cached by their TTL. */
  async addresses(host: string): Promise<string[]> {
    if (isIP(host)) return [host];
    const now = this.clock.now();
    const hit = this.addrCache.get(host);
    if (hit && hit.until > now) return hit.addrs;
    const { addresses: rows, errors } = await lookupAddresses(this.resolver, host);
    if (rows.length === 0) {
      const codes = errors.map((c) => c ?? 'ENODATA');
      if (codes.every((c) => c === 'ENOTFOUND' || c === 'ENODATA')) {
        if (codes.includes('ENOTFOUND')) throw Object.assign(new Error(`${host}: not found`), { code: 'ENOTFOUND' });
        return [];
      }
      const code = codes.find((c) => c !== 'ENODATA' && c !== 'ENOTFOUND');
      throw Object.assign(new Error(describeLookupFailure(this.resolver, host, 'A/AAAA', code)), { code });
    }
    const ttl = Math.max(1, Math.min(...rows.map((r) => r.ttl)));
    const addrs = rows.map((r) => r.address);
    this.addrCache.set(host, { until: now + ttl * 1000, addrs });
    return addrs;
  }
}
