import type { Resolver } from 'node:dns/promises';
import { createServer } from 'node:net';
import { ConfigError } from '../config/load.js';
import type { Pool } from '../config/pools.js';
import type { Logger } from '../lib/logger.js';

// The start-time checks of outbound.pools (docs/delivery.md, "Sending identities"): every address
// must be this machine's (else the node does not start: a connection could not bind it), and its
// PTR should name its EHLO name, which should resolve back to it (else a warning naming the
// record to publish: receivers check both).

/** Whether this machine can bind `ip` (any port): an address of one of its interfaces, or of 127.0.0.0/8 on Linux. */
function bindable(ip: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (e: Error & { code?: string }) => resolve(e.code ?? e.message));
    server.listen({ host: ip, port: 0, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/** Step: every pool address is this machine's; the first that is not stops the start, named. */
export async function checkSourcesLocal(pools: readonly Pool[]): Promise<void> {
  for (const pool of pools)
    for (const a of pool.addresses) {
      const code = await bindable(a.ip);
      if (code !== null)
        throw new ConfigError(
          'outbound.pools',
          `pool "${pool.name}": ${a.ip} is not an address of this machine (cannot bind it: ${code}); each node lists only its own addresses`,
        );
    }
}

/** The name a PTR record of `ip` is published under: d.c.b.a.in-addr.arpa, or the nibbles under ip6.arpa. */
export function reverseName(ip: string): string {
  if (!ip.includes(':')) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
  const [head = '', tail = ''] = ip.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const full = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t].map((g) => g.padStart(4, '0')).join('');
  return `${[...full].reverse().join('.')}.ip6.arpa`;
}

const sameName = (a: string, b: string) => a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '');

/** What is wrong with one address's reverse and forward records, or null when both hold. */
async function dnsProblem(resolver: Resolver, ip: string, ehlo: string): Promise<string | null> {
  const ptr = reverseName(ip);
  const names = await resolver.reverse(ip).catch(() => [] as string[]);
  if (!names.some((n) => sameName(n, ehlo)))
    return `publish ${ptr} PTR ${ehlo} (its PTR names ${names.join(', ') || 'nothing'})`;
  const v6 = ip.includes(':');
  const back = await (v6 ? resolver.resolve6(ehlo) : resolver.resolve4(ehlo)).catch(() => [] as string[]);
  if (!back.some((b) => b.toLowerCase() === ip))
    return `publish ${ehlo} ${v6 ? 'AAAA' : 'A'} ${ip} (it resolves to ${back.join(', ') || 'nothing'})`;
  return null;
}

/** Step (in the background): each address's PTR names its EHLO name and that name resolves back to it; else a warning naming the record. */
export async function checkSourcesDns(pools: readonly Pool[], resolver: Resolver, log: Logger): Promise<void> {
  for (const pool of pools)
    for (const a of pool.addresses) {
      const problem = await dnsProblem(resolver, a.ip, a.ehlo);
      if (problem)
        log.warn(
          { pool: pool.name, address: a.ip, ehlo: a.ehlo, fix: problem },
          `source address ${a.ip} (pool "${pool.name}"): its PTR and EHLO name do not agree: ${problem}; receivers check that they do`,
        );
    }
}
