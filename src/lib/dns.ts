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
      const rows = await (family === 4 ? resolver.resolve4(host, { ttl: true }) : resolver.resolve6(host, { ttl: true }));
      return { rows: rows.map((r) => ({ address: r.address, family, ttl: r.ttl })), error: null };
    } catch (e) {
      return { rows: [], error: String((e as { code?: string }).code) };
    }
  };
  const [a, aaaa] = await Promise.all([settle(4), settle(6)]);
  return { addresses: [...a.rows, ...aaaa.rows], errors: [a.error, aaaa.error] };
}
