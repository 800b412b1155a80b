import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Config } from '../config/schema.js';
import {
  type DoctorCheck,
  judgeListing,
  judgeReverseDns,
  type Lookup,
  noAnswer,
  reverseName,
  type SourceAddress,
} from '../domain/doctor.js';
import { describeLookupFailure, lookupAddresses, lookupFailure } from '../lib/dns.js';

/**
 * One lookup as the doctor reads it (domain/doctor.ts, Lookup): records; none (NXDOMAIN, NODATA);
 * or no answer from dns.servers, with why in words. Never throws.
 */
export async function ask<T>(resolver: Resolver, name: string, type: string, fn: () => Promise<T>): Promise<Lookup<T>> {
  try {
    return { kind: 'answered', records: await fn() };
  } catch (e) {
    const code = (e as { code?: string }).code ?? String(e);
    if (lookupFailure(code) !== 'no_answer') return { kind: 'none' };
    return { kind: 'no_answer', why: describeLookupFailure(resolver, name, type, code) };
  }
}

/** The addresses a name resolves to (A and AAAA): none only when both say so; no answer when either did not answer. */
async function addressesOf(resolver: Resolver, name: string): Promise<Lookup<string[]>> {
  const found = await lookupAddresses(resolver, name);
  const failed = found.errors.find((code) => code !== null && lookupFailure(code) === 'no_answer');
  if (failed) return { kind: 'no_answer', why: describeLookupFailure(resolver, name, 'A/AAAA', failed) };
  return found.addresses.length
    ? { kind: 'answered', records: found.addresses.map((a) => a.address) }
    : { kind: 'none' };
}

/**
 * This node's source addresses and the EHLO name each says: its pools' (outbound.pools), else
 * outbound.source_addresses with server.hostname; when neither is configured, the addresses server.hostname resolves to. `problem`
 * is the check that failed when there are none to check (the name resolves to nothing, or the DNS
 * did not answer). The one place that says which addresses this node sends from.
 */
export async function nodeAddresses(
  config: Config,
  resolver: Resolver,
): Promise<{ addresses: SourceAddress[]; problem: DoctorCheck | null }> {
  const ehlo = config.server.hostname;
  // This node's pools name its own addresses, each with its EHLO name (docs/delivery.md, "Pools of source addresses").
  const pooled = [...new Map(config.outbound.pools.flatMap((p) => p.addresses).map((a) => [a.ip, a.ehlo])).entries()];
  if (pooled.length) return { addresses: pooled.map(([address, name]) => ({ address, ehlo: name })), problem: null };
  const configured = config.outbound.source_addresses.map((a) => a.trim()).filter((a) => isIP(a) !== 0);
  if (configured.length) return { addresses: configured.map((address) => ({ address, ehlo })), problem: null };
  const found = await addressesOf(resolver, ehlo);
  if (found.kind === 'answered')
    return { addresses: found.records.map((address) => ({ address, ehlo })), problem: null };
  const c = { check: 'reverse_dns' as const, domain: null, subject: ehlo };
  if (found.kind === 'no_answer') return { addresses: [], problem: noAnswer(c, found.why) };
  return {
    addresses: [],
    problem: {
      ...c,
      state: 'fail',
      found: `server.hostname (${ehlo}) resolves to no address, and outbound.source_addresses is empty`,
      fix: `publish A (and AAAA) records for ${ehlo} with the addresses mail leaves from, and list those addresses in outbound.source_addresses`,
    },
  };
}

/** Reverse DNS of one address: its PTR, and whether the EHLO name it should name resolves back to it. */
async function reverseDns(resolver: Resolver, src: SourceAddress): Promise<DoctorCheck> {
  // resolvePtr, not reverse: c-ares's reverse says ENOTFOUND for a SERVFAIL.
  const name = reverseName(src.address, src.address.includes(':') ? 'ip6.arpa' : 'in-addr.arpa');
  const ptr = await ask(resolver, name, 'PTR', () => resolver.resolvePtr(name));
  const names = ptr.kind === 'answered' ? ptr.records.map((n) => n.toLowerCase().replace(/\.$/, '')) : [];
  const ehlo = src.ehlo.toLowerCase().replace(/\.$/, '');
  const forward = names.includes(ehlo) ? await addressesOf(resolver, ehlo) : null;
  return judgeReverseDns(src, ptr, forward);
}

/** One address on one DNS blocklist: its A record (listed or not) and, when listed, the TXT that says why. */
async function listing(resolver: Resolver, address: string, zone: string): Promise<DoctorCheck> {
  const name = reverseName(address, zone);
  const answer = await ask(resolver, name, 'A', () => resolver.resolve4(name));
  const reason =
    answer.kind === 'answered'
      ? await resolver.resolveTxt(name).then(
          (rows) => rows.map((r) => r.join('')),
          () => [],
        )
      : [];
  return judgeListing(address, zone, answer, reason);
}

/** The checks of this node's addresses: reverse DNS, and each address on each list of doctor.dnsbl. */
export async function nodeChecks(config: Config, resolver: Resolver): Promise<DoctorCheck[]> {
  const { addresses, problem } = await nodeAddresses(config, resolver);
  const zones = config.doctor.dnsbl.map((z) => z.trim()).filter(Boolean);
  const checks = await Promise.all(
    addresses.map(async (src) => [
      await reverseDns(resolver, src),
      ...(await Promise.all(zones.map((zone) => listing(resolver, src.address, zone)))),
    ]),
  );
  return [...(problem ? [problem] : []), ...checks.flat()];
}
