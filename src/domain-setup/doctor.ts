import type { Resolver } from 'node:dns/promises';
import { spf } from 'mailauth/lib/spf/index.js';
import { getDomain } from 'tldts';
import type { Config } from '../config/schema.js';
import { returnPathDomain } from '../config/settings.js';
import { type DoctorCheck, type DoctorReport, type Lookup, noAnswer, type SourceAddress } from '../domain/doctor.js';
import {
  type DmarcFound,
  judgeAlignment,
  judgeDkim,
  judgeDmarc,
  judgeMx,
  judgeSpf,
  type SpfVerdict,
} from '../domain/doctor-domain.js';
import type { DomainRow } from '../store/model.js';
import { ask, nodeAddresses, nodeChecks } from './doctor-node.js';
import { returnPathStatus, rotationRecords } from './records.js';

/**
 * The deliverability doctor (docs/operations.md, "Deliverability"): every check of this node's
 * addresses and of each domain, looked up through dns.servers and judged by domain/doctor.ts and
 * domain/doctor-domain.ts. The CLI (`posthaste doctor`) and the daemon's hourly run call it.
 */

/** Domains checked at once: a few, so hundreds of domains do not flood the resolver. */
const DOMAINS_AT_ONCE = 4;

export interface DoctorInput {
  config: Config;
  resolver: Resolver;
  /** The domains to check (all, or the one asked for). */
  domains: DomainRow[];
  /** This node's addresses are checked too (not when one domain is asked for). */
  node: boolean;
  now: number;
}

export async function runDoctor(input: DoctorInput): Promise<DoctorReport> {
  const { config, resolver } = input;
  const { addresses } = await nodeAddresses(config, resolver);
  const checks: DoctorCheck[] = input.node ? await nodeChecks(config, resolver) : [];
  for (let i = 0; i < input.domains.length; i += DOMAINS_AT_ONCE) {
    const batch = input.domains.slice(i, i + DOMAINS_AT_ONCE);
    for (const one of await Promise.all(batch.map((d) => domainChecks(config, resolver, d, addresses, input.now))))
      checks.push(...one);
  }
  return { at: new Date(input.now).toISOString(), checks };
}

/** The keys of a rotation whose records must be published: the next one, and the previous one while its grace lasts (domain-setup/records.ts). */
function rotationKeys(
  d: DomainRow,
  now: number,
): Array<{ check: 'dkim_next' | 'dkim_previous'; selector: string; publicKey: string }> {
  const { next, previous } = rotationRecords(d, now);
  return [
    ...(next ? [{ check: 'dkim_next' as const, ...next }] : []),
    ...(previous ? [{ check: 'dkim_previous' as const, ...previous }] : []),
  ];
}

/** Every check of one domain: DKIM (the next key and the previous one of a rotation), SPF at its return path, DMARC, alignment, the MX records. */
async function domainChecks(
  config: Config,
  resolver: Resolver,
  d: DomainRow,
  addresses: SourceAddress[],
  now: number,
): Promise<DoctorCheck[]> {
  const rp = returnPathStatus(d, config);
  const txt = (name: string) =>
    ask(resolver, name, 'TXT', async () => (await resolver.resolveTxt(name)).map((r) => r.join('')));
  const mx = (name: string) => ask(resolver, name, 'MX', () => resolver.resolveMx(name));
  const dkimName = (sel: string) => `${sel}._domainkey.${d.name}`;
  const dmarc = await dmarcRecord(d.name, txt);
  const checks: Array<Promise<DoctorCheck> | DoctorCheck> = [
    txt(dkimName(d.dkim_selector)).then((a) => judgeDkim('dkim', d.name, d.dkim_selector, d.dkim_public_key, a)),
    ...rotationKeys(d, now).map((k) =>
      txt(dkimName(k.selector)).then((a) => judgeDkim(k.check, d.name, k.selector, k.publicKey, a)),
    ),
    spfChecks(config, resolver, rp.envelope_domain, addresses).then((v) =>
      judgeSpf(d.name, rp.envelope_domain, v, spfRecord(addresses)),
    ),
    judgeDmarc(d.name, dmarc),
    dmarc.kind === 'no_answer'
      ? noAnswer({ check: 'alignment', domain: d.name, subject: d.name }, dmarc.why)
      : judgeAlignment(
          d.name,
          rp.envelope_domain,
          rp.host,
          returnPathDomain(config),
          dmarc.kind === 'answered' && dmarc.records.texts.length === 1 ? dmarc.records.texts[0]! : null,
        ),
    mx(rp.envelope_domain).then((a) =>
      judgeMx('return_path_mx', d.name, rp.envelope_domain, a, config.server.hostname),
    ),
    ...(d.receiving === 1 ? [mx(d.name).then((a) => judgeMx('mx', d.name, d.name, a, config.server.hostname))] : []),
  ];
  return Promise.all(checks);
}

/** The DMARC record a receiver finds: at _dmarc.<domain>, else at its organizational domain's (RFC 7489 6.6.3). */
async function dmarcRecord(
  domain: string,
  txt: (name: string) => Promise<Lookup<string[]>>,
): Promise<Lookup<DmarcFound>> {
  const names = [domain, getDomain(domain, { allowPrivateDomains: true }) ?? domain].filter(
    (n, i, all) => all.indexOf(n) === i,
  );
  for (const n of names) {
    const name = `_dmarc.${n}`;
    const found = await txt(name);
    if (found.kind === 'no_answer') return found;
    const texts = found.kind === 'answered' ? found.records.filter((t) => /^v=DMARC1\b/i.test(t.trim())) : [];
    if (texts.length) return { kind: 'answered', records: { name, texts } };
  }
  return { kind: 'none' };
}

/**
 * SPF at the return path host for each source address, evaluated as a receiver does: with
 * mailauth's RFC 7208 evaluator (include, redirect, a, mx, ip4, ip6, exists, macros, the limit of
 * ten lookups and two void lookups), resolving through dns.servers.
 */
async function spfChecks(
  config: Config,
  resolver: Resolver,
  host: string,
  addresses: SourceAddress[],
): Promise<SpfVerdict[]> {
  const resolve = (name: string, rr: string) => resolver.resolve(name, rr as 'TXT');
  return Promise.all(
    addresses.map(async ({ address, ehlo }) => {
      const r = await spf({
        ip: address,
        helo: ehlo,
        sender: `postmaster@${host}`,
        mta: config.server.hostname,
        resolver: resolve,
      });
      const status = r?.status as { result?: string; comment?: string } | undefined;
      const lookups = (r as { lookups?: { count?: number } }).lookups?.count ?? 0;
      return { address, result: status?.result ?? 'temperror', text: status?.comment ?? '', lookups };
    }),
  );
}

/** The SPF record that covers every source address, to suggest. */
function spfRecord(addresses: SourceAddress[]): string {
  const mechanisms = addresses.map((a) => `${a.address.includes(':') ? 'ip6' : 'ip4'}:${a.address}`);
  return `v=spf1 ${mechanisms.join(' ')} ~all`;
}
