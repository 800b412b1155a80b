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
