import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseDuration } from '../../config/load.js';
import { serverIdentity } from '../../config/settings.js';
import { addressesOfSpf, dmarcSummary } from '../../domain-setup/dmarc.js';
import { CliError, configOf, customerNamed, output, table, withStore } from '../context.js';

/**
 * `dmarc show DOMAIN`: what receivers' DMARC aggregate reports said about a domain, per day and
 * source address, ours marked; `dmarc parse FILE`: what the reader makes of a report mail
 * (docs/operations.md, "DMARC reports").
 */
export function dmarcCommand(program: Command): void {
  const cmd = program.command('dmarc').description('DMARC aggregate reports received (smtp.dmarc_address)');
  cmd
    .command('show <domain>')
    .description('per day and source address: messages, DMARC pass, DKIM and SPF aligned, who reported it')
    .option('--since <duration>', 'how far back, e.g. 7d or 48h', '7d')
    .option('--customer <name>', "only if the domain is this customer's")
    .action(async (domain: string, o: { since: string; customer?: string }, c: Command) => {
      let back: number;
      try {
        back = parseDuration(o.since);
      } catch {
        throw new CliError(`--since: expected a duration such as 7d or 48h, got "${o.since}"`);
      }
      await withStore(c, async ({ store, config, now }) => {
        const customer = o.customer === undefined ? undefined : await customerNamed(store, o.customer);
        const own = addressesOfSpf(serverIdentity(config).spfSources);
        const s = await dmarcSummary(store, own, {
          domain: domain.trim().toLowerCase().replace(/\.$/, ''),
          ...(customer ? { customerId: customer.id } : {}),
          since: now - back,
          until: now + 1,
        });
        const rows = s.sources.map((r) => ({ ...r, ours: r.ours ? 'yes' : 'no', reporters: r.reporters.join(',') }));
        output(
          c,
          s,
          [
            `${s.domain}: ${s.sources.reduce((n, r) => n + r.messages, 0)} messages reported since ${new Date(s.since).toISOString()}`,
            table(rows, [
              'day',
              'source_ip',
              'ours',
              'messages',
              'dmarc_pass',
              'dkim_aligned',
              'spf_aligned',
              'reporters',
            ]),
            `Our own mail failing DMARC: ${s.ours_failing}. Mail from addresses that are not ours: ${s.others}.`,
            own.length
              ? ''
              : 'No address is marked ours: outbound.source_addresses is empty (docs/delivery.md, "Sending identities").',
          ]
            .filter(Boolean)
            .join('\n'),
        );
      });
    });
  cmd
    .command('parse <file>')
    .description('what posthaste makes of a DMARC report mail (a file of the whole mail, as received)')
    .action(async (file: string, _o: unknown, c: Command) => {
      configOf(c, { orDefaults: true });
      let raw: Buffer;
      try {
        raw = readFileSync(file);
      } catch (e) {
        throw new CliError(`cannot read ${file}: ${(e as Error).message}`);
      }
      const { readAggregateReports } = await import('../../reports/dmarc-aggregate.js');
      const reads = readAggregateReports(raw);
      output(
        c,
        reads,
        reads
          .map((r) =>
            r.kind === 'report'
              ? `${r.report.org} report ${r.report.reportId} on ${r.report.domain}: ${r.report.rows.length} rows, ${r.report.rows.reduce((n, w) => n + w.count, 0)} messages`
              : `unreadable${r.name ? ` (${r.name})` : ''}: ${r.error}`,
          )
          .join('\n'),
      );
    });
}
