import type { Command } from 'commander';
import { isDay } from '../../domain/tls-report.js';
import { createResolver } from '../../lib/dns.js';
import { dayReport, ruaOf, tlsReportSettings } from '../../reports/tls-report-send.js';
import type { TlsReportRecord } from '../../store/model.js';
import { CliError, output, withStore } from '../context.js';

/**
 * `tlsrpt show --date D [--domain D]`: the TLS reports (RFC 8460) of a UTC day, as sent or as they
 * would be: each policy domain's rua URIs, whether and when its report was sent, the file name
 * and the JSON (docs/delivery.md, "TLS reports (RFC 8460)").
 */
export function tlsrptCommand(program: Command): void {
  const cmd = program.command('tlsrpt').description('SMTP TLS reports (RFC 8460) sent to recipient domains');
  cmd
    .command('show')
    .description("a day's TLS reports, per recipient domain: where they go, whether sent, and the report itself")
    .requiredOption('--date <YYYY-MM-DD>', 'the UTC day')
    .option('--domain <domain>', 'only the report of this recipient domain')
    .action(async (o: { date: string; domain?: string }, c: Command) => {
      if (!isDay(o.date)) throw new CliError(`--date: expected a day as YYYY-MM-DD, got "${o.date}"`);
      const only = o.domain?.trim().toLowerCase().replace(/\.$/, '');
      await withStore(c, async ({ store, config }) => {
        const settings = tlsReportSettings(config);
        const resolver = createResolver(config.dns.servers);
        const sent = new Map((await store.tlsReports.sentOn(o.date)).map((r) => [r.domain, r]));
        const domains = (await store.tlsReports.domains(o.date)).filter((d) => only === undefined || d === only);
        const shown = [];
        for (const domain of domains) {
          const r = await dayReport(store, settings, o.date, domain);
          const rua = await ruaOf(resolver, domain);
          shown.push({ ...r, rua, sent: sent.get(domain) ?? null });
        }
        output(
          c,
          shown.map((s) => ({ domain: s.domain, rua: s.rua, sent: s.sent, file_name: s.fileName, report: s.report })),
          shown.length
            ? shown.map((s) => describe(s)).join('\n\n')
            : `No TLS sessions counted on ${o.date}${only ? ` for ${only}` : ''}.`,
        );
      });
    });
}

function describe(s: {
  domain: string;
  rua: string[] | null | 'unanswered';
  sent: TlsReportRecord | null;
  fileName: string;
  report: unknown;
}): string {
  const where =
    s.rua === null
      ? 'no TLS-RPT record: nothing is sent'
      : s.rua === 'unanswered'
        ? 'the DNS server did not answer for its TLS-RPT record'
        : `rua: ${s.rua.join(', ')}`;
  const state = !s.sent
    ? 'not sent'
    : s.sent.sent_at !== null
      ? `sent ${new Date(s.sent.sent_at).toISOString()}: ${s.sent.results ?? ''}`
      : `being sent by ${s.sent.holder} since ${new Date(s.sent.claimed_at).toISOString()}`;
  return [`${s.domain}: ${where}; ${state}`, `file: ${s.fileName}`, JSON.stringify(s.report, null, 2)].join('\n');
}
