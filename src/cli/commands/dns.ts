import type { Command } from 'commander';
import { serverIdentity } from '../../config/settings.js';
import { type DnsRecord, serverRecords } from '../../domain/dns-records.js';
import { configOf, output } from '../context.js';

/** A record as a line to publish, with what may stand in its place (a return path's MX and SPF for its CNAME). */
export function recordLines(r: DnsRecord): string[] {
  return [
    `  [${r.purpose}] ${r.name} ${r.type} ${r.value}`,
    ...(r.instead?.length
      ? [`    or, in its place: ${r.instead.map((i) => `${i.name} ${i.type} ${i.value}`).join(' and ')}`]
      : []),
  ];
}

/**
 * `dns server`: the server's own records, published once for every domain (docs/delivery.md,
 * "Sending identities"): the return path domain's MX and one SPF record listing every address
 * mail leaves from (outbound.source_addresses, else every address of outbound.pools).
 */
export function dnsCommand(program: Command): void {
  const cmd = program.command('dns').description("the server's own DNS records");
  cmd
    .command('server')
    .description(
      "print the return path domain's MX and SPF records, published once for all sending domains (their return path CNAMEs point there)",
    )
    .action((_o, c: Command) => {
      const config = configOf(c);
      const records = serverRecords(serverIdentity(config));
      const addresses = config.outbound.source_addresses;
      const pooled = config.outbound.pools.flatMap((p) => p.addresses.map((a) => a.ip));
      output(
        c,
        { records, source_addresses: addresses },
        [
          'Publish these DNS records once, for every sending domain:',
          ...records.flatMap(recordLines),
          addresses.length
            ? `The SPF record lists outbound.source_addresses (${addresses.length}): every address mail leaves from, of every node.`
            : pooled.length
              ? `The SPF record lists the addresses of outbound.pools (${new Set(pooled).size}), this node's; where other nodes send from addresses of their own, list every node's in outbound.source_addresses.`
              : 'outbound.source_addresses is empty: the SPF record names server.hostname (a:), which covers only the addresses that name resolves to; list every sending address of every node there to cover them all.',
        ].join('\n'),
      );
    });
}
