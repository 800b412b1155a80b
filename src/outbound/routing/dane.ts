// DANE for SMTP (RFC 7672, RFC 7671): TLSA records at _<port>._tcp.<mx host>, meaningful only when
// the MX lookup, the MX host's address lookup and the TLSA lookup are all DNSSEC-validated. Where
// usable records exist, TLS is required and the certificate must match one of them; where they
// exist and none is usable, TLS is required without authentication; anywhere else delivery goes
// on as it would without DANE. docs/delivery.md, "DANE".
import { createHash, X509Certificate } from 'node:crypto';
import type { Resolver } from 'node:dns/promises';
import type { TLSSocket } from 'node:tls';
import type { RecordType } from 'dns-packet';
import type { Clock } from '../../lib/clock.js';
import { allLoopback, querySecure, type SecureAnswer } from '../../lib/dns-secure.js';

export interface Tlsa {
  /** 2 DANE-TA, 3 DANE-EE (0 and 1 do not apply to SMTP, RFC 7672 3.1.3). */
  usage: number;
  /** 0 the whole certificate, 1 its SubjectPublicKeyInfo. */
  selector: number;
  /** 0 the bytes themselves, 1 SHA-256, 2 SHA-512. */
  matchingType: number;
  data: Buffer;
}

export type DanePolicy =
  /** Not signed, or signed with no TLSA records: delivery as without DANE. */
  | { kind: 'none' }
  /** Usable TLSA records: TLS required, the certificate matched against them. */
  | { kind: 'dane'; records: Tlsa[] }
  /** TLSA records, none of them usable: TLS required, not authenticated (RFC 7672 2.2). */
  | { kind: 'encrypt' }
  /** Security or records could not be told (SERVFAIL, timeout): this host is not used now. */
  | { kind: 'temporary'; detail: string };

export type SecureLookup = (name: string, type: RecordType) => Promise<SecureAnswer>;

/** Answers are kept their TTL, at least a minute and at most an hour; failures are not kept. */
const MIN_CACHE_S = 60;
const MAX_CACHE_S = 3600;

export class Dane {
  private cache = new Map<string, { until: number; answer: SecureAnswer }>();

  constructor(
    private readonly lookup: SecureLookup,
    private readonly clock: Clock,
    /** The port delivery connects to (outbound.port): TLSA records are per port. */
    private readonly port: number,
    /** Whether the resolver is on this machine, the one path over which its AD bit can be trusted. */
    readonly onLoopback = true,
  ) {}

  /** DANE asking `resolver`'s servers (dns.servers, or the system's) for the AD bit directly. */
  static through(resolver: Resolver, clock: Clock, port: number): Dane {
    return new Dane(
      (name, type) => querySecure(resolver.getServers(), name, type),
      clock,
      port,
      allLoopback(resolver.getServers()),
    );
  }

  /**
   * The policy for one MX host of a domain (`implicit`: the domain has no MX and is its own host).
   * No TLSA lookup unless the MX and the host's address records are signed (RFC 7672 2.2.1, 2.2.2):
   * some unsigned zones answer TLSA queries with SERVFAIL. MX hosts are not followed through CNAMEs.
   */
  async policy(domain: string, host: string, implicit: boolean): Promise<DanePolicy> {
    try {
      if (!implicit && !(await this.query(domain, 'MX')).secure) return { kind: 'none' };
      if (!(await this.query(host, 'A')).secure) return { kind: 'none' };
      const tlsa = await this.query(`_${this.port}._tcp.${host}`, 'TLSA');
      if (tlsa.rcode === 'NXDOMAIN') return { kind: 'none' };
      if (tlsa.rcode !== 'NOERROR')
        return { kind: 'temporary', detail: `TLSA lookup for ${host} failed (${tlsa.rcode})` };
      const records = tlsa.answers.flatMap((a) =>
        a.type === 'TLSA'
          ? [
              {
                usage: a.data.usage,
                selector: a.data.selector,
                matchingType: a.data.matchingType,
                data: a.data.certificate,
              },
            ]
          : [],
      );
      if (!tlsa.secure || records.length === 0) return { kind: 'none' };
      const usable = records.filter(usableRecord);
      return usable.length > 0 ? { kind: 'dane', records: usable } : { kind: 'encrypt' };
    } catch (e) {
      return { kind: 'temporary', detail: `DNSSEC lookup for ${host} failed: ${(e as Error).message}` };
    }
  }

