import type { Command } from 'commander';
import { type DoctorCheck, type DoctorReport, summarise } from '../../domain/doctor.js';
import { runDoctor } from '../../domain-setup/doctor.js';
import { createResolver } from '../../lib/dns.js';
import { CliError, output, withStore } from '../context.js';

const MARK: Record<DoctorCheck['state'], string> = { pass: 'ok  ', fail: 'FAIL', no_answer: '??  ' };

/** The report as lines: each check, and under a failure its fix; grouped by this node, then by domain. */
export function humanReport(report: DoctorReport): string {
  const lines: string[] = [];
  let group: string | null | undefined;
  for (const c of report.checks) {
    if (c.domain !== group) {
      group = c.domain;
      lines.push('', group === null ? "This node's addresses:" : `Domain ${group}:`);
    }
    lines.push(`  ${MARK[c.state]} ${c.check} ${c.subject}: ${c.found}`);
    if (c.fix) lines.push(`       fix: ${c.fix}`);
  }
  const s = summarise(report);
  lines.push('', `${s.pass} passed, ${s.fail} failed, ${s.no_answer} not answered by the DNS (checked ${report.at})`);
  return lines.join('\n').trimStart();
}

/**
 * `doctor`: why mail may land in spam (docs/operations.md, "Deliverability"): this node's reverse
 * DNS and blocklist listings, and each domain's DKIM, SPF, DMARC, alignment and MX, each failure
 * with its fix. Exits 1 when a check fails.
 */
export function doctorCommand(program: Command): void {
  program
    .command('doctor')
    .description(
      "check what receivers check before they trust this server: reverse DNS, blocklists, and each domain's DKIM, SPF, DMARC, alignment and MX; each failure says which record to publish or setting to change",
    )
    .option('--domain <name>', "check this domain only (not the node's addresses)")
    .action(async (opts: { domain?: string }, c: Command) => {
      const report = await withStore(c, async ({ store, config, now }) => {
        const name = opts.domain?.toLowerCase().replace(/\.$/, '');
        const one = name ? await store.domains.find(name) : undefined;
        if (name && !one) throw new CliError(`no domain named "${name}" (see "posthaste domains list")`);
        const resolver = createResolver(config.dns.servers);
        const domains = one ? [one] : await store.domains.list();
        return runDoctor({ config, resolver, domains, node: !one, now });
      });
      output(c, { ...report, summary: summarise(report) }, humanReport(report));
      if (summarise(report).fail > 0) process.exitCode = 1;
    });
}
