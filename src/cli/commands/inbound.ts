import type { Command } from 'commander';
import { withStore, output, table, customerNamed, CliError, iso } from '../context.js';
import { DEFAULT_CUSTOMER } from '../../store/customers.js';
import { getInbound, listInbound, setInboundLimits, inboundLimitsOf } from '../../store/inbound.js';
import { findDomain } from '../../store/domains.js';
import { parseAddrSpec, normaliseDomain } from '../../domain/addresses.js';

export function inboundCommand(program: Command): void {
  const cmd = program.command('inbound').description('messages received for receiving domains');
  cmd
    .command('list')
    .option('--customer <name>', 'only this customer')
    .option('--limit <n>', 'how many', '50')
    .action(async (o: { customer?: string; limit: string }, c: Command) =>
      withStore(c, async ({ db }) => {
        const { inboundSummary } = await import('../../inbound/view.js');
        const rows = listInbound(db, { limit: Math.max(1, Number(o.limit) || 50), ...(o.customer ? { customerId: customerNamed(db, o.customer).id } : {}) }).map(inboundSummary);
        output(c, rows, table(rows.map((r) => ({ ...r, to: r.to.join(','), auth: Object.entries(r.authentication).map(([k, v]) => `${k}=${v}`).join(' ') })), ['id', 'received_at', 'from', 'to', 'subject', 'auth']));
      }),
    );
  cmd
    .command('show <id>')
    .option('--raw', 'print the message as received')
    .action(async (id: string, o: { raw?: boolean }, c: Command) =>
      withStore(c, async ({ db }) => {
        const row = getInbound(db, id);
        if (!row) throw new CliError(`no received message "${id}"`);
        if (o.raw) return void process.stdout.write(row.raw);
        const { inboundView } = await import('../../inbound/view.js');
        const v = await inboundView(row);
        output(c, v, [`${v.id} received ${v.received_at}`, `from: ${v.from}`, `to: ${(v.to as string[]).join(', ')}`, `subject: ${v.subject}`, `authentication: ${JSON.stringify(v.authentication)}`, '', String(v.text ?? '')].join('\n'));
      }),
    );
}

export function domainLimitsCommand(domains: Command): void {
  domains
    .command('limits <domain>')
    .description('set a receiving domain\'s inbound limits ("default" restores the [inbound] value; 0 means none)')
    .option('--rate <per_minute>', 'messages per minute')
    .option('--monthly <count>', 'messages per calendar month')
    .action(async (name: string, o: { rate?: string; monthly?: string }, c: Command) =>
      withStore(c, ({ db, config }) => {
        const n = normaliseDomain(name);
        const d = n.ok ? findDomain(db, n.value) : undefined;
        if (!d) throw new CliError(`no domain "${name}"`);
        const value = (v: string | undefined, what: string): number | null | undefined => {
          if (v === undefined) return undefined;
          if (v === 'default') return null;
          const x = Number(v);
          if (!Number.isInteger(x) || x < 0) throw new CliError(`${what} must be a whole number or "default"`);
          return x;
        };
        setInboundLimits(db, d.id, { ratePerMinute: value(o.rate, '--rate'), monthlyLimit: value(o.monthly, '--monthly') });
        const own = inboundLimitsOf(db, d.id);
        const v = { name: d.name, rate_per_minute: own.ratePerMinute ?? config.inbound.rate_per_minute, monthly_limit: own.monthlyLimit ?? config.inbound.monthly_limit, overridden: { rate_per_minute: own.ratePerMinute !== null, monthly_limit: own.monthlyLimit !== null } };
        output(c, v, `${d.name}: ${v.rate_per_minute}/minute, ${v.monthly_limit}/month (0: unlimited)`);
      }),
    );
}