  /** A check of a presented chain against `records`, with the MX host name for DANE-TA. */
  verifier(records: Tlsa[], host: string): (chain: X509Certificate[]) => string | null {
    return (chain) => verifyChain(chain, records, [host], this.clock.now());
  }

  private async query(name: string, type: RecordType): Promise<SecureAnswer> {
    const key = `${name.toLowerCase()}/${type}`;
    const now = this.clock.now();
    const hit = this.cache.get(key);
    if (hit && hit.until > now) return hit.answer;
    const answer = await this.lookup(name, type);
    if (answer.rcode === 'NOERROR' || answer.rcode === 'NXDOMAIN') {
      const ttl = Math.min(
        MAX_CACHE_S,
        Math.max(MIN_CACHE_S, ...answer.answers.map((a) => ('ttl' in a && a.ttl) || 0)),
      );
      this.cache.set(key, { until: now + ttl * 1000, answer });
    }
    return answer;
  }
}

function usableRecord(r: Tlsa): boolean {
  const length = [undefined, 32, 64][r.matchingType];
  return (
    (r.usage === 2 || r.usage === 3) &&
    (r.selector === 0 || r.selector === 1) &&
    r.matchingType <= 2 &&
    (length === undefined || r.data.length === length)
  );
}

function matches(cert: X509Certificate, r: Tlsa): boolean {
  const selected = r.selector === 0 ? cert.raw : cert.publicKey.export({ type: 'spki', format: 'der' });
  const digest =
    r.matchingType === 0
      ? selected
      : createHash(r.matchingType === 1 ? 'sha256' : 'sha512')
          .update(selected)
          .digest();
  return digest.equals(r.data);
}

/**
 * Whether the chain the server presented (its certificate first) matches a record: DANE-EE the
 * server's certificate itself, whatever its names and dates (RFC 7672 3.1.1); DANE-TA a certificate
 * further up that the server's chains to, each one signed by the next and within its dates, and the
 * server's certificate valid for one of `names` (RFC 7672 3.1.2, 3.2). Null when it matches,
 * otherwise why not.
 */
export function verifyChain(chain: X509Certificate[], records: Tlsa[], names: string[], now: number): string | null {
  const leaf = chain[0];
  if (!leaf) return 'DANE: the server presented no certificate';
  if (records.some((r) => r.usage === 3 && matches(leaf, r))) return null;
  const ta = records.filter((r) => r.usage === 2);
  for (let k = 1; k < chain.length && ta.length > 0; k++) {
    if (!ta.some((r) => matches(chain[k]!, r))) continue;
    for (let i = 0; i < k; i++) {
      const cert = chain[i]!;
      const issuer = chain[i + 1]!;
      if (!cert.checkIssued(issuer) || !cert.verify(issuer.publicKey))
        return `DANE: the certificate chain is broken below the trust anchor (${cert.subject.replace(/\n/g, ', ')})`;
      if (Date.parse(cert.validFrom) > now || Date.parse(cert.validTo) < now)
        return `DANE: a certificate under the trust anchor is outside its dates (${cert.subject.replace(/\n/g, ', ')})`;
    }
    if (!names.some((n) => leaf.checkHost(n) !== undefined))
      return `DANE: the certificate is not valid for ${names.join(' or ')}`;
    return null;
  }
  return 'DANE: the certificate matches none of the TLSA records';
}

/** The chain a TLS peer presented, its own certificate first. */
export function presentedChain(socket: TLSSocket): X509Certificate[] {
  const chain: X509Certificate[] = [];
  const seen = new Set<unknown>();
  for (let c = socket.getPeerCertificate(true); c?.raw && !seen.has(c); c = c.issuerCertificate) {
    seen.add(c);
    chain.push(new X509Certificate(c.raw));
  }
  return chain;
}
