import type { Resolver } from 'node:dns/promises';
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import { parsePolicy } from 'mailauth/lib/mta-sts.js';
import type { Clock } from '../../lib/clock.js';
import { lookupAddresses } from '../../lib/dns.js';

/** An MTA-STS policy (RFC 8461 section 3.2), as cached. */
export interface StsPolicy {
  id: string;
  mode: 'enforce' | 'testing' | 'none';
  mx: string[];
  maxAge: number;
  expires: number;
}

/** A domain's MTA-STS policy in force, or null; `failure` when one was announced and could not be had. */
export interface StsState {
  policy: StsPolicy | null;
  failure?: { kind: 'sts-policy-fetch-error' | 'sts-webpki-invalid' | 'sts-policy-invalid'; message: string };
}

/** A certificate that did not verify is the WebPKI's failure; anything else, the fetch's. */
function fetchFailureKind(e: Error & { code?: string }): 'sts-policy-fetch-error' | 'sts-webpki-invalid' {
  return /CERT|SELF_SIGNED|UNABLE_TO|ALTNAME/.test(e.code ?? '') ? 'sts-webpki-invalid' : 'sts-policy-fetch-error';
}

export interface MtaStsOptions {
  /** HTTPS port of mta-sts.<domain> (443; tests use another). */
  port: number;
  /** Extra CA certificates trusted besides the system's (private PKI, tests). */
  extraCa: string[];
  timeoutMs: number;
}

const MAX_POLICY_BYTES = 64 * 1024;

/** RFC 8461 4.1: `*.example.com` matches exactly one left-most label. */
export function mxMatches(patterns: string[], host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((p) => {
    const pat = p.toLowerCase().replace(/\.$/, '');
    if (!pat.startsWith('*.')) return pat === h;
    const rest = pat.slice(1); // ".example.com"
    return h.endsWith(rest) && !h.slice(0, -rest.length).includes('.') && h.length > rest.length;
  });
}

/**
 * Finds, fetches and caches recipient domains' MTA-STS policies (RFC 8461). The TXT record at
 * `_mta-sts.<domain>` names the policy id; the policy comes from
 * `https://mta-sts.<domain>/.well-known/mta-sts.txt` over a valid certificate, without redirects,
 * and is cached for its max_age. A cached policy still in force is used when the TXT record or
 * the fetch fails (RFC 8461 5.1), so a DNS or web outage cannot strip the protection.
 */
export class MtaSts {
  private cache = new Map<string, StsPolicy>();

  constructor(
    private readonly resolver: Resolver,
    private readonly clock: Clock,
    private readonly opts: MtaStsOptions,
  ) {}

  async policy(domain: string): Promise<StsPolicy | null> {
    return (await this.policyState(domain)).policy;
  }

  /**
   * The policy in force, and why a policy the TXT record announces could not be had (none in
   * force then): for TLS reports (RFC 8460 4.3), the fetch failed, its certificate did not
   * verify, or what came back is not a policy.
   */
  async policyState(domain: string): Promise<StsState> {
    const now = this.clock.now();
    const cached = this.cache.get(domain);
    const valid = cached && cached.expires > now ? cached : null;
    let id: string | null;
    try {
      id = await this.txtId(domain);
    } catch {
      return { policy: valid };
    }
    if (id === null) return { policy: valid };
    if (valid && valid.id === id) return { policy: valid };
    let text: string;
    try {
      text = await this.fetch(domain);
    } catch (e) {
      const message = (e as Error).message;
      return valid ? { policy: valid } : { policy: null, failure: { kind: fetchFailureKind(e as Error), message } };
    }
    try {
      const p = parsePolicy(text) as { mode: StsPolicy['mode']; mx?: string[]; maxAge: number };
      const policy: StsPolicy = { id, mode: p.mode, mx: p.mx ?? [], maxAge: p.maxAge, expires: now + p.maxAge * 1000 };
      this.cache.set(domain, policy);
      return { policy };
    } catch (e) {
      return valid
        ? { policy: valid }
        : { policy: null, failure: { kind: 'sts-policy-invalid', message: (e as Error).message } };
    }
  }

  private async txtId(domain: string): Promise<string | null> {
    let records: string[][];
    try {
      records = await this.resolver.resolveTxt(`_mta-sts.${domain}`);
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'ENOTFOUND' || code === 'ENODATA') return null;
      throw e;
    }
    const sts = records.map((r) => r.join('')).filter((t) => /^v=STSv1\s*(;|$)/.test(t));
    if (sts.length !== 1) return null; // none, or ambiguous (RFC 8461 3.1: must be exactly one)
    const m = /(?:^|;)\s*id=([A-Za-z0-9]{1,32})\s*(?:;|$)/.exec(sts[0]!);
    return m ? m[1]! : null;
  }

  private async fetch(domain: string): Promise<string> {
    const host = `mta-sts.${domain}`;
    const addrs = (await lookupAddresses(this.resolver, host)).addresses.map((a) => a.address);
    if (addrs.length === 0) throw new Error(`${host} has no address`);
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: addrs[0],
          port: this.opts.port,
          servername: host,
          path: '/.well-known/mta-sts.txt',
          method: 'GET',
          headers: { host },
          ca: [...rootCertificates, ...this.opts.extraCa],
          rejectUnauthorized: true,
          timeout: this.opts.timeoutMs,
        },
        (res) => {
          // No redirects (RFC 8461 3.3): only a 200 counts.
          if (res.statusCode !== 200) {
            res.resume();
            return reject(new Error(`${host}: HTTP ${res.statusCode}`));
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_POLICY_BYTES) req.destroy(new Error(`${host}: policy larger than 64 KiB`));
            else chunks.push(c);
          });
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${host}: timeout`)));
      req.on('error', reject);
      req.end();
    });
  }
}
