import { Resolver } from 'node:dns/promises';

/**
 * A resolver bound to `dns.servers` ("ip" or "ip:port"); the system resolver when empty.
 * Every DNS lookup posthaste makes goes through one of these, so tests can point it at a
 * DNS server on loopback.
 */
export function createResolver(servers: string[], timeoutMs = 5000, tries = 2): Resolver {
  const r = new Resolver({ timeout: timeoutMs, tries });
  if (servers.length > 0) r.setServers(servers);
  return r;
}

export interface HostAddresses {
  /** A records first, then AAAA, with their TTLs (seconds). */
  addresses: Array<{ address: string; family: 4 | 6; ttl: number }>;
  /** Each lookup's error code (null: it answered), A then AAAA; ENODATA means the type has no records. */
  errors: [string | null, string | null];
}

/** A and AAAA of a host at once, through the resolver given; never throws (the errors are returned). */
export async function lookupAddresses(resolver: Resolver, host: string): Promise<HostAddresses> {
  const settle = async (family: 4 | 6) => {
    try {
      const rows = await (family === 4
        ? resolver.resolve4(host, { ttl: true })
        : resolver.resolve6(host, { ttl: true }));
      return { rows: rows.map((r) => ({ address: r.address, family, ttl: r.ttl })), error: null };
    } catch (e) {
      return { rows: [], error: String((e as { code?: string }).code) };
    }
  };
  const [a, aaaa] = await Promise.all([settle(4), settle(6)]);
  return { addresses: [...a.rows, ...aaaa.rows], errors: [a.error, aaaa.error] };
}

/**
 * What a failed lookup means: the name does not exist (NXDOMAIN), it has no record of the type
 * asked (NODATA), or the resolver gave no answer at all (a timeout, a refusal, SERVFAIL, an
 * unreachable server). Only the last says nothing about the records: it is the DNS servers'
 * fault, and the setting to look at is dns.servers.
 */
export type LookupFailure = 'no_domain' | 'no_record' | 'no_answer';

/** Node's resolver error codes (c-ares) for a name that does not exist and for a type it has none of. */
const NO_DOMAIN = new Set(['ENOTFOUND']);
const NO_RECORD = new Set(['ENODATA']);

export function lookupFailure(code: string | null | undefined): LookupFailure {
  return NO_DOMAIN.has(String(code)) ? 'no_domain' : NO_RECORD.has(String(code)) ? 'no_record' : 'no_answer';
}

/** A resolver error code in words. */
const CODE_WORDS: Record<string, string> = {
  ETIMEOUT: 'timed out',
  ECONNREFUSED: 'connection refused',
  ESERVFAIL: 'SERVFAIL',
  EREFUSED: 'REFUSED',
  EBADRESP: 'a malformed reply',
  ECANCELLED: 'the query was cancelled',
  EOF: 'the connection closed',
};

/**
 * Why a lookup failed, in words that name the fix: for NXDOMAIN and NODATA, that the record is not
 * there; for a resolver that did not answer, which servers were asked and the setting that chose
 * them (dns.servers), never "missing".
 */
export function describeLookupFailure(
  resolver: Pick<Resolver, 'getServers'>,
  name: string,
  type: string,
  code: string | null | undefined,
): string {
  const kind = lookupFailure(code);
  if (kind === 'no_domain') return `${name} does not exist (NXDOMAIN)`;
  if (kind === 'no_record') return `${name} has no ${type} record`;
  return `the DNS server did not answer the ${type} query for ${name} (${CODE_WORDS[String(code)] ?? String(code)}): ${serversNote(resolver)}`;
}

/** Which servers a resolver asks, and the setting that chooses them. */
export function serversNote(resolver: Pick<Resolver, 'getServers'>): string {
  const servers = resolver.getServers();
  return `check that ${servers.join(', ') || 'the system resolver'} answers, or set dns.servers to a DNS server that does`;
}
